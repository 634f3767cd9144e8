//go:build unix

package browser

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultUserDataDirs: --auto-connect looks where Chrome keeps its
// profile on each OS, per channel, as chrome-devtools-mcp (puppeteer) does,
// with Chromium's after Chrome's for the stable channel.
func TestDefaultUserDataDirs(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	none := env(nil)
	j := filepath.Join
	tests := []struct {
		goos, channel string
		getenv        func(string) string
		want          []string
	}{
		{"linux", "", none, []string{j("/h", ".config", "google-chrome"), j("/h", ".config", "chromium")}},
		{"linux", ChannelStable, env(map[string]string{"XDG_CONFIG_HOME": "/x"}), []string{j("/x", "google-chrome"), j("/x", "chromium")}},
		{"linux", ChannelBeta, env(map[string]string{"CHROME_CONFIG_HOME": "/c", "XDG_CONFIG_HOME": "/x"}), []string{j("/c", "google-chrome-beta")}},
		{"linux", ChannelDev, none, []string{j("/h", ".config", "google-chrome-unstable")}},
		{"freebsd", ChannelCanary, none, []string{j("/h", ".config", "google-chrome-canary")}},
		{"darwin", "", none, []string{j("/h", "Library", "Application Support", "Google", "Chrome"), j("/h", "Library", "Application Support", "Chromium")}},
		{"darwin", ChannelCanary, none, []string{j("/h", "Library", "Application Support", "Google", "Chrome Canary")}},
		{"windows", "", env(map[string]string{"LOCALAPPDATA": "/l"}), []string{j("/l", "Google", "Chrome", "User Data"), j("/l", "Chromium", "User Data")}},
		{"windows", ChannelCanary, none, []string{j("/h", "AppData", "Local", "Google", "Chrome SxS", "User Data")}},
		{"windows", ChannelDev, none, []string{j("/h", "AppData", "Local", "Google", "Chrome Dev", "User Data")}},
	}
	for _, tt := range tests {
		if got := defaultUserDataDirs(tt.goos, tt.channel, "/h", tt.getenv); !slicesEqual(got, tt.want) {
			t.Errorf("%s %q: %q, want %q", tt.goos, tt.channel, got, tt.want)
		}
	}
	if _, err := DefaultUserDataDirs("nightly"); err == nil || !strings.Contains(err.Error(), "want stable, beta, dev or canary") {
		t.Errorf("an unknown channel: %v", err)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// TestReadActivePort reads Chrome's two lines, and refuses what is not them
// with an error that names the file.
func TestReadActivePort(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := ReadActivePort(dir); !errors.Is(err, ErrNoActivePort) {
		t.Fatalf("no file: %v", err)
	}
	for _, bad := range []string{"", "9222\n", "port\n/devtools/browser/x\n", "0\n/devtools/browser/x\n", "70000\n/devtools/browser/x\n", "9222\n/json/version\n", "9222\n/devtools/browser/x\nmore\n"} {
		writeActivePort(t, dir, bad)
		if _, _, err := ReadActivePort(dir); err == nil || errors.Is(err, ErrNoActivePort) || !strings.Contains(err.Error(), ActivePortFile) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	writeActivePort(t, dir, "9222\r\n/devtools/browser/8d1e\r\n")
	port, path, err := ReadActivePort(dir)
	if err != nil || port != 9222 || path != "/devtools/browser/8d1e" {
		t.Errorf("got %d %q %v", port, path, err)
	}
}

func writeActivePort(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ActivePortFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// listen returns a loopback port that accepts connections until the test
// ends: a stand-in for Chrome's DevTools server, which Connect only dials.
func listen(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// holdProfile makes dir look held by the process pid, as Chrome's
// SingletonLock link does.
func holdProfile(t *testing.T, dir string, pid int) {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fmt.Sprintf("%s-%d", host, pid), filepath.Join(dir, "SingletonLock")); err != nil {
		t.Fatal(err)
	}
}

// deadPID returns the pid of a process that ran and is gone.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestConnect: --auto-connect and a held --user-data-dir become a
// --ws-endpoint on loopback; no DevToolsActivePort, a stale one, and a
// held profile whose Chrome has no debugging port fail saying what to do;
// a profile no one holds, and a stale lock, are launched on as before.
func TestConnect(t *testing.T) {
	live := listen(t)
	withPort := func(port int) string {
		dir := t.TempDir()
		writeActivePort(t, dir, fmt.Sprintf("%d\n/devtools/browser/abc\n", port))
		return dir
	}
	wantWS := fmt.Sprintf("ws://127.0.0.1:%d/devtools/browser/abc", live)

	t.Run("auto-connect", func(t *testing.T) {
		dir := withPort(live)
		c := Config{AutoConnect: true, UserDataDir: dir}
		if err := c.Connect(); err != nil {
			t.Fatal(err)
		}
		if c.WSEndpoint != wantWS || c.Profile == nil || c.Profile.Dir != dir || c.Profile.Held || !c.Attaches() {
			t.Errorf("got %q %+v", c.WSEndpoint, c.Profile)
		}
	})
	t.Run("auto-connect default profile", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		t.Setenv("XDG_CONFIG_HOME", "")
		t.Setenv("CHROME_CONFIG_HOME", "")
		// Chrome's directory is there but not running; Chromium's runs.
		chromium := filepath.Join(home, ".config", "chromium")
		for _, d := range []string{filepath.Join(home, ".config", "google-chrome"), chromium} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		writeActivePort(t, chromium, fmt.Sprintf("%d\n/devtools/browser/abc\n", live))
		c := Config{AutoConnect: true}
		if err := c.Connect(); err != nil {
			t.Fatal(err)
		}
		if c.WSEndpoint != wantWS || c.Profile.Dir != chromium || c.UserDataDir != chromium {
			t.Errorf("got %q %+v", c.WSEndpoint, c.Profile)
		}
		c = Config{AutoConnect: true, Channel: ChannelBeta}
		err := c.Connect()
		if !errors.Is(err, ErrNoActivePort) || !strings.Contains(err.Error(), "google-chrome-beta") {
			t.Errorf("beta has no Chrome running: %v", err)
		}
	})
	t.Run("auto-connect none", func(t *testing.T) {
		c := Config{AutoConnect: true, UserDataDir: t.TempDir()}
		err := c.Connect()
		if !errors.Is(err, ErrNoActivePort) || c.WSEndpoint != "" {
			t.Fatalf("got %v, %q", err, c.WSEndpoint)
		}
		for _, want := range []string{"chrome://inspect/#remote-debugging", "--remote-debugging-port", c.UserDataDir} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error says no %q: %v", want, err)
			}
		}
	})
	t.Run("auto-connect stale", func(t *testing.T) {
		c := Config{AutoConnect: true, UserDataDir: withPort(closedPort(t))}
		err := c.Connect()
		if err == nil || !strings.Contains(err.Error(), "nothing answers") || !strings.Contains(err.Error(), "chrome://inspect/#remote-debugging") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("auto-connect with an address", func(t *testing.T) {
		c := Config{AutoConnect: true, BrowserURL: "http://127.0.0.1:9222"}
		if err := c.Connect(); err == nil || !strings.Contains(err.Error(), "not both") {
			t.Errorf("got %v", err)
		}
		c = Config{AutoConnect: true, Channel: "nightly"}
		if err := c.Connect(); err == nil || !strings.Contains(err.Error(), "--channel") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("held", func(t *testing.T) {
		dir := withPort(live)
		holdProfile(t, dir, os.Getpid())
		c := Config{UserDataDir: dir}
		if err := c.Connect(); err != nil {
			t.Fatal(err)
		}
		if c.WSEndpoint != wantWS || c.Profile == nil || !c.Profile.Held || c.Profile.PID != os.Getpid() {
			t.Errorf("got %q %+v", c.WSEndpoint, c.Profile)
		}
		if s := c.Profile.String(); !strings.Contains(s, "held by a running Chrome") || !strings.Contains(s, dir) {
			t.Errorf("the log says %q", s)
		}
	})
	t.Run("held without a port", func(t *testing.T) {
		dir := t.TempDir()
		holdProfile(t, dir, os.Getpid())
		c := Config{UserDataDir: dir}
		err := c.Connect()
		if err == nil || c.WSEndpoint != "" {
			t.Fatalf("got %v, %q", err, c.WSEndpoint)
		}
		for _, want := range []string{"in use by a running Chrome", fmt.Sprint(os.Getpid()), "chrome://inspect/#remote-debugging", "--remote-debugging-port", "another --user-data-dir"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error says no %q: %v", want, err)
			}
		}
	})
	t.Run("not held", func(t *testing.T) {
		free := withPort(live) // a port file alone is no hold
		stale := t.TempDir()
		holdProfile(t, stale, deadPID(t))
		for _, dir := range []string{free, stale, t.TempDir()} {
			c := Config{UserDataDir: dir}
			if err := c.Connect(); err != nil || c.WSEndpoint != "" || c.Attaches() {
				t.Errorf("%s: %v, %q", dir, err, c.WSEndpoint)
			}
		}
		c := Config{UserDataDir: withPort(live), BrowserURL: "http://127.0.0.1:1"}
		holdProfile(t, c.UserDataDir, os.Getpid())
		if err := c.Connect(); err != nil || c.WSEndpoint != "" {
			t.Errorf("an address given wins: %v, %q", err, c.WSEndpoint)
		}
	})
}

// TestLaunchOnHeldProfile: a profile that a Chrome came to hold after
// pagemux started is not launched on (Chrome would open a window in that
// one): the call fails saying so, and no Chrome starts.
func TestLaunchOnHeldProfile(t *testing.T) {
	dir := t.TempDir()
	holdProfile(t, dir, os.Getpid())
	b := New(Config{UserDataDir: dir, ExecPath: "/nonexistent/chrome"})
	defer b.Close()
	err := b.Start(t.Context())
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "in use by a Chrome (pid") || !strings.Contains(err.Error(), "chrome://inspect/#remote-debugging") {
		t.Fatalf("got %v", err)
	}
}
