package browser

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/internal/testchrome"
	"github.com/pagemux/pagemux/policy"
)

// endpointServer stands for one of pagemux's or Chrome's own endpoints: a
// tab must never reach it. It counts the requests that did.
type endpointServer struct {
	*httptest.Server
	port string
	hits atomic.Int32
}

func newEndpoint(t *testing.T) *endpointServer {
	t.Helper()
	e := &endpointServer{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		e.hits.Add(1)
		fmt.Fprint(w, "<!doctype html><title>endpoint</title><p>SECRET-ENDPOINT-CONTENT")
	}))
	t.Cleanup(e.Close)
	_, e.port, _ = net.SplitHostPort(e.Listener.Addr().String())
	return e
}

// watchedPolicy is a policy.Policy that tells the test of each refusal.
type watchedPolicy struct {
	*policy.Policy
	mu      sync.Mutex
	refused []string
	changed chan struct{}
}

func (w *watchedPolicy) Check(url string) error {
	err := w.Policy.Check(url)
	if err != nil {
		w.mu.Lock()
		w.refused = append(w.refused, url)
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
	return err
}

// waitRefused waits until the policy refused a URL containing part.
func (w *watchedPolicy) waitRefused(t *testing.T, part string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		for _, u := range w.refused {
			if strings.Contains(u, part) {
				w.mu.Unlock()
				return
			}
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no URL with %q was refused; refused: %q", part, w.refused)
		}
	}
}

func guardedBrowser(t *testing.T, cfg Config, o policy.Options) (*Browser, *watchedPolicy) {
	t.Helper()
	pol, err := policy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	w := &watchedPolicy{Policy: pol, changed: make(chan struct{})}
	needChrome(t)
	b := New(cfg)
	b.SetURLPolicy(w)
	t.Cleanup(func() { b.Close() })
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return b, w
}

// waitURL waits for the page's main frame to be on url.
func waitURL(t *testing.T, p *Page, url string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		_, _, changed := p.state()
		if p.URL() == url {
			return
		}
		select {
		case <-changed:
		case <-p.Done():
			t.Fatalf("page %d closed while waiting for %s", p.ID, url)
		case <-timeout:
			t.Fatalf("page %d is on %s, want %s", p.ID, p.URL(), url)
		}
	}
}

// Every way a page can take a tab to one of the endpoints is refused before
// the request leaves Chrome: a redirect, a meta refresh, a form, a script's
// location assignment, a link click, an iframe, a popup (window.open, a
// target=_blank link), in any spelling of the endpoint's address; and a
// script's fetch of an endpoint, as of Chrome's /json/close/ID.
func TestURLGuardPageInitiated(t *testing.T) {
	t.Parallel()
	ep := newEndpoint(t)
	target := "http://127.1:" + ep.port + "/json/list"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := r.URL.Query().Get("to")
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, to, http.StatusFound)
		case "/meta":
			fmt.Fprintf(w, `<meta http-equiv="refresh" content="0;url=%s"><p>meta`, to)
		case "/form":
			fmt.Fprintf(w, `<form id="f" method="post" action="%s"><input name="q"></form>`, to)
		case "/script":
			fmt.Fprintf(w, `<p>script<script>location.href = %q</script>`, to)
		case "/link":
			fmt.Fprintf(w, `<a id="a" href="%s">link</a>`, to)
		case "/blank":
			fmt.Fprintf(w, `<a id="a" target="_blank" href="%s">popup link</a>`, to)
		case "/iframe":
			fmt.Fprintf(w, `<p>frame<iframe src="%s"></iframe>`, to)
		default:
			fmt.Fprint(w, `<p>plain`)
		}
	}))
	defer site.Close()
	b, w := guardedBrowser(t, Config{}, policy.Options{Endpoints: func() []string { return []string{"127.0.0.1:" + ep.port} }})
	tests := []struct {
		name, path, act string
		spelling        string
	}{
		{"redirect", "/redirect", "", "http://127.1:" + ep.port + "/redirect-hop"},
		{"meta refresh", "/meta", "", "http://2130706433:" + ep.port + "/meta"},
		{"form submit", "/form", `() => document.getElementById("f").submit()`, "http://0177.0.0.1:" + ep.port + "/form"},
		{"location", "/script", "", "http://0x7f000001:" + ep.port + "/script"},
		{"link click", "/link", `() => document.getElementById("a").click()`, "http://localhost:" + ep.port + "/link"},
		{"target=_blank", "/blank", `() => document.getElementById("a").click()`, "http://[::ffff:127.0.0.1]:" + ep.port + "/blank"},
		{"window.open", "/", `() => { window.open("` + target + `-open"); return 1 }`, ""},
		{"iframe", "/iframe", "", "http://127.0.0.1:" + ep.port + "/iframe"},
		{"script fetch", "/", `() => fetch("` + target + `-fetch", {mode: "no-cors"}).then(() => "sent", () => "failed")`, ""},
		{"iframe src later", "/", `() => { const f = document.createElement("iframe"); f.src = "` + target + `-later"; document.body.append(f); return 1 }`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := b.NewPage(t.Context(), true)
			if err != nil {
				t.Fatal(err)
			}
			to := tt.spelling
			if to == "" {
				to = target
			}
			u := site.URL + tt.path + "?to=" + to
			err = p.Navigate(t.Context(), u, 0)
			if tt.path == "/redirect" {
				if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "127.0.0.1:"+ep.port) {
					t.Fatalf("navigating into a redirect to the endpoint: %v, want it refused naming the endpoint", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.act != "" {
				if _, err := p.Evaluate(t.Context(), tt.act, nil); err != nil {
					t.Fatal(err)
				}
			}
			part := strings.TrimPrefix(strings.TrimPrefix(to, "http://"), "[")
			part = part[strings.Index(part, "/"):]
			if tt.spelling == "" {
				part = tt.act[strings.Index(tt.act, "/json/list"):]
				part = part[:strings.IndexAny(part, `"`)]
			}
			w.waitRefused(t, part)
			if n := ep.hits.Load(); n != 0 {
				t.Fatalf("the endpoint was reached %d times", n)
			}
			snap, err := p.Snapshot(t.Context(), false)
			if err == nil && strings.Contains(snap.Text, "SECRET-ENDPOINT-CONTENT") {
				t.Fatalf("the page shows the endpoint:\n%s", snap.Text)
			}
		})
	}
}

// Spellings of 127.0.0.1 that Chrome's URL parser reaches the same server
// with: the policy reads each as Chrome does, and refuses it.
func TestURLGuardSpellingsChromeReaches(t *testing.T) {
	t.Parallel()
	ep := newEndpoint(t)
	b := sharedBrowser(t) // no policy on it: its page is all it uses
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	pol, _ := policy.New(policy.Options{Endpoints: func() []string { return []string{"127.0.0.1:" + ep.port} }})
	for _, host := range []string{
		"127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "017700000001", "127.0.0.1.",
		"LOCALHOST", "localhost.", "foo.localhost", "user:pw@127.0.0.1", "evil.test@127.0.0.1", "127.0.0.%31", "１２７.０.０.１",
	} {
		u := "http://" + host + ":" + ep.port + "/spelling"
		if err := pol.Check(u); err == nil {
			t.Errorf("the policy lets %s through", u)
		}
		before := ep.hits.Load()
		if err := p.Navigate(t.Context(), u, 0); err != nil {
			t.Errorf("Chrome does not reach %s: %v (the policy need not refuse it, but the test expected Chrome to)", u, err)
			continue
		}
		if ep.hits.Load() == before {
			t.Errorf("Chrome did not reach the endpoint at %s (now on %s)", u, p.URL())
		}
	}
}

// A frame that commits a refused URL that interception does not see
// (file:, chrome:), as an outside navigation does, is taken to about:blank,
// and no call reads the page meanwhile; history and reload do not go back.
// On the full Chrome: the headless shell has no chrome: pages, and shows an
// error page for them, which shows the error alone and is left as it is.
func TestURLGuardCommittedRefused(t *testing.T) {
	t.Parallel()
	b, _ := guardedBrowser(t, Config{ExecPath: testchrome.Full()}, policy.Options{})
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(t.Context(), "data:text/html,<p>start", 0); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"file:///etc/passwd", "chrome://version/"} {
		// Not through Navigate, which refuses before it acts: as an outside
		// client or Chrome itself would.
		cctx, cancel := p.Context(t.Context())
		if _, err := chromedp.Call(cctx, page.Navigate, page.NavigateParams{URL: u}); err != nil {
			t.Fatal(err)
		}
		cancel()
		snap, err := p.Snapshot(t.Context(), false)
		var re *RefusedPageError
		switch {
		case errors.As(err, &re):
			if !strings.Contains(err.Error(), "refused") {
				t.Errorf("refusal does not say so: %v", err)
			}
		case err == nil && (strings.Contains(snap.Text, "root:") || strings.Contains(snap.Text, "Command Line")):
			t.Fatalf("the snapshot shows %s:\n%s", u, snap.Text)
		}
		waitURL(t, p, "about:blank")
		if _, err := p.Snapshot(t.Context(), false); err != nil {
			t.Fatalf("snapshot once blanked: %v", err)
		}
		if u != "file:///etc/passwd" {
			continue // chrome: pages start a history of their own
		}
		err = p.History(t.Context(), -1, 0)
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("back into %s: %v, want it refused", u, err)
		}
		if got := p.URL(); got != "about:blank" {
			t.Fatalf("after a refused back the page is on %s", got)
		}
		if err := p.Reload(t.Context(), false, 0); err != nil {
			t.Fatalf("reload of about:blank: %v", err)
		}
	}
	for _, u := range []string{"file:///etc/shadow", "view-source:file:///etc/passwd", "chrome://version", "devtools://devtools/bundled/inspector.html", "chrome-extension://aaaabbbbccccddddeeeeffffgggghhhh/x.html", "about:version"} {
		err := p.Navigate(t.Context(), u, 0)
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Navigate %s: %v, want it refused", u, err)
		}
		if got := p.URL(); got != "about:blank" {
			t.Errorf("after refusing %s the page moved to %s", u, got)
		}
	}
}

// benchNavigate navigates one page to a local page over and over.
func benchNavigate(b *testing.B, o *policy.Options) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><p>bench`)
	}))
	defer site.Close()
	br := New(Config{})
	defer br.Close()
	if o != nil {
		pol, _ := policy.New(*o)
		br.SetURLPolicy(pol)
	}
	if err := br.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	p, err := br.NewPage(b.Context(), true)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if err := p.Navigate(b.Context(), fmt.Sprintf("%s/?%d", site.URL, i), 0); err != nil {
			b.Fatal(err)
		}
	}
}

// The cost of the interception on a navigation: compare the two.
func BenchmarkNavigatePlain(b *testing.B) { benchNavigate(b, nil) }
func BenchmarkNavigateIntercepted(b *testing.B) {
	benchNavigate(b, &policy.Options{Endpoints: func() []string { return []string{"127.0.0.1:1"} }})
}
