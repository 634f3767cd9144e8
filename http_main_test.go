package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/soak"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestHTTPBinary serves the real binary over Streamable HTTP with a token:
// two clients share its browser, /healthz reports Chrome, a request without
// the token gets 401, and SIGTERM ends it.
func TestHTTPBinary(t *testing.T) {
	t.Parallel()
	bin := pagemuxBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--auth-token", "lead=lead-secret-1", "--auth-token", "sub=sub-secret-2", "--lock-mode=page", "--log-level=warn")
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d", resp.StatusCode)
	}

	connect := func(secret string) *client.Client {
		return mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + secret}, "")
	}
	call := func(c *client.Client, tool string, args map[string]any) string {
		t.Helper()
		return mustCall(t, c, tool, args)
	}
	lead, sub := connect("lead-secret-1"), connect("sub-secret-2")
	call(lead, "new_page", map[string]any{"url": site.URL + "/form.html"})
	call(sub, "new_page", map[string]any{"url": site.URL + "/page2.html"})
	// --pages owned (the default over HTTP): each agent sees its own pages.
	subList := call(sub, "list_pages", nil)
	leadList := call(lead, "list_pages", nil)
	if strings.Contains(subList, "/form.html") || !strings.Contains(subList, "/page2.html") {
		t.Errorf("sub's pages:\n%s", subList)
	}
	if got := call(lead, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(got, "/form.html") {
		t.Errorf("lead's selected page over HTTP: %s", got)
	}

	resp, err = http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var health struct {
		Chrome bool `json:"chrome"`
	}
	if json.Unmarshal(body, &health) != nil || !health.Chrome {
		t.Errorf("/healthz after calls: %s", body)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %v %v", err, resp.Status)
	} else {
		resp.Body.Close()
	}
	req.Header.Set("Authorization", "Bearer lead-secret-1")
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	scraped, err := mcptest.ParseMetrics(mresp.Body)
	mresp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, scraped, leadList, subList)
	if strings.Contains(stderr.String(), "secret-") {
		t.Errorf("a secret reached the logs:\n%s", stderr.String())
	}
}

// checkMetrics checks a scrape of /metrics against the calls TestHTTPBinary
// made: two agents (lead, sub); new_page and list_pages twice, evaluate_script
// once, all ok, and no other tool; one Chrome; the pages open are the
// agents' lists and Chrome's first tab.
func checkMetrics(t *testing.T, m mcptest.Metrics, leadList, subList string) {
	t.Helper()
	want := map[string]uint64{"new_page": 2, "list_pages": 2, "evaluate_script": 1}
	got := map[string]uint64{}
	m.Each("pagemux_tool_call_seconds", func(s mcptest.Sample) {
		if s.Count == 0 {
			return
		}
		if s.Label("outcome") != "ok" {
			t.Errorf("pagemux_tool_call_seconds: %d call(s) of %s with outcome %q", s.Count, s.Label("tool"), s.Label("outcome"))
		}
		got[s.Label("tool")] += s.Count
	})
	if !maps.Equal(got, want) {
		t.Errorf("pagemux_tool_call_seconds counts by tool: %v, want %v", got, want)
	}
	gauge := func(name string) float64 {
		t.Helper()
		s, ok := m.Find(name)
		if !ok {
			t.Errorf("/metrics has no %s", name)
		}
		return s.Value
	}
	if v := gauge("pagemux_agents"); v != 2 {
		t.Errorf("pagemux_agents %v, want 2", v)
	}
	// Chrome's first tab is open too, owned by no one: with --pages owned
	// neither agent's list shows it.
	pages := 1 + float64(len(pageLine.FindAllString(leadList, -1))+len(pageLine.FindAllString(subList, -1)))
	if v := gauge("pagemux_pages_open"); v != pages {
		t.Errorf("pagemux_pages_open %v, want %v: Chrome's first tab and the agents' lists:\n%s\n%s", v, pages, leadList, subList)
	}
	if v := gauge("pagemux_chrome_launches_total"); v != 1 {
		t.Errorf("pagemux_chrome_launches_total %v, want 1", v)
	}
	// Each of the calls on a page took its page's lock at least once.
	if w := m.Total("pagemux_lock_wait_seconds", "lock", "page", "mode", "page"); !w.Histogram || w.Count < 3 {
		t.Errorf("pagemux_lock_wait_seconds{lock=page,mode=page}: %d waits, want 3 at least (new_page twice, evaluate_script)", w.Count)
	}
	if w := m.Total("pagemux_lock_wait_seconds", "lock", "global"); w.Count != 0 {
		t.Errorf("page mode took the global lock %d times", w.Count)
	}
}

// pageLine is a page's line in list_pages: "3: title (url)".
var pageLine = regexp.MustCompile(`(?m)^\d+: `)

// TestHTTPFlags: --http refuses what would expose the browser, and tokens
// are checked without echoing their secrets.
func TestHTTPFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:8931"}, "without authentication"},
		{[]string{"--http", "8931"}, "want HOST:PORT"},
		{[]string{"--http", "127.0.0.1:8931", "--auth-token", "lead=short"}, "shorter than 8"},
		{[]string{"--http", "127.0.0.1:8931", "--auth-token", "justasecretvalue"}, "NAME=SECRET"},
		{[]string{"--auth-token", "lead=long-enough-secret"}, "need --http"},
		{[]string{"--http", "127.0.0.1:8931", "--shared-context", "--isolate-agents"}, "contradict"},
		{[]string{"--http", "127.0.0.1:8931", "--auth-token", "lead=long-enough-secret", "--admin-token", "boss"}, `--admin-token "boss" names no --auth-token`},
		{[]string{"--http", "127.0.0.1:8931", "--max-pages-per-agent=-1"}, "--max-pages-per-agent"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "justasecretvalue") {
			t.Errorf("%v: the error echoes the secret: %v", tt.args, err)
		}
	}
	c, err := parseFlags([]string{"--http", "0.0.0.0:8931", "--auth-token", "lead=long-enough-secret"}, io.Discard)
	if err != nil || c.http.Tokens["lead"] != "long-enough-secret" {
		t.Errorf("a token allows any address: %v %+v", err, c)
	}
	// Each agent its own browser context by default, at most 20 pages.
	if err == nil && (!c.isolateAgents || c.maxPagesPerAgent != 20 || len(c.http.AdminTokens) != 0) {
		t.Errorf("isolation defaults: isolate %v, max pages %d, admins %v", c.isolateAgents, c.maxPagesPerAgent, c.http.AdminTokens)
	}
	c, err = parseFlags([]string{"--http", "127.0.0.1:8931", "--auth-token", "lead=long-enough-secret", "--auth-token", "ops=long-enough-secret-2",
		"--admin-token", "ops", "--shared-context", "--max-pages-per-agent=0"}, io.Discard)
	if err != nil || c.isolateAgents || c.maxPagesPerAgent != 0 || !slices.Equal(c.http.AdminTokens, []string{"ops"}) {
		t.Errorf("--shared-context --admin-token ops --max-pages-per-agent=0: %v %+v", err, c)
	}
	if c, err := parseFlags([]string{"--http", "127.0.0.1:8931", "--isolate-agents"}, io.Discard); err != nil || !c.isolateAgents {
		t.Errorf("--isolate-agents, the default, given: %v", err)
	}
}

// TestJoinBinary: stdio clients share one server's browser through --join,
// and the TypeScript SDK's parallel calls keep their order across the
// bridge's HTTP requests: 8 bursts of 11 calls, 30 with PAGEMUX_SOAK=1.
func TestJoinBinary(t *testing.T) {
	t.Parallel()
	dir, bin := clientsDir(t), pagemuxBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, _ := startHTTPServer(t, bin, "--auth-token", "agents=agents-secret", "--lock-mode=page", "--browser-url="+sharedChrome(t), "--log-level=warn")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "order.mjs", site.URL, bin, "--join", base+"/mcp", "--auth-token", "agents-secret", "--log-level=error")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("ORDER_BURSTS=%d", soak.N(8, 30)))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("order.mjs through --join: %v\n%s", err, out)
	}
}

// TestJoinBridgesInParallel: two --join bridges, each a stdio client with a
// token of its own, drive two pages of one server's browser at once: in
// page mode a long call through bridge 1 does not hold up quick calls
// through bridge 2, which are all answered before it.
func TestJoinBridgesInParallel(t *testing.T) {
	t.Parallel()
	const longMS = 5000
	bin := pagemuxBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--auth-token", "bridge1=bridge-secret-1", "--auth-token", "bridge2=bridge-secret-2",
		"--lock-mode=page", "--browser-url="+sharedChrome(t), "--log-level=warn")
	bridge := func(secret string) *client.Client {
		t.Helper()
		c, err := client.NewStdioMCPClient(bin, nil, "--join", base+"/mcp", "--auth-token", secret, "--log-level=error")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: "2025-06-18", ClientInfo: mcp.Implementation{Name: t.Name(), Version: "1"}}}); err != nil {
			t.Fatalf("initialize through --join: %v\n%s", err, stderr.String())
		}
		return c
	}
	call := func(c *client.Client, tool string, args map[string]any) (string, time.Time) {
		t.Helper()
		return mustCall(t, c, tool, args), time.Now()
	}
	pageOf := func(newPage string) int {
		t.Helper()
		for _, line := range strings.Split(newPage, "\n") {
			if strings.HasSuffix(line, "[selected]") {
				var id int
				if _, err := fmt.Sscanf(line, "%d:", &id); err == nil {
					return id
				}
			}
		}
		t.Fatalf("new_page selected nothing:\n%s", newPage)
		return 0
	}
	b1, b2 := bridge("bridge-secret-1"), bridge("bridge-secret-2")
	text, _ := call(b1, "new_page", map[string]any{"url": site.URL + "/form.html"})
	p1 := pageOf(text)
	text, _ = call(b2, "new_page", map[string]any{"url": site.URL + "/page2.html"})
	p2 := pageOf(text)

	type answer struct {
		text string
		err  error
		at   time.Time
	}
	longDone := make(chan answer, 1)
	started := time.Now()
	go func() {
		r := mcptest.Call(t.Context(), b1, "evaluate_script", map[string]any{
			"pageId": p1, "function": fmt.Sprintf("() => new Promise(r => setTimeout(() => r('slept'), %d))", longMS)})
		longDone <- answer{text: r.Text, err: r.Err, at: time.Now()}
	}()
	// As bridge 1, whose call it is: /locks names another agent's calls to
	// no one but an admin token.
	waitHolder(t, base, "bridge-secret-1", fmt.Sprintf("evaluate_script on page %d", p1))
	var lastQuick time.Time
	for i := range 10 {
		text, at := call(b2, "evaluate_script", map[string]any{"pageId": p2, "function": "() => location.pathname"})
		if !strings.Contains(text, "/page2.html") || strings.Contains(text, "Waited ") {
			t.Errorf("quick call %d through bridge 2: %s", i, text)
		}
		lastQuick = at
	}
	long := <-longDone
	if long.err != nil || !strings.Contains(long.text, "slept") {
		t.Fatalf("the long call through bridge 1: %v %s", long.err, long.text)
	}
	if !lastQuick.Before(long.at) {
		t.Errorf("the last quick call through bridge 2 was answered %v after the long call through bridge 1", lastQuick.Sub(long.at))
	}
	if took := long.at.Sub(started); took < longMS*time.Millisecond*9/10 {
		t.Errorf("the long call took %v, not the %d ms its script sleeps", took, longMS)
	}
}
