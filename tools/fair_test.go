package tools

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
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
	e := newEnv(t, envOptions{Locks: opts, Server: Options{Agents: agents.New(agents.Owned)}})
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
	r := mcptest.Call(ctx, c, tool, args)
	if r.Err != nil {
		return r.Err.Error(), true
	}
	return r.Text, r.IsError
}

// TestAttackQueueFloodGlobal: in global mode alice holds the lock and queues
// 70 calls behind it, more than --max-queue; bob's first call is not refused
// as busy and runs before alice's queued calls, while alice's own calls past
// the bound fail as hers.
func TestAttackQueueFloodGlobal(t *testing.T) {
	t.Parallel()
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
	mcptest.WaitFor(t, "A's calls to queue", func() bool { return e.srv.locks.Stats()[0].Queued == maxQueue })
	for _, text := range busy {
		mustContain(t, text, "of this agent already queued (--max-queue 64 per agent)")
	}

	bobDone := make(chan answer, 1)
	go func() {
		text, failed := callAs(ctx, bob, "evaluate_script", map[string]any{"pageId": bobPage, "function": fetchJS(m.URL + "/mark?who=bob")})
		bobDone <- answer{text, failed}
	}()
	mcptest.WaitFor(t, "B's call to queue", func() bool { return e.srv.locks.Stats()[0].Queued == maxQueue+1 })
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

// statsFor returns the Stats entry of key in e's locks.
func (e *fairEnv) statsFor(key pagelock.Key) pagelock.KeyStats {
	for _, s := range e.srv.locks.Stats() {
		if s.Key == key {
			return s
		}
	}
	return pagelock.KeyStats{}
}

// TestAttackTraceHeldByOther: while alice records a trace, bob's
// performance_start_trace and performance-scoring lighthouse_audit fail at
// once saying that another agent holds tracing for a trace, without naming
// alice or her page; with wait: true bob's start waits in line and starts
// once alice stops hers. Alice's own second start keeps its old answer.
func TestAttackTraceHeldByOther(t *testing.T) {
	t.Parallel()
	e := newFairEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: 2 * time.Minute})
	alice, bob := e.as(t, "alice-secret-1"), e.as(t, "bob-secret-1")
	alicePage, bobPage := newPageAs(t, alice, "/form.html"), newPageAs(t, bob, "/form.html")
	noReload := map[string]any{"reload": false, "autoStop": false}
	args := func(page int, extra map[string]any) map[string]any {
		a := map[string]any{"pageId": page}
		for k, v := range noReload {
			a[k] = v
		}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	if text, failed := use(t, alice, "performance_start_trace", args(alicePage, nil)); failed {
		t.Fatal(text)
	}
	text, failed := use(t, bob, "performance_start_trace", args(bobPage, nil))
	if !failed {
		t.Fatalf("bob started a trace while alice's records: %s", text)
	}
	mustContain(t, text, "the tracing resource is held by another agent (a performance trace); try again later, or pass wait: true")
	for _, leak := range []string{"alice", fmt.Sprintf("page %d", alicePage)} {
		if strings.Contains(text, leak) {
			t.Errorf("bob's error names %q: %s", leak, text)
		}
	}
	text, failed = use(t, bob, "lighthouse_audit", map[string]any{"pageId": bobPage, "mode": "snapshot", "categories": []string{"performance"}})
	if !failed {
		t.Fatalf("bob's performance audit ran while alice's trace records: %s", text)
	}
	mustContain(t, text, "the tracing resource is held by another agent (a performance trace)")

	// Alice's own second start, on her page: the answer of before.
	text, _ = use(t, alice, "performance_start_trace", args(alicePage, nil))
	mustContain(t, text, fmt.Sprintf("a performance trace is already running on page %d", alicePage))

	waited := make(chan string, 1)
	go func() {
		text, failed := callAs(t.Context(), bob, "performance_start_trace", args(bobPage, map[string]any{"wait": true}))
		if failed {
			text = "failed: " + text
		}
		waited <- text
	}()
	mcptest.WaitFor(t, "the waiting trace to queue", func() bool { return e.statsFor(pagelock.Tracing).Queued == 1 })
	select {
	case text := <-waited:
		t.Fatalf("bob's start with wait: true answered while alice's trace records: %s", text)
	default:
	}
	if text, failed := use(t, alice, "performance_stop_trace", map[string]any{"pageId": alicePage}); failed {
		t.Fatal(text)
	}
	if text := <-waited; strings.HasPrefix(text, "failed: ") {
		t.Fatalf("bob's start after alice's stop: %s", text)
	}
	if text, failed := use(t, bob, "performance_stop_trace", map[string]any{"pageId": bobPage}); failed {
		t.Fatal(text)
	}
}

// TestAttackTraceHeldByOtherGlobal: in global mode another agent's open
// trace fails bob's start at once, with wait: true as well, saying why it
// cannot wait.
func TestAttackTraceHeldByOtherGlobal(t *testing.T) {
	t.Parallel()
	e := newFairEnv(t, pagelock.Options{Mode: pagelock.Global, Timeout: 2 * time.Minute})
	alice, bob := e.as(t, "alice-secret-1"), e.as(t, "bob-secret-1")
	alicePage, bobPage := newPageAs(t, alice, "/form.html"), newPageAs(t, bob, "/form.html")
	if text, failed := use(t, alice, "performance_start_trace", map[string]any{"pageId": alicePage, "reload": false, "autoStop": false}); failed {
		t.Fatal(text)
	}
	for _, wait := range []bool{false, true} {
		text, failed := use(t, bob, "performance_start_trace", map[string]any{"pageId": bobPage, "reload": false, "autoStop": false, "wait": wait})
		if !failed {
			t.Fatalf("wait %t: bob started a trace while alice's records: %s", wait, text)
		}
		mustContain(t, text, "the tracing resource is held by another agent (a performance trace); try again later: with --lock-mode global a call cannot wait for it")
		if strings.Contains(text, fmt.Sprintf("page %d", alicePage)) {
			t.Errorf("bob's error names alice's page: %s", text)
		}
	}
	if text, failed := use(t, alice, "performance_stop_trace", map[string]any{"pageId": alicePage}); failed {
		t.Fatal(text)
	}
}

// TestAttackAuditHeldByOther: while another agent's audit holds the
// browser's Lighthouse resource, bob's lighthouse_audit fails at once saying
// so; with wait: true it waits in line for it.
func TestAttackAuditHeldByOther(t *testing.T) {
	t.Parallel()
	e := newFairEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: 2 * time.Minute})
	bob := e.as(t, "bob-secret-1")
	bobPage := newPageAs(t, bob, "/form.html")
	// Alice's audit, as the Guard holds it for her call.
	hold, err := e.srv.locks.Acquire(t.Context(), pagelock.Request{Keys: []pagelock.Key{pagelock.PageKey(1), pagelock.Audit}, Owner: "lighthouse_audit on page 1 for agent token:alice", Agent: "token:alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	text, failed := use(t, bob, "lighthouse_audit", map[string]any{"pageId": bobPage, "mode": "snapshot"})
	if !failed {
		t.Fatalf("bob's audit ran beside alice's: %s", text)
	}
	mustContain(t, text, "the audit resource is held by another agent (a Lighthouse audit); try again later, or pass wait: true")
	if strings.Contains(text, "alice") || strings.Contains(text, "page 1") {
		t.Errorf("bob's error names alice or her page: %s", text)
	}
	if s := e.statsFor(pagelock.PageKey(bobPage)); s.Holder != "" || s.Queued != 0 {
		t.Errorf("bob's page after the refusal: %+v; want it free", s)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waited := make(chan string, 1)
	go func() {
		text, _ := callAs(ctx, bob, "lighthouse_audit", map[string]any{"pageId": bobPage, "mode": "snapshot", "wait": true})
		waited <- text
	}()
	mcptest.WaitFor(t, "the waiting audit to queue", func() bool { return e.statsFor(pagelock.Audit).Queued == 1 })
	cancel()
	<-waited
	mcptest.WaitFor(t, "the audit queue to empty", func() bool { return e.statsFor(pagelock.Audit).Queued == 0 })
}

// TestAttackHugeEvaluate: alice's script returns a 48 MiB string, over the
// 32 MiB pagemux takes from Chrome in one message; it is cut inside the page, so pagemux allocates a small part of it, the browser is
// not restarted, and bob's call meanwhile answers. Then the other ways a
// page makes pagemux hold what it likes: a classic script's object (cut in
// the page too), a classic script's 40 MiB string and a 40 MiB console
// message (over the mux's limit: dropped as they arrive, and said so), and
// console messages of 1 MiB (kept cut). Not parallel: it counts what the
// whole test binary allocates.
func TestAttackHugeEvaluate(t *testing.T) {
	e := newFairEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: 2 * time.Minute})
	alice, bob := e.as(t, "alice-secret-1"), e.as(t, "bob-secret-1")
	alicePage, bobPage := newPageAs(t, alice, "/form.html"), newPageAs(t, bob, "/form.html")
	launches, _, _ := e.b.Counts()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	bobDone := make(chan string, 1)
	go func() {
		text, failed := callAs(t.Context(), bob, "evaluate_script", map[string]any{"pageId": bobPage, "function": "() => 'bob here'"})
		if failed {
			text = "failed: " + text
		}
		bobDone <- text
	}()
	text, failed := use(t, alice, "evaluate_script", map[string]any{"pageId": alicePage, "function": "() => 'x'.repeat(48 << 20)"})
	runtime.ReadMemStats(&after)
	if failed {
		t.Fatalf("the huge script failed: %s", text)
	}
	mustContain(t, text, "cut: the value is 50331650 characters of JSON, the first 262144 shown")
	if len(text) > 300<<10 {
		t.Errorf("the answer is %d bytes", len(text))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
		t.Errorf("pagemux allocated %d MiB during the call; want well under the 48 MiB of the value", alloc>>20)
	}
	mustContain(t, <-bobDone, "bob here")
	if now, _, _ := e.b.Counts(); now != launches {
		t.Errorf("Chrome was launched %d times during the call", now-launches)
	}
	// A value cut in the page and one that was not give the same JSON.
	small, _ := use(t, alice, "evaluate_script", map[string]any{"pageId": alicePage, "function": "async () => ({a: [1, 'é'], b: null})"})
	mustContain(t, small, `{"a":[1,"é"],"b":null}`)
	small, _ = use(t, alice, "evaluate_script", map[string]any{"pageId": alicePage, "format": "script", "function": "const o = {a: [1, 'é'], b: null}; o"})
	mustContain(t, small, `{"a":[1,"é"],"b":null}`)

	allocDuring := func(tool string, args map[string]any) (string, bool, uint64) {
		t.Helper()
		runtime.ReadMemStats(&before)
		text, failed := use(t, alice, tool, args)
		runtime.ReadMemStats(&after)
		return text, failed, after.TotalAlloc - before.TotalAlloc
	}
	text, failed, alloc := allocDuring("evaluate_script", map[string]any{"pageId": alicePage, "format": "script", "function": "const big = {v: 'x'.repeat(48 << 20)}; big"})
	if failed {
		t.Fatalf("the classic script's huge object failed: %s", text)
	}
	mustContain(t, text, "cut: the value is 50331656 characters of JSON, the first 262144 shown")
	if alloc > 24<<20 {
		t.Errorf("pagemux allocated %d MiB for a classic script's huge object; want well under its 48 MiB", alloc>>20)
	}
	// A string crosses CDP whatever is asked: the mux reads it away.
	text, failed, alloc = allocDuring("evaluate_script", map[string]any{"pageId": alicePage, "format": "script", "function": "'x'.repeat(40 << 20)"})
	if !failed {
		t.Fatalf("a classic script's 40 MiB string answered: %.300s", text)
	}
	mustContain(t, text, "over the 32.0 MiB that pagemux takes from Chrome in one message")
	if alloc > 128<<20 {
		t.Errorf("pagemux allocated %d MiB for a 40 MiB string; want about the 32 MiB it holds at most", alloc>>20)
	}
	text, failed, alloc = allocDuring("evaluate_script", map[string]any{"pageId": alicePage,
		"function": "() => { console.log('y'.repeat(40 << 20)); for (let i = 0; i < 3; i++) console.log(i + 'z'.repeat(1 << 20)); return 'logged'; }"})
	if failed {
		t.Fatalf("logging: %s", text)
	}
	if alloc > 160<<20 {
		t.Errorf("pagemux allocated %d MiB for 43 MiB of console messages", alloc>>20)
	}
	var list string
	mcptest.WaitFor(t, "the console messages", func() bool {
		list, _ = use(t, alice, "list_console_messages", map[string]any{"pageId": alicePage})
		return strings.Count(list, "bytes in all; pagemux keeps the first") == 3
	})
	mustContain(t, list, "[warn] pagemux dropped a console message of 40.0 MiB here: it is over the 32.0 MiB")
	mustContain(t, list, "… <1048577 bytes in all; pagemux keeps the first 16384 of a console message's text>")
	if len(list) > 200<<10 {
		t.Errorf("list_console_messages answered %d bytes", len(list))
	}
	if now, _, _ := e.b.Counts(); now != launches {
		t.Errorf("Chrome was launched %d times during the calls", now-launches)
	}
	mustContain(t, e.ok(t, "evaluate_script", map[string]any{"pageId": alicePage, "function": "() => 'still here'"}), "still here")
}
