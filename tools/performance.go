package tools

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/perftrace"
)

// How a trace spans calls. Chrome records one trace at a time, browser-wide,
// so a trace holds pagelock.Tracing from performance_start_trace until it
// ends, not only during each call. In a pool that is the tracing resource
// of the trace's own Chrome (pagelock.Key.Of): each Chrome records a trace of its
// own, and what follows holds per Chrome.
//
//   - performance_start_trace takes its page's lock as a call, then, in page
//     mode, a trace-level hold of pagelock.Tracing (a Guard of its own). A
//     start on another page waits for that hold up to --lock-timeout and
//     fails naming its holder; calls of other tools on other pages never
//     wait for it. A second start on the trace's own page, and any second
//     start in global mode, fails at once: it would wait for a stop that
//     its own lock keeps out.
//   - The hold is released when the trace ends: performance_stop_trace,
//     autoStop, the page closing, the start being cancelled, or its limit
//     passing (holdLimit, --max-hold: see holds.go). A trace that ends by
//     itself (page closed, limit) saves what Chrome captured, and the next
//     performance_stop_trace on its page (or on any page, if its page
//     closed) hands the result out. One its limit ended is saved in its
//     agent's workspace at once, where the start asked or else a file of
//     its own, and its agent's next answer says where.
//   - performance_stop_trace on another page than the trace's fails and
//     names the trace's page: with several agents on one browser, a stop on
//     the wrong page is more likely a mistake than a wish to end someone
//     else's trace.
//
// The tool's resources field is not used for Tracing: that field holds keys
// for one call, and the trace's hold outlives the call.

// autoStopQuiet is how long an autoStop trace goes on recording after the
// page loaded, for late paints, layout shifts and long tasks.
const autoStopQuiet = 3 * time.Second

// finishTimeout bounds the saving of a trace after Chrome stopped it.
const finishTimeout = 2 * time.Minute

// tracer is the server's tracing state. Its zero value is ready for use.
type tracer struct {
	mu sync.Mutex
	// active and unclaimed (ended by itself, its result not yet handed
	// out) are per Chrome, by Page.Chrome: "" when the browser is one.
	active    map[string]*traceRun
	unclaimed map[string]*traceRun
	// last is the summary of the last trace of each open page, for
	// performance_analyze_insight.
	last map[*browser.Page]*perftrace.Summary
}

// traceRun is one trace, from start to its result.
type traceRun struct {
	page    *browser.Page
	agent   string // the agent that started it, as the locks know it (lockAgent)
	trace   *browser.Trace
	hold    *pagelock.Guard // the trace-level hold; nil in global mode
	path    string          // where performance_start_trace asked to save it
	started time.Time
	// limit is how long it may record (holdLimit); past it, it is saved at
	// path, or else at keep, a file in the agent's workspace ("" if it has
	// none), and noteTo (holdAgent) is told where.
	limit  time.Duration
	keep   string
	noteTo string

	once     sync.Once
	stopping chan struct{} // closed when the run began to end
	done     chan struct{} // closed when res is set
	reason   string        // why it ended by itself; "" if stopped
	res      traceResult
	// orphaned marks a run whose stop call gave up waiting: its result
	// goes to unclaimed. taken marks a run whose result a call handed out.
	// Guarded by tracer.mu.
	orphaned, taken bool
}

// traceResult is what a trace left.
type traceResult struct {
	spool   string // the raw trace, until delivered or removed
	saved   string // where the raw trace was saved already, if it was
	summary *perftrace.Summary
	err     error
}

func (s *Server) performanceTools() []tool {
	return []tool{s.startTrace(), s.stopTrace(), s.analyzeInsight()}
}

type filePathArg struct {
	FilePath string `json:"filePath,omitempty" jsonschema:"The absolute file path, or a file path relative to the workspace (its first root; never the server's working directory), to save the raw trace data. For example, trace.json.gz (compressed) or trace.json (uncompressed)."`
}

type startTraceArgs struct {
	pageArg
	Reload      *bool `json:"reload,omitempty" jsonschema:"Determines if, once tracing has started, the target page should be automatically reloaded. Navigate the page to the right URL using the navigate_page tool BEFORE starting the trace if reload or autoStop is set to true. Default is true."`
	AutoStop    *bool `json:"autoStop,omitempty" jsonschema:"Determines if the trace recording should be automatically stopped. Default is true."`
	IgnoreCache bool  `json:"ignoreCache,omitempty" jsonschema:"Whether to bypass the HTTP cache when reloading the page, to measure a cold page load. Only applies if reload is true."`
	filePathArg
	waitArg
}

// waitArg is the parameter of the tools that need a browser-wide resource
// (tracing, a Lighthouse audit) that another agent may hold.
type waitArg struct {
	Wait bool `json:"wait,omitempty" jsonschema:"If another agent holds the browser's tracing or Lighthouse resource, wait in line for it (up to the server's lock timeout) instead of failing at once. Default is false."`
}

func (s *Server) startTrace() tool {
	return newTool("performance_start_trace",
		"Start a performance trace on the target webpage. Use to find frontend performance issues, Core Web Vitals (LCP, INP, CLS), and improve page load speed.",
		pageScope, func(ctx context.Context, c *call, a *startTraceArgs) error {
			path, err := s.tracePath(ctx, a.FilePath)
			if err != nil {
				return err
			}
			keep := ""
			if path == "" && a.AutoStop != nil && !*a.AutoStop {
				keep = s.keepTracePath(ctx, c.page)
			}
			run, err := s.beginTrace(ctx, c.page, path, keep, a.Wait)
			if err != nil {
				return err
			}
			if a.Reload == nil || *a.Reload {
				progressFrom(ctx).phase("reloading the page")
				err := c.page.Reload(ctx, a.IgnoreCache, browser.DefaultNavigationTimeout)
				if err != nil && !isDialog(err) {
					s.abortTrace(run)
					return fmt.Errorf("the page did not reload, so the trace was discarded: %w", err)
				}
			} else {
				// Without a navigation, nothing else in the trace says
				// which renderer thread is the page's.
				c.page.Mark(ctx, perftrace.StartMark(string(c.page.TargetID)))
			}
			if a.AutoStop != nil && !*a.AutoStop {
				c.resp.say("The performance trace is being recorded. Use performance_stop_trace to stop it.")
				return nil
			}
			// Late paints, layout shifts and long tasks come after the load.
			progressFrom(ctx).phase("recording the trace after the load")
			t := time.NewTimer(c.page.Scale(autoStopQuiet))
			defer t.Stop()
			select {
			case <-t.C:
			case <-run.done: // the page closed meanwhile
			case <-ctx.Done():
				s.abortTrace(run)
				return ctx.Err()
			}
			return s.answerTrace(ctx, c, run, "")
		})
}

type stopTraceArgs struct {
	pageArg
	filePathArg
}

func (s *Server) stopTrace() tool {
	t := newTool("performance_stop_trace", "Stop the active performance trace recording on the target webpage.",
		pageScope, func(ctx context.Context, c *call, a *stopTraceArgs) error {
			path, err := s.tracePath(ctx, a.FilePath)
			if err != nil {
				return err
			}
			run, err := s.perf.claim(c.page)
			if err != nil {
				return err
			}
			return s.answerTrace(ctx, c, run, path)
		})
	t.answersDialogs = true // a dialog blocks the page's script, not Chrome's tracing
	return t
}

type analyzeInsightArgs struct {
	pageArg
	InsightSetID string `json:"insightSetId" jsonschema:"The id for the specific insight set. Only use the ids given in the \"Available insight sets\" list."`
	InsightName  string `json:"insightName" jsonschema:"The name of the Insight you want more information on. For example: \"DocumentLatency\" or \"LCPBreakdown\""`
}

func (s *Server) analyzeInsight() tool {
	t := newTool("performance_analyze_insight",
		"Provides more detailed information on a specific Performance Insight of an insight set that was highlighted in the results of a trace recording.",
		pageScope, func(ctx context.Context, c *call, a *analyzeInsightArgs) error {
			if a.InsightSetID == "" || a.InsightName == "" {
				return &argError{"performance_analyze_insight needs an insightSetId and an insightName from the summary of a trace"}
			}
			sum := s.perf.summary(c.page)
			if sum == nil {
				return fmt.Errorf("no recorded traces found for page %d. Record a performance trace with performance_start_trace so you have Insights to analyze", c.page.ID)
			}
			text, err := sum.Insight(a.InsightSetID, a.InsightName)
			var ie *perftrace.InsightError
			if errors.As(err, &ie) {
				return &argError{ie.Error()}
			}
			if err != nil {
				return err
			}
			c.resp.say("%s", text)
			return nil
		})
	t.answersDialogs = true // it reads a stored summary only
	return t
}

// tracePath checks a trace file path; "" stays "".
func (s *Server) tracePath(ctx context.Context, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	return s.files.output(ctx, path)
}

// keepTracePath is where a trace on p that the call in ctx starts without
// a filePath is saved if its limit ends it: a file of its own in the
// agent's workspace (relative paths' root), or "" when the call has none;
// the trace then waits for performance_stop_trace in a temporary file.
func (s *Server) keepTracePath(ctx context.Context, p *browser.Page) string {
	name := fmt.Sprintf("trace-page%d-%s.json.gz", p.ID, time.Now().Format("20060102-150405.000"))
	path, err := s.files.output(ctx, name)
	if err != nil {
		s.log.Debug("no workspace to keep a trace in at its limit", "page", p.ID, "error", err)
		return ""
	}
	return path
}

// beginTrace takes the trace-level hold of tracing and makes Chrome record,
// for at most holdLimit. Another agent's trace or audit fails the start at
// once unless wait is set (see heldByOther). path and keep are traceRun's.
func (s *Server) beginTrace(ctx context.Context, p *browser.Page, path, keep string, wait bool) (*traceRun, error) {
	me := lockAgent(ctx)
	if run := s.perf.running(p); run != nil {
		select {
		case <-run.stopping:
			// It ends by itself and needs no lock to: wait for it.
			select {
			case <-run.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		default:
			if err := s.traceInTheWay(run, me, wait); err != nil {
				return nil, err
			}
			if run.page == p || s.locks.Mode() == pagelock.Global {
				return nil, run.busyError()
			}
		}
	}
	var hold *pagelock.Guard
	if s.locks.Mode() == pagelock.PerPage {
		owner := fmt.Sprintf("performance_start_trace on page %d", p.ID)
		req := pagelock.Request{Keys: []pagelock.Key{pagelock.Tracing.Of(p.Chrome())}, Owner: owner, Agent: lockAgent(ctx)}
		if !wait {
			req.FailIfHeld = req.Keys
		}
		g, err := s.locks.Acquire(ctx, req)
		if err != nil {
			if errors.Is(err, pagelock.ErrTimeout) {
				return nil, fmt.Errorf("%w (Chrome records one trace at a time: wait for that trace to be stopped, then start yours)", err)
			}
			return nil, s.heldError(err)
		}
		hold = g
	}
	// In page mode the hold orders the starts; a run still here is one whose
	// page closed as the hold came free, or one of global mode.
	if run := s.perf.running(p); run != nil {
		hold.Release()
		if err := s.traceInTheWay(run, me, false); err != nil {
			return nil, err
		}
		return nil, run.busyError()
	}
	tr, err := p.Capture().StartTrace(ctx)
	if err != nil {
		hold.Release()
		return nil, err
	}
	run := &traceRun{page: p, agent: me, trace: tr, hold: hold, path: path, started: tr.Started,
		limit: s.holdLimit(ctx, holdTrace), keep: keep, noteTo: holdAgent(ctx), stopping: make(chan struct{}), done: make(chan struct{})}
	s.perf.begin(run)
	go func() {
		t := time.NewTimer(run.limit)
		defer t.Stop()
		select {
		case <-p.Done():
			s.endTrace(run, fmt.Sprintf("page %d closed while it recorded", p.ID))
		case <-t.C:
			s.stopRun(run, fmt.Sprintf("it reached the %v limit of a trace", run.limit), true)
		case <-run.stopping:
		}
	}()
	return run, nil
}

// traceInTheWay fails a call that needs tracing while run, another agent's
// trace, records, unless wait asks to wait for it and the lock mode lets the
// call wait (see heldByOther). It is nil for the agent's own trace: that one
// keeps the errors that name its page.
func (s *Server) traceInTheWay(run *traceRun, me string, wait bool) error {
	if run.agent == me || wait && s.locks.Mode() == pagelock.PerPage {
		return nil
	}
	return s.heldByOther(pagelock.Tracing.Of(run.page.Chrome()), "a performance trace")
}

// heldByOther is the error of a call that needs key, a browser-wide
// resource, while another agent holds it for doing ("a performance trace").
// It never names that agent or its pages. In page mode the call may wait in
// line instead, if it passes wait; in global mode it cannot: the other
// agent's next call, which would end the hold, waits for the one lock this
// call holds.
func (s *Server) heldByOther(key pagelock.Key, doing string) error {
	if s.locks.Mode() == pagelock.Global {
		return fmt.Errorf("%s is held by another agent (%s); try again later: with --lock-mode global a call cannot wait for it, as the call that ends it waits for the lock this one holds", key, doing)
	}
	return fmt.Errorf("%s is held by another agent (%s); try again later, or pass wait: true to wait in line for it (up to --lock-timeout)", key, doing)
}

// heldError turns a *pagelock.HeldError into heldByOther's error, saying
// what the holder does from its owner name; other errors pass unchanged.
func (s *Server) heldError(err error) error {
	var he *pagelock.HeldError
	if !errors.As(err, &he) {
		return err
	}
	doing := "a tool call"
	switch {
	case strings.HasPrefix(he.Holder, "lighthouse_audit"):
		doing = "a Lighthouse audit"
	case strings.HasPrefix(he.Holder, "performance_start_trace"):
		doing = "a performance trace"
	}
	return s.heldByOther(he.Key, doing)
}

// busyError is the error of a start that cannot wait for run to end.
func (run *traceRun) busyError() error {
	return fmt.Errorf("a performance trace is already running on page %d (started %v ago). Use performance_stop_trace with pageId %d to stop it. Only one trace can be running at any given time",
		run.page.ID, time.Since(run.started).Round(time.Second), run.page.ID)
}

// endTrace stops a run once, whoever asks first, and saves its trace to a
// spool file in the background, so a caller that gives up does not lose it.
// It releases the trace-level hold when Chrome has stopped. A reason marks
// a run that ended by itself: its result waits for performance_stop_trace,
// and is saved at once where performance_start_trace asked.
func (s *Server) endTrace(run *traceRun, reason string) {
	s.stopRun(run, reason, false)
}

// stopRun is endTrace; atLimit marks the end of a run that reached its
// limit, which is saved at its keep path when the start named none, and
// told to its agent's next answer (holdNotes) before the hold is free.
func (s *Server) stopRun(run *traceRun, reason string, atLimit bool) {
	run.once.Do(func() {
		run.reason = reason
		close(run.stopping)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
			defer cancel()
			res := finishTrace(ctx, run)
			dest := run.path
			if atLimit && dest == "" {
				dest = run.keep
			}
			if reason != "" && dest != "" && res.err == nil {
				if err := deliver(res.spool, dest, true, res.summary.MainFrame()); err != nil {
					s.log.Warn("save trace", "page", run.page.ID, "error", err)
				} else {
					res.saved, res.spool = dest, ""
				}
			}
			run.res = res
			if reason != "" {
				s.log.Info("trace ended by itself", "page", run.page.ID, "reason", reason, "saved", res.saved)
			}
			if atLimit {
				s.holdNotes.add(run.noteTo, run, run.limitNote())
			}
			// No longer active before the hold is free, so the next start
			// that gets the hold finds no running trace.
			s.perf.ended(run)
			run.hold.Release()
			close(run.done)
		}()
	})
}

// limitNote is the line that tells a run's agent that its limit ended it,
// once run.res is set.
func (run *traceRun) limitNote() string {
	head := fmt.Sprintf("Your performance trace on page %d reached its %v limit and was stopped", run.page.ID, run.limit)
	switch res := run.res; {
	case res.err != nil:
		return fmt.Sprintf("%s, but what it recorded could not be kept: %v.", head, res.err)
	case res.saved != "":
		return fmt.Sprintf("%s; it is saved at %s (performance_stop_trace also hands it out).", head, res.saved)
	}
	return fmt.Sprintf("%s; performance_stop_trace with pageId %d hands it out.", head, run.page.ID)
}

// abortTrace ends a run whose start failed or was cancelled, and drops its
// result, also one that ended by itself meanwhile.
func (s *Server) abortTrace(run *traceRun) {
	s.endTrace(run, "")
	go func() {
		<-run.done
		if s.perf.take(run) && run.res.spool != "" {
			os.Remove(run.res.spool)
		}
	}()
}

// finishTrace stops Chrome's trace, spools it to a temporary file and
// analyses it from there.
func finishTrace(ctx context.Context, run *traceRun) traceResult {
	f, err := os.CreateTemp("", "pagemux-trace-*.json")
	if err != nil {
		return traceResult{err: fmt.Errorf("create a file for the trace: %w", err)}
	}
	lost, err := run.trace.Stop(ctx, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return traceResult{err: fmt.Errorf("stop the trace: %w", err)}
	}
	sum, err := analyzeFile(f.Name(), run.page)
	if err != nil {
		os.Remove(f.Name())
		return traceResult{err: err}
	}
	sum.DataLost = lost
	return traceResult{spool: f.Name(), summary: sum}
}

// analyzeFile reads a trace file and sums it up for the page.
func analyzeFile(path string, p *browser.Page) (*perftrace.Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := perftrace.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("there was an unexpected error parsing the trace: %w", err)
	}
	return perftrace.Analyze(t, perftrace.Options{Frame: string(p.TargetID), URL: p.URL()}), nil
}

// answerTrace ends run if it runs, waits for its result, saves the raw trace
// to path (else where the start asked) and writes the summary.
func (s *Server) answerTrace(ctx context.Context, c *call, run *traceRun, path string) error {
	s.endTrace(run, "")
	progressFrom(ctx).phase("stopping and analysing the trace")
	select {
	case <-run.done:
	case <-ctx.Done():
		// The trace is saved in the background and kept for the next stop.
		s.perf.orphan(run)
		return ctx.Err()
	}
	if !s.perf.take(run) {
		return errors.New("no active performance trace recording to stop: another call handed this trace out already")
	}
	res := run.res
	if run.reason != "" {
		// This answer says what the note of a run that reached its limit
		// would (holds.go).
		if me := holdAgent(ctx); me == run.noteTo {
			s.holdNotes.drop(me, run)
		}
	}
	if res.err != nil {
		return res.err
	}
	if run.reason != "" {
		c.resp.say("The performance trace had stopped by itself: %s.", run.reason)
	}
	if path == "" {
		path = run.path
	}
	switch {
	case res.saved != "" && (path == "" || path == res.saved):
		c.resp.say("The raw trace data was saved to %s.", res.saved)
	case res.saved != "":
		if err := deliver(res.saved, path, false, res.summary.MainFrame()); err != nil {
			return err
		}
		c.resp.say("The raw trace data was saved to %s.", path)
	case path != "":
		if err := deliver(res.spool, path, true, res.summary.MainFrame()); err != nil {
			os.Remove(res.spool)
			return err
		}
		c.resp.say("The raw trace data was saved to %s.", path)
	default:
		os.Remove(res.spool)
	}
	c.resp.say("The performance trace has been stopped.")
	sum := res.summary
	if p := run.page; !p.Closed() && p == c.page {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		sum.Nodes = p.DescribeNodes(dctx, sum.NodeIDs())
		cancel()
		if e := p.Emulation(); e.CPURate > 1 || e.Network != "" {
			c.resp.say("Emulation when the trace stopped: CPU throttling %s, network throttling %s.", throttle(e.CPURate), orDefault(e.Network, "none"))
		}
	}
	// A closed page's summary goes with the page that took it.
	owner := run.page
	if owner.Closed() {
		owner = c.page
	}
	s.perf.remember(owner, sum)
	c.resp.say("%s", sum.Text())
	return nil
}

func throttle(rate float64) string {
	if rate <= 1 {
		return "none"
	}
	return fmt.Sprintf("%gx", rate)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// deliver writes the trace file src to path, gzipped when path ends in
// .gz, with the page's main frame listed where Chrome listed none (see
// perftrace.WithMainFrame), and removes src when move is set.
func deliver(src, path string, move bool, frame perftrace.MainFrame) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save the trace to %s: %w", path, err)
	}
	var w io.Writer = out
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(out)
		w = zw
	}
	err = perftrace.WithMainFrame(w, in, frame)
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("save the trace to %s: %w", path, err)
	}
	if move {
		in.Close()
		return os.Remove(src)
	}
	return nil
}

// running returns the active run on p's Chrome, if any.
func (t *tracer) running(p *browser.Page) *traceRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active[p.Chrome()]
}

func (t *tracer) begin(run *traceRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active == nil {
		t.active, t.unclaimed = map[string]*traceRun{}, map[string]*traceRun{}
	}
	t.active[run.page.Chrome()] = run
}

// ended moves a run that finished out of active. One that ended by itself,
// or whose stop gave up, waits in unclaimed, replacing an older one.
func (t *tracer) ended(run *traceRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if chrome := run.page.Chrome(); t.active[chrome] == run {
		delete(t.active, chrome)
	}
	if run.reason != "" || run.orphaned {
		t.keepLocked(run)
	}
}

// orphan keeps the result of a run whose stop call gave up.
func (t *tracer) orphan(run *traceRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-run.done:
		if !run.taken {
			t.keepLocked(run)
		}
	default:
		run.orphaned = true // ended keeps it
	}
}

func (t *tracer) keepLocked(run *traceRun) {
	chrome := run.page.Chrome()
	if old := t.unclaimed[chrome]; old != nil && old != run && old.res.spool != "" {
		os.Remove(old.res.spool)
	}
	t.unclaimed[chrome] = run
}

// take marks a finished run as handed out, once.
func (t *tracer) take(run *traceRun) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if run.taken {
		return false
	}
	run.taken = true
	if chrome := run.page.Chrome(); t.unclaimed[chrome] == run {
		delete(t.unclaimed, chrome)
	}
	return true
}

// claim returns the run a stop on page p ends: the running trace of p's
// Chrome if it is p's; if that Chrome runs none, a trace that ended without
// a stop on p or on a page now closed (of p's Chrome first), which it takes
// out of unclaimed. A stop on a page no trace records names the pages
// traces record.
func (t *tracer) claim(p *browser.Page) (*traceRun, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	chrome := p.Chrome()
	if run := t.active[chrome]; run != nil {
		if run.page == p {
			return run, nil
		}
	} else if run := t.unclaimed[chrome]; run != nil && (run.page == p || run.page.Closed()) {
		delete(t.unclaimed, chrome)
		return run, nil
	}
	var recording []int
	for _, run := range t.active {
		recording = append(recording, run.page.ID)
	}
	slices.Sort(recording)
	pages := make([]string, len(recording))
	for i, id := range recording {
		pages[i] = strconv.Itoa(id)
	}
	switch len(recording) {
	case 0:
		for c, run := range t.unclaimed {
			if run.page.Closed() {
				delete(t.unclaimed, c)
				return run, nil
			}
		}
		return nil, errors.New("no active performance trace recording to stop; start one with performance_start_trace")
	case 1:
		return nil, fmt.Errorf("the running performance trace records page %d, not page %d; call performance_stop_trace with pageId %d", recording[0], p.ID, recording[0])
	}
	return nil, fmt.Errorf("the running performance traces record pages %s, not page %d; call performance_stop_trace with the pageId of the one to stop", strings.Join(pages, ", "), p.ID)
}

// remember keeps a page's last summary, and forgets those of closed pages.
func (t *tracer) remember(p *browser.Page, sum *perftrace.Summary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[*browser.Page]*perftrace.Summary{}
	}
	for q := range t.last {
		if q.Closed() {
			delete(t.last, q)
		}
	}
	t.last[p] = sum
}

// summary returns a page's last summary, or nil.
func (t *tracer) summary(p *browser.Page) *perftrace.Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last[p]
}
