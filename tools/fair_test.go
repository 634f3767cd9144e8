package tools

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// fairEnv is one server over Streamable HTTP with two tokens, alice and bob,
// each its own agent, in the lock mode of opts.
type fairEnv struct {
	*testEnv
	url string
}

func newFairEnv(t *testing.T, opts pagelock.Options) *fairEnv {
	t.Helper()
	e := startEnvWith(t, opts, Options{Agents: agents.New(agents.Owned)}, false)
	t.Cleanup(e.close)
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{Tokens: map[string]string{
		"alice": "alice-secret-1", "bob": "bob-secret-1"}}))
	t.Cleanup(ts.Close)
	return &fairEnv{testEnv: e, url: ts.URL}
}

// as connects a session with a token's secret, in the stateless revision,
// where the agent is the token.
func (e *fairEnv) as(t *testing.T, secret string) *client.Client {
	t.Helper()
	return (&agentEnv{testEnv: e.testEnv, url: e.url}).agentAs(t, secret, "2025-06-18")
}

// marks is a server that the pages of a test report to: /mark?who=… records
// who, /hold answers only once release is called.
type marks struct {
	*httptest.Server
	mu      sync.Mutex
	got     []string
	held    chan struct{} // closed when /hold was asked
	release func()
}

func newMarks(t *testing.T) *marks {
	m := &marks{held: make(chan struct{})}
	released := make(chan struct{})
	var once, heldOnce sync.Once
	m.release = func() { once.Do(func() { close(released) }) }
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hold":
			heldOnce.Do(func() { close(m.held) })
			select {
			case <-released:
			case <-r.Context().Done():
			}
		case "/mark":
			m.mu.Lock()
			m.got = append(m.got, r.URL.Query().Get("who"))
			m.mu.Unlock()
		}
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}))
	t.Cleanup(m.Close)
	t.Cleanup(m.release)
	return m
}

func (m *marks) order() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.got...)
}

// fetchJS is a function that fetches url and returns "done".
func fetchJS(url string) string {
	return `async () => { await fetch("` + url + `", {mode: "no-cors"}); return "done" }`
}

// callAs calls a tool as c and returns its text and whether it failed; a
// protocol error is returned as text too, for calls made in goroutines.
func callAs(ctx context.Context, c *client.Client, tool string, args map[string]any) (string, bool) {
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		return err.Error(), true
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError
}

// TestAttackQueueFloodGlobal: in global mode alice holds the lock and queues
// 70 calls behind it, more than --max-queue; bob's first call is not refused
// as busy and runs before alice's queued calls, while alice's own calls past
// the bound fail as hers.
func TestAttackQueueFloodGlobal(t *testing.T) {
	const maxQueue, flood = 64, 70
	e := newFairEnv(t, pagelock.Options{Mode: pagelock.Global, MaxQueue: maxQueue, Timeout: 2 * time.Minute})
	m := newMarks(t)
	alice, bob := e.as(t, "alice-secret-1"), e.as(t, "bob-secret-1")
	alicePage, bobPage := newPageAs(t, alice, "/form.html"), newPageAs(t, bob, "/form.html")

	ctx := t.Context()
	holder := make(chan string, 1)
	go func() {
		text, _ := callAs(ctx, alice, "evaluate_script", map[string]any{"pageId": alicePage, "function": fetchJS(m.URL + "/hold")})
		holder <- text
	}()
	<-m.held
	type answer struct {
		text   string
		failed bool
	}
	answers := make(chan answer, flood)
	for range flood {
		go func() {
			text, failed := callAs(ctx, alice, "evaluate_script", map[string]any{"pageId": alicePage, "function": fetchJS(m.URL + "/mark?who=alice")})
			answers <- answer{text, failed}
		}()
	}
	// Alice's calls past the bound answer at once, as busy.
	var busy []string
	for range flood - maxQueue {
		a := <-answers
		if !a.failed {
			t.Fatalf("alice's call past the bound ran while her first held the lock: %s", a.text)
		}
		busy = append(busy, a.text)
	}
	waitFor(t, func() bool { return e.srv.locks.Stats()[0].Queued == maxQueue })
	for _, text := range busy {
		mustContain(t, text, "of this agent already queued (--max-queue 64 per agent)")
	}

	bobDone := make(chan answer, 1)
	go func() {
		text, failed := callAs(ctx, bob, "evaluate_script", map[string]any{"pageId": bobPage, "function": fetchJS(m.URL + "/mark?who=bob")})
		bobDone <- answer{text, failed}
	}()
	waitFor(t, func() bool { return e.srv.locks.Stats()[0].Queued == maxQueue+1 })
	m.release()
	if text := <-holder; !strings.Contains(text, "done") {
		t.Fatalf("alice's first call: %s", text)
	}
	if b := <-bobDone; b.failed {
		t.Fatalf("bob's first call failed behind alice's backlog: %s", b.text)
	}
	for range maxQueue {
		if a := <-answers; a.failed {
			t.Errorf("alice's queued call failed: %s", a.text)
		}
	}
	got := m.order()
	if len(got) != maxQueue+1 || got[0] != "bob" {
		t.Errorf("marks %v; want bob's first of %d, before every queued call of alice", got, maxQueue+1)
	}
}

// waitFor polls cond until it holds: the locks give no other sign that a
// call has queued.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
