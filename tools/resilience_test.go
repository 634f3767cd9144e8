package tools

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/soak"
	"github.com/pagemux/pagemux/pagelock"
)

// A browser that stops answering, one that talks too much, tabs closed
// behind pagemux's back, cancellations on a shared renderer (issue 7).

// busyJS keeps the renderer's main thread busy for ms milliseconds.
func busyJS(ms int) string {
	return fmt.Sprintf("() => { const t = Date.now(); while (Date.now() - t < %d) {} return 'done' }", ms)
}

// chromeProcesses returns the Chrome that the env's browser launched and
// its descendants: processes pagemux started, found from its own pid.
func chromeProcesses(t *testing.T, e *testEnv) []int {
	t.Helper()
	root := e.b.ChromePID()
	if root == 0 {
		t.Fatal("no Chrome runs")
	}
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + en.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 2 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		for pid, pp := range parent {
			if pp == tree[i] {
				tree = append(tree, pid)
			}
		}
	}
	return tree
}

// Chrome frozen (SIGSTOP on every process it has): the call in flight ends
// with a tool error that says Chrome stopped responding, not that the call
// was cancelled; the old page id then says the browser was restarted, and
// a new Chrome serves the next calls.
func TestFrozenChromeTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}})
	id := e.openPage(t, "/form.html")
	old := e.b.ChromePID()
	freezeChrome(t, e)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	r := e.callCtx(ctx, t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 1"})
	took := time.Since(start)
	t.Logf("the call on the frozen Chrome answered after %s: %s", took, r.text)
	if !r.isError || !strings.Contains(r.text, "Chrome stopped responding") || strings.Contains(r.text, "cancelled") {
		t.Fatalf("a call on a frozen Chrome: %+v", r)
	}
	if took > 40*time.Second {
		t.Errorf("the freeze took %s to tell", took)
	}
	msg := e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 1"})
	mustContain(t, msg, fmt.Sprintf("page %d is gone (the browser was restarted)", id))
	if pid := e.b.ChromePID(); pid == 0 || pid == old {
		t.Fatalf("Chrome pid %d after the restart, was %d", pid, old)
	}
	fresh := e.openPage(t, "/page2.html")
	if got := e.eval(t, fresh, "() => 6 * 7"); got != "42" {
		t.Fatalf("the new Chrome answers %s", got)
	}
}

// freezeChrome stops every process of the env's Chrome (SIGSTOP), and
// resumes them when the test ends, in case pagemux did not kill them.
func freezeChrome(t *testing.T, e *testEnv) {
	t.Helper()
	procs := chromeProcesses(t, e)
	for _, pid := range procs {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
	t.Cleanup(func() {
		for _, pid := range procs {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
}

// logClock is a slog.Handler that notes when each message was first logged
// and hands every record on to next.
type logClock struct {
	next  slog.Handler
	mu    *sync.Mutex
	first map[string]time.Time
	news  *chan struct{} // closed, and replaced, when a message is first logged
}

func newLogClock(next slog.Handler) *logClock {
	news := make(chan struct{})
	return &logClock{next: next, mu: new(sync.Mutex), first: map[string]time.Time{}, news: &news}
}

func (c *logClock) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || c.next.Enabled(ctx, l)
}

func (c *logClock) Handle(ctx context.Context, r slog.Record) error {
	c.mu.Lock()
	if _, ok := c.first[r.Message]; !ok {
		c.first[r.Message] = r.Time
		close(*c.news)
		*c.news = make(chan struct{})
	}
	c.mu.Unlock()
	if !c.next.Enabled(ctx, r.Level) {
		return nil
	}
	return c.next.Handle(ctx, r)
}

func (c *logClock) WithAttrs(as []slog.Attr) slog.Handler {
	d := *c
	d.next = c.next.WithAttrs(as)
	return &d
}

func (c *logClock) WithGroup(name string) slog.Handler {
	d := *c
	d.next = c.next.WithGroup(name)
	return &d
}

// await waits until msg is logged, or ctx ends (then zero), and returns
// when it first was.
func (c *logClock) await(ctx context.Context, msg string) time.Time {
	for {
		c.mu.Lock()
		t, news := c.first[msg], *c.news
		c.mu.Unlock()
		if !t.IsZero() {
			return t
		}
		select {
		case <-news:
		case <-ctx.Done():
			return time.Time{}
		}
	}
}

// Issue 16: with a short --tool-timeout, Chrome frozen (SIGSTOP on all its
// processes) under an evaluate_script. The call's error says what is true
// (Chrome stopped responding, or it did not answer and is being checked),
// never that its script was terminated or its page can be used; pagemux
// finds the freeze from the call's first unanswered command, kills Chrome
// and starts a new one, so that the next call works on the new Chrome. At
// 5 s (the issue's --tool-timeout) the freeze is found before the call's
// bound, and the next call is a new_page; at 1 s the bound comes first, and
// the next call is a list_pages, which does no work in Chrome that a
// starved machine could make outlast 1 s.
func TestFrozenChromeToolTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit time.Duration
		next  string
	}{{time.Second, "list_pages"}, {5 * time.Second, "new_page"}} {
		t.Run(tc.limit.String(), func(t *testing.T) {
			t.Parallel()
			clock := newLogClock(testLogger().Handler())
			e := newEnv(t, envOptions{
				Locks:  pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute},
				Server: Options{ToolTimeout: tc.limit, Log: slog.New(clock)},
			})
			// The page is opened, and has run a script, past the tool
			// timeout, which a starved machine could make it outlast.
			if err := e.b.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			p, err := e.b.NewPage(t.Context(), true)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Navigate(t.Context(), testSite.URL+"/form.html", time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Evaluate(t.Context(), "() => 1", nil); err != nil {
				t.Fatal(err)
			}
			old := e.b.ChromePID()
			freezeChrome(t, e)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()

			start := time.Now()
			r := e.callCtx(ctx, t, "evaluate_script", map[string]any{"pageId": p.ID, "function": "() => 1"})
			answered := time.Now()
			t.Logf("the call on the frozen Chrome answered after %s: %s", answered.Sub(start), r.text)
			if !r.isError {
				t.Fatalf("a call on a frozen Chrome succeeded: %s", r.text)
			}
			for _, untrue := range []string{"terminated", "can be used again", "cancelled", "ran out of time"} {
				if strings.Contains(r.text, untrue) {
					t.Errorf("the error of a call on a frozen Chrome says %q", untrue)
				}
			}
			stopped := strings.Contains(r.text, "Chrome stopped responding")
			if !stopped && !strings.Contains(r.text, "Chrome did not answer") {
				t.Fatalf("the error of a call on a frozen Chrome does not say Chrome did not answer: %s", r.text)
			}

			args := map[string]any{}
			if tc.next == "new_page" {
				args["url"] = testSite.URL + "/page2.html"
			}
			next := e.callCtx(ctx, t, tc.next, args)
			served := time.Now()
			if next.isError {
				t.Fatalf("the call after the failure, %s after the first unanswered command: %s", served.Sub(start), next.text)
			}
			for _, line := range strings.Split(next.text, "\n") {
				if strings.HasPrefix(line, fmt.Sprintf("%d: ", p.ID)) {
					t.Errorf("the call after the failure lists the frozen Chrome's page %d:\n%s", p.ID, next.text)
				}
			}
			if pid := e.b.ChromePID(); pid == 0 || pid == old {
				t.Fatalf("Chrome pid %d after the freeze, was %d", pid, old)
			}
			// The new Chrome serves the next call as soon as it runs; the
			// relaunch logs that it did just after, on its own goroutine.
			found, again := clock.await(ctx, "chrome stopped responding"), clock.await(ctx, "chrome started again after it stopped responding")
			if found.IsZero() || again.IsZero() {
				t.Fatalf("the log tells no freeze found (%v) or no new Chrome (%v)", found, again)
			}
			t.Logf("from the first unanswered command: found frozen and killed after %s, a new Chrome up after %s, the call answered after %s, the next call (%s) after %s",
				found.Sub(start), again.Sub(start), answered.Sub(start), tc.next, served.Sub(start))
			if found.Before(start) || again.Before(found) {
				t.Errorf("out of order: the freeze found at %s, the new Chrome up at %s, after the call", found.Sub(start), again.Sub(start))
			}
			if stopped && answered.Before(found) {
				t.Errorf("the call said Chrome stopped responding before the freeze was found")
			}
			if d := found.Sub(start); d > 40*time.Second {
				t.Errorf("the freeze took %s to find", d)
			}
			mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": p.ID, "function": "() => 1"}),
				fmt.Sprintf("page %d is gone (the browser was restarted)", p.ID))
		})
	}
}

// floodSite serves a page that logs and requests a lot while it loads.
func floodSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/flood", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("logs"))
		reqs, _ := strconv.Atoi(r.URL.Query().Get("reqs"))
		fmt.Fprintf(w, `<!doctype html><title>Flood</title><p>flood</p><script>
for (let i = 0; i < %d; i++) console.log('message', i);
for (let i = 0; i < %d; i++) fetch('/flood/r?i=' + i).catch(() => {});
</script>`, n, reqs)
	})
	mux.HandleFunc("/flood/r", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A page that logs 6,000 messages while it loads (past the 4,096 events
// chromedp queues per tab; 20,000 and 5,000 requests besides with
// PAGEMUX_SOAK=1) opens, and then a quick call on it and on another page
// answer promptly, in global mode, where every call waits behind the one
// before. The flood of requests, and the collectors' bounds under both, is
// browser's TestEventFlood, with 1,500 requests: here through the tools the
// messages alone prove the point, at half the CPU.
func TestEventFloodTool(t *testing.T) {
	t.Parallel()
	e := leaseEnv(t, pagelock.Options{Mode: pagelock.Global, Timeout: time.Minute, MaxQueue: 64}, Options{})
	other := e.openPage(t, "/page2.html")
	site := floodSite(t)
	start := time.Now()
	url := fmt.Sprintf("%s/flood?logs=%d&reqs=%d", site.URL, soak.N(6000, 20000), soak.N(0, 5000))
	text := e.ok(t, "new_page", map[string]any{"url": url, "background": true, "timeout": 60000})
	t.Logf("new_page of the flooding page took %s", time.Since(start))
	id := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "/flood?") {
			id, _ = strconv.Atoi(line[:strings.Index(line, ":")])
		}
	}
	if id == 0 {
		t.Fatalf("no flooding page in:\n%s", text)
	}
	for _, p := range []int{id, other} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		start := time.Now()
		r := e.callCtx(ctx, t, "evaluate_script", map[string]any{"pageId": p, "function": "() => 'quick'"})
		cancel()
		if r.isError || !strings.Contains(r.text, `"quick"`) {
			t.Fatalf("page %d after the flood: %s", p, r.text)
		}
		t.Logf("page %d answered in %s", p, time.Since(start))
	}
	list := e.ok(t, "list_console_messages", map[string]any{"pageId": id, "pageSize": 1})
	mustContain(t, list, "message")
}

// closeOutside closes a page's tab the way another DevTools client does,
// over the browser's DevTools bridge.
func closeOutside(t *testing.T, e *testEnv, id int) {
	t.Helper()
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := e.b.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	cmd := fmt.Sprintf(`{"id":1,"method":"Target.closeTarget","params":{"targetId":%q}}`, p.TargetID)
	if err := c.Write(ctx, websocket.MessageText, []byte(cmd)); err != nil {
		t.Fatal(err)
	}
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(msg), `{"id":1,`) {
			return
		}
	}
}

// A tab closed from outside pagemux under a running call and 8 queued ones:
// the running call says so, the queued ones fail at once, and every later
// call that names the page says it was closed outside; a close_page by
// pagemux keeps "page N is closed".
func TestPageClosedOutside(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	holder := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": id, "function": sleepJS(20000)})
	e.waitHeld(t, pagelock.PageKey(id))
	var queued []<-chan outcome
	for i := range 8 {
		queued = append(queued, e.async(t.Context(), "evaluate_script", map[string]any{"pageId": id, "function": "() => 1"}))
		e.waitQueued(t, pagelock.PageKey(id), i+1)
	}
	closeOutside(t, e, id)
	want := fmt.Sprintf("page %d was closed (outside pagemux)", id)
	// The calls queued behind it fail at once with the page's lock.
	for _, q := range queued {
		select {
		case o := <-q:
			if r := must(t, o); !r.isError || !strings.Contains(r.text, want) {
				t.Fatalf("a call queued on a tab closed outside: %+v, want %q", r, want)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("a call queued on a tab closed outside did not end")
		}
	}
	select {
	case o := <-holder:
		if r := must(t, o); !r.isError || !strings.Contains(r.text, want) {
			t.Fatalf("the call in flight: %+v, want %q", r, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call in flight on a tab closed outside did not end")
	}
	for range 3 {
		mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 1"}), want)
	}
	mine := e.openPage(t, "/page2.html")
	e.ok(t, "close_page", map[string]any{"pageId": mine})
	msg := e.fails(t, "evaluate_script", map[string]any{"pageId": mine, "function": "() => 1"})
	mustContain(t, msg, fmt.Sprintf("page %d is closed", mine))
}

// With --process-per-site, pages A and B share a renderer: B's call, queued
// in the renderer behind A's busy script, is cancelled by its client, and
// A's script runs on to its end; A gets its result, not a protocol error.
func TestCancelOnSharedRenderer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Browser: browser.Config{ProcessPerSite: true}})
	a := e.openPage(t, "/form.html")
	b := e.openPage(t, "/page2.html")
	busy := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": a, "function": busyJS(4000)})
	e.waitHeld(t, pagelock.PageKey(a))
	time.Sleep(300 * time.Millisecond) // A's script runs
	bctx, bcancel := context.WithTimeout(t.Context(), time.Second)
	defer bcancel()
	if o := <-e.async(bctx, "evaluate_script", map[string]any{"pageId": b, "function": "() => 'b'"}); o.err == nil && !o.r.isError {
		t.Fatalf("B's call was not held up by A's script on the shared renderer: %s", o.r.text)
	}
	r := must(t, <-busy)
	if r.isError || !strings.Contains(r.text, `"done"`) {
		t.Fatalf("A's script was stopped by B's cancellation: %s", r.text)
	}
	if got := e.eval(t, b, "() => 'b again'"); got != `"b again"` {
		t.Fatalf("page B afterwards: %s", got)
	}
}

// take_snapshot of a page whose renderer crashed is a tool error.
func TestSnapshotOfCrashedPage(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := p.Context(t.Context())
	defer cancel()
	go chromedp.Call(cctx, page.Crash, cdp.Empty{}) // never answers: the renderer is gone
	deadline := time.Now().Add(20 * time.Second)
	for !p.Crashed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Crashed() {
		t.Fatal("the crash was not noticed")
	}
	msg := e.fails(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, msg, "could not take a snapshot", "crashed")
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/form.html"})
	mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id}), "Latest page snapshot")
}
