package tools

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/soak"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// Many agents at once on one server over Streamable HTTP, each with a token
// of its own: their pages never mix, and in page mode one agent's long call
// never holds up another's quick ones.

// newTokenEnv serves a server of its own in lock mode mode over HTTP with
// one token per name (secret "NAME-secret-1"), pages owned by their agents.
func newTokenEnv(t *testing.T, mode pagelock.Mode, names ...string) *agentEnv {
	t.Helper()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: mode, Timeout: time.Minute}, Server: Options{Agents: agents.New(agents.Owned)}})
	tokens := map[string]string{}
	for _, n := range names {
		tokens[n] = n + "-secret-1"
	}
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{Tokens: tokens}))
	t.Cleanup(ts.Close)
	return &agentEnv{testEnv: e, url: ts.URL}
}

// markedPage is a data: URL of a document that names its agent and step in
// its title and heading, and in nothing else.
func markedPage(agent, step int) string {
	mark := fmt.Sprintf("agent-%d-step-%d", agent, step)
	return "data:text/html," + url.PathEscape(fmt.Sprintf("<!doctype html><title>%s</title><h1>%s</h1><p>owned by agent-%d</p>", mark, mark, agent))
}

var agentMark = regexp.MustCompile(`agent-(\d+)`)

// TestAgentsLoadOwnDocuments: four agents, each with a token of its own, at
// once in page mode with owned pages: each navigates its page 4 times (50
// with PAGEMUX_SOAK=1) to a
// document naming it and the step, and snapshots it, all without pageId (on
// its own selected page). No snapshot may show another agent's document,
// nor an older one of its own.
func TestAgentsLoadOwnDocuments(t *testing.T) {
	t.Parallel()
	const agentsN = 4
	steps := soak.N(4, 50)
	names := []string{"load0", "load1", "load2", "load3"}
	e := newTokenEnv(t, pagelock.PerPage, names...)
	clients := make([]*client.Client, agentsN)
	for i, n := range names {
		// Half the agents in a session-based revision, half in the
		// stateless one, where the agent is its token.
		protocol := "2025-06-18"
		if i%2 == 1 {
			protocol = mcp.LATEST_PROTOCOL_VERSION
		}
		clients[i] = e.agentAs(t, n+"-secret-1", protocol)
		newPageAs(t, clients[i], "/form.html")
	}

	type tally struct {
		foreign, stale, failed int
		first                  string
	}
	tallies := make([]tally, agentsN)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			tl := &tallies[i]
			note := func(format string, args ...any) {
				if tl.first == "" {
					tl.first = fmt.Sprintf(format, args...)
				}
			}
			for step := range steps {
				res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{
					Name: "navigate_page", Arguments: map[string]any{"url": markedPage(i, step)}}})
				if err != nil || res.IsError {
					tl.failed++
					note("navigate_page step %d: %v %s", step, err, mcptest.Text(res))
					continue
				}
				res, err = c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "take_snapshot"}})
				if err != nil || res.IsError {
					tl.failed++
					note("take_snapshot step %d: %v %s", step, err, mcptest.Text(res))
					continue
				}
				snap := mcptest.Text(res)
				for _, m := range agentMark.FindAllStringSubmatch(snap, -1) {
					if m[1] != fmt.Sprint(i) {
						tl.foreign++
						note("step %d: agent %d's snapshot shows agent %s's document:\n%s", step, i, m[1], snap)
						break
					}
				}
				if !strings.Contains(snap, fmt.Sprintf("agent-%d-step-%d", i, step)) {
					tl.stale++
					note("step %d: agent %d's snapshot lacks its document of this step:\n%s", step, i, snap)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d agents × %d navigations and snapshots in %v", agentsN, steps, time.Since(start).Round(time.Millisecond))
	for i, tl := range tallies {
		if tl.foreign+tl.stale+tl.failed > 0 {
			t.Errorf("agent %d: %d snapshots of another agent's document, %d of another step, %d calls failed; first: %s",
				i, tl.foreign, tl.stale, tl.failed, tl.first)
		}
	}
}

// ranAt is the time, in ms since the epoch, that a script's answer ends
// with (" at 1733…").
func ranAt(t *testing.T, text string) int64 {
	t.Helper()
	m := regexp.MustCompile(` at (\d{13})`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no time in the answer: %s", text)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// TestAgentsLoadLongCall: one agent's long call on its page, and another
// agent's quick calls on its own page: in page mode the quick calls all
// finish before the long one; in global mode a quick call waits for it.
// Only the order of the answers is checked, no timing bound.
func TestAgentsLoadLongCall(t *testing.T) {
	const longMS = 5000
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := newTokenEnv(t, mode, "long", "quick")
			long, quick := e.agentAs(t, "long-secret-1", "2025-06-18"), e.agentAs(t, "quick-secret-1", "2025-06-18")
			lp := newPageAs(t, long, "/form.html")
			qp := newPageAs(t, quick, "/page2.html")

			started := time.Now()
			// Each script says when it ran by the browser's clock, which the
			// two pages share.
			slow := asyncCall(t.Context(), long, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "evaluate_script",
				Arguments: map[string]any{"pageId": lp, "function": fmt.Sprintf("() => new Promise(r => setTimeout(() => r('slept at ' + Date.now()), %d))", longMS)}}})
			e.waitHeld(t, pagelock.PageKey(lp))
			quickArgs := map[string]any{"pageId": qp, "function": "() => location.pathname + ' at ' + Date.now()"}
			if mode == pagelock.Global {
				one := asyncCall(t.Context(), quick, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "evaluate_script", Arguments: quickArgs}})
				e.waitQueued(t, pagelock.PageKey(qp), 1)
				oq, ol := <-one, <-slow
				q, s := must(t, oq), must(t, ol)
				if q.isError || !strings.Contains(q.text, "/page2.html") || s.isError || !strings.Contains(s.text, "slept") {
					t.Fatalf("quick: %s\nlong: %s", q.text, s.text)
				}
				// A quick call that ran before the long one's script ended
				// ran beside it: global mode has one lock. (Their answers
				// go to two clients, and may arrive in either order.)
				if qAt, sAt := ranAt(t, q.text), ranAt(t, s.text); qAt < sAt {
					t.Errorf("global mode: the quick call ran %d ms before the long one's script ended", sAt-qAt)
				}
				if !strings.Contains(q.text, "Waited ") {
					t.Errorf("global mode: the quick call's answer does not say it waited: %s", q.text)
				}
				return
			}
			var lastQuick time.Time
			for i := range 10 {
				text, failed := use(t, quick, "evaluate_script", quickArgs)
				if failed || !strings.Contains(text, "/page2.html") {
					t.Fatalf("quick call %d: %s", i, text)
				}
				if strings.Contains(text, "Waited ") {
					t.Errorf("page mode: quick call %d on its own page says it waited: %s", i, text)
				}
				lastQuick = time.Now()
			}
			ol := <-slow
			s := must(t, ol)
			if s.isError || !strings.Contains(s.text, "slept") {
				t.Fatalf("long call: %s", s.text)
			}
			if !lastQuick.Before(ol.at) {
				t.Errorf("page mode: the last quick call was answered %v after the long call (which took %v)",
					lastQuick.Sub(ol.at), ol.at.Sub(started))
			}
			// The long call really was long: the quick calls had to run
			// beside it to finish first.
			if took := ol.at.Sub(started); took < longMS*time.Millisecond*9/10 {
				t.Errorf("the long call took %v, not the %d ms its script sleeps", took, longMS)
			}
		})
	}
}
