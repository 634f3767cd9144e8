package tools

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

// slowCSS serves a stylesheet after ?ms= milliseconds: a render-blocking
// request that the trace of perf.html must name.
func slowCSS(w http.ResponseWriter, r *http.Request) {
	d, _ := strconv.Atoi(r.URL.Query().Get("ms"))
	select {
	case <-time.After(time.Duration(d) * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/css")
	io.WriteString(w, "p { color: #333; }")
}

// metric reads "  - NAME: VALUE ms" (or a bare number, for CLS) from a
// summary; ok is false when the line is missing.
func metric(t *testing.T, text, name string) (float64, bool) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  - ` + regexp.QuoteMeta(name) + `: ([0-9.]+)`).FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v, true
}

// A real trace of perf.html, with reload and autoStop (the defaults), finds
// what the page does: a slow render-blocking stylesheet, a long task, a
// layout shift, and an LCP after FCP.
func TestTraceSummary(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/perf.html")
	path := filepath.Join(t.TempDir(), "trace.json")
	text := e.ok(t, "performance_start_trace", map[string]any{"pageId": id, "filePath": path})
	mustContain(t, text,
		"The raw trace data was saved to "+path+".",
		"The performance trace has been stopped.",
		"## insight set id: NAVIGATION_0",
		"/perf.html",
		"Render-blocking requests:\n  - ", "slow.css?ms=300",
		"Long tasks (main thread, over 50 ms)",
		"insight name: LCPBreakdown", "insight name: CLSCulprits", "insight name: RenderBlocking", "insight name: LongTasks",
	)
	fcp, okF := metric(t, text, "FCP")
	lcp, okL := metric(t, text, "LCP")
	ttfb, okT := metric(t, text, "TTFB")
	if !okF || !okL || !okT {
		t.Fatalf("want TTFB, FCP and LCP in:\n%s", text)
	}
	if !(ttfb <= fcp && fcp <= lcp) || fcp < 250 {
		t.Fatalf("want TTFB <= FCP <= LCP, and FCP after the 300 ms stylesheet: TTFB %v, FCP %v, LCP %v", ttfb, fcp, lcp)
	}
	if !regexp.MustCompile(`LCP: \d+ ms \(\w+\), element: h1#hero "Performance test page`).MatchString(text) {
		t.Fatalf("want the LCP element described from the live page in:\n%s", text)
	}
	if cls, ok := metric(t, text, "CLS"); !ok || cls <= 0 {
		t.Fatalf("want CLS > 0 on the shifting page in:\n%s", text)
	}
	m := regexp.MustCompile(`(?m)^  - (\d+) ms at \d+ ms: .*perf\.html\S*:\d+:\d+`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("want a long task that names its script in:\n%s", text)
	}
	if d, _ := strconv.Atoi(m[1]); d < 50 {
		t.Fatalf("long task of %d ms, want >= 50", d)
	}
	if tbt, ok := metric(t, text, "TBT"); !ok || tbt <= 0 {
		t.Fatalf("want TBT > 0 in:\n%s", text)
	}

	// The saved file is a trace DevTools opens: events, and a
	// TracingStartedInBrowser that lists the page's main frame.
	var saved struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Args struct {
				Data struct {
					Frames []struct {
						URL string `json:"url"`
					} `json:"frames"`
				} `json:"data"`
			} `json:"args"`
		} `json:"traceEvents"`
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatalf("saved trace is not JSON: %v", err)
	}
	started := false
	for _, ev := range saved.TraceEvents {
		if ev.Name == "TracingStartedInBrowser" {
			started = len(ev.Args.Data.Frames) == 1 && strings.Contains(ev.Args.Data.Frames[0].URL, "/perf.html")
		}
	}
	if len(saved.TraceEvents) < 100 || !started {
		t.Fatalf("saved trace: %d events, TracingStartedInBrowser with the page's frame: %v", len(saved.TraceEvents), started)
	}

	// Every insight of the summary explains itself.
	for _, c := range []struct{ name, want string }{
		{"LCPBreakdown", "Element render delay"},
		{"CLSCulprits", "The worst layout shift cluster"},
		{"RenderBlocking", "slow.css?ms=300"},
		{"LongTasks", "### Long task 1:"},
		{"DocumentLatency", "Server responded quickly"},
		{"SlowestRequests", "## Network request:"},
	} {
		got := e.ok(t, "performance_analyze_insight", map[string]any{"pageId": id, "insightSetId": "NAVIGATION_0", "insightName": c.name})
		mustContain(t, got, "## Insight Title:", c.want, "## External resources:")
	}
	mustContain(t, e.fails(t, "performance_analyze_insight", map[string]any{"pageId": id, "insightSetId": "NAVIGATION_0", "insightName": "Bogus"}),
		`no insight named "Bogus"`, "LCPBreakdown", "CLSCulprits")
	mustContain(t, e.fails(t, "performance_analyze_insight", map[string]any{"pageId": id, "insightSetId": "NAVIGATION_9", "insightName": "LCPBreakdown"}),
		`no insight set "NAVIGATION_9"`, "NAVIGATION_0")
}

// Calls that find no trace say what to do.
func TestTraceWithoutStart(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/page2.html")
	mustContain(t, e.fails(t, "performance_stop_trace", map[string]any{"pageId": id}),
		"no active performance trace recording to stop", "performance_start_trace")
	mustContain(t, e.fails(t, "performance_analyze_insight", map[string]any{"pageId": id, "insightSetId": "NAVIGATION_0", "insightName": "LCPBreakdown"}),
		"no recorded traces found for page")
}

// File paths outside the workspace are refused before anything starts.
func TestTracePathOutsideWorkspace(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/page2.html")
	for _, tool := range []string{"performance_start_trace", "performance_stop_trace", "take_heapsnapshot"} {
		mustContain(t, e.fails(t, tool, map[string]any{"pageId": id, "filePath": "/proc/pagemux-test/trace.json"}), "outside the allowed roots")
	}
	mustContain(t, e.fails(t, "performance_stop_trace", map[string]any{"pageId": id}), "no active performance trace")
}

// A manual trace (no reload, no autoStop) is stopped on its own page only,
// and saves gzipped when the path ends in .gz.
func TestTraceManual(t *testing.T) {
	t.Parallel()
	e := leaseEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64}, Options{})
	a := e.openPage(t, "/perf.html")
	b := e.openPage(t, "/page2.html")
	mustContain(t, e.ok(t, "performance_start_trace", map[string]any{"pageId": a, "reload": false, "autoStop": false}),
		"The performance trace is being recorded. Use performance_stop_trace to stop it.")
	mustContain(t, e.fails(t, "performance_start_trace", map[string]any{"pageId": a, "reload": false, "autoStop": false}),
		"a performance trace is already running on page "+strconv.Itoa(a))
	mustContain(t, e.fails(t, "performance_stop_trace", map[string]any{"pageId": b}),
		fmt.Sprintf("the running performance trace records page %d, not page %d", a, b))
	e.eval(t, a, "() => { const end = performance.now() + 120; while (performance.now() < end) {} return 1 }")
	path := filepath.Join(t.TempDir(), "trace.json.gz")
	text := e.ok(t, "performance_stop_trace", map[string]any{"pageId": a, "filePath": path})
	mustContain(t, text, "The raw trace data was saved to "+path, "## insight set id: NO_NAVIGATION", "No navigation in this trace")
	if _, ok := metric(t, text, "LCP"); ok {
		t.Fatalf("a trace without navigation has no LCP:\n%s", text)
	}
	if tbt, ok := metric(t, text, "TBT"); !ok || tbt <= 0 {
		t.Fatalf("want the 120 ms script as a long task in:\n%s", text)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("saved trace is not gzip: %v", err)
	}
	var v map[string]json.RawMessage
	if err := json.NewDecoder(zr).Decode(&v); err != nil || v["traceEvents"] == nil {
		t.Fatalf("saved trace: %v, keys %d", err, len(v))
	}
	mustContain(t, e.fails(t, "performance_stop_trace", map[string]any{"pageId": a}), "no active performance trace")
}

// In page mode a trace holds the tracing resource between its calls: a
// start on another page waits for it and times out naming the holder, while
// other tools on other pages go on. Cancelling a waiting start leaves no
// trace. In global mode a second start fails at once, as it cannot wait.
func TestTraceLocking(t *testing.T) {
	t.Parallel()
	t.Run("page", func(t *testing.T) {
		e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: 3 * time.Second}})
		a := e.openPage(t, "/page2.html")
		b := e.openPage(t, "/page2.html")
		c := e.openPage(t, "/form.html")
		e.ok(t, "performance_start_trace", map[string]any{"pageId": a, "reload": false, "autoStop": false})
		second := e.async(t.Context(), "performance_start_trace", map[string]any{"pageId": b, "reload": false, "autoStop": false})
		e.waitQueued(t, pagelock.Tracing, 1)
		e.ok(t, "take_snapshot", map[string]any{"pageId": c})
		snapDone := time.Now()
		out := <-second
		o := must(t, out)
		if !o.isError {
			t.Fatalf("second start succeeded while page %d traced: %s", a, o.text)
		}
		mustContain(t, o.text, "timed out after", "waiting for the tracing resource",
			fmt.Sprintf("held by performance_start_trace on page %d", a), "one trace at a time")
		if !snapDone.Before(out.at) {
			t.Fatalf("take_snapshot on page %d waited for the start that waited for the trace", c)
		}

		// A start cancelled while it waits takes nothing with it.
		ctx, cancel := context.WithCancel(t.Context())
		waiting := e.async(ctx, "performance_start_trace", map[string]any{"pageId": b, "reload": false, "autoStop": false})
		e.waitQueued(t, pagelock.Tracing, 1)
		cancel()
		<-waiting
		e.waitQueued0(t, pagelock.Tracing)

		e.ok(t, "performance_stop_trace", map[string]any{"pageId": a})
		mustContain(t, e.ok(t, "performance_start_trace", map[string]any{"pageId": b, "reload": false, "autoStop": false}), "being recorded")
		e.ok(t, "performance_stop_trace", map[string]any{"pageId": b})
	})
	t.Run("global", func(t *testing.T) {
		e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.Global, Timeout: 3 * time.Second}})
		a := e.openPage(t, "/page2.html")
		b := e.openPage(t, "/page2.html")
		e.ok(t, "performance_start_trace", map[string]any{"pageId": a, "reload": false, "autoStop": false})
		begin := time.Now()
		mustContain(t, e.fails(t, "performance_start_trace", map[string]any{"pageId": b, "reload": false, "autoStop": false}),
			"a performance trace is already running on page "+strconv.Itoa(a))
		if time.Since(begin) > 2*time.Second {
			t.Fatalf("global mode: the second start waited instead of failing at once")
		}
		e.ok(t, "take_snapshot", map[string]any{"pageId": b})
		e.ok(t, "performance_stop_trace", map[string]any{"pageId": a})
	})
}

// A trace whose page closes ends by itself: the tracing resource is free
// again, what Chrome captured is saved where the start asked, and the next
// stop hands the result out.
func TestTracePageClosed(t *testing.T) {
	t.Parallel()
	e := leaseEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64}, Options{})
	a := e.openPage(t, "/perf.html")
	b := e.openPage(t, "/page2.html")
	path := filepath.Join(t.TempDir(), "closed.json")
	e.ok(t, "performance_start_trace", map[string]any{"pageId": a, "autoStop": false, "filePath": path})
	e.ok(t, "close_page", map[string]any{"pageId": a})
	// The hold is released with the trace: a start on b gets it.
	e.ok(t, "performance_start_trace", map[string]any{"pageId": b, "reload": false, "autoStop": false})
	mustContain(t, e.ok(t, "performance_stop_trace", map[string]any{"pageId": b}), "NO_NAVIGATION")
	text := e.ok(t, "performance_stop_trace", map[string]any{"pageId": b})
	mustContain(t, text, fmt.Sprintf("stopped by itself: page %d closed", a), "The raw trace data was saved to "+path, "NAVIGATION_0", "/perf.html")
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("trace of the closed page not saved: %v", err)
	}
}

// A trace nobody stops ends at its limit, here one the rules' seam
// (holdLimits) gives, is saved in the workspace, and waits for its stop,
// whose answer takes the place of the note that would say so.
func TestTraceTimeLimit(t *testing.T) {
	t.Parallel()
	e := leaseEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64}, Options{})
	e.srv.holdLimits = func(ctx context.Context, kind string) time.Duration {
		if kind == holdTrace {
			return 500 * time.Millisecond
		}
		return 0
	}
	t.Cleanup(func() { e.srv.holdLimits = nil }) // before the next test has the server
	a := e.openPage(t, "/page2.html")
	e.ok(t, "performance_start_trace", map[string]any{"pageId": a, "reload": false, "autoStop": false})
	deadline := time.Now().Add(20 * time.Second)
	for e.srv.perf.recording() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	text := e.ok(t, "performance_stop_trace", map[string]any{"pageId": a})
	mustContain(t, text, "reached the 500ms limit", "NO_NAVIGATION", "The raw trace data was saved to ")
	_, rest, _ := strings.Cut(text, "The raw trace data was saved to ")
	path, _, _ := strings.Cut(rest, ".json.gz.")
	path += ".json.gz"
	t.Cleanup(func() { os.Remove(path) })
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("the trace its limit ended is not at %s: %v", path, err)
	}
	if text := e.ok(t, "list_pages", nil); strings.Contains(text, "Your performance trace") {
		t.Fatalf("the stop handed the trace out, but the note stayed:\n%s", text)
	}
}

// recording says whether a trace records on any Chrome.
func (t *tracer) recording() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.active) > 0
}
