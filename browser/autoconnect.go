package browser

// This file finds a Chrome the user runs, with remote debugging on, through
// the DevToolsActivePort file Chrome writes in its profile directory: for
// --auto-connect (the default profile of a channel, as chrome-devtools-mcp's
// --autoConnect finds it, or --user-data-dir), and for a --user-data-dir that
// a running Chrome holds, which pagemux attaches to instead of failing to
// launch a second Chrome on it. What it finds becomes Config.WSEndpoint: the
// rest is the road of --ws-endpoint.

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The Chrome channels whose default profile Connect looks in; "" is
// ChannelStable.
const (
	ChannelStable = "stable"
	ChannelBeta   = "beta"
	ChannelDev    = "dev"
	ChannelCanary = "canary"
)

// ActivePortFile is the file in a profile directory where Chrome writes the
// port of its DevTools server (first line) and its browser's websocket path
// (second line) once it listens: with --remote-debugging-port, or remote
// debugging allowed at chrome://inspect/#remote-debugging.
const ActivePortFile = "DevToolsActivePort"

// ErrNoActivePort means a profile directory has no DevToolsActivePort: no
// Chrome runs on it with remote debugging on.
const ErrNoActivePort Error = "no Chrome with remote debugging found"

// howToDebug says how to start Chrome so that pagemux can attach to it.
const howToDebug = "allow remote debugging at chrome://inspect/#remote-debugging in that Chrome (Chrome 144 or later), " +
	"or start it with --remote-debugging-port=0 (Chrome 136 and later want a --user-data-dir other than the default for that)"

// ProfileAttach says which running Chrome's profile Connect found the
// DevTools endpoint in, for the log and for errors.
type ProfileAttach struct {
	// Dir is the profile directory whose DevToolsActivePort named the
	// endpoint.
	Dir string
	// Held is true when Dir was a --user-data-dir that a running Chrome
	// holds, attached to instead of launching a Chrome on it; false for
	// --auto-connect.
	Held bool
	// PID is the holder's process id when Held (0 when it is unknown).
	PID int
}

// String says what pagemux attaches to, in words for the log.
func (a *ProfileAttach) String() string {
	if a.Held {
		return fmt.Sprintf("the profile %s is held by a running Chrome%s: attaching to it through its %s instead of launching another (pagemux drives that Chrome, its profile and logged-in sessions, and leaves it running)",
			a.Dir, pidNote(a.PID), ActivePortFile)
	}
	return fmt.Sprintf("auto-connect: attaching to the Chrome whose profile is %s (pagemux drives that Chrome, its profile and logged-in sessions, and leaves it running)", a.Dir)
}

func pidNote(pid int) string {
	if pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pid)
}

// Connect turns c's --auto-connect (AutoConnect) or a UserDataDir that a
// running Chrome holds into an attach: it reads the Chrome's
// DevToolsActivePort, sets WSEndpoint to the websocket it names on
// loopback, and Profile and UserDataDir to where it found it. It does
// nothing for a config that attaches already (BrowserURL, WSEndpoint,
// Pool), nor for a UserDataDir that no Chrome holds (pagemux launches
// Chrome on it). It fails, saying how to start Chrome with remote
// debugging, when there is no DevToolsActivePort or nothing listens on the
// port it names. It reads the file once: a Chrome restarted later is
// attached to by a pagemux started anew.
func (c *Config) Connect() error {
	if err := checkChannel(c.Channel); err != nil {
		return err
	}
	switch {
	case c.AutoConnect && c.Attaches():
		return errors.New("give --auto-connect or --browser-url/--ws-endpoint, not both: --auto-connect finds the address itself")
	case c.AutoConnect:
		return c.autoConnect()
	case c.Attaches() || c.UserDataDir == "":
		return nil
	}
	pid, held := ProfileHolder(c.UserDataDir)
	if !held {
		return nil
	}
	ws, err := activeEndpoint(c.UserDataDir)
	if err != nil {
		return fmt.Errorf("--user-data-dir %s is in use by a running Chrome%s, and pagemux cannot attach to it: %w. "+
			"Either %s, then start pagemux again; or quit that Chrome; or give pagemux another --user-data-dir (or none, for a temporary profile)",
			c.UserDataDir, pidNote(pid), err, howToDebug)
	}
	c.WSEndpoint, c.Profile = ws, &ProfileAttach{Dir: c.UserDataDir, Held: true, PID: pid}
	return nil
}

// autoConnect is Connect for AutoConnect: the first profile directory that
// has a DevToolsActivePort, of UserDataDir alone when it is set, else of the
// channel's default profiles (DefaultUserDataDirs).
func (c *Config) autoConnect() error {
	dirs := []string{c.UserDataDir}
	if c.UserDataDir == "" {
		var err error
		if dirs, err = DefaultUserDataDirs(c.Channel); err != nil {
			return fmt.Errorf("--auto-connect: %w; give the profile with --user-data-dir", err)
		}
	}
	for _, dir := range dirs {
		ws, err := activeEndpoint(dir)
		if errors.Is(err, ErrNoActivePort) {
			continue
		}
		if err != nil {
			return fmt.Errorf("--auto-connect: %w; %s, or give its profile with --user-data-dir", err, howToDebug)
		}
		// UserDataDir names the profile found, so that no tool reads or
		// writes in it (its cookies, saved passwords), as in a launched
		// Chrome's (ProfileDirs).
		c.WSEndpoint, c.Profile, c.UserDataDir = ws, &ProfileAttach{Dir: dir}, dir
		return nil
	}
	return fmt.Errorf("--auto-connect: %w: no %s in %s. Start Chrome and %s; for a Chrome on another profile give it with --user-data-dir, or its address with --browser-url",
		ErrNoActivePort, ActivePortFile, strings.Join(dirs, " nor "), howToDebug)
}

// activeEndpoint returns the browser websocket that dir's DevToolsActivePort
// names, once something answers on its port.
func activeEndpoint(dir string) (string, error) {
	port, path, err := ReadActivePort(dir)
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", fmt.Errorf("%s names port %d, where nothing answers (%v): the Chrome that wrote it is gone, or runs now without remote debugging",
			filepath.Join(dir, ActivePortFile), port, err)
	}
	conn.Close()
	return "ws://" + addr + path, nil
}

// ReadActivePort reads dir's DevToolsActivePort: the port Chrome's DevTools
// server listens on, on loopback, and the path of its browser's websocket
// (/devtools/browser/ID). It fails with ErrNoActivePort when there is no
// such file. It does not check that anything listens there.
func ReadActivePort(dir string) (port int, path string, err error) {
	name := filepath.Join(dir, ActivePortFile)
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", fmt.Errorf("%w: no %s", ErrNoActivePort, name)
	}
	if err != nil {
		return 0, "", err
	}
	lines := strings.Fields(string(b))
	if len(lines) != 2 {
		return 0, "", fmt.Errorf("%s: want two lines, a port and a /devtools/browser/ path, got %q", name, truncate(string(b), 80))
	}
	port, err = strconv.Atoi(lines[0])
	if err != nil || port <= 0 || port > 65535 {
		return 0, "", fmt.Errorf("%s: %q is no port", name, truncate(lines[0], 20))
	}
	if !strings.HasPrefix(lines[1], "/devtools/browser/") {
		return 0, "", fmt.Errorf("%s: %q is no browser websocket path (/devtools/browser/ID)", name, truncate(lines[1], 80))
	}
	return port, lines[1], nil
}

// truncate cuts s to n bytes, for an error that quotes a file.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// checkChannel checks a channel name.
func checkChannel(ch string) error {
	switch ch {
	case "", ChannelStable, ChannelBeta, ChannelDev, ChannelCanary:
		return nil
	}
	return fmt.Errorf("--channel %q: want stable, beta, dev or canary", ch)
}

// DefaultUserDataDirs returns the profile directories that Chrome of the
// channel ("" is stable) keeps by default on this system, where --auto-connect
// looks, in its order: Google Chrome's first, as chrome-devtools-mcp's
// --autoConnect finds it (through puppeteer), then Chromium's for the
// stable channel. It does not check that they exist.
func DefaultUserDataDirs(channel string) ([]string, error) {
	if err := checkChannel(channel); err != nil {
		return nil, err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("no home directory to find Chrome's profile in: %w", err)
	}
	return defaultUserDataDirs(runtime.GOOS, channel, home, os.Getenv), nil
}

// defaultUserDataDirs is DefaultUserDataDirs for an OS, a home directory
// and an environment. The places are Chrome's own (chrome_paths_linux.cc,
// chrome_paths_mac.mm, chrome_paths_win.cc).
func defaultUserDataDirs(goos, channel, home string, getenv func(string) string) []string {
	chromium := channel == "" || channel == ChannelStable
	switch goos {
	case "windows":
		base := getenv("LOCALAPPDATA")
		if base == "" {
			base = filepath.Join(home, "AppData", "Local")
		}
		name := map[string]string{ChannelBeta: "Chrome Beta", ChannelDev: "Chrome Dev", ChannelCanary: "Chrome SxS"}[channel]
		dirs := []string{filepath.Join(base, "Google", cmp.Or(name, "Chrome"), "User Data")}
		if chromium {
			dirs = append(dirs, filepath.Join(base, "Chromium", "User Data"))
		}
		return dirs
	case "darwin":
		base := filepath.Join(home, "Library", "Application Support")
		name := map[string]string{ChannelBeta: "Chrome Beta", ChannelDev: "Chrome Dev", ChannelCanary: "Chrome Canary"}[channel]
		dirs := []string{filepath.Join(base, "Google", cmp.Or(name, "Chrome"))}
		if chromium {
			dirs = append(dirs, filepath.Join(base, "Chromium"))
		}
		return dirs
	}
	base := cmp.Or(getenv("CHROME_CONFIG_HOME"), getenv("XDG_CONFIG_HOME"), filepath.Join(home, ".config"))
	name := map[string]string{ChannelBeta: "google-chrome-beta", ChannelDev: "google-chrome-unstable", ChannelCanary: "google-chrome-canary"}[channel]
	dirs := []string{filepath.Join(base, cmp.Or(name, "google-chrome"))}
	if chromium {
		dirs = append(dirs, filepath.Join(base, "chromium"))
	}
	return dirs
}

// checkHeld refuses to launch Chrome on a UserDataDir that a Chrome came to
// hold after pagemux started (Connect attaches to one that held it then):
// Chrome would hand its command line to that one, opening a window in the
// user's Chrome, and exit. It checks only until pagemux's own first launch
// succeeded: after it the lock may name the Chrome pagemux launched and
// ended, for as long as that one takes to be reaped.
func (b *Browser) checkHeld() error {
	dir := b.cfg.UserDataDir
	if dir == "" || b.counts.launches.Load() > 0 {
		return nil
	}
	pid, held := ProfileHolder(dir)
	if !held {
		return nil
	}
	return fmt.Errorf("%w: --user-data-dir %s is in use by a Chrome%s started after pagemux: quit it, or turn remote debugging on in it (%s) and start pagemux again to attach to it",
		ErrStart, dir, pidNote(pid), howToDebug)
}
