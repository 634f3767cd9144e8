package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
)

// sleepJS holds a page's lock for ms milliseconds without blocking the
// renderer, so the test measures the locks and not Chrome's processes.
func sleepJS(ms int) string {
	return fmt.Sprintf("() => new Promise(r => setTimeout(() => r('slept'), %d))", ms)
}

// async runs a call in the background and returns a channel with its result
// and the time it finished.
type outcome struct {
	r   result
	err error
	at  time.Time
}

func (e *testEnv) async(ctx context.Context, name string, args map[string]any) <-chan outcome {
	return e.asyncRequest(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
}

// asyncRequest is async for a request of the caller's making.
func (e *testEnv) asyncRequest(ctx context.Context, req mcp.CallToolRequest) <-chan outcome {
	return asyncCall(ctx, e.client, req)
}

// asyncCall is async for any client.
func asyncCall(ctx context.Context, c *client.Client, req mcp.CallToolRequest) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		a := mcptest.Answer(c.CallTool(ctx, req))
		ch <- outcome{r: result{text: a.Text, isError: a.IsError, images: a.Images}, err: a.Err, at: time.Now()}
	}()
	return ch
}

// waitQueued waits until n calls wait for the key (or for the global lock).
func (e *testEnv) waitQueued(t *testing.T, key pagelock.Key, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range e.srv.locks.Stats() {
			if (s.Key == key || e.srv.locks.Mode() == pagelock.Global) && s.Queued >= n {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never saw %d calls queued on %s: %+v", n, key, e.srv.locks.Stats())
}

func must(t *testing.T, o outcome) result {
	t.Helper()
	if o.err != nil {
		t.Fatalf("call failed: %v", o.err)
	}
	return o.r
}

// In page mode a call on page B does not wait for a long call on page A; in
// global mode it does.
func TestLockModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			e := leaseEnv(t, pagelock.Options{Mode: mode, Timeout: time.Minute, MaxQueue: 64}, Options{})
			a := e.openPage(t, "/form.html")
			b := e.openPage(t, "/page2.html")
			slow := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": a, "function": sleepJS(3000)})
			e.waitHeld(t, pagelock.PageKey(a))
			quick := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": b, "function": "() => 'quick'"})
			q, s := <-quick, <-slow
			must(t, q)
			if must(t, s).isError || q.r.isError {
				t.Fatalf("calls failed: %s / %s", s.r.text, q.r.text)
			}
			if mode == pagelock.PerPage && !q.at.Before(s.at) {
				t.Fatalf("page mode: the call on page B finished after the 3 s call on page A")
			}
			if mode == pagelock.Global {
				if q.at.Before(s.at) {
					t.Fatalf("global mode: the call on page B did not wait for page A")
				}
				mustContain(t, q.r.text, "Waited ", fmt.Sprintf("ms for the global lock (held by evaluate_script on page %d)", a))
			}
		})
	}
}

// waitHeld waits until some call holds the key's lock.
func (e *testEnv) waitHeld(t *testing.T, key pagelock.Key) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range e.srv.locks.Stats() {
			if (s.Key == key || e.srv.locks.Mode() == pagelock.Global) && s.Holder != "" {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("nobody ever held %s", key)
}

// Calls queued on one page run in the order they arrived.
func TestFIFOOrder(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			e := leaseEnv(t, pagelock.Options{Mode: mode, Timeout: time.Minute, MaxQueue: 64}, Options{})
			id := e.openPage(t, "/form.html")
			key := pagelock.PageKey(id)
			e.eval(t, id, "() => { window.order = []; return 1 }")
			hold := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": id, "function": sleepJS(500)})
			e.waitHeld(t, key)
			var calls []<-chan outcome
			for i := 1; i <= 8; i++ {
				calls = append(calls, e.async(t.Context(), "evaluate_script", map[string]any{"pageId": id, "function": fmt.Sprintf("() => window.order.push(%d)", i)}))
				e.waitQueued(t, key, i)
			}
			must(t, <-hold)
			for _, c := range calls {
				if r := must(t, <-c); r.isError {
					t.Fatal(r.text)
				}
			}
			if got := e.eval(t, id, "() => window.order.join(',')"); got != `"1,2,3,4,5,6,7,8"` {
				t.Fatalf("calls ran in the order %s", got)
			}
		})
	}
}

// A cancelled call leaves the queue at once, and a cancelled holder releases
// the page while Chrome is still busy with its script.
func TestCancel(t *testing.T) {
	t.Parallel()
	e := leaseStdioEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64})
	id := e.openPage(t, "/form.html")
	key := pagelock.PageKey(id)

	holdCtx, cancelHold := context.WithCancel(t.Context())
	hold := e.async(holdCtx, "evaluate_script", map[string]any{"pageId": id, "function": sleepJS(60000)})
	e.waitHeld(t, key)
	waitCtx, cancelWait := context.WithCancel(t.Context())
	waiting := e.async(waitCtx, "evaluate_script", map[string]any{"pageId": id, "function": "() => 'never'"})
	e.waitQueued(t, key, 1)
	cancelWait()
	if o := <-waiting; !errors.Is(o.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v %s", o.err, o.r.text)
	}
	e.waitQueued0(t, key)

	start := time.Now()
	cancelHold()
	<-hold
	// The next call gets the page long before the 60 s script would end.
	e.eval(t, id, "() => 'after'")
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the page stayed locked %s after its holder was cancelled", d)
	}
	for _, s := range e.srv.locks.Stats() {
		if s.Key == key && s.Cancelled == 0 {
			t.Fatalf("stats count no cancelled wait: %+v", s)
		}
	}
}

func (e *testEnv) waitQueued0(t *testing.T, key pagelock.Key) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		queued := 0
		for _, s := range e.srv.locks.Stats() {
			if s.Key == key {
				queued = s.Queued
			}
		}
		if queued == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("calls still queued on %s", key)
}

// A wait longer than --lock-timeout fails with what holds the page; a full
// queue fails at once as busy.
func TestLockTimeoutAndBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: 300 * time.Millisecond, MaxQueue: 1}})
	id := e.openPage(t, "/form.html")
	key := pagelock.PageKey(id)
	hold := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": id, "function": sleepJS(2500)})
	e.waitHeld(t, key)
	queued := e.async(t.Context(), "take_snapshot", map[string]any{"pageId": id})
	e.waitQueued(t, key, 1)
	busy := e.fails(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, busy, fmt.Sprintf("page %d is busy", id), "--max-queue")
	timedOut := must(t, <-queued)
	if !timedOut.isError {
		t.Fatalf("a wait past the lock timeout succeeded: %s", timedOut.text)
	}
	mustContain(t, timedOut.text, fmt.Sprintf("waiting for page %d", id), "held by evaluate_script")
	must(t, <-hold)
	e.ok(t, "take_snapshot", map[string]any{"pageId": id})
}

// close_page waits for the call in flight, and calls queued behind it fail
// cleanly.
func TestClosePageWithQueuedCalls(t *testing.T) {
	t.Parallel()
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			e := leaseEnv(t, pagelock.Options{Mode: mode, Timeout: time.Minute, MaxQueue: 64}, Options{})
			id := e.openPage(t, "/form.html")
			key := pagelock.PageKey(id)
			hold := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": id, "function": sleepJS(800)})
			e.waitHeld(t, key)
			closing := e.async(t.Context(), "close_page", map[string]any{"pageId": id})
			e.waitQueued(t, key, 1)
			var behind []<-chan outcome
			for i := range 3 {
				behind = append(behind, e.async(t.Context(), "take_snapshot", map[string]any{"pageId": id}))
				e.waitQueued(t, key, i+2)
			}
			if r := must(t, <-hold); r.isError || !strings.Contains(r.text, "slept") {
				t.Fatalf("the call in flight was disturbed: %s", r.text)
			}
			if r := must(t, <-closing); r.isError || strings.Contains(r.text, fmt.Sprintf("\n%d: ", id)) {
				t.Fatalf("close_page: %s", r.text)
			}
			for _, c := range behind {
				r := must(t, <-c)
				if !r.isError || !strings.Contains(r.text, fmt.Sprintf("page %d is closed", id)) {
					t.Fatalf("a call queued behind close_page: error=%v %s", r.isError, r.text)
				}
			}
			mustContain(t, e.ok(t, "list_pages", nil), "## Pages")
		})
	}
}

// A handler that panics gives an isError result and releases its lock.
func TestPanicReleasesLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: 5 * time.Second}})
	boom := newTool("test_panic", "panics", pageScope, func(ctx context.Context, c *call, _ *pageArg) error {
		panic("boom")
	})
	e.srv.mcp.AddTool(boom.def, e.srv.guard(boom))
	id := e.openPage(t, "/form.html")
	mustContain(t, e.fails(t, "test_panic", map[string]any{"pageId": id}), "internal error in test_panic: boom")
	e.ok(t, "take_snapshot", map[string]any{"pageId": id})
}

// Many calls queued on a busy page do not delay a call on a free page: the
// stdio server has workers enough, and reads on while they wait.
func TestQueuedCallsDoNotBlockOtherPages(t *testing.T) {
	t.Parallel()
	e := leaseStdioEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64})
	a := e.openPage(t, "/form.html")
	b := e.openPage(t, "/page2.html")
	hold := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": a, "function": sleepJS(3000)})
	e.waitHeld(t, pagelock.PageKey(a))
	var queued []<-chan outcome
	for range 30 {
		queued = append(queued, e.async(t.Context(), "evaluate_script", map[string]any{"pageId": a, "function": "() => 1"}))
	}
	e.waitQueued(t, pagelock.PageKey(a), 30)
	free := <-e.async(t.Context(), "take_snapshot", map[string]any{"pageId": b})
	if r := must(t, free); r.isError {
		t.Fatal(r.text)
	}
	h := <-hold
	if !free.at.Before(h.at) {
		t.Fatal("a call on a free page waited for 30 calls queued on a busy one")
	}
	for _, q := range queued {
		if r := must(t, <-q); r.isError {
			t.Fatal(r.text)
		}
	}
}
