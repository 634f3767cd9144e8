package perftrace

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Options say which page of the trace the analysis is about.
type Options struct {
	// Frame is the id of the page's main frame, which is the page's target
	// id. Empty means the main frame the trace says it started on.
	Frame string
	// URL is the page's URL, for a trace that holds no navigation and does
	// not say it.
	URL string
}

// Summary is what a trace says about one page: its parts split by
// navigation, each with its metrics. Times are microseconds of the trace's
// clock unless a name says otherwise.
type Summary struct {
	// URL is the URL of the last navigation, else Options.URL.
	URL string
	// Min and Max bound the trace.
	Min, Max float64
	// Frame is the main frame the analysis followed.
	Frame string
	// Sets are the parts of the trace, one per navigation, in order; a
	// trace without navigation has one set, NoNavigation.
	Sets []*InsightSet
	// Nodes describes DOM nodes by backend node id, such as `h1#hero
	// "Title"`. The analysis leaves it empty: a caller with the live page
	// fills it, for the ids NodeIDs returns, and the texts use it.
	Nodes map[int64]string
	// DataLost says Chrome dropped events because its buffer filled up. The
	// caller sets it; the texts warn about it.
	DataLost bool
}

// NoNavigation is the id of the one insight set of a trace that holds no
// navigation of the page.
const NoNavigation = "NO_NAVIGATION"

// InsightSet is the part of a trace from one navigation of the page to the
// next, or the whole trace when it holds none. Metrics a part lacks are
// zero or nil.
type InsightSet struct {
	ID           string
	URL          string
	NavigationID string
	// Frame is the page's main frame.
	Frame string
	// Start and End bound the set: Start is the navigation's start.
	Start, End float64
	// PID and TID name the page's main thread in this set.
	PID, TID int64

	// Document is the request of the navigation's document.
	Document *Request
	// TTFB is when the document's first byte arrived; zero if unknown.
	TTFB float64
	// FirstPaint and FCP are when the page first painted anything, and
	// first painted content; zero if it did not.
	FirstPaint, FCP float64
	// LCP is the largest contentful paint; nil if none.
	LCP *LCP
	// DOMContentLoaded and Load are the document's events; zero if missing.
	DOMContentLoaded, Load float64
	// CLS is the layout shifts without recent input.
	CLS CLS
	// LongTasks are the main-thread tasks over LongTaskMin, by start.
	LongTasks []*LongTask
	// TBT is the total blocking time, from FCP (or Start) to End.
	TBT float64
	// Requests are the page's requests that began in this set, by start.
	Requests []*Request
}

// LCP is the largest contentful paint of a navigation.
type LCP struct {
	TS float64
	// NodeID is the backend DOM node id of the element; 0 if unknown.
	NodeID int64
	// NodeName is how Chrome named the element, such as "H1 id='hero'".
	NodeName string
	// Type is "text" or "image".
	Type string
	// Size is the element's painted area in pixels.
	Size int64
	// ImageURL is the image of an image LCP; Request loaded it.
	ImageURL string
	Request  *Request
}

// CLS is the cumulative layout shift of an insight set: the score of its
// worst cluster of shifts (shifts less than 1 s apart, within 5 s).
type CLS struct {
	Score    float64
	Shifts   []*Shift
	Clusters []*Cluster
	Worst    *Cluster
}

// Shift is one layout shift without recent input.
type Shift struct {
	TS    float64
	Score float64
	Nodes []ShiftNode
}

// ShiftNode is a node a layout shift moved, with its rects (x, y, width,
// height) before and after.
type ShiftNode struct {
	NodeID   int64
	Name     string
	Old, New []float64
}

// Cluster is a burst of layout shifts, scored as a whole.
type Cluster struct {
	Start, End float64
	Score      float64
	Shifts     []*Shift
}

// LongTask is a main-thread task over LongTaskMin.
type LongTask struct {
	TS, Dur float64
	// Blocking is the part of it that counts towards TBT.
	Blocking float64
	// Activities are the longest top-level things the task did.
	Activities []Activity
}

// Activity is an event within a long task, and where its code lives.
type Activity struct {
	Name     string
	Dur      float64
	Function string
	URL      string
	Line     int // 1-based; 0 if unknown
	Column   int // 1-based; 0 if unknown
}

// Request is one network request of the page.
type Request struct {
	ID           string
	URL          string
	Redirects    []string // the URLs before URL, in order
	Method       string
	ResourceType string
	Priority     string
	// RenderBlocking is Chrome's verdict, such as "blocking" or
	// "non_blocking"; empty if Chrome gave none.
	RenderBlocking string
	Frame          string
	Initiator      string

	Status            int
	MimeType          string
	Protocol          string
	FromCache         bool
	FromServiceWorker bool
	Failed            bool
	Headers           []Header
	EncodedBytes      int64
	DecodedBytes      int64

	// Queued, Sent, FirstByte and Done are when the request was queued, was
	// sent, got the first byte of its response, and finished; zero if the
	// trace does not say.
	Queued, Sent, FirstByte, Done float64
	// ServerTime is the time from sending the request to the first byte.
	ServerTime float64
}

// Header is a response header.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Duration is the time from queueing to finishing; zero if unfinished.
func (r *Request) Duration() float64 {
	if r.Done == 0 || r.Done < r.Queued {
		return 0
	}
	return r.Done - r.Queued
}

// Header returns the value of the response header name, case-insensitive.
func (r *Request) Header(name string) string {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// NodeIDs are the DOM nodes the texts name, for a caller to describe: the
// LCP elements and the nodes the worst layout shifts moved.
func (s *Summary) NodeIDs() []int64 {
	var ids []int64
	for _, set := range s.Sets {
		if set.LCP != nil && set.LCP.NodeID != 0 {
			ids = append(ids, set.LCP.NodeID)
		}
		if set.CLS.Worst != nil {
			for _, sh := range set.CLS.Worst.Shifts {
				for _, n := range sh.Nodes {
					ids = append(ids, n.NodeID)
				}
			}
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > maxDescribed {
		ids = ids[:maxDescribed]
	}
	return ids
}

// maxDescribed bounds the nodes NodeIDs asks to describe.
const maxDescribed = 20

// Set returns the insight set with the id, or nil.
func (s *Summary) Set(id string) *InsightSet {
	for _, set := range s.Sets {
		if set.ID == id {
			return set
		}
	}
	return nil
}

// args are the fields of event args the analysis reads. One struct for
// every event keeps decoding simple; each event fills what it has.
type args struct {
	Frame     string    `json:"frame"`
	Name      string    `json:"name"` // thread_name, process_name
	Data      eventData `json:"data"`
	BeginData eventData `json:"beginData"` // ParseHTML, Layout
}

type eventData struct {
	Frame              string       `json:"frame"`
	Frames             []frameInfo  `json:"frames"`
	URL                string       `json:"url"`
	Parent             string       `json:"parent"`
	ProcessID          int64        `json:"processId"`
	IsOutermost        *bool        `json:"isOutermostMainFrame"`
	IsLoadingMainFrame bool         `json:"isLoadingMainFrame"`
	DocumentLoaderURL  string       `json:"documentLoaderURL"`
	NavigationID       string       `json:"navigationId"`
	CandidateIndex     int64        `json:"candidateIndex"`
	NodeID             int64        `json:"nodeId"`
	DOMNodeID          int64        `json:"DOMNodeId"`
	NodeName           string       `json:"nodeName"`
	Type               string       `json:"type"`
	Size               int64        `json:"size"`
	ImageURL           string       `json:"imageUrl"`
	HadRecentInput     bool         `json:"had_recent_input"`
	IsMainFrame        *bool        `json:"is_main_frame"`
	Score              float64      `json:"score"`
	WeightedScoreDelta *float64     `json:"weighted_score_delta"`
	ImpactedNodes      []impacted   `json:"impacted_nodes"`
	RequestID          string       `json:"requestId"`
	RequestMethod      string       `json:"requestMethod"`
	ResourceType       string       `json:"resourceType"`
	Priority           string       `json:"priority"`
	RenderBlocking     string       `json:"renderBlocking"`
	Initiator          *initiator   `json:"initiator"`
	StatusCode         int          `json:"statusCode"`
	MimeType           string       `json:"mimeType"`
	Protocol           string       `json:"protocol"`
	FromCache          bool         `json:"fromCache"`
	FromServiceWorker  bool         `json:"fromServiceWorker"`
	Headers            []Header     `json:"headers"`
	Timing             *timing      `json:"timing"`
	EncodedDataLength  int64        `json:"encodedDataLength"`
	DecodedBodyLength  int64        `json:"decodedBodyLength"`
	DidFail            bool         `json:"didFail"`
	FinishTime         float64      `json:"finishTime"`
	FunctionName       string       `json:"functionName"`
	LineNumber         *int         `json:"lineNumber"`
	ColumnNumber       *int         `json:"columnNumber"`
	StackTrace         []stackFrame `json:"stackTrace"`
}

type frameInfo struct {
	Frame       string `json:"frame"`
	URL         string `json:"url"`
	Parent      string `json:"parent"`
	ProcessID   int64  `json:"processId"`
	IsOutermost *bool  `json:"isOutermostMainFrame"`
}

type impacted struct {
	NodeID    int64     `json:"node_id"`
	DebugName string    `json:"debug_name"`
	OldRect   []float64 `json:"old_rect"`
	NewRect   []float64 `json:"new_rect"`
}

type initiator struct {
	URL string `json:"url"`
}

// timing is a response's resource timing: RequestTime in seconds of the
// trace clock, the rest in milliseconds after it, -1 when unknown.
type timing struct {
	RequestTime         float64  `json:"requestTime"`
	SendStart           float64  `json:"sendStart"`
	SendEnd             float64  `json:"sendEnd"`
	ReceiveHeadersStart *float64 `json:"receiveHeadersStart"`
	ReceiveHeadersEnd   float64  `json:"receiveHeadersEnd"`
}

type stackFrame struct {
	FunctionName string `json:"functionName"`
	URL          string `json:"url"`
	LineNumber   int    `json:"lineNumber"`
	ColumnNumber int    `json:"columnNumber"`
}

// decoded is an event with its args decoded.
type decoded struct {
	*Event
	a args
}

func (d *decoded) frame() string {
	if d.a.Frame != "" {
		return d.a.Frame
	}
	return d.a.Data.Frame
}

// Analyze sums up the page's part of a trace. It never fails: a trace that
// lacks events gives a Summary that lacks the metrics they would give.
func Analyze(t *Trace, opts Options) *Summary {
	evs := make([]decoded, len(t.Events))
	for i := range t.Events {
		evs[i].Event = &t.Events[i]
		_ = json.Unmarshal(t.Events[i].Args, &evs[i].a)
	}
	a := &analysis{evs: evs, frame: opts.Frame, threads: map[int64]map[int64]string{}, parents: map[string]string{}}
	a.readMeta()
	s := &Summary{Min: t.Min, Max: t.Max, Frame: a.frame, URL: opts.URL}
	a.requests = a.collectRequests()
	for i, nav := range a.navigations() {
		set := &InsightSet{
			ID:           "NAVIGATION_" + strconv.Itoa(i),
			URL:          nav.a.Data.DocumentLoaderURL,
			NavigationID: nav.a.Data.NavigationID,
			Frame:        a.frame,
			Start:        nav.TS,
			PID:          nav.PID,
			TID:          nav.TID,
		}
		s.Sets = append(s.Sets, set)
	}
	if len(s.Sets) == 0 {
		pid, tid := a.mainThread()
		url := a.frameURL()
		if url == "" {
			url = opts.URL
		}
		s.Sets = []*InsightSet{{ID: NoNavigation, URL: url, Frame: a.frame, Start: t.Min, PID: pid, TID: tid}}
	}
	for i, set := range s.Sets {
		set.End = t.Max
		if i+1 < len(s.Sets) {
			set.End = s.Sets[i+1].Start
		}
		a.fill(set)
	}
	if last := s.Sets[len(s.Sets)-1]; last.URL != "" {
		s.URL = last.URL
	}
	return s
}

// analysis is the state of one Analyze.
type analysis struct {
	evs      []decoded
	frame    string
	threads  map[int64]map[int64]string // pid → tid → thread name
	parents  map[string]string          // frame → parent frame
	urls     map[string]string          // frame → last committed URL
	requests []*Request
}

// readMeta learns the threads, the frame tree and, if not given, the main
// frame.
func (a *analysis) readMeta() {
	a.urls = map[string]string{}
	for i := range a.evs {
		e := &a.evs[i]
		switch e.Name {
		case "thread_name":
			if a.threads[e.PID] == nil {
				a.threads[e.PID] = map[int64]string{}
			}
			a.threads[e.PID][e.TID] = e.a.Name
		case "TracingStartedInBrowser":
			for _, f := range e.a.Data.Frames {
				if f.Parent != "" {
					a.parents[f.Frame] = f.Parent
				}
				if f.URL != "" {
					a.urls[f.Frame] = f.URL
				}
				if a.frame == "" && f.Parent == "" && (f.IsOutermost == nil || *f.IsOutermost) {
					a.frame = f.Frame
				}
			}
		case "FrameCommittedInBrowser":
			d := e.a.Data
			if d.Parent != "" {
				a.parents[d.Frame] = d.Parent
			}
			if d.URL != "" {
				a.urls[d.Frame] = d.URL
			}
		}
	}
	if a.frame == "" {
		// No frame list: the first main-frame navigation names it.
		for i := range a.evs {
			e := &a.evs[i]
			if e.Name == "navigationStart" && e.a.Data.IsLoadingMainFrame && e.frame() != "" {
				a.frame = e.frame()
				break
			}
		}
	}
}

// ofPage reports whether a frame is the page's main frame or one of its
// descendants.
func (a *analysis) ofPage(frame string) bool {
	for range 32 { // a frame tree is shallow; a loop in bad data ends here
		if frame == "" {
			return false
		}
		if frame == a.frame {
			return true
		}
		frame = a.parents[frame]
	}
	return false
}

// navigations are the main frame's navigations to a document, in order.
func (a *analysis) navigations() []*decoded {
	var out []*decoded
	seen := map[string]bool{}
	for i := range a.evs {
		e := &a.evs[i]
		d := e.a.Data
		if e.Name != "navigationStart" || e.frame() != a.frame || !d.IsLoadingMainFrame || d.DocumentLoaderURL == "" {
			continue
		}
		if d.IsOutermost != nil && !*d.IsOutermost {
			continue
		}
		if d.NavigationID != "" && seen[d.NavigationID] {
			continue
		}
		seen[d.NavigationID] = true
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(x, y *decoded) int { return cmp.Compare(x.TS, y.TS) })
	return out
}

// mainThread finds the page's main thread in a trace with no navigation:
// the thread of StartMark, else the renderer thread that most events of the
// main frame came from.
func (a *analysis) mainThread() (int64, int64) {
	mark := StartMark(a.frame)
	for i := range a.evs {
		if e := &a.evs[i]; e.Name == mark {
			return e.PID, e.TID
		}
	}
	votes := map[int64]int{}
	for i := range a.evs {
		e := &a.evs[i]
		if e.frame() == a.frame && a.isRendererMain(e.PID, e.TID) {
			votes[e.PID]++
		}
	}
	var pid int64
	best := 0
	for p, n := range votes {
		if n > best || (n == best && p < pid) {
			pid, best = p, n
		}
	}
	if pid == 0 {
		return 0, 0
	}
	for tid, name := range a.threads[pid] {
		if name == "CrRendererMain" {
			return pid, tid
		}
	}
	return pid, pid
}

// isRendererMain reports whether a thread is a renderer's main thread, or
// may be one when the trace names no threads.
func (a *analysis) isRendererMain(pid, tid int64) bool {
	names, ok := a.threads[pid]
	if !ok {
		return true
	}
	name, ok := names[tid]
	return !ok || name == "CrRendererMain"
}

// frameURL is the main frame's last known URL.
func (a *analysis) frameURL() string { return a.urls[a.frame] }

// fill computes a set's metrics from the events within its bounds.
func (a *analysis) fill(set *InsightSet) {
	in := func(ts float64) bool { return ts >= set.Start && ts < set.End }
	var lcpInvalidated float64
	for i := range a.evs {
		e := &a.evs[i]
		d := e.a.Data
		nav := set.NavigationID != "" && d.NavigationID == set.NavigationID && e.frame() == a.frame
		switch e.Name {
		case "firstPaint":
			if nav && set.FirstPaint == 0 {
				set.FirstPaint = e.TS
			}
		case "firstContentfulPaint":
			if nav && set.FCP == 0 {
				set.FCP = e.TS
			}
		case "largestContentfulPaint::Candidate":
			if nav && (set.LCP == nil || e.TS >= set.LCP.TS) {
				set.LCP = &LCP{TS: e.TS, NodeID: d.NodeID, NodeName: d.NodeName, Type: d.Type, Size: d.Size}
			}
		case "largestContentfulPaint::Invalidate":
			if e.frame() == a.frame && in(e.TS) {
				lcpInvalidated = e.TS
			}
		case "MarkDOMContent", "MarkLoad":
			if e.frame() != a.frame || !in(e.TS) || (set.PID != 0 && e.PID != set.PID) {
				continue
			}
			if e.Name == "MarkLoad" && set.Load == 0 {
				set.Load = e.TS
			}
			if e.Name == "MarkDOMContent" && set.DOMContentLoaded == 0 {
				set.DOMContentLoaded = e.TS
			}
		case "LayoutShift":
			if e.frame() != a.frame || !in(e.TS) || d.HadRecentInput || (d.IsMainFrame != nil && !*d.IsMainFrame) {
				continue
			}
			score := d.Score
			if d.WeightedScoreDelta != nil {
				score = *d.WeightedScoreDelta
			}
			sh := &Shift{TS: e.TS, Score: score}
			for _, n := range d.ImpactedNodes {
				sh.Nodes = append(sh.Nodes, ShiftNode{NodeID: n.NodeID, Name: n.DebugName, Old: n.OldRect, New: n.NewRect})
			}
			set.CLS.Shifts = append(set.CLS.Shifts, sh)
		case "RunTask":
			if e.PID == set.PID && e.TID == set.TID && in(e.TS) && e.Dur > LongTaskMin {
				set.LongTasks = append(set.LongTasks, &LongTask{TS: e.TS, Dur: e.Dur, Activities: a.activities(e)})
			}
		}
	}
	if set.LCP != nil && lcpInvalidated > set.LCP.TS {
		set.LCP = nil
	}
	for _, r := range a.requests {
		if r.ID != "" && r.ID == set.NavigationID {
			set.Document = r
		}
		if in(r.Queued) || (r == set.Document && !slices.Contains(set.Requests, r)) {
			set.Requests = append(set.Requests, r)
		}
	}
	if set.Document != nil && set.Document.FirstByte > 0 {
		set.TTFB = set.Document.FirstByte
	}
	a.lcpImage(set)
	set.CLS.cluster()
	set.TBT = blockingTime(set)
	slices.SortStableFunc(set.LongTasks, func(x, y *LongTask) int { return cmp.Compare(x.TS, y.TS) })
}

// lcpImage links an image LCP to its image and the request that loaded it.
func (a *analysis) lcpImage(set *InsightSet) {
	l := set.LCP
	if l == nil || l.NodeID == 0 {
		return
	}
	for i := range a.evs {
		e := &a.evs[i]
		if e.Name == "LargestImagePaint::Candidate" && e.a.Data.DOMNodeID == l.NodeID && e.PID == set.PID && e.TS >= set.Start && e.TS <= l.TS {
			l.ImageURL = e.a.Data.ImageURL
		}
	}
	if l.ImageURL == "" {
		return
	}
	if l.Type == "" {
		l.Type = "image"
	}
	for _, r := range set.Requests {
		if r.URL == l.ImageURL || slices.Contains(r.Redirects, l.ImageURL) {
			l.Request = r
			return
		}
	}
}

// cluster groups the shifts into clusters and scores them: a cluster ends
// after a 1 s gap or at 5 s long, as Chrome's CLS does.
func (c *CLS) cluster() {
	const gap, window = 1_000_000, 5_000_000
	var cur *Cluster
	for _, sh := range c.Shifts {
		if cur == nil || sh.TS-cur.End > gap || sh.TS-cur.Start > window {
			cur = &Cluster{Start: sh.TS}
			c.Clusters = append(c.Clusters, cur)
		}
		cur.End = sh.TS
		cur.Score += sh.Score
		cur.Shifts = append(cur.Shifts, sh)
	}
	for _, cl := range c.Clusters {
		if c.Worst == nil || cl.Score > c.Worst.Score {
			c.Worst = cl
		}
	}
	if c.Worst != nil {
		c.Score = c.Worst.Score
	}
}

// blockingTime sums the blocking parts of the long tasks: each task is
// clipped to the time from FCP (or the set's start) to the set's end, and
// blocks for what it runs over LongTaskMin.
func blockingTime(set *InsightSet) float64 {
	from := set.FCP
	if from == 0 {
		from = set.Start
	}
	total := 0.0
	for _, t := range set.LongTasks {
		start, end := max(t.TS, from), min(t.TS+t.Dur, set.End)
		if d := end - start; d > LongTaskMin {
			t.Blocking = d - LongTaskMin
			total += t.Blocking
		}
	}
	return total
}

// activities are the longest top-level events within a task, with where
// their code lives, taken from them or from the first event within them
// that says.
func (a *analysis) activities(task *decoded) []Activity {
	var inner []*decoded
	for i := range a.evs {
		e := &a.evs[i]
		if e.Ph == "X" && e.Name != "RunTask" && e.PID == task.PID && e.TID == task.TID &&
			e.TS >= task.TS && e.End() <= task.End() && e.Event != task.Event {
			inner = append(inner, e)
		}
	}
	var top []Activity
	for i, e := range inner {
		contained := false
		for j, o := range inner {
			if i != j && o.TS <= e.TS && o.End() >= e.End() && (o.Dur > e.Dur || (o.Dur == e.Dur && j < i)) {
				contained = true
				break
			}
		}
		if contained {
			continue
		}
		act := Activity{Name: e.Name, Dur: e.Dur}
		for _, o := range inner {
			if o.TS >= e.TS && o.End() <= e.End() && locate(o, &act) {
				break
			}
		}
		top = append(top, act)
	}
	slices.SortStableFunc(top, func(x, y Activity) int { return cmp.Compare(y.Dur, x.Dur) })
	if len(top) > 3 {
		top = top[:3]
	}
	return top
}

// locate fills act's code location from e, if e has one.
func locate(e *decoded, act *Activity) bool {
	d := e.a.Data
	switch {
	case d.URL != "" && d.LineNumber != nil:
		// Chrome writes the positions of timeline events 1-based.
		act.URL, act.Function = d.URL, d.FunctionName
		act.Line = *d.LineNumber
		if d.ColumnNumber != nil {
			act.Column = *d.ColumnNumber
		}
		return true
	case len(d.StackTrace) > 0 && d.StackTrace[0].URL != "":
		f := d.StackTrace[0] // a protocol call frame: 0-based
		act.URL, act.Function, act.Line, act.Column = f.URL, f.FunctionName, f.LineNumber+1, f.ColumnNumber+1
		return true
	case d.URL != "":
		act.URL = d.URL // a script evaluated as a whole
		return true
	case e.a.BeginData.URL != "":
		act.URL = e.a.BeginData.URL // the document a ParseHTML parsed
		return true
	}
	return false
}

// collectRequests joins the Resource* events of each request of the page.
func (a *analysis) collectRequests() []*Request {
	byID := map[string]*Request{}
	var order []*Request
	get := func(id string) *Request {
		r, ok := byID[id]
		if !ok {
			r = &Request{ID: id}
			byID[id] = r
			order = append(order, r)
		}
		return r
	}
	for i := range a.evs {
		e := &a.evs[i]
		d := e.a.Data
		if d.RequestID == "" {
			continue
		}
		switch e.Name {
		case "ResourceWillSendRequest":
			r := get(d.RequestID)
			if r.Queued == 0 || e.TS < r.Queued {
				r.Queued = e.TS
			}
		case "ResourceSendRequest":
			r := get(d.RequestID)
			if r.URL != "" && r.URL != d.URL {
				r.Redirects = append(r.Redirects, r.URL)
			}
			r.URL, r.Method, r.ResourceType, r.Frame = d.URL, d.RequestMethod, d.ResourceType, d.Frame
			r.Priority, r.RenderBlocking = d.Priority, d.RenderBlocking
			if d.Initiator != nil {
				r.Initiator = d.Initiator.URL
			}
			if r.Queued == 0 {
				r.Queued = e.TS
			}
			if r.Sent == 0 {
				r.Sent = e.TS
			}
		case "ResourceChangePriority":
			if r, ok := byID[d.RequestID]; ok && d.Priority != "" {
				r.Priority = d.Priority
			}
		case "PreloadRenderBlockingStatusChange":
			if r, ok := byID[d.RequestID]; ok && d.RenderBlocking != "" {
				r.RenderBlocking = d.RenderBlocking
			}
		case "ResourceReceiveResponse":
			r := get(d.RequestID)
			r.Status, r.MimeType, r.Protocol = d.StatusCode, d.MimeType, d.Protocol
			r.FromCache, r.FromServiceWorker, r.Headers = d.FromCache, d.FromServiceWorker, d.Headers
			r.FirstByte = e.TS
			if tm := d.Timing; tm != nil && tm.RequestTime > 0 {
				base := tm.RequestTime * 1e6
				if tm.SendStart >= 0 {
					r.Sent = base + tm.SendStart*1e3
				}
				headers := tm.ReceiveHeadersEnd
				if tm.ReceiveHeadersStart != nil && *tm.ReceiveHeadersStart > 0 {
					headers = *tm.ReceiveHeadersStart
				}
				if headers >= 0 {
					r.FirstByte = base + headers*1e3
					if tm.SendEnd >= 0 && headers >= tm.SendEnd {
						r.ServerTime = (headers - tm.SendEnd) * 1e3
					}
				}
			}
			if d.EncodedDataLength > 0 {
				r.EncodedBytes = d.EncodedDataLength
			}
		case "ResourceFinish":
			r := get(d.RequestID)
			r.Done = e.TS
			if d.FinishTime > 0 {
				r.Done = d.FinishTime * 1e6
			}
			r.Failed = d.DidFail
			if d.EncodedDataLength > 0 {
				r.EncodedBytes = d.EncodedDataLength
			}
			r.DecodedBytes = d.DecodedBodyLength
		}
	}
	var out []*Request
	for _, r := range order {
		if r.URL != "" && a.ofPage(r.Frame) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(x, y *Request) int { return cmp.Compare(x.Queued, y.Queued) })
	return out
}

// RenderBlocking are the requests that blocked the set's first paint, as
// DevTools counts them, longest first.
func (set *InsightSet) RenderBlocking() []*Request {
	var out []*Request
	for _, r := range set.Requests {
		if !blocks(r) || r.Frame != set.Frame {
			continue
		}
		if set.FirstPaint > 0 && r.Done > set.FirstPaint {
			continue
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(x, y *Request) int { return cmp.Compare(y.Duration(), x.Duration()) })
	return out
}

// blocks reports Chrome's render-blocking verdict on a request, as DevTools
// reads it: a parser-blocking script in the body only counts at high
// priority.
func blocks(r *Request) bool {
	switch r.RenderBlocking {
	case "blocking":
		return true
	case "in_body_parser_blocking":
		return r.Priority == "VeryHigh" || (r.ResourceType == "Script" && r.Priority == "High")
	}
	return false
}

// Slowest are the set's n longest finished requests, longest first.
func (set *InsightSet) Slowest(n int) []*Request {
	var out []*Request
	for _, r := range set.Requests {
		if r.Duration() > 0 {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(x, y *Request) int { return cmp.Compare(y.Duration(), x.Duration()) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}
