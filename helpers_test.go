package main

// The helpers most tests of this package share, one of each: the pagemux
// binary they run, the Chrome they attach to, the HTTP servers they start,
// the sites they serve, and the calls they make (over mcptest.Call). The
// stdio server harness (startServer) stays beside the exit tests in
// main_test.go, and smoke's runners in smoke_main_test.go.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/internal/mcptest"
)

var (
	pagemuxOnce sync.Once
	pagemuxBin  string
	pagemuxErr  error
)

// binName is the name the test binary answers to as pagemux (TestMain).
const binName = "pagemux"

// pagemuxBinary returns the pagemux the tests run: this test binary,
// linked as binName, whose TestMain then runs pagemux's main, the code go
// build would link into bin/pagemux. It was built with the tests' flags
// (-race when they run with it: a data race in pagemux fails its test
// too), and linking pagemux once more cost every run of these tests 3.5
// CPU-s (the link of a -race binary), seconds before the first test could
// start. A hard link, where the filesystem allows one, so that pagemux
// sees itself as binName (os.Executable); else a symlink.
func pagemuxBinary(t testing.TB) string {
	t.Helper()
	pagemuxOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			pagemuxErr = err
			return
		}
		dir, err := os.MkdirTemp("", "pagemux-bin")
		if err != nil {
			pagemuxErr = err
			return
		}
		pagemuxBin = filepath.Join(dir, binName)
		if os.Link(self, pagemuxBin) != nil {
			if err := os.Symlink(self, pagemuxBin); err != nil {
				pagemuxErr = fmt.Errorf("link the test binary as %s: %v", pagemuxBin, err)
			}
		}
	})
	if pagemuxErr != nil {
		t.Fatal(pagemuxErr)
	}
	return pagemuxBin
}

// shortTmp returns a temp dir short enough for Chrome's singleton socket to
// fit in the profile; t.TempDir is too long for it, which tests the other
// way, where the singleton directory lies beside the profile.
func shortTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHTTPServer starts the binary with --http and the given flags, waits
// for /healthz, and stops it with SIGTERM when the test ends. It returns the
// base URL and the server's stderr.
func startHTTPServer(t testing.TB, bin string, flags ...string) (string, *mcptest.LockedBuffer) {
	t.Helper()
	addr := freeAddr(t)
	return startHTTPCommand(t, exec.Command(bin, append([]string{"--http", addr}, flags...)...), addr)
}

// startHTTPCommand is startHTTPServer for a command made ready to start
// (flags, environment, user), which serves on addr.
func startHTTPCommand(t testing.TB, cmd *exec.Cmd, addr string) (string, *mcptest.LockedBuffer) {
	t.Helper()
	stderr := new(mcptest.LockedBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("pagemux --http did not exit on SIGTERM")
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return base, stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("pagemux --http never answered /healthz: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// callTool calls a tool and returns its text and whether it is an error; a
// protocol error, or no answer within two minutes, fails the test.
func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r := mcptest.Call(ctx, c, tool, args)
	if r.Err != nil {
		t.Fatalf("%s: %v", tool, r.Err)
	}
	return r.Text, r.IsError
}

// mustCall calls a tool that must succeed and returns its text: a protocol
// error or an error result fails the test.
func mustCall(t *testing.T, c *client.Client, tool string, args map[string]any) string {
	t.Helper()
	r := mcptest.Call(t.Context(), c, tool, args)
	if r.Err != nil {
		t.Fatalf("%s: %v", tool, r.Err)
	}
	if r.IsError {
		t.Fatalf("%s: %s", tool, r.Text)
	}
	return r.Text
}

// debuggableChrome starts a headless Chrome with a DevTools port on
// loopback, as a user starts the one several pagemux processes share, and
// returns its --browser-url. It is killed when the test ends.
func debuggableChrome(t testing.TB) string {
	t.Helper()
	url, stop, err := startDebuggableChrome()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

var shared struct {
	once sync.Once
	url  string
	stop func()
	err  error
}

// sharedChrome is one debuggableChrome for the tests of this binary whose
// pagemux processes act only on pages of their own: HTTP agents, each in a
// browser context of its own that sees only its own pages (--pages owned),
// and stdio processes that act on the tab they open to attach with or on the
// pages they open, and read no list of all tabs. A Chrome's start costs a
// CPU-s, and what these tests prove (transports, bridges, SDKs, their order
// and cancellation, flags) is not how pagemux launches Chrome, which the
// exit tests and TestHTTPBinary prove. Tests that need a Chrome to
// themselves (etcd's shared page ids, counts of all tabs) start their own.
// TestMain kills it.
func sharedChrome(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.url, shared.stop, shared.err = startDebuggableChrome() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.url
}

// startDebuggableChrome starts a headless Chrome with a DevTools port on
// loopback and returns its URL and a stop that kills it and its helpers and
// removes its profile.
func startDebuggableChrome() (string, func(), error) {
	path, err := exec.LookPath("chromium")
	if p := os.Getenv("CHROME_PATH"); p != "" {
		path, err = p, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("these tests need Chrome: %v", err)
	}
	// Not t.TempDir: Chrome's helpers may still write there as it goes.
	dir, err := os.MkdirTemp("", "pagemux-shared-chrome")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=0", "--user-data-dir="+dir,
		// As in a Chrome pagemux launches headless: no address bar popup
		// for Chrome's WebUI renderer to draw in every window.
		"--disable-features=Translate,WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers go with it
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		// A helper may still be on its way out: try a few times.
		for i := 0; i < 50 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Chrome writes the port it took into the profile once it listens;
	// nothing tells of it, so look until it is there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if port, _, ok := strings.Cut(string(b), "\n"); err == nil && ok && port != "" {
			return "http://127.0.0.1:" + port, stop, nil
		}
		select {
		case <-exited:
			stop()
			return "", nil, errors.New("chrome exited before it opened its DevTools port")
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("chrome wrote no DevToolsActivePort in 30 s")
		}
	}
}

// pathSite serves pages titled with their path.
func pathSite(t *testing.T) *httptest.Server {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title><p>%s", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(site.Close)
	return site
}

// logSite serves a page whose calls log their enter and leave in it.
func logSite(t testing.TB) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>shared</title><script>window.calls = []</script><p>shared tab`)
	}))
	t.Cleanup(ts.Close)
	return ts
}
