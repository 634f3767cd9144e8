package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// devToolsTab is a tab as Chrome's /json/list shows it.
type devToolsTab struct {
	ID, Type, URL, Title string
}

// chromeTabs lists the tabs of the Chrome at url, from its own DevTools
// endpoint: which Chrome of a pool a page is on, as Chrome says.
func chromeTabs(t *testing.T, url string) []devToolsTab {
	t.Helper()
	resp, err := http.Get(url + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tabs []devToolsTab
	if err := json.NewDecoder(resp.Body).Decode(&tabs); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(tabs, func(tab devToolsTab) bool { return tab.Type != "page" })
}

// onChrome says which of the Chromes at urls has a tab whose URL ends in
// path, -1 when none has.
func onChrome(t *testing.T, urls []string, path string) int {
	t.Helper()
	for i, u := range urls {
		for _, tab := range chromeTabs(t, u) {
			if strings.HasSuffix(tab.URL, path) {
				return i
			}
		}
	}
	return -1
}

// pageIDs are the ids list_pages shows, in its order.
func pageIDs(t *testing.T, list string) []int {
	t.Helper()
	var ids []int
	for _, m := range regexp.MustCompile(`(?m)^(\d+): `).FindAllStringSubmatch(list, -1) {
		n, _ := strconv.Atoi(m[1])
		ids = append(ids, n)
	}
	return ids
}

// idOf is the id list_pages shows for the page whose URL ends in path.
func idOf(t *testing.T, list, path string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(\d+): .*` + regexp.QuoteMeta(path) + `\b`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no page %s in\n%s", path, list)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

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

// pathSite serves pages titled with their path.
func pathSite(t *testing.T) *httptest.Server {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title><p>%s", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(site.Close)
	return site
}

// TestBrowserPool: one pagemux attached to two Chromes (--browser-url
// twice) lists the pages of both under ids unique across the pool, places
// each new page on the Chrome with the fewest pages, and acts on a page
// wherever it is. A Chrome of the pool SIGKILLed fails the call in flight
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
	c := stdioPagemux(t, "--browser-url="+urlA, "--browser-url="+urlB, "--lock-mode=page", "--log-level=warn")

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

	// A call in flight on Chrome B's page, running once its title says so.
	inFlight := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "evaluate_script", Arguments: map[string]any{
			"pageId": ids["/p2"], "function": "async () => { document.title = 'running'; await new Promise(r => setTimeout(r, 60000)) }"}}})
		if err != nil {
			res = mcp.NewToolResultError(err.Error())
		}
		inFlight <- res
	}()
	waitFor(t, "the script to run on Chrome B", func() bool {
		return slices.ContainsFunc(chromeTabs(t, urlB), func(tab devToolsTab) bool { return tab.Title == "running" })
	})
	killed := time.Now()
	stopB()
	var res *mcp.CallToolResult
	select {
	case res = <-inFlight:
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight on a page of the killed Chrome still runs 30 s later")
	}
	took := time.Since(killed)
	text := res.Content[0].(mcp.TextContent).Text
	want := fmt.Sprintf("page %d is gone", ids["/p2"])
	if !res.IsError || !strings.Contains(text, want) {
		t.Errorf("the call in flight on the killed Chrome's page answered (%v): %s; want an error saying %q", res.IsError, text, want)
	}
	t.Logf("the call in flight failed %s after the kill", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the call in flight failed %s after its Chrome was killed, want at once", took)
	}
	got, failed := callTool(t, c, "evaluate_script", map[string]any{"pageId": ids["/p4"], "function": "() => 1"})
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
