package browser

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/snapshot"
)

// Page is one tab. Its ID is small, given in order of discovery and never
// reused. Its Generation grows on every main-frame navigation and on close,
// so work that started in an older generation can tell that its result is
// void. A Page does not order the calls made on it: callers hold its lock.
type Page struct {
	ID       int
	TargetID target.ID
	UIDs     *snapshot.UIDs
	// Opener is the id of the page that opened this one (window.open, a
	// link with target=_blank), 0 if none did. It does not change.
	Opener int

	b      *Browser
	launch *launch
	owned  bool // pagemux opened it, so pagemux may close it on exit; under b.mu
	// ownWindow says NewPage gave the page a window of its own, where it is
	// the front tab (HoldFront).
	ownWindow atomic.Bool

	gen    atomic.Uint64
	closed chan struct{}
	// why is how the page went away: a CloseReason plus one, 0 while open;
	// the first reason set wins. closing says close_page asked for it.
	why     atomic.Int32
	closing atomic.Bool

	attachOnce sync.Once
	attached   chan struct{} // closed when attach ended; attachErr says how
	attachErr  error
	ctx        context.Context // the tab's chromedp context, set by attach
	cancel     context.CancelFunc

	// observers see every event after onEvent; fixed before attach.
	observers []func(ev any)
	// slowdown scales the page's waits, set by CPU and network emulation.
	slowdown atomic.Uint64 // math.Float64bits; 0 means 1
	// emu holds the page's emulated settings (emulate.go).
	emu emulationState
	// guard keeps the page to the URL policy (urlguard.go).
	guard urlGuard
	// console and network collect the page's messages and requests
	// (collect.go); set by their observer before attach.
	console *Console
	network *Network
	// scripts are the evaluate_script scripts in flight (scriptstop.go).
	scripts scriptRuns
	// frames are the sessions of the child frames of the latest snapshot
	// (snapshot_frames.go).
	frames pageFrames

	mu      sync.Mutex
	url     string
	title   string
	dialog  *page.EventJavascriptDialogOpening
	nav     navState
	changed chan struct{} // closed and replaced on every change of nav or dialog
	isCrash bool
}

// navState follows the main frame's loading, from the ordered event stream.
type navState struct {
	requested uint64 // navigations requested by the page, ever
	started   uint64 // loads of a new document started, ever
	loading   bool   // the main frame is loading a new document
	loads     uint64 // load events, ever
}

func newPage(b *Browser, l *launch, id int, tid target.ID, url string) *Page {
	return &Page{
		ID: id, TargetID: tid, UIDs: snapshot.NewUIDs(),
		b: b, launch: l, url: url,
		closed: make(chan struct{}), attached: make(chan struct{}), changed: make(chan struct{}),
	}
}

// adoptRoot makes the browser's first tab this page's tab.
func (p *Page) adoptRoot(ctx context.Context) {
	p.attachOnce.Do(func() {
		p.ctx = ctx
		p.cancel = func() {} // cancelling the root context would end the browser
		p.attachErr = chromedp.Listen(ctx, p.onEvent)
		if p.attachErr == nil {
			p.attachErr = disableDOMEvents(ctx)
		}
		if p.attachErr == nil {
			p.ensureScriptBinding(context.Background())
			p.attachErr = p.guardAttached(ctx)
			p.presetScript(ctx) // state.go: --storage-state
		}
		close(p.attached)
	})
}

// attach connects to the tab once; later calls wait for that first attach.
func (p *Page) attach(ctx context.Context) error {
	p.attachOnce.Do(func() {
		opts := []chromedp.ContextOption{chromedp.WithTargetID(p.TargetID), chromedp.WithListener(p.onEvent)}
		p.b.mu.Lock()
		owned := p.owned
		p.b.mu.Unlock()
		if p.b.cfg.Attaches() && !owned {
			opts = append(opts, chromedp.WithDetachOnCancel())
		}
		p.ctx, p.cancel = chromedp.NewContext(p.launch.rootCtx, opts...)
		go func() {
			// The first Do binds the tab to p.ctx, so it must not carry the
			// caller's deadline; the caller waits below instead.
			p.attachErr = chromedp.Do(p.ctx)
			if p.attachErr == nil {
				// Three commands that do not depend on each other: sent
				// together, they cost one round trip to a renderer that
				// may be starting still.
				var wg sync.WaitGroup
				wg.Go(func() { p.ensureScriptBinding(context.Background()) })
				wg.Go(func() { p.enableIssues(p.ctx) })
				wg.Go(func() { p.presetScript(p.ctx) }) // state.go: --storage-state
				var focusErr, guardErr error
				wg.Go(func() { guardErr = p.guardAttached(p.ctx) })
				if p.b.cfg.Tabs { // every tab pagemux drives, as it may be behind others
					wg.Go(func() { focusErr = emulateFocus(p.ctx) })
				}
				p.attachErr = disableDOMEvents(p.ctx)
				wg.Wait()
				p.attachErr = cmp.Or(p.attachErr, focusErr, guardErr)
			}
			close(p.attached)
		}()
	})
	select {
	case <-p.attached:
	case <-p.closed:
		return p.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.attachErr != nil {
		if err := p.explain(ctx, p.attachErr); p.Closed() {
			return err
		}
		return fmt.Errorf("attach to page %d: %w", p.ID, p.attachErr)
	}
	return nil
}

// emulateFocus makes the tab act as the focused tab at the front of its
// window: visible, painting and with animation frames, even behind others.
// Chrome keeps it so across navigations, for as long as the tab is attached.
func emulateFocus(ctx context.Context) error {
	_, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
	if err != nil {
		return fmt.Errorf("keep the tab visible (focus emulation): %w", err)
	}
	return nil
}

// disableDOMEvents turns the DOM domain's events off for the tab, so that
// no event volume can stall it. chromedp answers each DOM.documentUpdated
// by asking for the document from the loop that also takes the tab's
// Runtime and Page events off a 4,096-event queue; while a page logs more
// than that during its load, the answer waits behind the full queue, and
// the tab, then the browser's connection, stop for good. pagemux names
// nodes by backend id, which needs no DOM events; it never asks for the
// document, which would turn them on again.
func disableDOMEvents(ctx context.Context) error {
	_, err := chromedp.Call(ctx, dom.Disable, cdp.Empty{})
	if err != nil {
		return fmt.Errorf("turn off DOM events: %w", err)
	}
	return nil
}

// onEvent runs in the tab's event loop, in the order Chrome sent the events:
// it must return fast and send no command.
func (p *Page) onEvent(ev any) {
	if ev, ok := ev.(*runtime.EventBindingCalled); ok {
		p.scriptEvent(ev)
		return
	}
	p.track(ev)
	p.emulationEvent(ev)
	for _, fn := range p.observers {
		fn(ev)
	}
}

// track keeps the page's own state: URL, generation, navigation, dialog.
func (p *Page) track(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *page.EventFrameNavigated:
		if ev.Frame.ParentID != "" {
			return
		}
		p.url = ev.Frame.URL
		p.gen.Add(1)
		p.UIDs.Reset()
		p.isCrash = false // a new document in a new renderer
	case *page.EventNavigatedWithinDocument:
		if ev.FrameID == p.mainFrameLocked() {
			p.url = ev.URL
		}
		return
	case *page.EventFrameRequestedNavigation:
		if !p.isMainLocked(ev.FrameID) {
			return
		}
		p.nav.requested++
	case *page.EventFrameStartedLoading:
		if !p.isMainLocked(ev.FrameID) {
			return
		}
		p.nav.started++
		p.nav.loading = true
	case *page.EventFrameStoppedLoading:
		if !p.isMainLocked(ev.FrameID) {
			return
		}
		p.nav.loading = false
	case *page.EventLoadEventFired:
		p.nav.loads++
	case *page.EventJavascriptDialogOpening:
		p.dialog = ev
	case *page.EventJavascriptDialogClosed:
		p.dialog = nil
	case *inspector.EventTargetCrashed:
		p.isCrash = true
	default:
		return
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// The main frame's id is the target id for a page target.
func (p *Page) mainFrameLocked() cdp.FrameID     { return cdp.FrameID(p.TargetID) }
func (p *Page) isMainLocked(id cdp.FrameID) bool { return id == p.mainFrameLocked() }

func (p *Page) setInfo(url, title string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.url, p.title = url, title
}

func (p *Page) crashed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCrash = true
	close(p.changed)
	p.changed = make(chan struct{})
}

// setWhy records why the page goes away, unless a reason is set already.
func (p *Page) setWhy(why CloseReason) { p.why.CompareAndSwap(0, int32(why)+1) }

// Err returns nil for an open page, else the *PageClosedError that says how
// it went away: closed by pagemux, closed outside pagemux, or gone with its
// browser.
func (p *Page) Err() error {
	if !p.Closed() {
		return nil
	}
	return &PageClosedError{ID: p.ID, Why: p.closeReason()}
}

// closeReason is how the page went away; ClosedByPagemux unless told.
func (p *Page) closeReason() CloseReason {
	if w := p.why.Load(); w > 0 {
		return CloseReason(w - 1)
	}
	return ClosedByPagemux
}

// closedErr is the error of a call on the page that was in flight when it
// went away: Err, or, when its Chrome stopped responding, the error that
// says so.
func (p *Page) closedErr() error {
	if cause := p.launch.unresponsiveErr(); cause != nil {
		return &pageUnresponsiveError{cause: cause, page: &PageClosedError{ID: p.ID, Why: p.launch.goneReason()}}
	}
	if err := p.Err(); err != nil {
		return err
	}
	return &PageClosedError{ID: p.ID}
}

// markClosed bumps the generation and wakes every waiter. It is idempotent.
func (p *Page) markClosed() {
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		return
	default:
	}
	p.gen.Add(1)
	close(p.closed)
	close(p.changed)
	p.changed = make(chan struct{})
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	go p.releaseEmulation()
	p.release() // collect.go
}

// Closed reports whether the page went away.
func (p *Page) Closed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// Done is closed when the page goes away.
func (p *Page) Done() <-chan struct{} { return p.closed }

// Generation is the page's current generation. Compare two readings to learn
// whether the document changed or the page closed in between.
func (p *Page) Generation() uint64 { return p.gen.Load() }

// URL returns the URL of the main frame as last reported.
func (p *Page) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

// Title returns the title as last reported by Chrome.
func (p *Page) Title() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.title
}

// SetSlowdown makes the page's waits (navigation, settling, wait_for) take
// factor times as long, for CPU or network emulation; 1 undoes it.
func (p *Page) SetSlowdown(factor float64) {
	if factor < 1 {
		factor = 1
	}
	p.slowdown.Store(math.Float64bits(factor))
}

// Scale stretches a timeout by the page's slowdown.
func (p *Page) Scale(d time.Duration) time.Duration {
	f := math.Float64frombits(p.slowdown.Load())
	if f <= 1 {
		return d
	}
	return time.Duration(float64(d) * f)
}

// Crashed reports whether the page's renderer died since its last
// navigation. A crashed page answers nothing until it navigates again.
func (p *Page) Crashed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isCrash
}

// Dialog returns the open JavaScript dialog, or nil.
func (p *Page) Dialog() *page.EventJavascriptDialogOpening {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialog
}

// state returns a copy of the navigation state and the channel closed on its
// next change.
func (p *Page) state() (navState, *page.EventJavascriptDialogOpening, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nav, p.dialog, p.changed
}

// Context returns a context for chromedp calls on the tab that ends when ctx
// ends or the page goes away. The tab must be attached: call Ready first.
// Cancelling it never closes the tab.
func (p *Page) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(p.ctx)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	stopClosed := context.AfterFunc(closedContext{p.closed}, func() { cancel(p.closedErr()) })
	return cctx, func() { stop(); stopClosed(); cancel(context.Canceled) }
}

// Ready attaches to the tab if needed and fails for a closed page, and for
// a page on a URL the policy refuses (urlguard.go).
func (p *Page) Ready(ctx context.Context) error {
	if err := p.ready(ctx); err != nil {
		return err
	}
	return p.refusedErr(ctx)
}

// ready is Ready for a navigation, which may take a page off a refused URL.
func (p *Page) ready(ctx context.Context) error {
	if p.Closed() {
		return p.closedErr()
	}
	return p.attach(ctx)
}

// Usable returns nil for a page that can answer commands, else why it
// cannot: it went away, or its renderer crashed (with what to do about it).
// It sends no command.
func (p *Page) Usable() error {
	if p.Closed() {
		return p.closedErr()
	}
	return p.usable()
}

// usable fails for a page whose renderer crashed, with what to do about it.
func (p *Page) usable() error {
	if p.Crashed() {
		return fmt.Errorf("%w: page %d has no renderer (it crashed or was killed); reload it with navigate_page or close it with close_page", ErrCrashed, p.ID)
	}
	return nil
}

// closedContext is a context that is done when ch closes, for AfterFunc.
type closedContext struct{ ch <-chan struct{} }

func (c closedContext) Deadline() (deadline time.Time, ok bool) { return }
func (c closedContext) Done() <-chan struct{}                   { return c.ch }
func (c closedContext) Err() error {
	select {
	case <-c.ch:
		return context.Canceled
	default:
		return nil
	}
}
func (c closedContext) Value(any) any { return nil }
