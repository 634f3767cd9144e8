package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// TestUIFlags: --ui takes a loopback HOST:PORT, and refuses any other
// address, saying how to bind loopback.
func TestUIFlags(t *testing.T) {
	for _, tt := range []struct {
		arg, err string
	}{
		{"127.0.0.1:8932", ""},
		{"localhost:0", ""},
		{"[::1]:8932", ""},
		{"0.0.0.0:8932", "bind loopback"},
		{"192.0.2.1:8932", "bind loopback"},
		{"8932", "want HOST:PORT"},
	} {
		c, err := parseFlags([]string{"--ui", tt.arg}, &strings.Builder{})
		switch {
		case tt.err == "" && (err != nil || c.ui.addr != tt.arg):
			t.Errorf("--ui %s: %v", tt.arg, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("--ui %s: got %v, want an error saying %q", tt.arg, err, tt.err)
		}
	}
}

// uiSite serves a page that paints without end (a counter, every frame)
// and /hold, which answers once release is closed: a script that fetches it
// holds its page's lock as long as the test wants.
func uiSite(t *testing.T) (site *httptest.Server, release func()) {
	t.Helper()
	held := make(chan struct{})
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Busy page</title><h1 id=n>0</h1>
<script>let n = 0; (function tick() { document.getElementById('n').textContent = ++n; requestAnimationFrame(tick) })()</script>`)
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-held:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "released")
	})
	site = httptest.NewServer(mux)
	t.Cleanup(site.Close)
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	return site, release
}

// uiState is what TestLiveView reads of /ui/state.
type uiState struct {
	Agents []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"agents"`
	Calls      []json.RawMessage `json:"calls"`
	Frames     uint64            `json:"frames"`
	Thumbnails int               `json:"thumbnails"`
	Viewers    int               `json:"viewers"`
}

// getUI fetches path with the given headers and returns the status and body.
func getUI(t *testing.T, u string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// TestLiveView drives /ui in Chromium while two agents work over HTTP: it
// shows both agents and their pages, bob waiting on the page alice's
// script holds, a bar per call; thumbnails flow only while the page is
// open (no frame before, none after); no token gets 401 and alice's
// (not an admin's) 403, by header, cookie or the login form.
func TestLiveView(t *testing.T) {
	t.Parallel()
	site, release := uiSite(t)
	base, stderr := startHTTPServer(t, pagemuxBinary(t), "--auth-token", "alice=ui-alice-secret", "--auth-token", "bob=ui-bob-secret",
		"--auth-token", "boss=ui-boss-secret", "--admin-token", "boss", "--pages", "shared", "--lock-mode=page", "--log-level=warn")
	admin := []string{"Authorization", "Bearer ui-boss-secret"}
	state := func() uiState {
		t.Helper()
		code, body := getUI(t, base+"/ui/state", admin...)
		var st uiState
		if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("/ui/state: %d %s", code, body)
		}
		return st
	}

	t.Run("refusals", func(t *testing.T) {
		for _, path := range []string{"/ui", "/ui/", "/ui/state", "/ui/events", "/ui/thumb/1", "/ui/app.js"} {
			if code, body := getUI(t, base+path); code != http.StatusUnauthorized {
				t.Errorf("%s without a token: %d %s", path, code, body)
			}
			if code, body := getUI(t, base+path, "Authorization", "Bearer ui-wrong"); code != http.StatusUnauthorized {
				t.Errorf("%s with a wrong token: %d %s", path, code, body)
			}
			if code, body := getUI(t, base+path, "Authorization", "Bearer ui-alice-secret"); code != http.StatusForbidden || strings.Contains(body, "bob") {
				t.Errorf("%s with alice's token: %d %s", path, code, body)
			}
			if code, body := getUI(t, base+path, "Cookie", "pagemux_ui=ui-alice-secret"); code != http.StatusForbidden {
				t.Errorf("%s with alice's secret as the cookie: %d %s", path, code, body)
			}
		}
		form := url.Values{"token": {"ui-alice-secret"}}
		resp, err := http.PostForm(base+"/ui/login", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("alice's login: %d, cookies %v", resp.StatusCode, resp.Cookies())
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/ui/login", strings.NewReader(url.Values{"token": {"ui-boss-secret"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://evil.example")
		resp, err = http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("a login posted from another site: %d, cookies %v", resp.StatusCode, resp.Cookies())
		}
	})

	connect := func(secret string) *client.Client {
		return mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + secret}, "")
	}
	alice, bob := connect("ui-alice-secret"), connect("ui-bob-secret")
	mustCall(t, alice, "new_page", map[string]any{"url": site.URL + "/busy"})
	mustCall(t, bob, "new_page", map[string]any{"url": site.URL + "/busy"})
	alicePage := idOf(t, mustCall(t, alice, "list_pages", nil), "/busy")
	// The busy pages painted all along, and no one looked: no frame.
	if st := state(); st.Frames != 0 || st.Thumbnails != 0 || len(st.Calls) != 3 {
		t.Errorf("before anyone looked: %d frames, %d thumbnails, %d calls", st.Frames, st.Thumbnails, len(st.Calls))
	}

	// Alice's script holds her page until release; bob waits for it.
	var calls sync.WaitGroup
	calls.Go(func() {
		mustCall(t, alice, "evaluate_script", map[string]any{"pageId": alicePage, "function": "async () => (await fetch('/hold')).text()"})
	})
	waitHolder(t, base, "ui-boss-secret", "evaluate_script")
	calls.Go(func() {
		mustCall(t, bob, "evaluate_script", map[string]any{"pageId": alicePage, "function": "() => document.title"})
	})

	ctx, cancel := remote.NewAllocator(t.Context(), sharedChrome(t))
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()
	lockRow := fmt.Sprintf(`#locks tr[data-lock="page %d"]`, alicePage)
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), "ui-boss-secret"),
		chromedp.Submit(chromedp.CSS(`input[name=token]`)),
		chromedp.WaitVisible(chromedp.CSS(lockRow+` .waiter`)),
		chromedp.WaitVisible(chromedp.CSS(`#agents tr[data-agent="token:bob"] .state-waiting`)),
	)
	if err != nil {
		t.Fatalf("the live view in Chromium: %v\n%s", err, stderr)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return s
	}
	holder, waiter, agentsText := text(lockRow+` .holder`), text(lockRow+` .waiter`), text(`#agents tbody`)
	if !strings.Contains(holder, "evaluate_script") || !strings.Contains(holder, "alice") || !strings.Contains(waiter, "bob") {
		t.Errorf("page %d's lock: held by %q, waiting %q", alicePage, holder, waiter)
	}
	if !strings.Contains(agentsText, "token:alice") || !strings.Contains(agentsText, "running") {
		t.Errorf("the agents: %q", agentsText)
	}
	release()
	calls.Wait()
	// Every call has its bar, bob's waits and holds both, and each page its
	// thumbnail (the busy pages paint).
	want := len(state().Calls)
	count := func(js string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	const barsJS = `new Set([...document.querySelectorAll('#timeline .bar.hold')].map(b => b.dataset.call)).size`
	const thumbsJS = `[...document.querySelectorAll('#pages img.thumb')].filter(i => i.complete && i.naturalWidth > 0).length`
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(`%s >= %d && %s >= 2`, barsJS, want, thumbsJS),
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("bars and thumbnails: %v", err)
	}
	bars, thumbs := count(barsJS), count(thumbsJS)
	if bars < want || thumbs < 2 {
		t.Errorf("%d bars for %d calls, %d thumbnails", bars, want, thumbs)
	}
	viewed := state()
	if viewed.Frames == 0 || viewed.Viewers != 1 {
		t.Errorf("while viewed: %d frames, %d viewers", viewed.Frames, viewed.Viewers)
	}

	// The viewer leaves: the screencasts stop, and the pages paint on
	// without a frame.
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	st := state()
	for ; st.Viewers != 0 || st.Thumbnails != 0; st = state() {
		if time.Now().After(deadline) {
			t.Fatalf("the viewer left but %d viewers, %d thumbnails remain", st.Viewers, st.Thumbnails)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustCall(t, alice, "evaluate_script", map[string]any{"pageId": alicePage,
		"function": "() => new Promise(r => { let k = 0; (function f() { if (++k > 20) r(k); else requestAnimationFrame(f) })() })"})
	if after := state(); after.Frames != st.Frames {
		t.Errorf("no one looks, yet %d frames came after the viewer left", after.Frames-st.Frames)
	}
	if strings.Contains(stderr.String(), "ui-boss-secret") || strings.Contains(stderr.String(), "ui-alice-secret") {
		t.Errorf("a secret reached the logs:\n%s", stderr)
	}
}

// TestUIStdio: pagemux on stdio with --ui serves the live view on loopback
// without a token, showing the stdio client's calls, and refuses a request
// that names another host (DNS rebinding).
func TestUIStdio(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	s := startServer(t, shortTmp(t), "--ui", addr)
	s.waitLog("serving the live view")
	s.call(2, "select_page", `{"pageId":999}`)
	if a := s.answer(2); !strings.Contains(a, `"isError":true`) {
		t.Fatalf("select_page of no page: %s", a)
	}
	code, body := getUI(t, "http://"+addr+"/ui/state")
	var st struct {
		Calls []struct {
			Agent, Tool, Outcome string
		} `json:"calls"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || len(st.Calls) != 1 ||
		st.Calls[0].Agent != "stdio" || st.Calls[0].Tool != "select_page" || st.Calls[0].Outcome != "error" {
		t.Errorf("/ui/state: %d %s", code, body)
	}
	if code, _ := getUI(t, "http://"+addr+"/ui"); code != http.StatusOK {
		t.Errorf("/ui: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/ui/state", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example: %d", resp.StatusCode)
	}
}
