package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// A frozen Chrome (its processes stopped, or a socket that stays open and
// silent) answers nothing, and every call on it would wait for its client to
// give up. So a call that runs past its expected time makes the browser check
// its connection with a command the browser process answers at once, however
// busy its pages are; no answer means Chrome stopped responding.
const (
	// superviseAfter is how long a call runs before its browser is checked,
	// and how often it is checked again while the call goes on.
	superviseAfter = 5 * time.Second
	// probeTimeout bounds one check; two checks in a row must fail, so a
	// browser that is only slow for a moment is not taken for a frozen one.
	probeTimeout = 3 * time.Second
	probeTries   = 2
	// backlogGrace is how much longer the connection gets when the checks
	// failed but a new connection to the browser was answered at once: the
	// old one may be backlogged, not frozen (a page's flood of events is
	// read before the answer, and on a starved machine that takes seconds).
	backlogGrace = 20 * time.Second
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
// for it.
type probeRun struct {
	done chan struct{}
	err  error     // nil: Chrome answered, or it went away (that is no freeze)
	at   time.Time // when it ended
}

// unresponsiveErr returns the error that says Chrome stopped responding, nil
// while it answers.
func (l *launch) unresponsiveErr() error {
	l.wd.mu.Lock()
	defer l.wd.mu.Unlock()
	return l.wd.failure
}

// Supervise watches a tool call while it runs and returns the func that ends
// the watch; call it when the call ends. A call still running after a few
// seconds makes the browser check its connection, again every few seconds;
// when Chrome does not answer, the calls in flight fail with an error that
// wraps ErrUnresponsive, a Chrome that pagemux launched is killed (its
// process group) and the next call starts a new one, and an attached Chrome
// is let go of until it answers again. Supervise does not bound the call
// itself: a slow call on a browser that answers runs on.
func (b *Browser) Supervise(ctx context.Context) (stop func()) {
	b.mu.Lock()
	l := b.launch
	b.mu.Unlock()
	if l == nil || !l.ready() {
		return func() {}
	}
	done := make(chan struct{})
	t := time.AfterFunc(superviseAfter, func() { b.watch(ctx, l, done) })
	var once sync.Once
	return func() {
		once.Do(func() {
			t.Stop()
			close(done)
		})
	}
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
		if err := b.check(l); err != nil {
			b.unresponsive(l, err)
			return
		}
		t := time.NewTimer(superviseAfter)
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

// check returns an error when Chrome does not answer. Calls that check at
// the same time, or right after another check, share its outcome.
func (b *Browser) check(l *launch) error {
	l.wd.mu.Lock()
	pr := l.wd.probe
	if pr == nil || isDone(pr.done) && time.Since(pr.at) > time.Second {
		pr = &probeRun{done: make(chan struct{})}
		l.wd.probe = pr
		go func() {
			pr.err = probe(l, func(ctx context.Context) error { return b.answersAnew(ctx, l) })
			pr.at = time.Now()
			close(pr.done)
		}()
	}
	l.wd.mu.Unlock()
	<-pr.done
	return pr.err
}

// silence says how long Chrome left pagemux's checks unanswered, for the
// error of a probe.
// A launched Chrome has no second connection: the check past chromedp's is
// cdpMux's own, on the pipe.
func silence(why error, attached bool) string {
	past := "a new connection"
	if !attached {
		past = "pagemux's own check on its pipe"
	}
	if errors.Is(why, errBacklog) {
		return fmt.Sprintf("did not answer checks of its connection for %s, though %s was answered", probeTries*probeTimeout+backlogGrace, past)
	}
	return fmt.Sprintf("did not answer %d checks of its connection, %s each, nor %s", probeTries, probeTimeout, past)
}

// errBacklog marks a connection silent past backlogGrace while the browser
// answered past it (a new connection, or cdpMux's check).
var errBacklog = errors.New("the connection stayed silent, though the browser answered past it")

// probe asks the browser process for its version, probeTries times at most,
// and once more for backlogGrace when anew (a new connection, or cdpMux's
// own check for a launched Chrome) is answered.
// Only silence counts: a Chrome that went away is no freeze (browserGone
// handles it).
func probe(l *launch, anew func(context.Context) error) error {
	answered := func(limit time.Duration) (bool, error) {
		ctx, cancel := context.WithTimeout(l.rootCtx, limit)
		defer cancel()
		_, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
		return err == nil || l.gone() || !errors.Is(ctx.Err(), context.DeadlineExceeded), err
	}
	var err error
	for range probeTries {
		var ok bool
		if ok, err = answered(probeTimeout); ok {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(l.rootCtx, probeTimeout)
	fresh := anew(ctx)
	cancel()
	if fresh != nil {
		return fmt.Errorf("no answer to %d checks of %s each (%w), nor on a new connection (%v)", probeTries, probeTimeout, err, fresh)
	}
	if ok, err := answered(backlogGrace); !ok {
		return fmt.Errorf("%w: %w", errBacklog, err)
	}
	return nil
}

// freshClient makes a new connection for every request: one kept from
// before could be as backlogged as the one checked.
var freshClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// answersAnew checks the browser process past the connection chromedp
// waits on. A launched Chrome has no port to connect to anew: its cdpMux
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
		return l.mux.answers(ctx)
	}
	raw, err := b.endpoint(l)
	if err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	u.Path, u.RawQuery = "/json/version", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
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
// launched, or lets go of an attached one. Its pages go away with l (see
// browserGone), and their calls in flight return l's failure.
func (b *Browser) unresponsive(l *launch, why error) {
	var msg string
	if b.cfg.Attaches() {
		u, _ := b.cfg.attachURL()
		msg = fmt.Sprintf("%s: Chrome at %s %s; pagemux let go of it and reconnects on a later call once it answers again (its pages are gone until then)", ErrUnresponsive, u, silence(why, true))
	} else {
		msg = fmt.Sprintf("%s: it %s; pagemux killed it, and the next call starts a new one (its pages are gone: open them again with new_page)", ErrUnresponsive, silence(why, false))
	}
	l.wd.mu.Lock()
	if l.wd.failure != nil {
		l.wd.mu.Unlock()
		return
	}
	l.wd.failure = &unresponsiveError{msg: msg}
	l.wd.mu.Unlock()
	b.log.Error("chrome stopped responding", "attached", b.cfg.Attaches(), "why", why, "output", l.out.String())
	if l.chrome != nil {
		l.chrome.kill()
	}
	// Cancelling the root context closes the connection, which ends every
	// call that waits on it; for a launched Chrome it also waits for the
	// process to exit, so not here.
	go l.cancel()
}

// ChromePID returns the process id of the Chrome that pagemux launched and
// that runs now; 0 when none runs or pagemux attached to a running Chrome.
// It does not start Chrome.
func (b *Browser) ChromePID() int {
	b.mu.Lock()
	l := b.launch
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
