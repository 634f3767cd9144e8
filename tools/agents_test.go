package tools

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// agentEnv is one server over Streamable HTTP, where each MCP session is an
// agent.
type agentEnv struct {
	*testEnv
	url string
}

func newAgentEnv(t *testing.T, mode agents.Mode) *agentEnv {
	t.Helper()
	return newAgentEnvWith(t, Options{Agents: agents.New(mode)})
}

func newAgentEnvWith(t *testing.T, opts Options) *agentEnv {
	t.Helper()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Server: opts})
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{Tokens: map[string]string{
		"team": "team-secret-1", "lead": "lead-secret-1", "sub": "sub-secret-1"}}))
	t.Cleanup(ts.Close)
	return &agentEnv{testEnv: e, url: ts.URL}
}

// agent connects a new MCP session of a new agent, in the session-based
// revision 2025-06-18: token team, with an agent name of its own (the
// stateless revision has no sessions: there an agent is its token).
func (e *agentEnv) agent(t *testing.T) *client.Client {
	t.Helper()
	return e.session(t, "team-secret-1", fmt.Sprintf("agent-%d", agentCount.Add(1)))
}

// agentCount numbers the agents agent makes.
var agentCount atomic.Int64

// session connects a new MCP session with a token's secret and, unless
// name is "", an agent name (serve.AgentHeader). Sessions of one token and
// name are one agent: the newest takes over.
func (e *agentEnv) session(t *testing.T, secret, name string) *client.Client {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + secret}
	if name != "" {
		h[serve.AgentHeader] = name
	}
	return mcptest.HTTPClient(t, e.url+"/mcp", h, "2025-06-18")
}

func (e *agentEnv) agentAs(t *testing.T, secret, protocol string) *client.Client {
	t.Helper()
	return mcptest.HTTPClient(t, e.url+"/mcp", map[string]string{"Authorization": "Bearer " + secret}, protocol)
}

// use calls a tool as an agent and returns its text and whether it failed.
func use(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool) {
	t.Helper()
	r := mcptest.Call(t.Context(), c, tool, args)
	if r.Err != nil {
		t.Fatalf("%s: %v", tool, r.Err)
	}
	return r.Text, r.IsError
}

// newPageAs opens path as an agent and returns the new page's id.
func newPageAs(t *testing.T, c *client.Client, path string) int {
	t.Helper()
	return openAs(t, c, testSite.URL+path)
}

// openAs opens url in a new page of the agent and returns its id.
func openAs(t *testing.T, c *client.Client, url string) int {
	t.Helper()
	text, failed := use(t, c, "new_page", map[string]any{"url": url})
	if failed {
		t.Fatal(text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "[selected]") {
			var id int
			fmt.Sscanf(line, "%d:", &id)
			return id
		}
	}
	t.Fatalf("new_page selected nothing:\n%s", text)
	return 0
}

// TestAgentsOwnTheirPages: in owned mode each agent has its own selected
// page, sees only its own pages, and cannot touch another agent's.
func TestAgentsOwnTheirPages(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agents.Owned)
	lead, sub := e.agent(t), e.agent(t)
	a := newPageAs(t, lead, "/form.html")
	b := newPageAs(t, sub, "/page2.html")

	if text, _ := use(t, lead, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(text, "/form.html") {
		t.Errorf("lead's call without pageId did not act on its page: %s", text)
	}
	if text, _ := use(t, sub, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(text, "/page2.html") {
		t.Errorf("sub's call without pageId did not act on its page: %s", text)
	}
	text, failed := use(t, sub, "evaluate_script", map[string]any{"pageId": a, "function": "() => 1"})
	if !failed || !strings.Contains(text, fmt.Sprintf("page %d belongs to another agent", a)) {
		t.Errorf("sub used lead's page: %s", text)
	}
	if text, failed := use(t, sub, "select_page", map[string]any{"pageId": a}); !failed || !strings.Contains(text, "belongs to another agent") {
		t.Errorf("sub selected lead's page: %s", text)
	}
	if text, failed := use(t, sub, "close_page", map[string]any{"pageId": a}); !failed || !strings.Contains(text, "belongs to another agent") {
		t.Errorf("sub closed lead's page: %s", text)
	}
	list, _ := use(t, sub, "list_pages", nil)
	if strings.Contains(list, "/form.html") || !strings.Contains(list, fmt.Sprintf("%d: ", b)) || !strings.Contains(list, "[selected]") {
		t.Errorf("sub's page list:\n%s", list)
	}
	// A session that ends takes its pages with it.
	sub.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := e.b.Page(b); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("page %d of a departed agent is still open", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if text, failed := use(t, lead, "evaluate_script", map[string]any{"pageId": a, "function": "() => 'still here'"}); failed || !strings.Contains(text, "still here") {
		t.Errorf("lead's page after sub left: %s", text)
	}
}

// TestAgentsShared: in shared mode agents see and use every page, each with
// its own selection.
func TestAgentsShared(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agents.Shared)
	lead, sub := e.agent(t), e.agent(t)
	a := newPageAs(t, lead, "/form.html")
	newPageAs(t, sub, "/page2.html")
	if text, failed := use(t, sub, "evaluate_script", map[string]any{"pageId": a, "function": "() => location.pathname"}); failed || !strings.Contains(text, "/form.html") {
		t.Errorf("shared: sub on lead's page: %s", text)
	}
	if text, _ := use(t, lead, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(text, "/form.html") {
		t.Errorf("shared: lead's selection moved with sub's new_page: %s", text)
	}
	if list, _ := use(t, sub, "list_pages", nil); !strings.Contains(list, "/form.html") || !strings.Contains(list, "/page2.html") {
		t.Errorf("shared: sub's page list:\n%s", list)
	}
}

// TestIsolateAgents: each agent's pages live in a browser context of their
// own: a cookie one agent sets is not the other's.
func TestIsolateAgents(t *testing.T) {
	t.Parallel()
	e := newAgentEnvWith(t, Options{Agents: agents.New(agents.Owned), IsolateAgents: true})
	lead, sub := e.agent(t), e.agent(t)
	newPageAs(t, lead, "/form.html")
	newPageAs(t, sub, "/form.html")
	use(t, lead, "evaluate_script", map[string]any{"function": "() => { document.cookie = 'who=lead'; return document.cookie }"})
	if text, _ := use(t, sub, "evaluate_script", map[string]any{"function": "() => document.cookie"}); strings.Contains(text, "who=lead") {
		t.Errorf("sub sees lead's cookie: %s", text)
	}
	if text, _ := use(t, lead, "evaluate_script", map[string]any{"function": "() => document.cookie"}); !strings.Contains(text, "who=lead") {
		t.Errorf("lead lost its cookie: %s", text)
	}
}

// TestAgentsByToken: in the stateless revision an agent is its token.
func TestAgentsByToken(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agents.Owned)
	lead, sub := e.agentAs(t, "lead-secret-1", mcp.LATEST_PROTOCOL_VERSION), e.agentAs(t, "sub-secret-1", mcp.LATEST_PROTOCOL_VERSION)
	a := newPageAs(t, lead, "/form.html")
	newPageAs(t, sub, "/page2.html")
	if text, failed := use(t, sub, "evaluate_script", map[string]any{"pageId": a, "function": "() => 1"}); !failed || !strings.Contains(text, "belongs to another agent") {
		t.Errorf("token sub used token lead's page: %s", text)
	}
	if text, _ := use(t, lead, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(text, "/form.html") {
		t.Errorf("token lead's selection: %s", text)
	}
}

// TestAnonymousNeedsPageID: a stateless call with no session and no token
// cannot have a selected page: without pageId it is told to pass one.
func TestAnonymousNeedsPageID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Server: Options{Agents: agents.New(agents.Owned)}})
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{}))
	t.Cleanup(ts.Close)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"anon","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, ts.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"take_snapshot","arguments":{},`+meta+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "take_snapshot")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	_, _ = fmt.Fprint(&body, readAll(resp))
	if !strings.Contains(body.String(), "pass pageId") {
		t.Errorf("an anonymous call without pageId: %s", body.String())
	}
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestLogCallNamesAgentAndPage: every tool call's log line names its agent
// and page.
func TestLogCallNamesAgentAndPage(t *testing.T) {
	var buf strings.Builder
	s := &Server{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	ctx := agents.With(context.Background(), agents.Agent{ID: "token:lead"})
	s.logCall(ctx, "click", &browser.Page{ID: 4}, time.Millisecond, &mcp.CallToolResult{})
	if line := buf.String(); !strings.Contains(line, "tool=click") || !strings.Contains(line, "page=4") || !strings.Contains(line, "agent=token:lead") {
		t.Errorf("the log line: %s", line)
	}
}

// TestAgentFirstPage: an agent whose first call is navigate_page, as on a
// fresh stdio server, gets a page of its own for it; the page list shows
// it that page alone, not the browser's first tab nor another agent's.
func TestAgentFirstPage(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agents.Owned)
	lead, sub := e.agent(t), e.agent(t)
	mine := newPageAs(t, lead, "/form.html")
	text, failed := use(t, sub, "navigate_page", map[string]any{"url": testSite.URL + "/page2.html"})
	if failed {
		t.Fatalf("a fresh agent's navigate_page: %s", text)
	}
	list, _ := use(t, sub, "list_pages", nil)
	var tabs []string
	for _, line := range strings.Split(list, "\n") {
		if len(line) > 0 && line[0] >= '0' && line[0] <= '9' {
			tabs = append(tabs, line)
		}
	}
	if len(tabs) != 1 || !strings.Contains(tabs[0], "/page2.html") || !strings.Contains(tabs[0], "[selected]") || strings.HasPrefix(tabs[0], fmt.Sprintf("%d:", mine)) {
		t.Errorf("a fresh agent's page list after navigate_page:\n%s", list)
	}
	if text, _ := use(t, lead, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(text, "/form.html") {
		t.Errorf("the other agent's page moved: %s", text)
	}
}
