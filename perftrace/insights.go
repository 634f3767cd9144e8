package perftrace

import (
	"fmt"
	"strings"
)

// InsightError is a request for an insight set or an insight that the
// summary does not have. Its message lists the valid ones.
type InsightError struct {
	msg string
}

func (e *InsightError) Error() string { return e.msg }

// Insight explains one insight of one insight set in detail: its title, what
// it measures, the figures behind it and where to read more. An insight with
// nothing to report, such as CLSCulprits on a page without layout shifts,
// says so. An unknown set id or insight name is an *InsightError that lists
// the valid ones.
func (s *Summary) Insight(setID, name string) (string, error) {
	set := s.Set(setID)
	if set == nil {
		var ids []string
		for _, st := range s.Sets {
			ids = append(ids, st.ID)
		}
		return "", &InsightError{fmt.Sprintf("no insight set %q in the last trace of this page; the insight sets are: %s", setID, strings.Join(ids, ", "))}
	}
	info, ok := insightInfo[name]
	if !ok {
		return "", &InsightError{fmt.Sprintf("no insight named %q; the insights are: %s (this set reports on: %s)",
			name, strings.Join(InsightNames, ", "), orNone(strings.Join(set.insights(), ", ")))}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Insight Title: %s\n\n", info.title)
	fmt.Fprintf(&b, "## Insight Summary:\n%s\n\n", insightSummaries[name])
	b.WriteString("## Detailed analysis:\n")
	if s.DataLost {
		b.WriteString("Warning: Chrome's trace buffer filled up, so the trace misses events.\n")
	}
	switch name {
	case DocumentLatency:
		s.documentLatency(&b, set)
	case LCPBreakdown:
		s.lcpBreakdown(&b, set)
	case CLSCulprits:
		s.clsCulprits(&b, set)
	case RenderBlocking:
		s.renderBlocking(&b, set)
	case LongTasks:
		s.longTasks(&b, set)
	case SlowestRequests:
		s.slowestRequests(&b, set)
	}
	b.WriteString("\n## External resources:\n")
	for _, link := range insightLinks[name] {
		fmt.Fprintf(&b, "- %s\n", link)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

var insightSummaries = map[string]string{
	DocumentLatency: "This insight checks that the page's document request is answered promptly:\n" +
		"1. Was the request redirected?\n" +
		"2. Did the server respond in 600 ms or less? Aim for as close to 100 ms as possible.\n" +
		"3. Was the response compressed, to minimise the transfer size?",
	LCPBreakdown: "This insight splits the Largest Contentful Paint (LCP) time into subparts, to show which one delayed the LCP element most: " +
		"the time to first byte, then, for an image, the delay before it began to load and its load duration, then the render delay. " +
		"Thresholds: good is 2.5 s or less, poor is over 4 s.",
	CLSCulprits: "Cumulative Layout Shift (CLS) is the score of the worst burst (cluster) of layout shifts that happened without user input. " +
		"A cluster holds shifts less than 1 s apart, for at most 5 s. Thresholds: good is 0.1 or less, poor is over 0.25.",
	RenderBlocking: "This insight lists the requests that the page had to finish before it could paint anything: stylesheets and " +
		"synchronous scripts in the head, by Chrome's own verdict. Each of them delays FCP and LCP.",
	LongTasks: "This insight lists the tasks of the page's main thread that ran over 50 ms, with what they ran. While such a task runs, " +
		"the page cannot respond to input. The Total Blocking Time (TBT) sums the time each task ran over 50 ms, from FCP on. " +
		"Thresholds for TBT: good is 200 ms or less, poor is over 600 ms.",
	SlowestRequests: "This insight lists the page's requests that took longest, from queueing to completion, with their timings.",
}

var insightLinks = map[string][]string{
	DocumentLatency: {"https://developer.chrome.com/docs/performance/insights/document-latency", "https://web.dev/articles/optimize-ttfb"},
	LCPBreakdown:    {"https://developer.chrome.com/docs/performance/insights/lcp-breakdown", "https://web.dev/articles/lcp", "https://web.dev/articles/optimize-lcp"},
	CLSCulprits:     {"https://developer.chrome.com/docs/performance/insights/cls-culprit", "https://web.dev/articles/cls", "https://web.dev/articles/optimize-cls"},
	RenderBlocking:  {"https://developer.chrome.com/docs/performance/insights/render-blocking", "https://web.dev/articles/render-blocking-resources"},
	LongTasks:       {"https://web.dev/articles/long-tasks-devtools", "https://web.dev/articles/tbt", "https://web.dev/articles/optimize-long-tasks"},
	SlowestRequests: {"https://developer.chrome.com/docs/devtools/network/reference#timing-explanation"},
}

func (s *Summary) documentLatency(b *strings.Builder, set *InsightSet) {
	r := set.Document
	if r == nil {
		b.WriteString("This part of the trace has no document request: it holds no navigation. Trace with reload: true to measure one.\n")
		return
	}
	writeRequest(b, "Document network request", r, set)
	b.WriteString("\nThe result of the checks for this insight are:\n")
	if n := len(r.Redirects); n > 0 {
		fmt.Fprintf(b, "- The request was not redirected: FAILED (%s: %s)\n", plural(n, "redirect"), strings.Join(r.Redirects, " → "))
	} else {
		b.WriteString("- The request was not redirected: PASSED\n")
	}
	switch {
	case r.ServerTime <= 0:
		b.WriteString("- Server responded quickly: UNKNOWN (the trace has no timing for the response)\n")
	case r.ServerTime > 600_000:
		fmt.Fprintf(b, "- Server responded quickly: FAILED (it took %s; aim for 600 ms or less)\n", ms(r.ServerTime))
	default:
		fmt.Fprintf(b, "- Server responded quickly: PASSED (%s)\n", ms(r.ServerTime))
	}
	enc := r.Header("Content-Encoding")
	switch {
	case enc != "":
		fmt.Fprintf(b, "- Compression was applied: PASSED (%s)\n", enc)
	case r.DecodedBytes > 0 && r.DecodedBytes < 1400:
		fmt.Fprintf(b, "- Compression was applied: PASSED (not needed: the document is %s)\n", size(r.DecodedBytes))
	default:
		b.WriteString("- Compression was applied: FAILED (no Content-Encoding; serve the document with gzip, br or zstd)\n")
	}
}

func (s *Summary) lcpBreakdown(b *strings.Builder, set *InsightSet) {
	l := set.LCP
	if l == nil {
		b.WriteString("No Largest Contentful Paint was recorded in this part of the trace.\n")
		return
	}
	total := l.TS - set.Start
	fmt.Fprintf(b, "The Largest Contentful Paint (LCP) time for this navigation was %s (%s).\n", ms(total), rate(total, 2_500_000, 4_000_000))
	switch {
	case l.Request != nil:
		fmt.Fprintf(b, "The LCP element (%s) is an image fetched from %s (%s).\n", s.lcpElement(l), l.Request.URL, requestBrief(l.Request))
	case l.ImageURL != "":
		fmt.Fprintf(b, "The LCP element (%s) is an image, %s, with no request in the trace (cached or inlined).\n", s.lcpElement(l), l.ImageURL)
	default:
		fmt.Fprintf(b, "The LCP element (%s) is %s and was not fetched from the network.\n", s.lcpElement(l), orNone(l.Type))
	}
	parts := lcpParts(set)
	fmt.Fprintf(b, "\nWe can break this time down into the %d subparts that combine to make the LCP time:\n\n", len(parts))
	names := map[string]string{"TTFB": "Time to first byte", "Load delay": "Resource load delay", "Load duration": "Resource load duration", "Render delay": "Element render delay"}
	for _, p := range parts {
		share := 0.0
		if total > 0 {
			share = (p.end - p.start) / total * 100
		}
		fmt.Fprintf(b, "- %s: %s (%.1f%% of total LCP time)\n", names[p.name], ms(p.end-p.start), share)
	}
	if rb := set.RenderBlocking(); len(rb) > 0 {
		fmt.Fprintf(b, "\n%s blocked rendering before the first paint (see the RenderBlocking insight).\n", plural(len(rb), "request"))
	}
}

func (s *Summary) clsCulprits(b *strings.Builder, set *InsightSet) {
	cls := set.CLS
	w := cls.Worst
	if w == nil {
		b.WriteString("No layout shifts without recent input happened in this part of the trace: CLS is 0.\n")
		return
	}
	fmt.Fprintf(b, "The CLS of this navigation is %.4f (%s): %s in %s.\n", cls.Score, rate(cls.Score, 0.1, 0.25),
		plural(len(cls.Shifts), "layout shift"), plural(len(cls.Clusters), "cluster"))
	fmt.Fprintf(b, "The worst layout shift cluster started at %s and ended at %s, with a score of %.4f.\n\n", ms(w.Start-set.Start), ms(w.End-set.Start), w.Score)
	b.WriteString("Layout shifts in this cluster:\n")
	for i, sh := range head(w.Shifts, insightListMax) {
		fmt.Fprintf(b, "### Layout shift %d:\n", i+1)
		fmt.Fprintf(b, "- Start time: %s\n- Score: %.4f\n", ms(sh.TS-set.Start), sh.Score)
		if len(sh.Nodes) == 0 {
			b.WriteString("- Impacted elements: none named by Chrome\n")
			continue
		}
		b.WriteString("- Impacted elements:\n")
		for _, n := range sh.Nodes {
			fmt.Fprintf(b, "  - %s (nodeId: %d)%s\n", s.nodeName(n), n.NodeID, moved(n))
		}
	}
	more(b, len(w.Shifts), insightListMax)
	if len(cls.Clusters) > 1 {
		b.WriteString("\nOther clusters:\n")
		for _, c := range cls.Clusters {
			if c != w {
				fmt.Fprintf(b, "- at %s: %s, score %.4f\n", ms(c.Start-set.Start), plural(len(c.Shifts), "shift"), c.Score)
			}
		}
	}
	b.WriteString("\nCommon causes: content inserted above these elements (banners, ads, late-loading widgets), images and embeds " +
		"without width and height, and web fonts that swap. Reserve space for late content, or insert it below the viewport.\n")
}

// moved describes how a node's rect changed, when Chrome said.
func moved(n ShiftNode) string {
	if len(n.Old) != 4 || len(n.New) != 4 {
		return ""
	}
	return fmt.Sprintf(": moved from (x %g, y %g, %g×%g) to (x %g, y %g, %g×%g)",
		n.Old[0], n.Old[1], n.Old[2], n.Old[3], n.New[0], n.New[1], n.New[2], n.New[3])
}

func (s *Summary) renderBlocking(b *strings.Builder, set *InsightSet) {
	rb := set.RenderBlocking()
	if len(rb) == 0 {
		b.WriteString("No request blocked the page's first render.\n")
		return
	}
	last := 0.0
	for _, r := range rb {
		last = max(last, r.Done)
	}
	fmt.Fprintf(b, "%s blocked the page's first render; the last of them finished at %s", plural(len(rb), "request"), ms(last-set.Start))
	if set.FCP > 0 {
		fmt.Fprintf(b, ", and the first contentful paint came at %s", ms(set.FCP-set.Start))
	}
	b.WriteString(". Here they are, longest first:\n")
	for _, r := range head(rb, insightListMax) {
		b.WriteString("\n")
		writeRequest(b, "Network request", r, set)
	}
	more(b, len(rb), insightListMax)
}

func (s *Summary) longTasks(b *strings.Builder, set *InsightSet) {
	if len(set.LongTasks) == 0 {
		b.WriteString("No task of the main thread ran over 50 ms in this part of the trace: TBT is 0 ms.\n")
		return
	}
	from := "FCP"
	if set.FCP == 0 {
		from = "the start of this part of the trace"
	}
	fmt.Fprintf(b, "The main thread ran %s over 50 ms. The Total Blocking Time from %s to the end of the trace is %s (%s).\n\n",
		plural(len(set.LongTasks), "long task"), from, ms(set.TBT), rate(set.TBT, 200_000, 600_000))
	tasks := longestTasks(set.LongTasks)
	for i, t := range head(tasks, insightListMax) {
		fmt.Fprintf(b, "### Long task %d: %s at %s, blocking %s\n", i+1, ms(t.Dur), ms(t.TS-set.Start), ms(t.Blocking))
		if len(t.Activities) == 0 {
			b.WriteString("- no detail in the trace\n")
		}
		for _, a := range t.Activities {
			fmt.Fprintf(b, "- %s\n", activity(a))
		}
	}
	more(b, len(tasks), insightListMax)
	b.WriteString("\nSplit long work into chunks that yield to the main thread (scheduler.yield, setTimeout), defer work that is not " +
		"needed for the first render, and move heavy computation to a worker.\n")
}

func (s *Summary) slowestRequests(b *strings.Builder, set *InsightSet) {
	slow := set.Slowest(insightListMax)
	if len(slow) == 0 {
		b.WriteString("No request finished in this part of the trace.\n")
		return
	}
	fmt.Fprintf(b, "The page made %s in this part of the trace; the slowest, longest first:\n", plural(len(set.Requests), "request"))
	for _, r := range slow {
		b.WriteString("\n")
		writeRequest(b, "Network request", r, set)
	}
}

// writeRequest writes a request's details, times from the set's start.
func writeRequest(b *strings.Builder, title string, r *Request, set *InsightSet) {
	at := func(ts float64) string {
		if ts == 0 {
			return "unknown"
		}
		return ms(ts - set.Start)
	}
	fmt.Fprintf(b, "## %s: %s\n", title, r.URL)
	b.WriteString("Timings:\n")
	fmt.Fprintf(b, "- Queued at: %s\n- Request sent at: %s\n- First byte at: %s\n- Download complete at: %s\n",
		at(r.Queued), at(r.Sent), at(r.FirstByte), at(r.Done))
	b.WriteString("Durations:\n")
	if r.ServerTime > 0 {
		fmt.Fprintf(b, "- Server response time: %s\n", ms(r.ServerTime))
	}
	if r.FirstByte > 0 && r.Done >= r.FirstByte {
		fmt.Fprintf(b, "- Download time: %s\n", ms(r.Done-r.FirstByte))
	}
	fmt.Fprintf(b, "- Total duration: %s\n", durationOrUnknown(r))
	if r.Initiator != "" {
		fmt.Fprintf(b, "Initiator: %s\n", r.Initiator)
	}
	if len(r.Redirects) > 0 {
		fmt.Fprintf(b, "Redirects: %s\n", strings.Join(r.Redirects, " → "))
	} else {
		b.WriteString("Redirects: no redirects\n")
	}
	if r.Failed {
		b.WriteString("Failed: Yes\n")
	}
	if r.Status > 0 {
		fmt.Fprintf(b, "Status code: %d\n", r.Status)
	}
	fmt.Fprintf(b, "MIME Type: %s\nProtocol: %s\n", orNone(r.MimeType), orNone(r.Protocol))
	if r.ResourceType != "" {
		fmt.Fprintf(b, "Resource type: %s\n", r.ResourceType)
	}
	fmt.Fprintf(b, "Priority: %s\n", orNone(r.Priority))
	fmt.Fprintf(b, "Render-blocking: %s\n", yesNo(blocks(r)))
	fmt.Fprintf(b, "From cache: %s\nFrom a service worker: %s\n", yesNo(r.FromCache), yesNo(r.FromServiceWorker))
	if r.EncodedBytes > 0 || r.DecodedBytes > 0 {
		fmt.Fprintf(b, "Transfer size: %s, resource size: %s\n", size(r.EncodedBytes), size(r.DecodedBytes))
	}
	if len(r.Headers) > 0 {
		b.WriteString("Response headers:\n")
		for _, h := range head(r.Headers, 25) {
			v := h.Value
			if strings.EqualFold(h.Name, "set-cookie") {
				v = "<redacted>"
			}
			fmt.Fprintf(b, "- %s: %s\n", h.Name, v)
		}
	}
}

func durationOrUnknown(r *Request) string {
	if d := r.Duration(); d > 0 {
		return ms(d)
	}
	return "unknown (unfinished when the trace ended)"
}

func yesNo(v bool) string {
	if v {
		return "Yes"
	}
	return "No"
}
