package perftrace

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Insight names, as performance_analyze_insight takes them. The first four
// are DevTools' names for the same insights; LongTasks and SlowestRequests
// are pagemux's own.
const (
	DocumentLatency = "DocumentLatency"
	LCPBreakdown    = "LCPBreakdown"
	CLSCulprits     = "CLSCulprits"
	RenderBlocking  = "RenderBlocking"
	LongTasks       = "LongTasks"
	SlowestRequests = "SlowestRequests"
)

// InsightNames lists every insight Insight explains, in the order the
// summary lists them.
var InsightNames = []string{DocumentLatency, LCPBreakdown, CLSCulprits, RenderBlocking, LongTasks, SlowestRequests}

// insightInfo is what the summary says of an insight before it is asked for.
var insightInfo = map[string]struct{ title, description string }{
	DocumentLatency: {"Document request latency", "Your first network request is the most important. Reduce its latency by avoiding redirects, ensuring a fast server response, and enabling text compression."},
	LCPBreakdown:    {"LCP breakdown", "Each subpart of the Largest Contentful Paint has its own improvement strategies. Ideally, most of the LCP time is spent loading resources, not in delays."},
	CLSCulprits:     {"Layout shift culprits", "Layout shifts occur when elements move absent any user interaction. Look for elements being added, removed, or resized above them, and for fonts that swap, as the page loads."},
	RenderBlocking:  {"Render-blocking requests", "Requests are blocking the page's initial render, which may delay FCP and LCP. Deferring or inlining them can move them out of the critical path."},
	LongTasks:       {"Long main-thread tasks", "Tasks over 50 ms on the main thread block input and delay rendering. Their time over 50 ms after FCP adds up to the Total Blocking Time (TBT)."},
	SlowestRequests: {"Slowest network requests", "The requests that took longest from queueing to completion, with their timings, so that slow servers, large downloads and late starts stand out."},
}

// Limits of the lists in the summary; the insights list more.
const (
	summaryListMax = 5
	insightListMax = 15
)

// Text is the summary an agent reads after a trace: for each insight set its
// metrics, long tasks, render-blocking and slowest requests, and the names of
// the insights that Insight explains. It does not include the insights'
// details.
func (s *Summary) Text() string {
	var b strings.Builder
	b.WriteString("## Summary of Performance trace findings:\n")
	fmt.Fprintf(&b, "URL: %s\n", orNone(s.URL))
	fmt.Fprintf(&b, "Trace bounds: %s\n", bounds(s.Min, s.Max))
	fmt.Fprintf(&b, "Trace duration: %s\n", ms(s.Max-s.Min))
	if s.DataLost {
		b.WriteString("Warning: Chrome's trace buffer filled up, so the trace misses events; record a shorter trace for complete figures.\n")
	}
	b.WriteString("\n# Available insight sets\n\n")
	b.WriteString("The trace is split by navigations into insight sets; the metrics and insights of a set are about its part of the trace. " +
		"Times written \"at N ms\" count from the set's start (its navigation start). " +
		"For the detail behind an item, call performance_analyze_insight with the set's id and one of its insight names.\n")
	for _, set := range s.Sets {
		b.WriteString("\n")
		s.writeSet(&b, set)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *Summary) writeSet(b *strings.Builder, set *InsightSet) {
	fmt.Fprintf(b, "## insight set id: %s\n\n", set.ID)
	fmt.Fprintf(b, "URL: %s\n", orNone(set.URL))
	fmt.Fprintf(b, "Bounds: %s\n", bounds(set.Start, set.End))
	b.WriteString("Metrics (lab / observed):\n")
	if set.ID == NoNavigation {
		b.WriteString("  - No navigation in this trace, so no TTFB, FCP or LCP: to measure a load, trace with reload: true.\n")
	}
	if set.TTFB > 0 {
		fmt.Fprintf(b, "  - TTFB: %s (%s)\n", ms(set.TTFB-set.Start), rate(set.TTFB-set.Start, 800_000, 1_800_000))
	}
	if set.FCP > 0 {
		fmt.Fprintf(b, "  - FCP: %s (%s)\n", ms(set.FCP-set.Start), rate(set.FCP-set.Start, 1_800_000, 3_000_000))
	}
	if l := set.LCP; l != nil {
		fmt.Fprintf(b, "  - LCP: %s (%s), element: %s\n", ms(l.TS-set.Start), rate(l.TS-set.Start, 2_500_000, 4_000_000), s.lcpElement(l))
		b.WriteString("  - LCP breakdown:\n")
		for _, p := range lcpParts(set) {
			fmt.Fprintf(b, "    - %s: %s, bounds: %s\n", p.name, ms(p.end-p.start), bounds(p.start, p.end))
		}
	} else if set.ID != NoNavigation {
		b.WriteString("  - LCP: none recorded (the page painted no content, or the trace ended before it did)\n")
	}
	cls := set.CLS
	if w := cls.Worst; w != nil {
		fmt.Fprintf(b, "  - CLS: %.2f (%s), worst cluster at %s: %s, moved: %s\n", cls.Score, rate(cls.Score, 0.1, 0.25),
			ms(w.Start-set.Start), plural(len(w.Shifts), "shift"), s.movedNodes(w, 5))
	} else {
		b.WriteString("  - CLS: 0.00 (good), no layout shifts\n")
	}
	from := "FCP"
	if set.FCP == 0 {
		from = "the set's start"
	}
	if n := len(set.LongTasks); n > 0 {
		longest := set.LongTasks[0]
		for _, t := range set.LongTasks {
			if t.Dur > longest.Dur {
				longest = t
			}
		}
		fmt.Fprintf(b, "  - TBT: %s (%s, from %s on), %s, longest %s at %s\n", ms(set.TBT), rate(set.TBT, 200_000, 600_000), from,
			plural(n, "long task"), ms(longest.Dur), ms(longest.TS-set.Start))
	} else {
		fmt.Fprintf(b, "  - TBT: 0 ms (good), no long tasks\n")
	}
	if set.DOMContentLoaded > 0 || set.Load > 0 {
		var parts []string
		if set.DOMContentLoaded > 0 {
			parts = append(parts, "DOMContentLoaded at "+ms(set.DOMContentLoaded-set.Start))
		}
		if set.Load > 0 {
			parts = append(parts, "load at "+ms(set.Load-set.Start))
		}
		fmt.Fprintf(b, "  - Events: %s\n", strings.Join(parts, ", "))
	}
	if len(set.LongTasks) > 0 {
		b.WriteString("Long tasks (main thread, over 50 ms), longest first:\n")
		tasks := longestTasks(set.LongTasks)
		for _, t := range head(tasks, summaryListMax) {
			fmt.Fprintf(b, "  - %s at %s: %s\n", ms(t.Dur), ms(t.TS-set.Start), taskCause(t))
		}
		more(b, len(tasks), summaryListMax)
	}
	if rb := set.RenderBlocking(); len(rb) > 0 {
		b.WriteString("Render-blocking requests:\n")
		for _, r := range head(rb, summaryListMax) {
			fmt.Fprintf(b, "  - %s %s (%s, finished at %s)\n", ms(r.Duration()), r.URL, orNone(r.ResourceType), ms(r.Done-set.Start))
		}
		more(b, len(rb), summaryListMax)
	}
	if slow := set.Slowest(len(set.Requests)); len(slow) > 0 {
		b.WriteString("Slowest requests:\n")
		for _, r := range head(slow, summaryListMax) {
			fmt.Fprintf(b, "  - %s %s (%s)\n", ms(r.Duration()), r.URL, requestBrief(r))
		}
		more(b, len(slow), summaryListMax)
	}
	if len(set.insights()) == 0 {
		b.WriteString("Available insights: none\n")
	} else {
		b.WriteString("Available insights:\n")
	}
	for _, name := range set.insights() {
		info := insightInfo[name]
		fmt.Fprintf(b, "  - insight name: %s\n    description: %s\n", name, info.description)
		if lo, hi, ok := set.insightBounds(name); ok {
			fmt.Fprintf(b, "    relevant trace bounds: %s\n", bounds(lo, hi))
		}
	}
}

// insights are the names of the insights that have something to say about
// the set. Insight explains the others too, with a short answer.
func (set *InsightSet) insights() []string {
	var out []string
	if set.Document != nil {
		out = append(out, DocumentLatency)
	}
	if set.LCP != nil {
		out = append(out, LCPBreakdown)
	}
	if len(set.CLS.Shifts) > 0 {
		out = append(out, CLSCulprits)
	}
	if len(set.RenderBlocking()) > 0 {
		out = append(out, RenderBlocking)
	}
	if len(set.LongTasks) > 0 {
		out = append(out, LongTasks)
	}
	if len(set.Slowest(1)) > 0 {
		out = append(out, SlowestRequests)
	}
	return out
}

// insightBounds is the part of the trace an insight is about.
func (set *InsightSet) insightBounds(name string) (float64, float64, bool) {
	switch name {
	case DocumentLatency:
		if r := set.Document; r != nil && r.Done > 0 {
			return r.Queued, r.Done, true
		}
	case LCPBreakdown:
		if set.LCP != nil {
			return set.Start, set.LCP.TS, true
		}
	case CLSCulprits:
		if w := set.CLS.Worst; w != nil {
			return w.Start, w.End, true
		}
	case RenderBlocking:
		if rb := set.RenderBlocking(); len(rb) > 0 {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, r := range rb {
				lo, hi = math.Min(lo, r.Queued), math.Max(hi, r.Done)
			}
			return lo, hi, true
		}
	case LongTasks:
		if n := len(set.LongTasks); n > 0 {
			last := set.LongTasks[n-1]
			return set.LongTasks[0].TS, last.TS + last.Dur, true
		}
	}
	return 0, 0, false
}

// lcpPart is one subpart of the LCP time.
type lcpPart struct {
	name       string
	start, end float64
}

// lcpParts splits the LCP time: TTFB, then for an image its load delay and
// load duration, then the render delay.
func lcpParts(set *InsightSet) []lcpPart {
	l := set.LCP
	ttfb := set.TTFB
	if ttfb == 0 || ttfb > l.TS {
		ttfb = set.Start
	}
	var parts []lcpPart
	if ttfb > set.Start {
		parts = append(parts, lcpPart{"TTFB", set.Start, ttfb})
	}
	if r := l.Request; r != nil && r.Done > 0 && r.Queued >= ttfb && r.Done <= l.TS {
		parts = append(parts,
			lcpPart{"Load delay", ttfb, r.Queued},
			lcpPart{"Load duration", r.Queued, r.Done},
			lcpPart{"Render delay", r.Done, l.TS})
		return parts
	}
	return append(parts, lcpPart{"Render delay", ttfb, l.TS})
}

// lcpElement names the LCP element as well as the trace and the live page
// allow.
func (s *Summary) lcpElement(l *LCP) string {
	name := s.Nodes[l.NodeID]
	if name == "" {
		name = l.NodeName
	}
	var extra []string
	if l.NodeID != 0 {
		extra = append(extra, fmt.Sprintf("nodeId: %d", l.NodeID))
	}
	if l.Type != "" {
		extra = append(extra, l.Type)
	}
	if name == "" {
		name = "unknown element"
	}
	if len(extra) > 0 {
		name += " (" + strings.Join(extra, ", ") + ")"
	}
	return name
}

// movedNodes names the nodes the shifts of a cluster moved.
func (s *Summary) movedNodes(c *Cluster, n int) string {
	var names []string
	seen := map[int64]bool{}
	for _, sh := range c.Shifts {
		for _, node := range sh.Nodes {
			if seen[node.NodeID] {
				continue
			}
			seen[node.NodeID] = true
			names = append(names, s.nodeName(node))
		}
	}
	if len(names) == 0 {
		return "no nodes named"
	}
	if len(names) > n {
		return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

// nodeName names a shifted node: the live description, else Chrome's.
func (s *Summary) nodeName(n ShiftNode) string {
	if d := s.Nodes[n.NodeID]; d != "" {
		return d
	}
	if n.Name != "" {
		return n.Name
	}
	return fmt.Sprintf("nodeId %d", n.NodeID)
}

// taskCause says what a long task ran.
func taskCause(t *LongTask) string {
	if len(t.Activities) == 0 {
		return "no detail in the trace"
	}
	var parts []string
	for _, a := range t.Activities {
		parts = append(parts, activity(a))
	}
	return strings.Join(parts, "; ")
}

func activity(a Activity) string {
	s := fmt.Sprintf("%s %s", a.Name, ms(a.Dur))
	if a.URL == "" {
		return s
	}
	fn := a.Function
	if fn == "" && a.Line > 0 {
		fn = "(anonymous)"
	}
	loc := a.URL
	if a.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", a.URL, a.Line, a.Column)
	}
	if fn != "" {
		return fmt.Sprintf("%s in %s %s", s, fn, loc)
	}
	return fmt.Sprintf("%s in %s", s, loc)
}

// requestBrief is a request's status, type and size.
func requestBrief(r *Request) string {
	var parts []string
	switch {
	case r.Failed:
		parts = append(parts, "failed")
	case r.Status > 0:
		parts = append(parts, fmt.Sprint(r.Status))
	}
	if r.MimeType != "" {
		parts = append(parts, r.MimeType)
	}
	if r.EncodedBytes > 0 {
		parts = append(parts, size(r.EncodedBytes))
	}
	if r.FromCache {
		parts = append(parts, "from cache")
	}
	return orNone(strings.Join(parts, ", "))
}

// longestTasks returns the tasks longest first, leaving ts as it is.
func longestTasks(ts []*LongTask) []*LongTask {
	out := slices.Clone(ts)
	slices.SortStableFunc(out, func(x, y *LongTask) int { return cmp.Compare(y.Dur, x.Dur) })
	return out
}

// rate says how a metric compares to web.dev's thresholds.
func rate(v, good, poor float64) string {
	switch {
	case v <= good:
		return "good"
	case v <= poor:
		return "needs improvement"
	}
	return "poor"
}

// ms writes microseconds as whole milliseconds.
func ms(us float64) string {
	return fmt.Sprintf("%d ms", int64(math.Round(us/1000)))
}

func bounds(lo, hi float64) string {
	return fmt.Sprintf("{min: %dµs, max: %dµs}", int64(lo), int64(hi))
}

func size(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func head[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func more(b *strings.Builder, total, shown int) {
	if total > shown {
		fmt.Fprintf(b, "  - … and %d more\n", total-shown)
	}
}
