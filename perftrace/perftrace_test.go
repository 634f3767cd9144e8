package perftrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixtures: handmade.json is written by hand (see its events) to hold
// every case at known times; reload.json and manual.json are real traces of
// testdata/perf.html recorded by pagemux (with reload, and without), trimmed
// to the events of the page that the analysis reads.
const recordedFrame = "9C70359981927EF7322381289B5D9AA4"

func load(t *testing.T, name string, opts Options) *Summary {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return Analyze(tr, opts)
}

func ms2us(ms float64) float64 { return ms * 1000 }

func near(got, want float64) bool { return math.Abs(got-want) < 1 }

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("want %q in:\n%s", w, got)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		events   int // kept
		count    int
		err      string
	}{
		{"object", `{"metadata":{"x":[1,2]},"traceEvents":[{"name":"navigationStart","ph":"R","ts":5,"pid":1,"tid":1},{"name":"Other","ph":"X","ts":9,"dur":1,"pid":1,"tid":1}]}`, 1, 2, ""},
		{"array", `[{"name":"LayoutShift","ph":"I","ts":5,"pid":1,"tid":1}]`, 1, 1, ""},
		{"bad event skipped", `[{"name":"LayoutShift","ph":"I","ts":5,"pid":"one","tid":1},{"name":"LayoutShift","ph":"I","ts":6,"pid":1,"tid":1}]`, 1, 1, ""},
		{"short task dropped", `[{"name":"RunTask","ph":"X","ts":5,"dur":50000,"pid":1,"tid":1},{"name":"RunTask","ph":"X","ts":5,"dur":50001,"pid":1,"tid":1}]`, 1, 2, ""},
		{"empty", `{"traceEvents":[]}`, 0, 0, "the trace holds no events"},
		{"no events key", `{"metadata":{}}`, 0, 0, "no traceEvents"},
		{"not JSON", `trace`, 0, 0, "read the trace"},
		{"truncated", `{"traceEvents":[{"name":"x","ts":1}`, 0, 0, "read the trace"},
		{"a number", `42`, 0, 0, "want a JSON object or array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Parse(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Events) != tt.events || tr.Count != tt.count {
				t.Fatalf("kept %d of %d, want %d of %d", len(tr.Events), tr.Count, tt.events, tt.count)
			}
		})
	}
}

// The handmade trace holds every case at known times.
func TestAnalyzeHandmade(t *testing.T) {
	s := load(t, "handmade.json", Options{Frame: "F1"})
	if len(s.Sets) != 2 {
		t.Fatalf("want 2 insight sets (the about:blank start and another page's navigation do not count), got %d", len(s.Sets))
	}
	nav, next := s.Sets[0], s.Sets[1]
	checks := []struct {
		what      string
		got, want float64
	}{
		{"set 0 start", nav.Start, 1_100_000},
		{"set 0 end", nav.End, 5_000_000},
		{"set 1 end", next.End, 6_001_000},
		{"TTFB from the response timing", nav.TTFB - nav.Start, ms2us(651)},
		{"FCP", nav.FCP - nav.Start, ms2us(700)},
		{"LCP is the last candidate", nav.LCP.TS - nav.Start, ms2us(1500)},
		{"CLS is the worst cluster, without input", nav.CLS.Score, 0.1},
		{"clusters", float64(len(nav.CLS.Clusters)), 2},
		{"shifts without input, of this frame", float64(len(nav.CLS.Shifts)), 3},
		{"long tasks of the main thread", float64(len(nav.LongTasks)), 2},
		{"TBT, clipped at FCP", nav.TBT, ms2us(50 + 30)},
		{"document server time", nav.Document.ServerTime, ms2us(649)},
		{"requests of the page and its child frame", float64(len(nav.Requests)), 6},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-6*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if l := nav.LCP; l.NodeID != 7 || l.Type != "image" || l.ImageURL != "https://a.test/hero.jpg" || l.Request == nil {
		t.Errorf("LCP = %+v, want the hero image and its request", l)
	}
	if got := nav.Document.Redirects; len(got) != 1 || got[0] != "http://a.test/" {
		t.Errorf("document redirects = %v", got)
	}
	if rb := nav.RenderBlocking(); len(rb) != 1 || rb[0].URL != "https://a.test/site.css" {
		t.Errorf("render-blocking = %v, want only site.css (late.js is low priority, print.css ended after the first paint)", urls(rb))
	}
	if a := nav.LongTasks[1].Activities; len(a) == 0 || a[0].Name != "TimerFire" || a[0].Function != "heavy" || a[0].Line != 10 || a[0].Column != 5 {
		t.Errorf("long task activities = %+v, want the timer and heavy() at app.js:10:5", a)
	}
	if next.LCP != nil {
		t.Errorf("an invalidated LCP candidate counts: %+v", next.LCP)
	}
	if next.URL != "https://a.test/next" || s.URL != "https://a.test/next" {
		t.Errorf("URLs %q, %q", next.URL, s.URL)
	}
	if got := s.NodeIDs(); len(got) != 3 || got[0] != 7 || got[1] != 9 || got[2] != 11 {
		t.Errorf("NodeIDs = %v, want the LCP image and the shifted nodes", got)
	}
}

func urls(rs []*Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.URL)
	}
	return out
}

// Without Options.Frame, the main frame is the one the trace started on.
func TestAnalyzeDefaultFrame(t *testing.T) {
	s := load(t, "handmade.json", Options{})
	if s.Frame != "F1" || len(s.Sets) != 2 {
		t.Fatalf("frame %q, %d sets", s.Frame, len(s.Sets))
	}
	other := load(t, "handmade.json", Options{Frame: "OTHER"})
	if len(other.Sets) != 1 || other.Sets[0].URL != "https://b.test/" || other.Sets[0].CLS.Score != 0.9 {
		t.Fatalf("the other page: %+v", other.Sets[0])
	}
}

// A real trace of perf.html: facts that hold on any machine.
func TestAnalyzeRecorded(t *testing.T) {
	s := load(t, "reload.json", Options{Frame: recordedFrame})
	if len(s.Sets) != 1 || s.Sets[0].ID != "NAVIGATION_0" {
		t.Fatalf("sets: %d", len(s.Sets))
	}
	set := s.Sets[0]
	if !(set.Start < set.TTFB && set.TTFB <= set.FCP && set.FCP <= set.LCP.TS) {
		t.Errorf("want navigation < TTFB <= FCP <= LCP: %v %v %v %v", set.Start, set.TTFB, set.FCP, set.LCP.TS)
	}
	if set.FCP-set.Start < ms2us(300) {
		t.Errorf("FCP at %v ms, before the 300 ms stylesheet came", (set.FCP-set.Start)/1000)
	}
	if set.LCP.NodeName != "H1 id='hero'" || set.LCP.Type != "text" {
		t.Errorf("LCP = %+v", set.LCP)
	}
	if set.CLS.Score <= 0 || len(set.CLS.Worst.Shifts[0].Nodes) == 0 {
		t.Errorf("CLS = %+v", set.CLS)
	}
	if len(set.LongTasks) != 1 || set.LongTasks[0].Dur < ms2us(200) || set.TBT <= 0 {
		t.Fatalf("long tasks = %d, TBT %v", len(set.LongTasks), set.TBT)
	}
	if a := set.LongTasks[0].Activities; len(a) == 0 || !strings.HasSuffix(a[0].URL, "/perf.html") || a[0].Line != 21 {
		t.Errorf("long task activities = %+v, want the timer of perf.html line 21", a)
	}
	if rb := set.RenderBlocking(); len(rb) != 1 || !strings.Contains(rb[0].URL, "slow.css") || rb[0].Duration() < ms2us(300) {
		t.Errorf("render-blocking = %v", urls(rb))
	}

	manual := load(t, "manual.json", Options{Frame: recordedFrame})
	if len(manual.Sets) != 1 || manual.Sets[0].ID != NoNavigation {
		t.Fatalf("manual sets: %+v", manual.Sets)
	}
	m := manual.Sets[0]
	if m.LCP != nil || m.FCP != 0 || m.TTFB != 0 {
		t.Errorf("a trace without navigation has load metrics: %+v", m)
	}
	if len(m.LongTasks) != 1 || m.LongTasks[0].Dur < ms2us(120) || m.LongTasks[0].Activities[0].Name != "EvaluateScript" {
		t.Errorf("manual long tasks: %+v (found through the start mark)", m.LongTasks)
	}
}

// The summary names what an agent needs, and every insight it lists.
func TestText(t *testing.T) {
	s := load(t, "handmade.json", Options{Frame: "F1"})
	s.Nodes = map[int64]string{7: `img#hero src="https://a.test/hero.jpg"`}
	s.DataLost = true
	text := s.Text()
	mustContain(t, text,
		"URL: https://a.test/next",
		"Trace bounds: {min: 1000000µs, max: 6001000µs}",
		"Warning: Chrome's trace buffer filled up",
		"## insight set id: NAVIGATION_0",
		"  - TTFB: 651 ms (good)",
		"  - FCP: 700 ms (good)",
		`  - LCP: 1500 ms (good), element: img#hero src="https://a.test/hero.jpg" (nodeId: 7, image)`,
		"    - Load delay: 149 ms, bounds: {min: 1751000µs, max: 1900000µs}",
		"    - Load duration: 600 ms",
		"    - Render delay: 100 ms",
		"  - CLS: 0.10 (good), worst cluster at 900 ms: 2 shifts, moved: P id='intro', FOOTER",
		"  - TBT: 80 ms (good, from FCP on), 2 long tasks, longest 200 ms at 600 ms",
		"  - 80 ms at 1900 ms: TimerFire 75 ms in heavy https://a.test/app.js:10:5",
		"Render-blocking requests:\n  - 500 ms https://a.test/site.css (Stylesheet, finished at 600 ms)",
		"Slowest requests:\n  - 690 ms https://a.test/ (200, text/html, 50.3 kB)",
		"  - … and 1 more",
		"## insight set id: NAVIGATION_1",
		"  - LCP: none recorded",
		"Available insights: none",
	)
	for _, name := range []string{DocumentLatency, LCPBreakdown, CLSCulprits, RenderBlocking, LongTasks, SlowestRequests} {
		mustContain(t, text, "insight name: "+name)
	}
	if strings.Contains(text, "b.test") {
		t.Fatalf("another page's requests in the summary:\n%s", text)
	}
}

func TestInsight(t *testing.T) {
	s := load(t, "handmade.json", Options{Frame: "F1"})
	tests := []struct {
		set, name string
		wants     []string
	}{
		{"NAVIGATION_0", DocumentLatency, []string{
			"## Insight Title: Document request latency",
			"## Document network request: https://a.test/",
			"The request was not redirected: FAILED (1 redirect: http://a.test/)",
			"Server responded quickly: FAILED (it took 649 ms",
			"Compression was applied: FAILED",
			"- set-cookie: <redacted>",
			"## External resources:",
		}},
		{"NAVIGATION_0", LCPBreakdown, []string{
			"The Largest Contentful Paint (LCP) time for this navigation was 1500 ms (good).",
			"is an image fetched from https://a.test/hero.jpg (200, image/jpeg, 120.0 kB)",
			"the 4 subparts",
			"- Time to first byte: 651 ms (43.4% of total LCP time)",
			"- Resource load delay: 149 ms",
			"- Resource load duration: 600 ms (40.0% of total LCP time)",
			"- Element render delay: 100 ms",
		}},
		{"NAVIGATION_0", CLSCulprits, []string{
			"The CLS of this navigation is 0.1000 (good): 3 layout shifts in 2 clusters.",
			"started at 900 ms and ended at 1400 ms, with a score of 0.1000",
			"### Layout shift 2:",
			"  - P id='intro' (nodeId: 9): moved from (x 0, y 200, 800×50) to (x 0, y 250, 800×50)",
			"  - FOOTER (nodeId: 11)\n",
			"Other clusters:\n- at 3000 ms: 1 shift, score 0.0200",
		}},
		{"NAVIGATION_0", RenderBlocking, []string{
			"1 request blocked the page's first render; the last of them finished at 600 ms, and the first contentful paint came at 700 ms.",
			"## Network request: https://a.test/site.css",
			"Initiator: https://a.test/",
			"Render-blocking: Yes",
		}},
		{"NAVIGATION_0", LongTasks, []string{
			"The main thread ran 2 long tasks over 50 ms. The Total Blocking Time from FCP to the end of the trace is 80 ms (good).",
			"### Long task 1: 200 ms at 600 ms, blocking 50 ms\n- ParseHTML 150 ms in https://a.test/",
			"### Long task 2: 80 ms at 1900 ms, blocking 30 ms\n- TimerFire 75 ms in heavy https://a.test/app.js:10:5",
		}},
		{"NAVIGATION_0", SlowestRequests, []string{"The page made 6 requests", "## Network request: https://a.test/hero.jpg"}},
		{"NAVIGATION_1", LCPBreakdown, []string{"No Largest Contentful Paint was recorded"}},
		{"NAVIGATION_1", CLSCulprits, []string{"No layout shifts without recent input"}},
		{"NAVIGATION_1", DocumentLatency, []string{"has no document request"}},
		{"NAVIGATION_1", RenderBlocking, []string{"No request blocked the page's first render."}},
	}
	for _, tt := range tests {
		t.Run(tt.set+"/"+tt.name, func(t *testing.T) {
			got, err := s.Insight(tt.set, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, got, tt.wants...)
		})
	}

	errs := []struct{ set, name, want string }{
		{"NAVIGATION_0", "LongTask", `no insight named "LongTask"; the insights are: DocumentLatency, LCPBreakdown, CLSCulprits, RenderBlocking, LongTasks, SlowestRequests (this set reports on: DocumentLatency`},
		{"NAVIGATION_1", "INPBreakdown", "(this set reports on: none)"},
		{"NAVIGATION_7", LCPBreakdown, `no insight set "NAVIGATION_7" in the last trace of this page; the insight sets are: NAVIGATION_0, NAVIGATION_1`},
	}
	for _, tt := range errs {
		_, err := s.Insight(tt.set, tt.name)
		var ie *InsightError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Insight(%s, %s) = %v, want %q", tt.set, tt.name, err, tt.want)
		}
	}
}

// WithMainFrame gives a frameless TracingStartedInBrowser the page's frame
// and copies every other event byte for byte.
func TestWithMainFrame(t *testing.T) {
	in := `{"traceEvents":[{"args":{},"cat":"disabled-by-default-devtools.timeline","name":"TracingStartedInBrowser","ph":"I","pid":1,"tid":1,"ts":3148030410123},` +
		`{"name":"RunTask","ph":"X","ts":1.5,"dur":2,"pid":10,"tid":10,"args":{"x":"TracingStartedInBrowser"}}],"metadata":{"a":[1,2.50]}}`
	var out bytes.Buffer
	if err := WithMainFrame(&out, strings.NewReader(in), MainFrame{Frame: "F1", URL: "https://a.test/", ProcessID: 10}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	mustContain(t, got,
		`"ts":3148030410123`,
		`"frames":[{"frame":"F1","isInPrimaryMainFrame":true,"isOutermostMainFrame":true,"name":"","processId":10,"url":"https://a.test/"}]`,
		`{"name":"RunTask","ph":"X","ts":1.5,"dur":2,"pid":10,"tid":10,"args":{"x":"TracingStartedInBrowser"}}`,
		`"metadata":{"a":[1,2.50]}`,
	)
	tr, err := Parse(strings.NewReader(got))
	if err != nil || tr.Count != 2 {
		t.Fatalf("the copy does not parse: %v", err)
	}
	s := Analyze(tr, Options{})
	if s.Frame != "F1" {
		t.Fatalf("the analysis does not find the added frame: %q", s.Frame)
	}

	// A trace whose start lists frames already is copied as it is.
	raw, err := os.ReadFile(filepath.Join("testdata", "manual.json"))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WithMainFrame(&out, bytes.NewReader(raw), MainFrame{Frame: "X"}); err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(raw, &a)
	json.Unmarshal(out.Bytes(), &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("a trace with frames changed in the copy")
	}
	if err := WithMainFrame(&out, strings.NewReader(`{"traceEvents":[{]}`), MainFrame{}); err == nil {
		t.Fatal("bad JSON copied without error")
	}
}

func TestMainFrameOfSummary(t *testing.T) {
	s := load(t, "reload.json", Options{Frame: recordedFrame})
	f := s.MainFrame()
	if f.Frame != recordedFrame || f.ProcessID == 0 || !strings.HasSuffix(f.URL, "/perf.html") {
		t.Fatalf("MainFrame = %+v", f)
	}
}

func TestRate(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{100, "good"}, {200, "good"}, {201, "needs improvement"}, {600, "needs improvement"}, {601, "poor"}} {
		if got := rate(c.v, 200, 600); got != c.want {
			t.Errorf("rate(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	if !near(0.4, 0.4) {
		t.Fatal("near")
	}
}
