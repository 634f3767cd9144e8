package tools

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/policy"
	"github.com/pagemux/pagemux/serve"
)

// The network routes (routes.go) on a real Chromium: an app page renders
// what its API answers, and the site logs the headers each API request
// came with, so that a route's effect is seen where an agent would see it
// (the page) and where the server would (the request).

// routeSite is a site of the routes tests' own.
type routeSite struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]http.Header // the headers of each API request, by path
}

// appPage renders what the API path in its query answers, or why the
// fetch failed.
const appPage = `<!doctype html><title>App</title><p id=out>loading</p><script>
fetch(new URLSearchParams(location.search).get('api')).then(r => r.text()).then(
  t => { out.textContent = 'api says ' + t },
  e => { out.textContent = 'api failed: ' + e.message })
</script>`

func newRouteSite(t *testing.T) *routeSite {
	t.Helper()
	s := &routeSite{seen: map[string][]http.Header{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/app", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, appPage)
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen[r.URL.Path] = append(s.seen[r.URL.Path], r.Header.Clone())
		s.mu.Unlock()
		io.WriteString(w, "real "+r.URL.Path)
	})
	mux.HandleFunc("/blocked", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<p>the blocked page itself</p>")
	})
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// requests are the headers of the requests of path the site got.
func (s *routeSite) requests(path string) []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[path]
}

// app is the URL of the app page on api, a path of the site. The URL
// does not end with api, so that a route of api does not answer the page.
func (s *routeSite) app(api string) string { return s.URL + "/app?api=" + api + "&app=1" }

// routeID reads the id of the route a route call added.
func routeID(t *testing.T, text string) int {
	t.Helper()
	m := regexp.MustCompile(`Route (\d+) added`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no route id in:\n%s", text)
	}
	id, _ := strconv.Atoi(m[1])
	return id
}

// TestRoutes: each action of a route on one page, on the shared server
// (stdio: one client, every page its own).
func TestRoutes(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	site := newRouteSite(t)

	t.Run("a mocked API answer changes the page, unroute restores it", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/mock"))
		e.ok(t, "wait_for", map[string]any{"pageId": p, "text": []string{"api says real /api/mock"}})
		added := e.ok(t, "route", map[string]any{"pageId": p, "pattern": "**/api/mock", "body": "mocked", "contentType": "text/plain"})
		id := routeID(t, added)
		mustContain(t, added, "on page "+strconv.Itoa(p), "fulfil 200 (6 bytes)")
		e.ok(t, "navigate_page", map[string]any{"pageId": p, "type": "reload"})
		e.ok(t, "wait_for", map[string]any{"pageId": p, "text": []string{"api says mocked"}})
		if n := len(site.requests("/api/mock")); n != 1 {
			t.Errorf("the site got %d requests of /api/mock, want 1 (the mocked one never reaches it)", n)
		}
		mustContain(t, e.ok(t, "route_list", nil), fmt.Sprintf("id=%d **/api/mock on page %d: fulfil 200 (6 bytes); hits: 1", id, p))
		mustContain(t, e.ok(t, "unroute", map[string]any{"id": id}), "Removed 1 route(s).")
		e.ok(t, "navigate_page", map[string]any{"pageId": p, "type": "reload"})
		e.ok(t, "wait_for", map[string]any{"pageId": p, "text": []string{"api says real /api/mock"}})
		if list := e.ok(t, "route_list", nil); strings.Contains(list, fmt.Sprintf("id=%d ", id)) {
			t.Errorf("route %d is listed after unroute:\n%s", id, list)
		}
	})

	t.Run("abort fails the request with the reason", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/ok"))
		e.ok(t, "route", map[string]any{"pageId": p, "pattern": "**/api/refused", "abort": "connectionrefused"})
		got := e.eval(t, p, `() => fetch('/api/refused').then(() => 'loaded', e => e.message)`)
		mustContain(t, got, "Failed to fetch")
		mustContain(t, e.ok(t, "list_network_requests", map[string]any{"pageId": p}), "/api/refused [net::ERR_CONNECTION_REFUSED]")
		if n := len(site.requests("/api/refused")); n != 0 {
			t.Errorf("an aborted request reached the site %d times", n)
		}
	})

	t.Run("delay holds the request", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/ok"))
		e.ok(t, "route", map[string]any{"pageId": p, "pattern": "**/api/delayed", "delayMs": 1000})
		// The delayed request starts first and ends last.
		got := e.eval(t, p, `async () => {
			const order = [], t0 = performance.now();
			const late = fetch('/api/delayed').then(r => r.text()).then(t => order.push(t));
			await fetch('/api/prompt').then(r => r.text()).then(t => order.push(t));
			await late;
			return {order, took: performance.now() - t0};
		}`)
		mustContain(t, got, `"order":["real /api/prompt","real /api/delayed"]`)
		took, _ := strconv.ParseFloat(regexp.MustCompile(`"took":([\d.]+)`).FindStringSubmatch(got)[1], 64)
		if took < 950 {
			t.Errorf("the delayed request took %.0f ms, want at least the route's 1000", took)
		}
	})

	t.Run("changed request headers reach the server", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/ok"))
		e.ok(t, "route", map[string]any{"pageId": p, "pattern": "**/api/headers", "headers": []string{"X-Route: yes", "X-Keep: replaced"}, "removeHeaders": "X-Drop, x-also-drop"})
		e.eval(t, p, `() => fetch('/api/headers', {headers: {'X-Drop': 'secret', 'X-Also-Drop': '1', 'X-Keep': 'mine', 'X-Other': 'kept'}}).then(r => r.text())`)
		seen := site.requests("/api/headers")
		if len(seen) != 1 {
			t.Fatalf("the site got %d requests of /api/headers, want 1", len(seen))
		}
		h := seen[0]
		for name, want := range map[string]string{"X-Route": "yes", "X-Keep": "replaced", "X-Other": "kept", "X-Drop": "", "X-Also-Drop": ""} {
			if got := h.Get(name); got != want {
				t.Errorf("the server saw %s %q, want %q (all: %v)", name, got, want, h)
			}
		}
	})

	t.Run("a mocked API of another origin answers its preflight and allows the page", func(t *testing.T) {
		other := newRouteSite(t) // another port: another origin, whose server allows no one
		p := e.openPage(t, site.app("/api/ok"))
		e.ok(t, "route", map[string]any{"pageId": p, "pattern": other.URL + "/api/cors", "body": "cross-origin mock", "contentType": "text/plain"})
		got := e.eval(t, p, fmt.Sprintf(`() => fetch(%q, {method: 'PUT', headers: {'X-Custom': '1'}, credentials: 'include'}).then(r => r.text(), e => 'failed: ' + e.message)`, other.URL+"/api/cors"))
		mustContain(t, got, "cross-origin mock")
		if n := len(other.requests("/api/cors")); n != 0 {
			t.Errorf("the other origin's server got %d requests, want none (the preflight is answered too)", n)
		}
	})

	t.Run("a page's route covers its frames", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/ok"))
		e.ok(t, "route", map[string]any{"pageId": p, "pattern": "**/api/in-frame", "body": "mocked in the frame"})
		got := e.eval(t, p, `async () => {
			const f = document.createElement('iframe');
			await new Promise(loaded => { f.onload = loaded; f.src = '/api/frame-doc'; document.body.append(f) });
			return f.contentWindow.fetch('/api/in-frame').then(r => r.text());
		}`)
		mustContain(t, got, "mocked in the frame")
	})

	t.Run("a route for every page covers pages opened later", func(t *testing.T) {
		// A path of this test's own: on stdio the route covers every page,
		// those of the tests running beside it too.
		api := fmt.Sprintf("/api/every-%d", time.Now().UnixNano())
		added := e.ok(t, "route", map[string]any{"pattern": "**" + api, "status": 203, "body": "everywhere"})
		mustContain(t, added, "on every page of yours: fulfil 203")
		t.Cleanup(func() { e.callCtx(context.Background(), t, "unroute", map[string]any{"pattern": "**" + api}) })
		p := e.openPage(t, site.app(api))
		e.ok(t, "wait_for", map[string]any{"pageId": p, "text": []string{"api says everywhere"}})
		mustContain(t, e.ok(t, "unroute", map[string]any{"pattern": "**" + api}), "Removed 1 route(s).")
		mustContain(t, e.ok(t, "unroute", map[string]any{"pattern": "**" + api}), "No route of yours has pattern")
	})

	t.Run("a closed page's routes go with it", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/ok"))
		id := routeID(t, e.ok(t, "route", map[string]any{"pageId": p, "pattern": "**/api/gone", "abort": "failed"}))
		e.ok(t, "close_page", map[string]any{"pageId": p})
		if list := e.ok(t, "route_list", nil); strings.Contains(list, fmt.Sprintf("id=%d ", id)) {
			t.Errorf("the route of closed page %d is listed:\n%s", p, list)
		}
		e.fails(t, "route", map[string]any{"pageId": p, "pattern": "**/api/gone", "abort": "failed"})
	})

	t.Run("a route of one page waits for its lock, one of every page does not", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/ok"))
		e.ok(t, "route", map[string]any{"pageId": p, "pattern": "**/api/hold", "delayMs": 1500})
		held := make(chan result, 1)
		go func() {
			held <- e.callCtx(context.Background(), t, "evaluate_script", map[string]any{"pageId": p, "function": `() => fetch('/api/hold').then(r => r.text())`})
		}()
		// The script holds page p's lock while its request is delayed.
		mcptest.WaitFor(t, "the delayed request", func() bool {
			return strings.Contains(e.ok(t, "route_list", nil), "**/api/hold on page "+strconv.Itoa(p)+": delay 1.5s, then continue; hits: 1")
		})
		api := fmt.Sprintf("/api/lockless-%d", time.Now().UnixNano())
		e.ok(t, "route", map[string]any{"pattern": "**" + api, "abort": "failed"})
		e.ok(t, "unroute", map[string]any{"pattern": "**" + api})
		select {
		case r := <-held:
			t.Fatalf("a route for every page waited for page %d's call: %v", p, r)
		default:
		}
		// The wait notice says the call waited for the page's lock.
		waited := mcptest.Call(t.Context(), e.client, "route", map[string]any{"pageId": p, "pattern": "**" + api, "abort": "failed"})
		if waited.Err != nil || waited.IsError {
			t.Fatalf("route: %v %s", waited.Err, waited.Text)
		}
		mustContain(t, waited.Text, fmt.Sprintf("ms for page %d", p))
		mustContain(t, (<-held).text, "real /api/hold")
	})

	t.Run("bad input", func(t *testing.T) {
		p := e.openPage(t, site.app("/api/ok"))
		for _, tc := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"pattern": "/a(b/", "abort": "failed"}, "not a regex Go reads"},
			{map[string]any{"pattern": "/api/x", "abort": "failed"}, "start it with a scheme"},
			{map[string]any{"pattern": "**/x", "status": 999}, `"status" for route: want at most 599`},
			{map[string]any{"pattern": "**/x", "abort": "exploded"}, `want one of "aborted", "accessdenied"`},
			{map[string]any{"pattern": "**/x", "delayMs": 600000}, "want at most 60000"},
			{map[string]any{"pattern": "**/x"}, "the route does nothing"},
			{map[string]any{"pattern": "**/x", "abort": "failed", "body": "x"}, "not both"},
			{map[string]any{"pattern": "**/x", "body": "x", "removeHeaders": "Cookie"}, "never sent"},
			{map[string]any{"pattern": "**/x", "headers": []string{"no colon"}}, "want 'Name: Value'"},
			{map[string]any{"pattern": "**/x", "headers": []string{"X: a\r\nSet-Cookie: b"}}, "line break"},
			{map[string]any{"pattern": "**/x", "body": strings.Repeat("x", maxRouteInlineBody+1)}, "give bodyFile"},
			{map[string]any{"pattern": "**/x", "body": "x", "bodyFile": "a.txt"}, "not both"},
			{map[string]any{"pattern": "**/x", "body": "x", "pageId": 999999}, "no page with id 999999"},
		} {
			if _, ok := tc.args["pageId"]; !ok {
				tc.args["pageId"] = p
			}
			mustContain(t, e.fails(t, "route", tc.args), tc.want)
		}
		mustContain(t, e.fails(t, "unroute", map[string]any{"id": 999999}), "you have no route 999999")
	})
}

// routeIsoEnv is the routes tests' server over HTTP: two agents (alice and
// bob) in contexts of their own, and a URL policy that blocks /blocked.
func routeIsoEnv(t *testing.T, site *routeSite) *isoEnv {
	t.Helper()
	pol, err := policy.New(policy.Options{Blocked: []string{site.URL + "/blocked*"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.New(agents.Owned)
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Server: Options{Agents: reg, IsolateAgents: true, URLPolicy: pol}})
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{
		Tokens: map[string]string{"alice": aliceSecret, "bob": bobSecret},
	}))
	t.Cleanup(ts.Close)
	return &isoEnv{testEnv: e, url: ts.URL, reg: reg}
}

// TestRoutesAgents: two agents over HTTP, bob trying to reach alice's
// routes and to have his touch her traffic; and the URL policy over a
// route.
func TestRoutesAgents(t *testing.T) {
	t.Parallel()
	site := newRouteSite(t)
	e := routeIsoEnv(t, site)
	alice, bob := e.as(t, aliceSecret, ""), e.as(t, bobSecret, "")
	ok := func(c *client.Client, tool string, args map[string]any) string {
		t.Helper()
		text, failed := use(t, c, tool, args)
		if failed {
			t.Fatalf("%s %v: %s", tool, args, text)
		}
		return text
	}
	fails := func(c *client.Client, tool string, args map[string]any) string {
		t.Helper()
		text, failed := use(t, c, tool, args)
		if !failed {
			t.Fatalf("%s %v succeeded, want an error: %s", tool, args, text)
		}
		return text
	}
	waitText := func(c *client.Client, page int, text string) {
		t.Helper()
		ok(c, "wait_for", map[string]any{"pageId": page, "text": []string{text}})
	}
	reload := func(c *client.Client, page int) {
		t.Helper()
		ok(c, "navigate_page", map[string]any{"pageId": page, "type": "reload"})
	}

	ap := openAs(t, alice, site.app("/api/shared"))
	bp := openAs(t, bob, site.app("/api/shared"))
	waitText(alice, ap, "api says real /api/shared")
	waitText(bob, bp, "api says real /api/shared")

	// Alice's route for all her pages, a regex; bob's for his, a glob, on
	// the same URL.
	aliceID := routeID(t, ok(alice, "route", map[string]any{"pattern": `/\/api\/shared$/`, "body": "alice's mock"}))
	ok(bob, "route", map[string]any{"pattern": "**/api/shared", "abort": "failed"})
	reload(alice, ap)
	reload(bob, bp)
	waitText(alice, ap, "api says alice's mock")
	waitText(bob, bp, "api failed")

	t.Run("at the same time on the same URL, each gets their own route's", func(t *testing.T) {
		fetches := `() => Promise.all([1, 2, 3, 4, 5].map(() => fetch('/api/shared').then(r => r.text(), e => 'failed'))).then(a => a.join('|'))`
		var wg sync.WaitGroup
		var aliceGot, bobGot mcptest.Result
		wg.Go(func() {
			aliceGot = mcptest.Call(t.Context(), alice, "evaluate_script", map[string]any{"pageId": ap, "function": fetches})
		})
		wg.Go(func() {
			bobGot = mcptest.Call(t.Context(), bob, "evaluate_script", map[string]any{"pageId": bp, "function": fetches})
		})
		wg.Wait()
		mustContain(t, aliceGot.Text, strings.Repeat("alice's mock|", 4)+"alice's mock")
		mustContain(t, bobGot.Text, "failed|failed|failed|failed|failed")
	})

	t.Run("a page alice opens later, and her popup, are hers", func(t *testing.T) {
		later := openAs(t, alice, site.app("/api/shared"))
		waitText(alice, later, "api says alice's mock")
		evalAs(t, alice, later, `() => { window.open('/app?api=/api/shared&popup=1'); return true }`)
		var popup int
		mcptest.WaitFor(t, "alice's popup", func() bool {
			for _, id := range e.reg.Pages(agents.Agent{ID: "token:alice"}) {
				if p, err := e.b.Page(id); err == nil && strings.Contains(p.URL(), "popup=1") {
					popup = id
				}
			}
			return popup != 0
		})
		waitText(alice, popup, "api says alice's mock")
	})

	t.Run("bob can neither list, nor remove, nor place alice's routes", func(t *testing.T) {
		bobList := ok(bob, "route_list", nil)
		if strings.Contains(bobList, "alice") || strings.Contains(bobList, `\/api\/shared`) {
			t.Errorf("bob's route_list shows alice's route:\n%s", bobList)
		}
		mustContain(t, fails(bob, "unroute", map[string]any{"id": aliceID}), fmt.Sprintf("you have no route %d", aliceID))
		mustContain(t, ok(bob, "unroute", map[string]any{"pattern": `/\/api\/shared$/`}), "No route of yours")
		fails(bob, "route", map[string]any{"pageId": ap, "pattern": "**/api/shared", "body": "bob was here"})
		mustContain(t, ok(alice, "route_list", nil), fmt.Sprintf("id=%d ", aliceID))
		reload(alice, ap)
		waitText(alice, ap, "api says alice's mock")
		// Bob removing all of his leaves alice's.
		mustContain(t, ok(bob, "unroute", nil), "Removed 1 route(s).")
		reload(bob, bp)
		waitText(bob, bp, "api says real /api/shared")
		mustContain(t, ok(alice, "route_list", nil), fmt.Sprintf("id=%d ", aliceID))
	})

	t.Run("a route cannot make a blocked URL load", func(t *testing.T) {
		ok(alice, "route", map[string]any{"pattern": "**/blocked*", "body": "<p>smuggled</p>", "contentType": "text/html"})
		mustContain(t, fails(alice, "navigate_page", map[string]any{"pageId": ap, "url": site.URL + "/blocked"}), "refused")
		got := evalAs(t, alice, ap, `() => fetch('/blocked').then(r => r.text(), e => 'failed: ' + e.message)`)
		mustContain(t, got, "failed: Failed to fetch")
		if strings.Contains(got, "smuggled") {
			t.Errorf("a route answered a blocked URL: %s", got)
		}
	})

	t.Run("bodyFile is read from the workspace only", func(t *testing.T) {
		shot := regexp.MustCompile(`/\S*shot\.png`).FindString(ok(alice, "take_screenshot", map[string]any{"pageId": ap, "filePath": "shot.png"}))
		if shot == "" {
			t.Fatal("take_screenshot did not say where it saved shot.png")
		}
		ok(alice, "route", map[string]any{"pattern": "**/api/image", "bodyFile": "shot.png", "contentType": "image/png"})
		got := evalAs(t, alice, ap, `() => fetch('/api/image').then(r => r.blob()).then(b => b.type + ' ' + b.size)`)
		m := regexp.MustCompile(`image/png (\d+)`).FindStringSubmatch(got)
		if m == nil || m[1] == "0" {
			t.Errorf("the route's file did not come back: %s", got)
		}
		mustContain(t, fails(bob, "route", map[string]any{"pattern": "**/x", "bodyFile": "/etc/passwd"}), `path "/etc/passwd" is outside the allowed roots`)
		// Alice's file, by the path her answer gave, is out of bob's reach.
		mustContain(t, fails(bob, "route", map[string]any{"pattern": "**/x", "bodyFile": shot}), "is outside the allowed roots")
	})

	t.Run("alice's routes go when her session ends", func(t *testing.T) {
		if len(e.b.Routes("token:alice")) == 0 {
			t.Fatal("alice has no routes to lose")
		}
		alice.Close()
		mcptest.WaitFor(t, "alice's routes to go with her session", func() bool { return len(e.b.Routes("token:alice")) == 0 })
	})
}
