package tools

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/pagelock"
)

// longScript runs for 60 s unless stopped: far past every bound these tests
// wait for.
const longScript = "async () => { await new Promise(r => setTimeout(r, 60000)); return 'finished' }"

// callAsync calls a tool in the background as c.
func callAsync(t *testing.T, c *client.Client, tool string, args map[string]any) <-chan outcome {
	return asyncCall(t.Context(), c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
}

// waitLock waits until page's lock has a holder and queued calls behind
// it, and returns its stats.
func waitLock(t *testing.T, e *agentEnv, page, queued int) pagelock.KeyStats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, st := range e.srv.locks.Stats() {
			if st.Key == pagelock.PageKey(page) && st.Holder != "" && st.Queued >= queued {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("page %d never had a holder and %d queued calls: %+v", page, queued, e.srv.locks.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockFree reports whether page's lock has neither holder nor queue.
func lockFree(e *agentEnv, page int) bool {
	for _, st := range e.srv.locks.Stats() {
		if st.Key == pagelock.PageKey(page) && (st.Holder != "" || st.Queued > 0) {
			return false
		}
	}
	return true
}

// receive waits for a background call, failing the test past a minute.
func receive(t *testing.T, ch <-chan outcome, what string) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(time.Minute):
		t.Fatalf("%s never answered", what)
		return outcome{}
	}
}

// TestTakeover: a new session of the same token takes over the token's
// pages. The old session's running and queued calls fail at once with
// why, the page's lock is free for the new session, the old session can no
// longer act, and its later end leaves the pages alone. Another token's
// agent never gets them.
func TestTakeover(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agents.Owned)
	old := e.session(t, "lead-secret-1", "")
	page := newPageAs(t, old, "/form.html")
	running := callAsync(t, old, "evaluate_script", map[string]any{"function": longScript})
	waitLock(t, e, page, 0)
	queued := callAsync(t, old, "evaluate_script", map[string]any{"function": "() => 'queued'"})
	waitLock(t, e, page, 1)

	other := e.session(t, "sub-secret-1", "")
	if text, failed := use(t, other, "evaluate_script", map[string]any{"pageId": page, "function": "() => 1"}); !failed || !strings.Contains(text, "belongs to another agent") {
		t.Errorf("another token's agent used the page: %s", text)
	}

	cur := e.session(t, "lead-secret-1", "")
	tookOver := time.Now()
	list, failed := use(t, cur, "list_pages", nil)
	if failed || !strings.Contains(list, fmt.Sprintf("%d: ", page)) {
		t.Errorf("the new session's pages:\n%s", list)
	}
	for what, ch := range map[string]<-chan outcome{"the running call": running, "the queued call": queued} {
		o := receive(t, ch, what)
		if o.err != nil || !o.r.isError || !strings.Contains(o.r.text, "taken over") || strings.Contains(o.r.text, "finished") || strings.Contains(o.r.text, "queued") {
			t.Errorf("%s of the old session: %+v", what, o)
		}
		if took := o.at.Sub(tookOver); took > 20*time.Second { // a third of the script's 60 s
			t.Errorf("%s of the old session ended %v after the takeover, not at once", what, took)
		}
	}
	text, failed := use(t, cur, "evaluate_script", map[string]any{"function": "() => location.pathname"})
	if failed || !strings.Contains(text, "/form.html") {
		t.Errorf("the new session on its page: %s", text)
	}
	if text, failed := use(t, old, "list_pages", nil); !failed || !strings.Contains(text, "taken over") || !strings.Contains(text, "Pagemux-Agent") {
		t.Errorf("a new call of the old session: %s", text)
	}
	if text, failed := use(t, other, "select_page", map[string]any{"pageId": page}); !failed || !strings.Contains(text, "belongs to another agent") {
		t.Errorf("another token's agent selected the page after the takeover: %s", text)
	}

	// The old session's end is not the agent's: the page stays.
	old.Close()
	time.Sleep(time.Second) // the end is handled in the background; give it time to do wrong
	if text, failed := use(t, cur, "evaluate_script", map[string]any{"pageId": page, "function": "() => 'kept'"}); failed || !strings.Contains(text, "kept") {
		t.Errorf("the page after the old session ended: %s", text)
	}
}

// TestSessionEndCancelsQueuedCalls: when an agent's session ends, its
// running call and the calls queued behind it stop at once, not when the
// script ends, the page's lock is free, and the page closes.
func TestSessionEndCancelsQueuedCalls(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agents.Owned)
	a := e.agent(t)
	page := newPageAs(t, a, "/form.html")
	var calls []<-chan outcome
	calls = append(calls, callAsync(t, a, "evaluate_script", map[string]any{"function": longScript}))
	waitLock(t, e, page, 0)
	for i := range 3 {
		calls = append(calls, callAsync(t, a, "evaluate_script", map[string]any{"function": fmt.Sprintf("() => 'queued %d'", i)}))
	}
	st := waitLock(t, e, page, 3)
	t.Logf("before the end: %+v", st)

	ended := time.Now()
	a.Close()
	deadline := ended.Add(20 * time.Second) // a third of the script's 60 s
	for !lockFree(e, page) {
		if time.Now().After(deadline) {
			t.Fatalf("page %d's lock is still taken after its agent left: %+v", page, e.srv.locks.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		if _, err := e.b.Page(page); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("page %d of a departed agent is still open", page)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, ch := range calls {
		o := receive(t, ch, fmt.Sprintf("call %d", i))
		// The client closed its side too: a call may end with its
		// transport; one that was answered must say the session ended.
		if o.err == nil && (!o.r.isError || strings.Contains(o.r.text, "finished") || strings.Contains(o.r.text, "'queued")) {
			t.Errorf("call %d after its session ended: %+v", i, o)
		}
	}
}
