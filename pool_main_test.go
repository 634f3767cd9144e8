package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pagemux/pagemux/internal/etcdtest"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// stdioPagemux starts pagemux on stdio with flags and initializes it.
func stdioPagemux(t *testing.T, flags ...string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClient(pagemuxBinary(t), nil, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBrowserPool: one pagemux attached to two Chromes (--browser-url
// twice) lists the pages of both under ids unique across the pool, places
// each new page on the Chrome with the fewest pages, and acts on a page
// wherever it is; each Chrome records a performance trace of its own. A Chrome of the pool SIGKILLed fails the call in flight
// on its page at once, with the existing closed-page text, and the next
// ones too; its pages leave list_pages, and the other Chrome serves on,
// new pages included.
func TestBrowserPool(t *testing.T) {
	t.Parallel()
	urlA := debuggableChrome(t)
	urlB, stopB, err := startDebuggableChrome()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopB) // idempotent: stop waits for the exit it saw
	chromes := []string{urlA, urlB}
	site := pathSite(t)
	c := stdioPagemux(t, "--browser-url="+urlA, "--browser-url="+urlB, "--lock-mode=page", "--lock-timeout=20s", "--log-level=warn")

	// Each Chrome has its own first tab and the one pagemux attached with.
	list := mustCall(t, c, "list_pages", nil)
	if ids := pageIDs(t, list); len(ids) != 4 || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 4 {
		t.Fatalf("list_pages of a pool of two fresh Chromes, want 4 pages of distinct ids:\n%s", list)
	}
	// Two pages each: the first given wins the tie, then they alternate.
	paths := []string{"/p1", "/p2", "/p3", "/p4"}
	for _, p := range paths {
		mustCall(t, c, "new_page", map[string]any{"url": site.URL + p})
	}
	for i, p := range paths {
		if got := onChrome(t, chromes, p); got != i%2 {
			t.Errorf("page %s is on Chrome %d, want %d (the one with the fewest pages)", p, got, i%2)
		}
	}
	list = mustCall(t, c, "list_pages", nil)
	if ids := pageIDs(t, list); len(ids) != 8 || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 8 {
		t.Fatalf("want 8 pages of distinct ids:\n%s", list)
	}
	ids := map[string]int{}
	for _, p := range paths {
		ids[p] = idOf(t, list, p)
		got := mustCall(t, c, "evaluate_script", map[string]any{"pageId": ids[p], "function": "() => location.pathname"})
		if !strings.Contains(got, `"`+p+`"`) {
			t.Errorf("evaluate_script on page %d (%s): %s", ids[p], p, got)
		}
	}

	// Each Chrome records a trace of its own: traces on /p1 (Chrome A) and
	// /p2 (Chrome B) run at once, a stop on /p3 names both, and each stops.
	// (With one tracing resource for the pool the second start waits out
	// --lock-timeout for the first one's hold and fails.)
	for _, p := range []string{"/p1", "/p2"} {
		got, failed := callTool(t, c, "performance_start_trace", map[string]any{"pageId": ids[p], "reload": false, "autoStop": false})
		if failed || !strings.Contains(got, "The performance trace is being recorded") {
			t.Fatalf("performance_start_trace on %s (Chrome %d) while the other Chrome records one: %s", p, onChrome(t, chromes, p), got)
		}
	}
	got, failed := callTool(t, c, "performance_stop_trace", map[string]any{"pageId": ids["/p3"]})
	if want := fmt.Sprintf("the running performance traces record pages %d, %d, not page %d", min(ids["/p1"], ids["/p2"]), max(ids["/p1"], ids["/p2"]), ids["/p3"]); !failed || !strings.Contains(got, want) {
		t.Errorf("performance_stop_trace on a page no trace records: %s; want an error saying %q", got, want)
	}
	for _, p := range []string{"/p2", "/p1"} {
		if got, failed := callTool(t, c, "performance_stop_trace", map[string]any{"pageId": ids[p]}); failed || !strings.Contains(got, "The performance trace has been stopped.") {
			t.Errorf("performance_stop_trace on %s: %s", p, got)
		}
	}

	// A call in flight on Chrome B's page, running once its title says so.
	inFlight := make(chan mcptest.Result, 1)
	go func() {
		inFlight <- mcptest.Call(t.Context(), c, "evaluate_script", map[string]any{
			"pageId": ids["/p2"], "function": "async () => { document.title = 'running'; await new Promise(r => setTimeout(r, 60000)) }"})
	}()
	mcptest.WaitFor(t, "the script to run on Chrome B", func() bool {
		return slices.ContainsFunc(chromeTabs(t, urlB), func(tab devToolsTab) bool { return tab.Title == "running" })
	})
	killed := time.Now()
	stopB()
	var res mcptest.Result
	select {
	case res = <-inFlight:
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight on a page of the killed Chrome still runs 30 s later")
	}
	took := time.Since(killed)
	want := fmt.Sprintf("page %d is gone (the Chrome it was on, which pagemux attached to, went away or stopped responding)", ids["/p2"])
	if res.Err != nil || !res.IsError || !strings.Contains(res.Text, want) {
		t.Errorf("the call in flight on the killed Chrome's page answered (%v, %v): %s; want an error saying %q", res.IsError, res.Err, res.Text, want)
	}
	t.Logf("the call in flight failed %s after the kill", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the call in flight failed %s after its Chrome was killed, want at once", took)
	}
	got, failed = callTool(t, c, "evaluate_script", map[string]any{"pageId": ids["/p4"], "function": "() => 1"})
	if !failed || !strings.Contains(got, fmt.Sprintf("page %d is gone", ids["/p4"])) {
		t.Errorf("a call on the killed Chrome's other page: %s", got)
	}
	list = mustCall(t, c, "list_pages", nil)
	if strings.Contains(list, "/p2") || strings.Contains(list, "/p4") || !strings.Contains(list, "/p1") || !strings.Contains(list, "/p3") {
		t.Errorf("list_pages after Chrome B was killed, want /p1 and /p3 alone of the four:\n%s", list)
	}
	if n := len(pageIDs(t, list)); n != 4 {
		t.Errorf("list_pages after Chrome B was killed shows %d pages, want Chrome A's 4:\n%s", n, list)
	}
	for _, p := range []string{"/p1", "/p3"} {
		if got := mustCall(t, c, "evaluate_script", map[string]any{"pageId": ids[p], "function": "() => location.pathname"}); !strings.Contains(got, p) {
			t.Errorf("Chrome A's page %s after B was killed: %s", p, got)
		}
	}
	mustCall(t, c, "new_page", map[string]any{"url": site.URL + "/p5"})
	if got := onChrome(t, []string{urlA}, "/p5"); got != 0 {
		t.Errorf("a new page after Chrome B was killed is not on Chrome A")
	}
	if id := idOf(t, mustCall(t, c, "list_pages", nil), "/p5"); slices.Contains(slices.Collect(maps.Values(ids)), id) {
		t.Errorf("the new page took id %d, an id of the pool's before", id)
	}
}

// TestBrowserPoolReplicas: two HTTP replicas with --etcd, each told the same
// pool of two Chromes, behave as one server on it. Each places a new page on
// the Chrome with the fewest pages, counting the other's too, except that an
// agent's pages (each agent in a browser context of its own, the default)
// stay on the Chrome of its first, whichever replica opens them; both list
// an agent's pages under the same ids, unique across the pool; a page on
// either Chrome answers through either replica. A Chrome of the pool
// SIGKILLed fails its pages' calls on both replicas with the closed-page
// text, its pages leave both lists and the shared registry
// (pagemux_etcd_registry_entries), and the other Chrome serves on.
func TestBrowserPoolReplicas(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	urlA := debuggableChrome(t)
	urlB, stopB, err := startDebuggableChrome()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopB)
	site := pathSite(t)
	bin := pagemuxBinary(t)
	flags := []string{"--browser-url=" + urlA, "--browser-url=" + urlB, "--etcd=" + strings.Join(etcd.Endpoints(), ","), "--lease-ttl=2s",
		"--lock-mode=page", "--auth-token", "alice=alice-secret-1", "--auth-token", "bob=bob-secret-1", "--log-level=warn"}
	base1, _ := startHTTPServer(t, bin, flags...)
	base2, _ := startHTTPServer(t, bin, flags...)
	as := func(base, secret string) *client.Client {
		return mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + secret}, "")
	}
	alice1, alice2 := as(base1, "alice-secret-1"), as(base2, "alice-secret-1")
	bob1, bob2 := as(base1, "bob-secret-1"), as(base2, "bob-secret-1")
	chromes := []string{urlA, urlB}
	// Both replicas attach before the first page: then each Chrome has its
	// own first tab and one of each replica, three, and the counts tie.
	mustCall(t, bob1, "list_pages", nil)
	mustCall(t, bob2, "list_pages", nil)
	mcptest.WaitFor(t, "three tabs on each Chrome", func() bool { return len(chromeTabs(t, urlA)) == 3 && len(chromeTabs(t, urlB)) == 3 })

	steps := []struct {
		c      *client.Client
		path   string
		chrome int
		why    string
	}{
		{alice1, "/a1", 0, "3 pages each: the first given"},
		{bob2, "/b1", 1, "the one with the fewest pages, counting replica 1's"},
		{alice2, "/a2", 0, "beside alice's first page, opened through the other replica"},
		{alice1, "/a3", 0, "beside alice's pages, though it has more"},
		{bob1, "/b2", 1, "beside bob's page"},
	}
	for _, s := range steps {
		mustCall(t, s.c, "new_page", map[string]any{"url": site.URL + s.path})
		if got := onChrome(t, chromes, s.path); got != s.chrome {
			t.Errorf("page %s is on Chrome %d, want %d: %s", s.path, got, s.chrome, s.why)
		}
	}
	listA1, listA2 := mustCall(t, alice1, "list_pages", nil), mustCall(t, alice2, "list_pages", nil)
	ids := map[string]int{}
	for _, p := range []string{"/a1", "/a2", "/a3"} {
		if id1, id2 := idOf(t, listA1, p), idOf(t, listA2, p); id1 != id2 {
			t.Errorf("alice's page %s is %d on replica 1 and %d on replica 2", p, id1, id2)
		}
		ids[p] = idOf(t, listA1, p)
	}
	listB := mustCall(t, bob1, "list_pages", nil)
	for _, p := range []string{"/b1", "/b2"} {
		ids[p] = idOf(t, listB, p)
	}
	if n := len(slices.Compact(slices.Sorted(maps.Values(ids)))); n != 5 {
		t.Errorf("five pages of two Chromes got ids %v, want five distinct", ids)
	}
	for _, c := range []*client.Client{bob1, bob2} {
		if got := mustCall(t, c, "evaluate_script", map[string]any{"pageId": ids["/b1"], "function": "() => location.pathname"}); !strings.Contains(got, "/b1") {
			t.Errorf("bob's page on Chrome B: %s", got)
		}
	}
	// Calls of both replicas on a tab of Chrome B take turns: one lock,
	// named by B's identity, in etcd.
	var wg sync.WaitGroup
	for name, c := range map[string]*client.Client{"r1": bob1, "r2": bob2} {
		for i := range 3 {
			wg.Go(func() {
				mustCall(t, c, "evaluate_script", map[string]any{"pageId": ids["/b2"], "function": fmt.Sprintf(
					"async () => { (window.calls ??= []).push('%s%d+'); await new Promise(r => setTimeout(r, 100)); window.calls.push('%s%d-') }", name, i, name, i)})
			})
		}
	}
	wg.Wait()
	calls := mustCall(t, bob1, "evaluate_script", map[string]any{"pageId": ids["/b2"], "function": "() => window.calls.join(' ')"})
	if m := regexp.MustCompile(`(r\d\d)\+ (r\d\d)-`).FindAllStringSubmatch(calls, -1); len(m) != 6 || slices.ContainsFunc(m, func(m []string) bool { return m[1] != m[2] }) {
		t.Errorf("calls of two replicas on a tab of Chrome B overlapped: %s", calls)
	}
	registry := func() (pages, agents int) {
		m, err := mcptest.ScrapeMetrics(base2+"/metrics", "alice-secret-1")
		if err != nil {
			t.Fatal(err)
		}
		p, _ := m.Find("pagemux_etcd_registry_entries", "kind", "pages")
		a, _ := m.Find("pagemux_etcd_registry_entries", "kind", "agents")
		return int(p.Value), int(a.Value)
	}
	if pages, agents := registry(); pages != 3+3+5 || agents != 2 {
		t.Errorf("the registry holds %d pages and %d agents, want the 11 tabs of both Chromes and 2 agents", pages, agents)
	}

	stopB()
	for name, c := range map[string]*client.Client{"1": bob1, "2": bob2} {
		mcptest.WaitFor(t, "bob's pages to leave replica "+name+"'s list", func() bool {
			list := mustCall(t, c, "list_pages", nil)
			return !strings.Contains(list, "/b1") && !strings.Contains(list, "/b2")
		})
		got, failed := callTool(t, c, "evaluate_script", map[string]any{"pageId": ids["/b1"], "function": "() => 1"})
		if !failed || !strings.Contains(got, fmt.Sprintf("page %d is gone", ids["/b1"])) {
			t.Errorf("a call through replica %s on a page of the killed Chrome: %s", name, got)
		}
	}
	mcptest.WaitFor(t, "the killed Chrome's tabs to leave the registry", func() bool {
		pages, _ := registry()
		return pages == len(chromeTabs(t, urlA))
	})
	if got := mustCall(t, alice2, "evaluate_script", map[string]any{"pageId": ids["/a1"], "function": "() => location.pathname"}); !strings.Contains(got, "/a1") {
		t.Errorf("alice's page on Chrome A after B was killed: %s", got)
	}
	mustCall(t, bob2, "new_page", map[string]any{"url": site.URL + "/b3"})
	if got := onChrome(t, []string{urlA}, "/b3"); got != 0 {
		t.Error("bob's new page after Chrome B was killed is not on Chrome A")
	}
}
