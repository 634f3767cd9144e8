package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/internal/testchrome"
)

// TestMain fails the run when a temporary Chrome profile outlives its
// browser. The profiles go to a directory of this test binary's own, so
// packages tested in parallel do not see each other's.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "pagemux-browser-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	if shared.b != nil {
		shared.b.Close()
	}
	if sharedFull.b != nil {
		sharedFull.b.Close()
	}
	if leaked := leftBehind(tmp); len(leaked) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: temporary Chrome profiles or singleton directories left behind:", leaked)
		code = 1
	}
	removeAllRetry(tmp)
	os.Exit(code)
}

func needChrome(t *testing.T) string {
	t.Helper()
	path, err := Config{}.ResolveExecPath()
	if err != nil {
		t.Fatalf("these tests need Chrome: %v", err)
	}
	return path
}

func startBrowser(t *testing.T, cfg Config) *Browser {
	t.Helper()
	needChrome(t)
	b := New(cfg)
	t.Cleanup(func() { b.Close() })
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return b
}

// sharedChrome is a Chrome that tests share, started on first use;
// TestMain closes it.
type sharedChrome struct {
	sync.Mutex
	b *Browser
}

// get returns the shared Chrome, starting it with cfg on first use.
func (s *sharedChrome) get(t *testing.T, cfg Config) *Browser {
	t.Helper()
	needChrome(t)
	s.Lock()
	defer s.Unlock()
	if s.b == nil {
		b := New(cfg)
		if err := b.Start(t.Context()); err != nil {
			b.Close()
			t.Fatal(err)
		}
		s.b = b
	}
	return s.b
}

// shared and sharedFull are the Chromes of sharedBrowser and fullBrowser.
var shared, sharedFull sharedChrome

// sharedBrowser returns a Chrome (Config{}) shared by the tests that only
// work on pages of their own, started on first use: a launch and its end
// cost 1-1.5 CPU-s, on a machine whose 2 CPUs run every package's tests at
// once (issue 16). A test on it closes the pages it opened (closeAtEnd),
// and does nothing to the browser as a whole: it does not crash, freeze or
// close it, change browser-wide settings (downloads, headers, URL policy)
// or count its pages, processes or contexts; such a test starts a Chrome of
// its own with startBrowser.
func sharedBrowser(t *testing.T) *Browser {
	t.Helper()
	return shared.get(t, Config{})
}

// fullBrowser is sharedBrowser on the full Chrome (testchrome.Full), for
// the tests of what Chrome's headless shell, which most tests run on, does
// not do as the full Chrome does: put a frame of another site in a process
// of its own, show its error pages.
func fullBrowser(t *testing.T) *Browser {
	t.Helper()
	return sharedFull.get(t, Config{ExecPath: testchrome.Full()})
}

// closeAtEnd closes p when the test ends, so that a shared Chrome does not
// gather the pages of every test. A page the test closed itself is no
// matter.
func closeAtEnd(t *testing.T, b *Browser, p *Page) {
	t.Cleanup(func() { b.ClosePage(context.Background(), p) })
}

// The process flags reach Chrome's command line.
func TestCommandLineFlags(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{
		RendererProcessLimit: 2, ProcessPerSite: true, DisableSharedWorkers: true,
		ViewportWidth: 800, ViewportHeight: 600, ChromeArgs: []string{"--lang=de", "--disable-gpu"},
	})
	args, err := b.CommandLine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"--renderer-process-limit=2", "--process-per-site", "--disable-shared-workers", "--window-size=800,600", "--lang=de", "--disable-gpu", "--headless"} {
		if !strings.Contains(line, want) {
			t.Errorf("command line lacks %s: %s", want, line)
		}
	}
}

// Concurrent first calls share one launch.
func TestConcurrentStart(t *testing.T) {
	t.Parallel()
	needChrome(t)
	b := New(Config{})
	defer b.Close()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = b.Start(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.Pages()); n != 1 {
		t.Fatalf("%d pages after concurrent starts, want the one of a single launch", n)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-chrome")
	os.WriteFile(script, []byte("#!/bin/sh\necho 'fake chrome: cannot open display' >&2\nexit 3\n"), 0o755)
	tests := []struct {
		name  string
		cfg   Config
		wants []string
	}{
		{"missing binary", Config{ExecPath: filepath.Join(dir, "nope")}, []string{"chrome could not start", filepath.Join(dir, "nope")}},
		{"binary fails", Config{ExecPath: script}, []string{"chrome could not start", script, "cannot open display"}},
		{"bad chrome arg", Config{ChromeArgs: []string{"lang=de"}}, []string{`--chrome-arg "lang=de"`}},
		{"bad attach url", Config{BrowserURL: "127.0.0.1:9222"}, []string{"want http://HOST:PORT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.cfg)
			defer b.Close()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			err := b.Start(ctx)
			if err == nil {
				t.Fatal("started")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			// A failed start is tried again, and fails again.
			if err := b.Start(ctx); err == nil {
				t.Error("the second start worked")
			}
		})
	}
}

// A page that closes itself, and a page opened by a page, are tracked.
func TestPagesTrackedFromEvents(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	closed := make(chan int, 4)
	b.OnPageClosed(func(p *Page) { closed <- p.ID })
	first := b.Pages()[0]
	if err := first.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Evaluate(t.Context(), "() => { window.open('about:blank#popup'); return 1 }", nil); err != nil {
		t.Fatal(err)
	}
	var popup *Page
	deadline := time.Now().Add(10 * time.Second)
	for popup == nil && time.Now().Before(deadline) {
		for _, p := range b.Pages() {
			if p.ID != first.ID {
				popup = p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if popup == nil {
		t.Fatal("the page opened by window.open was not tracked")
	}
	gen := popup.Generation()
	if _, err := popup.Evaluate(t.Context(), "() => { window.close(); return 1 }", nil); err != nil && !errors.Is(err, ErrPageClosed) {
		t.Fatal(err)
	}
	select {
	case id := <-closed:
		if id != popup.ID {
			t.Fatalf("page %d reported closed, want %d", id, popup.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a page that closed itself was not reported")
	}
	if !popup.Closed() || popup.Generation() == gen {
		t.Fatal("closed page kept its generation")
	}
	if _, err := b.Page(popup.ID); !errors.Is(err, ErrPageClosed) {
		t.Fatalf("Page of a closed page: %v", err)
	}
}

// runningChrome starts a Chrome that pagemux did not launch, serving DevTools
// on a loopback port, and returns its address and a channel closed when it
// exits. The test's cleanup kills it.
func runningChrome(t *testing.T) (browserURL string, exited <-chan struct{}) {
	t.Helper()
	path := needChrome(t)
	// Not t.TempDir: Chrome's helpers may still write there after the kill.
	dir, err := os.MkdirTemp("", "pagemux-attach-test")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--user-data-dir="+dir, "about:blank")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		sd := singletonDir(dir) // killed, Chrome leaves it (TestMain checks)
		cmd.Process.Kill()
		<-done
		removeAllRetry(dir)
		removeSingletonDir(sd)
	})
	return "http://127.0.0.1:" + devToolsPort(t, dir), done
}

// Attaching to a running Chrome never closes it.
func TestAttachLeavesBrowserRunning(t *testing.T) {
	t.Parallel()
	browserURL, exited := runningChrome(t)
	b := New(Config{BrowserURL: browserURL})
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(b.Pages()) == 0 {
		t.Fatal("no pages found in the running browser")
	}
	p, err := b.NewPage(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(t.Context(), "about:blank#attached", 0); err != nil {
		t.Fatal(err)
	}
	b.Close()
	select {
	case <-exited:
		t.Fatal("closing pagemux closed a browser it did not start")
	case <-time.After(time.Second):
	}
	// The tabs pagemux made, the one it attached with among them, are gone.
	resp, err := http.Get(browserURL + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var targets []struct{ Type, URL string }
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, tg := range targets {
		if tg.Type == "page" {
			pages = append(pages, tg.URL)
		}
	}
	if len(pages) != 1 {
		t.Errorf("pages left in the browser: %q, want its own first tab only", pages)
	}
}

func removeAllRetry(dir string) {
	for range 50 {
		if os.RemoveAll(dir) == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// devToolsPort reads the port Chrome chose from its profile.
func devToolsPort(t *testing.T, dir string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		f, err := os.Open(filepath.Join(dir, "DevToolsActivePort"))
		if err == nil {
			s := bufio.NewScanner(f)
			s.Scan()
			f.Close()
			if port := strings.TrimSpace(s.Text()); port != "" {
				return port
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("Chrome wrote no DevToolsActivePort")
	return ""
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   string
		want Key
		err  string
	}{
		{"Enter", Key{Name: "Enter"}, ""},
		{"a", Key{Name: "a"}, ""},
		{"Control+Shift+R", Key{Name: "R", Modifiers: []string{"Control", "Shift"}}, ""},
		{"Ctrl+a", Key{Name: "a", Modifiers: []string{"Control"}}, ""},
		{"Control++", Key{Name: "+", Modifiers: []string{"Control"}}, ""},
		{"Esc", Key{Name: "Escape"}, ""},
		{"Hyper+x", Key{}, "not a modifier"},
		{"Bogus", Key{}, "unknown key"},
		{"", Key{}, "unknown key"},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseKey(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("ParseKey(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// A crashed renderer gives a clear error, and a navigation brings it back.
func TestRendererCrash(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(t.Context(), "about:blank#before", 0); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := p.Context(t.Context())
	go chromedp.Call(cctx, page.Crash, cdp.Empty{}) // never answers: the renderer is gone
	deadline := time.Now().Add(20 * time.Second)
	for !p.Crashed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if !p.Crashed() {
		t.Fatal("the crash was not noticed")
	}
	if _, err := p.Evaluate(t.Context(), "() => 1", nil); !errors.Is(err, ErrCrashed) {
		t.Fatalf("evaluate on a crashed page: %v", err)
	}
	if err := p.Navigate(t.Context(), "about:blank#after", 0); err != nil {
		t.Fatalf("navigate to recover: %v", err)
	}
	if v, err := p.Evaluate(t.Context(), "() => location.hash", nil); err != nil || string(v) != `"#after"` {
		t.Fatalf("after recovery: %s %v", v, err)
	}
}

// When Chrome dies its pages close, and the next call starts a new one,
// with the cookies SetCookies gave the last.
func TestBrowserRelaunch(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	old := b.Pages()[0]
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer site.Close()
	if err := b.SetCookies(t.Context(), []*network.CookieParam{{Name: "kept", Value: "1", URL: site.URL}}); err != nil {
		t.Fatal(err)
	}
	closed := make(chan int, 8)
	b.OnPageClosed(func(p *Page) { closed <- p.ID })
	b.mu.Lock()
	proc := chromedp.FromContext(b.members[0].launch.rootCtx).Browser.Process()
	b.mu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-closed:
		if id != old.ID {
			t.Fatalf("page %d closed, want %d", id, old.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the pages of a dead Chrome were not closed")
	}
	p, err := b.Selected(t.Context())
	if err != nil {
		t.Fatalf("no page after relaunch: %v", err)
	}
	if p.ID <= old.ID {
		t.Fatalf("page id %d reused", p.ID)
	}
	if v, err := p.Evaluate(t.Context(), "() => 1 + 1", nil); err != nil || string(v) != "2" {
		t.Fatalf("relaunched Chrome: %s %v", v, err)
	}
	if err := p.Navigate(t.Context(), site.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, p, "() => document.cookie"); got != `"kept=1"` {
		t.Errorf("the relaunched Chrome's page reads the cookies %s, want kept=1 as SetCookies gave the last", got)
	}
}

// Closing a page of a browser being closed says so (ErrBrowserClosed), not
// "context canceled": an agent that leaves while pagemux shuts down has its
// pages closed then, and tools logs that as nothing to warn of. Close is
// held at the moment it has begun (closed set, the pages not gone yet).
func TestClosePageOfClosingBrowser(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	ctx := t.Context()
	if _, err := b.NewPage(ctx, true); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewPage(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	err = b.ClosePage(ctx, p)
	b.mu.Lock()
	b.closed = false
	b.mu.Unlock()
	if !errors.Is(err, ErrBrowserClosed) {
		t.Errorf("ClosePage while closing: %v; want ErrBrowserClosed", err)
	}
	if p.Closed() {
		t.Error("the page was closed")
	}
}
