package browser

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// TestURLPattern: globs and regexes match as Playwright's page.route reads
// them, and each one's Fetch pattern is no narrower than the pattern.
func TestURLPattern(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, fetch string
		match, miss    []string
	}{
		{"**/api/*", "*/api/*",
			[]string{"http://h:1/api/x", "https://a.b/c/api/users?id=1", "http://h/api/x#frag"},
			[]string{"http://h/api/x/y", "http://h/apix/y", "http://h/api"}},
		{"http://localhost:8080/api/data", "http://localhost:8080/api/data",
			[]string{"http://localhost:8080/api/data"},
			[]string{"http://localhost:8080/api/data?x=1", "http://localhost:8081/api/data"}},
		{"**/*.{png,jpg}", "*/*.*",
			[]string{"http://h/a/b.png", "http://h/b.jpg"},
			[]string{"http://h/b.gif", "http://h/b.png?x"}},
		{"**/search?q=*", `*/search\?q=*`,
			[]string{"http://h/search?q=go"},
			[]string{"http://h/searchXq=go"}},
		{`**/a\*b`, `*/a\*b`,
			[]string{"http://h/a*b"},
			[]string{"http://h/axb"}},
		{`/api\/v\d+\//i`, "*",
			[]string{"http://h/API/v2/x", "http://h/z/api/v10/"},
			[]string{"http://h/api/vx/"}},
		{`/^https:/`, "*",
			[]string{"https://h/"},
			[]string{"http://h/https:"}},
	} {
		p, err := CompileURLPattern(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if got := p.FetchPattern(); got != tc.fetch {
			t.Errorf("%s: Fetch pattern %q, want %q", tc.pattern, got, tc.fetch)
		}
		for _, u := range tc.match {
			if !p.Match(u) {
				t.Errorf("%s does not match %s", tc.pattern, u)
			}
		}
		for _, u := range tc.miss {
			if p.Match(u) {
				t.Errorf("%s matches %s", tc.pattern, u)
			}
		}
	}
}

// TestURLPatternRefused: a pattern that cannot be read fails with what to
// write instead.
func TestURLPatternRefused(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string]string{
		"":                       "empty",
		"/api/x":                 "start it with a scheme",
		"api/*":                  "(**/api/*)",
		"/a(/":                   "not a regex Go reads",
		"/(?=x)/":                "no lookarounds",
		"/x/g":                   `regex flag 'g'`,
		"/api/users/":            "start it with a scheme", // a path: its / are not escaped
		"//":                     "start it with a scheme", // not a regex: no source
		"**/{a,b":                "a { without its }",
		strings.Repeat("*", 3e3): "longer than",
	} {
		_, err := CompileURLPattern(pattern)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want an error with %q", pattern, err, want)
		}
	}
}

// TestAbortReason: Playwright's names, in any case, map to Chrome's; others
// are refused with the list.
func TestAbortReason(t *testing.T) {
	t.Parallel()
	for _, name := range AbortReasons {
		r, err := ParseAbortReason(strings.ToUpper(name))
		if err != nil || !strings.EqualFold(string(r), name) {
			t.Errorf("%s: %q %v", name, r, err)
		}
	}
	if _, err := ParseAbortReason("exploded"); err == nil || !strings.Contains(err.Error(), "connectionrefused") {
		t.Errorf("exploded: %v", err)
	}
}

// TestRouteActionCheck: an action that does nothing, does two opposite
// things, or is out of bounds is refused with what to do.
func TestRouteActionCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    RouteAction
		want string
	}{
		{RouteAction{}, "does nothing"},
		{RouteAction{Abort: network.ErrorReasonFailed, Fulfil: true}, "give abort alone"},
		{RouteAction{Fulfil: true, RemoveHeaders: []string{"x"}}, "never sent"},
		{RouteAction{Fulfil: true, Status: 999}, "100 to 599"},
		{RouteAction{Fulfil: true, Body: make([]byte, MaxRouteBody+1)}, "at most"},
		{RouteAction{Delay: MaxRouteDelay + time.Millisecond}, "delay"},
		{RouteAction{Headers: http.Header{"Bad Name": {"1"}}}, "header name"},
		{RouteAction{Headers: http.Header{"X": {"a\r\nSet-Cookie: y"}}}, "line break"},
		{RouteAction{RemoveHeaders: []string{"a:b"}}, "removeHeaders"},
	} {
		if err := tc.a.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.a.describe(), err, tc.want)
		}
	}
	for _, ok := range []RouteAction{
		{Fulfil: true},
		{Abort: network.ErrorReasonTimedOut, Delay: time.Second},
		{Delay: time.Millisecond},
		{Headers: http.Header{"X-Test": {"1"}}},
	} {
		if err := ok.check(); err != nil {
			t.Errorf("%s: %v", ok.describe(), err)
		}
	}
}

// TestRouteRequestHeaders: a request goes on with its headers, or the
// origin's added, with the route's set (replacing the same name in any
// case) and removed.
func TestRouteRequestHeaders(t *testing.T) {
	t.Parallel()
	sent := network.Headers{"Accept": "*/*", "x-old": "1", "Cookie": "a=b"}
	a := RouteAction{Headers: http.Header{"X-Old": {"2"}, "X-New": {"3"}}, RemoveHeaders: []string{"cookie"}}
	got := map[string]string{}
	for _, h := range a.requestHeaders(sent, nil) {
		got[h.Name] = h.Value
	}
	want := map[string]string{"Accept": "*/*", "X-Old": "2", "X-New": "3"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	added := []*fetch.HeaderEntry{{Name: "Authorization", Value: "t"}}
	if out := (RouteAction{Delay: time.Second}).requestHeaders(sent, added); !slices.Equal(out, added) {
		t.Errorf("a route that changes no header dropped the origin's: %v", out)
	}
	if out := (RouteAction{Delay: time.Second}).requestHeaders(sent, nil); out != nil {
		t.Errorf("a route that changes no header sent headers of its own: %v", out)
	}
}

// TestRouteGoesWithPage: a page's route is dropped when the page closes,
// and the interception it needed goes with it.
func TestRouteGoesWithPage(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	pattern := "**/route-goes-with-page-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	info, err := b.AddRoute(t.Context(), Route{Pattern: pattern, Page: p, Action: RouteAction{Abort: network.ErrorReasonFailed}})
	if err != nil {
		t.Fatal(err)
	}
	armed := func() bool {
		b.routes.armMu.Lock()
		defer b.routes.armMu.Unlock()
		return b.routes.armed[p.launch]
	}
	fetchHas := func() bool {
		return slices.ContainsFunc(b.routes.fetchPatterns(), func(fp *fetch.RequestPattern) bool { return strings.HasSuffix(fp.URLPattern, pattern[2:]) })
	}
	if !armed() || !fetchHas() {
		t.Fatalf("route %v: interception armed %v, pattern in it %v", info, armed(), fetchHas())
	}
	if err := b.ClosePage(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, "the closed page's route to go", func() bool { return !fetchHas() })
	if _, err := b.AddRoute(t.Context(), Route{Pattern: pattern, Page: p, Action: RouteAction{Abort: network.ErrorReasonFailed}}); err == nil {
		t.Error("a route was added to a closed page")
	}
}

// TestRoutesRelaunch: when Chrome dies, a page's route goes with the page,
// and a route for a set of pages is armed on the new Chrome, where it acts
// on the first page.
func TestRoutesRelaunch(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "real") }))
	defer site.Close()
	old := b.Pages()[0]
	if _, err := b.AddRoute(t.Context(), Route{Pattern: "**/page-route", Page: old, Action: RouteAction{Abort: network.ErrorReasonFailed}}); err != nil {
		t.Fatal(err)
	}
	every, err := b.AddRoute(t.Context(), Route{Pattern: "**/mocked", Action: RouteAction{Fulfil: true, Body: []byte("mocked"), Headers: http.Header{"Content-Type": {"text/html"}}}})
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	proc := chromedp.FromContext(b.members[0].launch.rootCtx).Browser.Process()
	b.mu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the page of a dead Chrome did not close")
	}
	p, err := b.Selected(t.Context()) // starts the new Chrome
	if err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, "the dead page's route to go", func() bool { return len(b.routes.fetchPatterns()) == 1 })
	if got := b.Routes(""); len(got) != 1 || got[0].ID != every.ID {
		t.Fatalf("routes after the relaunch: %v, want %v alone", got, every)
	}
	if err := p.Navigate(t.Context(), site.URL+"/mocked", time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, p, "() => document.body.textContent"); got != `"mocked"` {
		t.Errorf("the relaunched Chrome's page shows %s, want the route's answer", got)
	}
}

// TestRouteRoom: an owner's routes are bounded in number and in the bytes
// of their bodies, each owner apart.
func TestRouteRoom(t *testing.T) {
	t.Parallel()
	var rs routeSet
	big := Route{Owner: "a", Action: RouteAction{Fulfil: true, Body: make([]byte, MaxRouteBody)}}
	for range MaxRouteBodies / MaxRouteBody {
		if err := rs.roomFor(big); err != nil {
			t.Fatal(err)
		}
		rs.list = append(rs.list, &route{Route: big})
	}
	if err := rs.roomFor(big); err == nil || !strings.Contains(err.Error(), "remove some with unroute") {
		t.Errorf("a body past the owner's bytes: %v", err)
	}
	if err := rs.roomFor(Route{Owner: "b", Action: big.Action}); err != nil {
		t.Errorf("another owner's route: %v", err)
	}
	small := Route{Owner: "b", Action: RouteAction{Delay: time.Millisecond}}
	for range MaxRoutes {
		rs.list = append(rs.list, &route{Route: small})
	}
	if err := rs.roomFor(small); err != ErrTooManyRoutes {
		t.Errorf("route %d of an owner: %v", MaxRoutes+1, err)
	}
}

// TestRouteCORS: an answer to another origin's request allows that origin,
// unless the route said otherwise; a preflight is allowed what it asks.
func TestRouteCORS(t *testing.T) {
	t.Parallel()
	sent := network.Headers{"origin": "http://a.test", "Access-Control-Request-Method": "PUT", "access-control-request-headers": "x-custom"}
	if h := withCORS(http.Header{"Content-Type": {"text/plain"}}, sent); h.Get("Access-Control-Allow-Origin") != "http://a.test" || h.Get("Content-Type") != "text/plain" {
		t.Errorf("answer headers %v", h)
	}
	own := http.Header{"Access-Control-Allow-Origin": {"http://b.test"}}
	if h := withCORS(own, sent); h.Get("Access-Control-Allow-Origin") != "http://b.test" {
		t.Errorf("the route's own Access-Control-Allow-Origin was replaced: %v", h)
	}
	if h := withCORS(nil, network.Headers{}); h != nil {
		t.Errorf("a same-origin request's answer got %v", h)
	}
	p := preflightHeaders(sent)
	if p.Get("Access-Control-Allow-Methods") != "PUT" || p.Get("Access-Control-Allow-Headers") != "x-custom" || p.Get("Access-Control-Allow-Origin") != "http://a.test" {
		t.Errorf("preflight headers %v", p)
	}
}
