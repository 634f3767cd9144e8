package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/internal/mcptest"
)

// sharedChromeProfile returns sharedChrome's URL and its profile directory,
// where it wrote its DevToolsActivePort: a Chromium the tests started with
// a fresh profile and --remote-debugging-port=0, as a user starts one to
// debug, and which holds that profile (its SingletonLock) while it runs.
// The directory is found by the port the file names, among the profiles
// startDebuggableChrome makes.
func sharedChromeProfile(t *testing.T) (url, dir string) {
	t.Helper()
	url = sharedChrome(t)
	port := url[strings.LastIndexByte(url, ':')+1:]
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pagemux-shared-chrome*"))
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(d, "DevToolsActivePort"))
		if first, _, _ := strings.Cut(string(b), "\n"); first == port {
			return url, d
		}
	}
	t.Fatalf("no profile among %v has the DevToolsActivePort of %s", dirs, url)
	return "", ""
}

// hasTab reports whether the Chrome at url has a tab whose URL ends in path.
func hasTab(t *testing.T, url, path string) bool {
	t.Helper()
	for _, tab := range chromeTabs(t, url) {
		if strings.HasSuffix(tab.URL, path) {
			return true
		}
	}
	return false
}

// openOn has pagemux s open site's path and fails unless the tab shows up
// in the Chrome at chrome: the one pagemux attached to, not one of its own.
func openOn(t *testing.T, s *server, id int, chrome, site, path string) {
	t.Helper()
	s.call(id, "new_page", `{"url":"`+site+path+`"}`)
	if got := s.answer(id); strings.Contains(got, `"isError":true`) {
		t.Fatalf("new_page %s: %s", path, got)
	}
	if !hasTab(t, chrome, path) {
		t.Fatalf("the tab of %s is not in the Chrome at %s: %+v", path, chrome, chromeTabs(t, chrome))
	}
}

// TestAutoConnectBinary: the real binary attaches to a running Chromium
// through the DevToolsActivePort of its profile, with --auto-connect
// --user-data-dir, and with the profile alone, which that Chromium holds
// (a second pagemux launching on it would fail: "the browser is already
// in use"); it says so in its log, opens its tabs in that Chromium, keeps
// agents off its DevTools port and out of its profile, and leaves it
// running at exit with its own tabs closed. Without a DevToolsActivePort,
// or on a profile held by a Chrome without one, it stops at start saying
// how to start Chrome with remote debugging.
func TestAutoConnectBinary(t *testing.T) {
	t.Parallel()
	chrome, profile := sharedChromeProfile(t)
	site := pathSite(t)

	t.Run("auto-connect", func(t *testing.T) {
		t.Parallel()
		// The workspace holds the profile, which its check must refuse.
		s := startServer(t, t.TempDir(), "--auto-connect", "--user-data-dir", profile, "--workspace", filepath.Dir(profile))
		s.waitLog("auto-connect: attaching to the Chrome whose profile is " + profile)
		openOn(t, s, 2, chrome, site.URL, "/auto-connect")
		// The attached Chrome's DevTools port is pagemux's own: no page
		// of an agent may load it, nor any tool reach into its profile.
		s.call(3, "new_page", `{"url":"`+chrome+`/json/version"}`)
		if got := s.answer(3); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "an endpoint of pagemux or of its Chrome") {
			t.Errorf("a page loaded the attached Chrome's DevTools port: %s", got)
		}
		s.call(4, "take_screenshot", fmt.Sprintf(`{"filePath":%q}`, filepath.Join(profile, "Default", "shot.png")))
		if got := s.answer(4); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "lies in Chrome's profile") {
			t.Errorf("a screenshot was written into the attached Chrome's profile: %s", got)
		}
	})
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		// The headless shell (the suite's shared Chrome) keeps no
		// SingletonLock: a profile is held by the full Chrome alone.
		chrome, profile := fullDebuggableChrome(t)
		s := startServer(t, t.TempDir(), "--user-data-dir="+profile)
		s.waitLog("is held by a running Chrome")
		openOn(t, s, 2, chrome, site.URL, "/held-profile")
		s.stdin.Close()
		<-s.exited
		s.exitedCleanly()
		if hasTab(t, chrome, "/held-profile") {
			t.Error("pagemux left its tab open in the Chrome it attached to")
		}
		chromeTabs(t, chrome) // that Chrome still answers: pagemux left it running
	})
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		empty := t.TempDir()
		out := failAtStart(t, "--autoConnect", "--user-data-dir="+empty)
		for _, want := range []string{"no DevToolsActivePort in " + empty, "chrome://inspect/#remote-debugging", "--remote-debugging-port"} {
			if !strings.Contains(out, want) {
				t.Errorf("the error says no %q:\n%s", want, out)
			}
		}
	})
	t.Run("held without a debugging port", func(t *testing.T) {
		t.Parallel()
		// A profile as a Chrome without remote debugging holds it: its
		// SingletonLock names a live process (this test's), and there is
		// no DevToolsActivePort.
		dir := t.TempDir()
		host, err := os.Hostname()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(fmt.Sprintf("%s-%d", host, os.Getpid()), filepath.Join(dir, "SingletonLock")); err != nil {
			t.Fatal(err)
		}
		out := failAtStart(t, "--user-data-dir="+dir)
		for _, want := range []string{"is in use by a running Chrome (pid " + fmt.Sprint(os.Getpid()), "chrome://inspect/#remote-debugging", "--remote-debugging-port", "quit that Chrome", "another --user-data-dir"} {
			if !strings.Contains(out, want) {
				t.Errorf("the error says no %q:\n%s", want, out)
			}
		}
	})
}

// failAtStart runs the binary with args, which must stop it at start with
// status 2, and returns what it wrote.
func failAtStart(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(pagemuxBinary(t), args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("pagemux %s: want exit status 2, got %v:\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// defaultProfileHome returns a home directory that holds, in Chrome's
// default profile on Linux (~/.config/google-chrome), the DevToolsActivePort
// of the Chrome whose profile is profile.
func defaultProfileHome(t *testing.T, profile string) (home, dflt string) {
	t.Helper()
	port, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort"))
	if err != nil {
		t.Fatal(err)
	}
	home = t.TempDir()
	dflt = filepath.Join(home, ".config", "google-chrome")
	if err := os.MkdirAll(dflt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dflt, "DevToolsActivePort"), port, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, dflt
}

// TestAutoConnectHTTP: --autoConnect, as chrome-devtools-mcp spells it,
// with no profile given finds Chrome's in the default place under $HOME
// and attaches there; over --http two agents then share that Chrome, each
// in a context of its own: bob sees none of alice's tabs and may not load
// the Chrome's DevTools port.
func TestAutoConnectHTTP(t *testing.T) {
	t.Parallel()
	chrome, profile := sharedChromeProfile(t)
	home, dflt := defaultProfileHome(t, profile)
	addr := freeAddr(t)
	cmd := exec.Command(pagemuxBinary(t), "--http", addr, "--autoConnect", "--log-level=info",
		"--auth-token", "alice=alice-secret-1", "--auth-token", "bob=bob-secret-12")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "CHROME_CONFIG_HOME=", "TMPDIR="+t.TempDir())
	base, stderr := startHTTPCommand(t, cmd, addr)
	if log := stderr.String(); !strings.Contains(log, "auto-connect: attaching to the Chrome whose profile is "+dflt) {
		t.Fatalf("pagemux did not say where it attaches:\n%s", log)
	}
	site := pathSite(t)
	alice := mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer alice-secret-1"}, "")
	bob := mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer bob-secret-12"}, "")
	mustCall(t, alice, "new_page", map[string]any{"url": site.URL + "/alice-on-the-users-chrome"})
	if !hasTab(t, chrome, "/alice-on-the-users-chrome") {
		t.Fatalf("alice's tab is not in the Chrome auto-connected to: %+v", chromeTabs(t, chrome))
	}
	if got := mustCall(t, bob, "list_pages", nil); strings.Contains(got, "alice-on-the-users-chrome") {
		t.Errorf("bob lists alice's tab:\n%s", got)
	}
	if got, isErr := callTool(t, bob, "new_page", map[string]any{"url": chrome + "/json/list"}); !isErr || !strings.Contains(got, "an endpoint of pagemux or of its Chrome") {
		t.Errorf("bob loaded the DevTools port of the Chrome auto-connected to: %s", got)
	}
}
