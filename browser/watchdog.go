package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// A frozen Chrome (its processes stopped, or a socket that stays open and
// silent) answers nothing, and every call on it would wait for its client to
// give up. So a call that runs past a second makes the browser check its
// connection with a command the browser process answers at once, however
// busy its pages are (Browser.getVersion), and again every two seconds while
// the call goes on; a call that ran out of time has it checked at once
// (Watch.Check), and calls that start while a check is open wait for its
// outcome (Start). A launched Chrome whose browser process is stopped
// (SIGSTOP, a debugger) and that sent nothing for stoppedSilence is frozen:
// found 2 to 3 s after the first command it left unanswered, killed and
// started again at once. One that is not stopped must stay silent for
// longer, hangSilence: on a starved machine a live Chrome was seen silent
// for 2 s with a check waiting, and killing a live one loses its pages.
const (
	// superviseAfter is how long a call runs before its browser is checked.
	// A browser that answers does so in milliseconds, so an early check
	// costs one small command, and finds a frozen one soon.
	superviseAfter = time.Second
	// superviseEvery is how often the browser is checked again while the
	// call goes on.
	superviseEvery = 2 * time.Second
	// stoppedSilence is how long a launched Chrome whose browser process is
	// stopped may have sent nothing on its pipe before it counts as frozen.
	stoppedSilence = 2 * time.Second
	// hangSilence is how long a launched Chrome that is not stopped may
	// leave a check unanswered with nothing at all on its pipe (one that
	// sends anything else is behind a backlog) before it counts as frozen.
	hangSilence = 10 * time.Second
	// busyShare and busyLimit: a launched Chrome that is not stopped and
	// left a check unanswered for hangSilence, but whose browser process
	// used at least busyShare of a CPU meanwhile, is at work, not hung (it
	// builds a huge answer, such as a 37 MB accessibility tree on a starved
	// machine, and sends nothing until it is built): it gets hangSilence
	// more, again while it works, up to busyLimit from the check's start.
	// A hung browser process does no work; a stopped one none at all.
	busyShare = 0.1
	busyLimit = 2 * time.Minute
	// attachedSilence is how long an attached Chrome may leave a check
	// unanswered on its connection and on a new one before it counts as
	// frozen. pagemux cannot see its process, so there is no quicker sign.
	attachedSilence = 4 * time.Second
	// backlogGrace is how much longer chromedp's connection gets when the
	// check past it was answered: it may be backlogged, not frozen (a page's
	// flood of events is read before the answer, and on a starved machine
	// that takes seconds, up to a minute under the test suite's load). With
	// the first check at 1 s, it leaves a backlog at least the 34 s from a
	// call's start that it had when the first check came at 5 s; a launched
	// Chrome's connection gets it again from each time it drained (probe).
	backlogGrace = 30 * time.Second
	// reattachTimeout bounds an attach to a browser that stopped responding
	// before, instead of startTimeout: it fails fast while it stays frozen.
	reattachTimeout = 5 * time.Second
)

// watchdog is the responsiveness state of one launch.
type watchdog struct {
	mu    sync.Mutex
	probe *probeRun // the running or last check
	// failure is set once, when Chrome stopped responding.
	failure error
	// reattach marks the attach that follows one to a Chrome that stopped
	// responding (and the attaches that follow a failed one of those).
	reattach bool
}

// probeRun is one check of the connection, shared by the calls that wait
// for it. When it fails, the launch's failure is set before decided closes.
type probeRun struct {
	// decided is closed once it is known whether Chrome answers; a
	// backlogged connection's grace may follow.
	decided chan struct{}
	done    chan struct{} // closed when the check ended
	at      time.Time     // when it ended; read after done
}

// unresponsiveErr returns the error that says Chrome stopped responding, nil
// while it answers.
func (l *launch) unresponsiveErr() error {
	l.wd.mu.Lock()
	defer l.wd.mu.Unlock()
	return l.wd.failure
}

// Watch is Supervise's watch over one tool call.
type Watch struct {
	b     *Browser
	l     *launch // the Chrome the call runs on; nil when none ran
	timer *time.Timer
	done  chan struct{}
	once  sync.Once
	// others watch the other Chromes of a pool, for a call on no page
	// (Supervise): new_page and the like may run on any of them.
	others []*Watch
}

// Supervise watches a tool call while it runs; call Stop on the Watch it
// returns when the call ends. A call still running after a second makes the
// browser check its connection, again every two seconds; when Chrome does
// not answer, the calls in flight fail with an error that wraps
// ErrUnresponsive, a Chrome that pagemux launched is killed (its process
// group) and a new one started at once, and an attached Chrome is let go
// of until it answers again. Supervise does not bound the call itself: a
// slow call on a browser that answers runs on. In a pool (Config.Pool) it
// watches every Chrome, as a call on no page (new_page, say) may run on
// any of them.
func (b *Browser) Supervise(ctx context.Context) *Watch {
	b.mu.Lock()
	ls := make([]*launch, len(b.members))
	for i, m := range b.members {
		ls[i] = m.launch
	}
	b.mu.Unlock()
	w := b.supervise(ctx, ls[0])
	for _, l := range ls[1:] {
		if o := b.supervise(ctx, l); o.l != nil {
			w.others = append(w.others, o)
		}
	}
	return w
}

// SuperviseOn is Supervise for a call on page p, which in a pool
// (Config.Pool) watches p's Chrome; with p nil, the first Chrome.
func (b *Browser) SuperviseOn(ctx context.Context, p *Page) *Watch {
	if p == nil {
		return b.Supervise(ctx)
	}
	return b.supervise(ctx, p.launch)
}

// supervise is Supervise on launch l.
func (b *Browser) supervise(ctx context.Context, l *launch) *Watch {
	w := &Watch{b: b, done: make(chan struct{})}
	if l == nil || !l.ready() {
		return w
	}
	w.l = l
	w.timer = time.AfterFunc(superviseAfter, func() { b.watch(ctx, l, w.done) })
	return w
}

// Stop ends the watch. It does not end a check that runs: its outcome
// still counts.
func (w *Watch) Stop() {
	w.once.Do(func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		close(w.done)
	})
	for _, o := range w.others {
		o.Stop()
	}
}

// Check checks at once that the Chrome the call ran on still answers,
// instead of waiting for the watch's next round (a call that ran out of
// time may have waited on a frozen Chrome), and waits for the outcome until
// ctx ends. It returns nil when Chrome answered, or when the call ran on no
// Chrome; an error that wraps ErrUnresponsive when it stopped responding (it
// was then killed or let go of, as Supervise says); errChromeGone when it
// went away meanwhile; and one that wraps ErrNoAnswer when ctx ended first:
// the check goes on, and calls that start meanwhile wait for its outcome. A
// check that runs is joined; one that ended, however recently, is not
// taken for an answer. A watch over a pool's Chromes checks them all at
// once, and returns the first of their errors that wraps ErrUnresponsive,
// else ErrNoAnswer, else nil when one of them answered.
func (w *Watch) Check(ctx context.Context) error {
	if len(w.others) == 0 {
		return w.check(ctx)
	}
	all := append([]*Watch{w}, w.others...)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, x := range all {
		wg.Go(func() { errs[i] = x.check(ctx) })
	}
	wg.Wait()
	for _, kind := range []error{ErrUnresponsive, ErrNoAnswer} {
		for _, err := range errs {
			if errors.Is(err, kind) {
				return err
			}
		}
	}
	if slices.Contains(errs, nil) {
		return nil
	}
	return errs[0]
}

// check is Check on one Chrome.
func (w *Watch) check(ctx context.Context) error {
	l := w.l
	if l == nil {
		return nil
	}
	if err := l.health(); err != nil {
		return err
	}
	start := time.Now()
	pr := w.b.startCheck(l, true)
	select {
	case <-pr.decided:
		return l.health()
	case <-ctx.Done():
		if isDone(pr.decided) {
			return l.health()
		}
		return fmt.Errorf("%w pagemux's check within %s; the check goes on", ErrNoAnswer, time.Since(start).Round(100*time.Millisecond))
	}
}

// errChromeGone is Watch.Check's error for a Chrome that went away.
var errChromeGone = errors.New("the connection to Chrome ended meanwhile (its pages are gone); the next call starts Chrome again")

// health is nil for a launch that still answers, as far as pagemux knows.
func (l *launch) health() error {
	if err := l.unresponsiveErr(); err != nil {
		return err
	}
	if l.gone() {
		return errChromeGone
	}
	return nil
}

// ready reports whether the launch started and still runs.
func (l *launch) ready() bool {
	select {
	case <-l.done:
		return l.err == nil && !l.gone()
	default:
		return false
	}
}

// watch checks l while the call that done ends runs on.
func (b *Browser) watch(ctx context.Context, l *launch, done <-chan struct{}) {
	for {
		<-b.startCheck(l, false).done
		if l.unresponsiveErr() != nil {
			return
		}
		t := time.NewTimer(superviseEvery)
		select {
		case <-done:
		case <-ctx.Done():
		case <-l.dead:
		case <-t.C:
			continue
		}
		t.Stop()
		return
	}
}

// startCheck returns the check of l that runs, else one that ended a
// moment ago, else a new one: calls that check at the same time, or right
// after another check, share its outcome. A fresh check is one for a call
// that found something amiss, to which an answer from before does not
// count: it shares only a check that has not decided yet (one in a
// backlog's grace was answered past the connection before, and goes on
// beside the new one).
func (b *Browser) startCheck(l *launch, fresh bool) *probeRun {
	l.wd.mu.Lock()
	defer l.wd.mu.Unlock()
	pr := l.wd.probe
	switch {
	case pr == nil:
	case fresh && !isDone(pr.decided):
		return pr
	case !fresh && (!isDone(pr.done) || time.Since(pr.at) <= time.Second):
		return pr
	}
	pr = &probeRun{decided: make(chan struct{}), done: make(chan struct{})}
	l.wd.probe = pr
	go b.runCheck(l, pr)
	return pr
}

// runCheck runs one check of l, and ends l when Chrome does not answer.
func (b *Browser) runCheck(l *launch, pr *probeRun) {
	var once sync.Once
	decide := func() { once.Do(func() { close(pr.decided) }) }
	start := time.Now()
	window := hangSilence
	if b.cfg.Attaches() {
		window = attachedSilence
	}
	anew := func(ctx context.Context) error { return b.answersAnew(ctx, l) }
	busy := func(used, silent time.Duration) {
		b.log.Warn("chrome has not answered pagemux's check, but its browser process is at work: it gets more time",
			"silent", silent.Round(time.Second), "cpu", used.Round(10*time.Millisecond), "limit", busyLimit)
	}
	if err := probe(l, window, anew, decide, busy, l.browserProc()); err != nil {
		b.unresponsive(l, err, time.Since(start))
	}
	decide()
	pr.at = time.Now()
	close(pr.done)
}

// drained is when chromedp last took bytes from a launched Chrome's pipe;
// zero for an attached Chrome, whose connection pagemux does not see.
func (l *launch) drained() time.Time {
	if l.mux == nil {
		return time.Time{}
	}
	return l.mux.Drained()
}

// awaitCheck waits for the outcome of a check of l that is still open,
// until ctx ends: a call that started now would go to a Chrome that may be
// frozen, and fail with it, where it can as well wait a moment and get a
// new one. A Chrome that answers does so in milliseconds, so this costs
// nothing while it does.
func (l *launch) awaitCheck(ctx context.Context) error {
	l.wd.mu.Lock()
	pr := l.wd.probe
	l.wd.mu.Unlock()
	if pr == nil {
		return nil
	}
	select {
	case <-pr.decided:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// silence says how Chrome left pagemux's check unanswered, for the error of
// a probe. A launched Chrome has no second connection: the check past
// chromedp's is the mux's own, on the pipe.
func silence(why error, attached bool) string {
	switch {
	case errors.Is(why, errBacklog) && attached:
		return fmt.Sprintf("did not answer a Browser.getVersion on its connection for %s, though it answered on a new connection", attachedSilence+backlogGrace)
	case errors.Is(why, errBacklog):
		return fmt.Sprintf("did not answer a Browser.getVersion on its connection, which took nothing for %s, though it answered pagemux's own on its pipe", backlogGrace)
	case attached:
		return fmt.Sprintf("did not answer a Browser.getVersion within %s, on its connection nor on a new one", attachedSilence)
	case errors.Is(why, errStopped):
		return fmt.Sprintf("is stopped (its browser process does not run: SIGSTOP, or a debugger) and sent nothing on its pipe for %s", stoppedSilence)
	case errors.Is(why, errNoMux):
		return fmt.Sprintf("did not answer a Browser.getVersion within %s", hangSilence)
	}
	return fmt.Sprintf("sent nothing on its pipe for %s, not even the answer to a Browser.getVersion, which its browser process gives however busy its pages are", hangSilence)
}

// errBacklog marks a connection that stayed silent past backlogGrace while
// the browser answered past it (a new connection, or the mux's check).
var errBacklog = errors.New("the connection stayed silent, though the browser answered past it")

// errStopped marks a launched Chrome whose browser process is stopped.
var errStopped = errors.New("chrome's browser process is stopped")

// probe asks the browser process for its version on chromedp's connection
// and, at the same time, past it (anew: the mux's own command for a launched
// Chrome, a new connection for an attached one), which it gives window to
// answer. Chrome answers when either does. It is frozen when neither does
// within window, or, for a launched Chrome, as soon as its browser process
// is stopped and it has sent nothing for stoppedSilence. When only anew
// answers, chromedp's connection is backlogged, not frozen: decided is
// called then, and the connection gets backlogGrace more before probe fails
// with errBacklog, and backlogGrace from the last time it drained (for a
// launched Chrome, when chromedp last took bytes from its pipe), since a
// backlog that drains reaches the answer in the end.
// A launched Chrome whose browser process worked through the window (see
// busyShare; pw reads the process) gets the window again, and anew is asked
// again, until pw.busyLimit; busy is told each time.
// Only silence counts: a Chrome that went away is no freeze (browserGone
// handles it).
func probe(l *launch, window time.Duration, anew func(context.Context) error, decided func(), busy func(used, silent time.Duration), pw procWatch) error {
	start := time.Now()
	ctx, cancel := context.WithCancel(l.rootCtx)
	defer cancel()
	onConn := make(chan error, 1)
	go func() {
		_, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
		onConn <- err
	}()
	var past chan error
	ask := func() {
		actx, acancel := context.WithTimeout(ctx, window)
		ch := make(chan error, 1)
		go func() {
			defer acancel()
			ch <- anew(actx)
		}()
		past = ch
	}
	ask()
	cpu := pw.cpu()
	end := time.NewTimer(window)
	defer end.Stop()
	// A process gives no sign that it was stopped: its state is looked at
	// now and then.
	look := time.NewTicker(250 * time.Millisecond)
	defer look.Stop()
	var grace *time.Timer
	var graceC <-chan time.Time
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
	var pastErr error
	ended := false
	for {
		select {
		case <-onConn:
			return nil // an answer, or the end of the connection: no freeze
		case pastErr = <-past:
			past = nil
			if pastErr == nil {
				decided()
				grace = time.NewTimer(time.Until(start.Add(window + backlogGrace)))
				graceC = grace.C
			}
		case <-look.C:
			if pw.stopped() {
				return fmt.Errorf("%w, and nothing came on its pipe for %s", errStopped, stoppedSilence)
			}
		case <-end.C:
			if now := pw.cpu(); cpu >= 0 && now-cpu >= time.Duration(busyShare*float64(window)) && time.Since(start)+window <= pw.busyLimit {
				busy(now-cpu, time.Since(start))
				cpu = now
				if past == nil && graceC == nil {
					ask()
				}
				end.Reset(window)
				continue
			}
			ended = true
		case <-graceC:
			if wait := time.Until(l.drained().Add(backlogGrace)); wait > 0 {
				grace.Reset(wait)
				continue
			}
			return fmt.Errorf("%w: no answer on the connection for %s", errBacklog, time.Since(start).Round(time.Second))
		}
		if ended && graceC == nil && past == nil {
			if l.gone() {
				return nil
			}
			return fmt.Errorf("no answer to a Browser.getVersion within %s on the connection, nor past it (%w)", time.Since(start).Round(100*time.Millisecond), pastErr)
		}
	}
}

// procWatch is what probe reads of the browser process: whether it is
// stopped and quiet, the CPU time it used so far (-1: not known), and how
// long it may stay silent while it works.
type procWatch struct {
	stopped   func() bool
	cpu       func() time.Duration
	busyLimit time.Duration
}

// browserProc is the procWatch of l's browser process.
func (l *launch) browserProc() procWatch {
	return procWatch{stopped: l.stoppedAndQuiet, cpu: l.browserCPU, busyLimit: busyLimit}
}

// browserCPU is the CPU time that the browser process of a launched Chrome
// has used so far; -1 for an attached Chrome, or when it is not known.
func (l *launch) browserCPU() time.Duration {
	pid := l.browserPID()
	if pid == 0 {
		return -1
	}
	return processCPU(pid)
}

// browserPID is the pid of the browser process of a launched Chrome; 0 for
// an attached one, or before it started.
func (l *launch) browserPID() int {
	if l.chrome == nil {
		return 0
	}
	l.chrome.mu.Lock()
	defer l.chrome.mu.Unlock()
	return l.chrome.pid
}

// stoppedAndQuiet reports whether l is a launched Chrome whose browser
// process is stopped and that has sent nothing for stoppedSilence, not even
// bytes that wait in its pipe.
func (l *launch) stoppedAndQuiet() bool {
	if l.mux == nil || l.mux.QuietFor() < stoppedSilence || l.mux.Pending() > 0 {
		return false
	}
	pid := l.browserPID()
	return pid != 0 && processStopped(pid)
}

// freshClient makes a new connection for every request: one kept from
// before could be as backlogged as the one checked.
var freshClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// answersAnew checks the browser process past the connection chromedp
// waits on. A launched Chrome has no port to connect to anew: its cdppipe.Mux
// sends a Browser.getVersion of its own and reads the answer itself, and
// takes a reader waiting on pagemux's side (chromedp not reading what
// Chrome sent) for a backlog, not a freeze. An attached Chrome is asked for
// /json/version over a new connection. An answer shows the browser process
// is not frozen.
func (b *Browser) answersAnew(ctx context.Context, l *launch) error {
	if !b.cfg.Attaches() {
		if l.mux == nil {
			return errNoMux
		}
		return l.mux.Answers(ctx)
	}
	raw, err := b.endpoint(l)
	if err != nil {
		return err
	}
	u, err := versionURL(raw)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := freshClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	return nil
}

// unresponsive fails what runs on l and ends l: it kills a Chrome pagemux
// launched and starts a new one at once, or lets go of an attached one. Its
// pages go away with l (see browserGone), and their calls in flight return
// l's failure. checked is how long the failed check took, for the log.
func (b *Browser) unresponsive(l *launch, why error, checked time.Duration) {
	attached := b.cfg.Attaches()
	var msg string
	if attached {
		u := l.url
		msg = fmt.Sprintf("%s: Chrome at %s %s; pagemux let go of it and reconnects on a later call once it answers again (its pages are gone until then)", ErrUnresponsive, u, silence(why, true))
	} else {
		msg = fmt.Sprintf("%s: it %s; pagemux killed it and is starting a new one for the next call (its pages are gone: open them again with new_page)", ErrUnresponsive, silence(why, false))
	}
	l.wd.mu.Lock()
	if l.wd.failure != nil {
		l.wd.mu.Unlock()
		return
	}
	l.wd.failure = &unresponsiveError{msg: msg}
	l.wd.mu.Unlock()
	attrs := []any{"attached", attached, "why", why, "checked", checked.Round(time.Millisecond)}
	if l.mux != nil {
		attrs = append(attrs, "quiet", l.mux.QuietFor().Round(time.Millisecond))
	}
	b.log.Error("chrome stopped responding", append(attrs, "output", l.out.String())...)
	if l.chrome != nil {
		l.chrome.kill()
	}
	// Cancelling the root context closes the connection, which ends every
	// call that waits on it; for a launched Chrome it also waits for the
	// process to exit, so not here.
	go l.cancel()
	if !attached {
		go b.relaunch()
	}
}

// relaunch starts a new Chrome in place of one that stopped responding, at
// once: the next call, which an agent makes as soon as it reads the error,
// then finds one running (or nearly) instead of starting it. An attached
// Chrome is not reconnected to here: it stays let go of until a call finds
// it answering.
func (b *Browser) relaunch() {
	start := time.Now()
	err := b.Start(context.Background()) // the launch is bounded by startTimeout
	b.mu.Lock()
	closing := b.closed
	b.mu.Unlock()
	switch {
	case closing:
	case err != nil:
		b.log.Warn("chrome did not start again after it stopped responding; the next call tries again", "error", err)
	default:
		b.log.Info("chrome started again after it stopped responding", "took", time.Since(start).Round(time.Millisecond))
	}
}

// ChromePID returns the process id of the Chrome that pagemux launched and
// that runs now; 0 when none runs or pagemux attached to a running Chrome.
// It does not start Chrome.
func (b *Browser) ChromePID() int {
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	if l == nil || !l.ready() {
		return 0
	}
	c := chromedp.FromContext(l.rootCtx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0
	}
	return c.Browser.Process().Pid
}

// explainBrowser is explain for a browser command: its error when Chrome
// stopped responding.
func (l *launch) explainBrowser(err error) error {
	if err == nil {
		return nil
	}
	if cause := l.unresponsiveErr(); cause != nil {
		return cause
	}
	return err
}
