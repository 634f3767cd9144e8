// Package browser owns one Chrome (or, with Config.Pool, a few) and what is
// done in it:
//
//   - Launch: it launches Chrome with a profile of its own, or attaches to a
//     running one, on the first call that needs it, and relaunches or
//     reattaches after a crash (browser.go, config.go, profile*.go); the
//     DevTools address other clients such as Lighthouse connect to
//     (devtools.go).
//   - Pages: it tracks Chrome's tabs as Pages with small ids, alike in every
//     process that shares a browser (page.go, pageids.go), in named or own
//     browser contexts (contexts.go, owncontext.go), and fences the commands
//     and events of a stale generation (fence.go).
//   - Actions: navigation, input, forms, selectors, emulation, cookies,
//     headers, downloads, scripts and the waits after them (actions.go,
//     navigate.go, keys.go, forms.go, selector.go, emulate.go, wait.go …),
//     kept to a URL policy (urlguard.go).
//   - Collectors: a page's console messages, network requests and DevTools
//     issues, kept per document (collect*.go).
//   - Captures: snapshots of the accessibility tree (snapshot*.go),
//     screenshots, screencasts, traces and heap snapshots (capture_*.go).
//   - Watchdog: whether Chrome still answers, and what a tool call waits on
//     when it does not (watchdog*.go, status.go).
//
// A launched Chrome opens no DevTools port: it speaks over a pipe, which
// package cdppipe shares between chromedp and pagemux's other connections
// (the streamed snapshot, the watchdog's check, the bridge that serves
// Lighthouse) and converts from Chrome's CBOR. This package puts the pipe
// in place at launch and calls through it.
//
// It knows nothing of MCP or of locks.
package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/cdppipe"
	"github.com/pagemux/pagemux/internal/tail"
	"golang.org/x/sync/semaphore"
)

// startTimeout bounds a launch or an attach, so a Chrome that hangs at start
// gives an error instead of a hung tool call.
const startTimeout = 45 * time.Second

// Browser is one Chrome and its pages. It starts Chrome on the first call that
// needs it; concurrent first calls share one launch. A Browser is safe for
// concurrent use. It does not serialise work on a page: callers lock.
type Browser struct {
	cfg Config
	log *slog.Logger

	// onClose is called once for each page that goes away.
	onClose func(*Page)
	// onOpened is called for each tab a page opened (OnPageOpened).
	onOpened func(p *Page, opener int)
	// observers make, for each new page, a func that sees its events.
	observers []func(*Page) func(ev any)

	mu sync.Mutex
	// members are the Chromes of the browser: the one pagemux launches or
	// attaches to, and with Config.Pool the others it attaches to as well.
	// Their pages share one id counter, one selection and one page list.
	members  []*member
	byTarget map[target.ID]*Page
	byID     map[int]*Page
	// gone keeps why the latest pages went away: their ids say so from
	// then on, and the Pages themselves can be collected.
	gone goneLog
	// freeTimer returns memory to the system after pages closed.
	freeTimer *time.Timer
	// counts are what Counts reports (status.go).
	counts   counts
	nextID   int
	selected int
	// selectionMoved says the selected page closed since TakeSelectionNote.
	selectionMoved bool
	closed         bool
	// quit ends a launch in progress when Close is called (see allocator);
	// made on first use, under mu.
	quit    context.Context
	quitNow context.CancelFunc

	contexts contextSet // the named browser contexts of isolated pages
	// downloads says where each context's downloads go (downloads.go).
	downloads downloadRules
	// cookies are SetCookies', for Chromes started later (cookies.go).
	cookies cookieSet
	// frames are the frames of the pages, with Config.OwnContext
	// (owncontext.go).
	frames frameSet
	// fences check the commands to an attached Chrome (fence.go).
	fences fenceSet
	// headerRules add headers to the requests of origins (headers.go); set
	// before the first Start.
	headerRules []OriginHeaders
	// opening has a unit for each tab being made (openTab).
	opening *semaphore.Weighted
	// front is held by the one capture that needs its tab at the front of
	// its window (Page.HoldFront).
	front *semaphore.Weighted
	// scriptsRunning counts the evaluate_script scripts whose synchronous
	// part runs now, on any page (scriptstop.go).
	scriptsRunning atomic.Int32

	// urlPolicy is what tabs may load (urlguard.go); nil: anything.
	urlPolicy URLPolicy

	// pageIDs gives an attached Chrome's tabs their ids (pageids.go); set
	// before the first Start. pending are its tabs waiting for theirs.
	pageIDs PageIDs
	pending map[target.ID]*pendingTab
}

// member is one Chrome of the browser and its current start.
type member struct {
	// url is where to attach; "" for the Chrome pagemux launches.
	url string
	// launch is the current or last start; nil before. Under Browser.mu.
	launch *launch
}

// launch is one start of Chrome, shared by the calls that wait for it.
type launch struct {
	done chan struct{} // closed when the start ends
	err  error         // why it failed; read after done
	url  string        // its member's url: where it attaches, "" when it launches

	rootCtx context.Context // the browser's chromedp context
	cancel  context.CancelFunc
	out     *tail.Buffer
	dead    chan struct{} // closed when Chrome went away

	profileDir string      // the profile of a Chrome pagemux launched; set before done closes
	chrome     *chromeProc // a Chrome pagemux launched (profile.go); set by allocator, before Chrome starts
	// mux sits between chromedp and a launched Chrome's pipe (package
	// cdppipe); set before done closes, nil when it could not be put there.
	mux      *cdppipe.Mux
	bridgeMu sync.Mutex
	bridge   *cdppipe.Bridge // its DevTools bridge, once started (devtools.go)
	wd       watchdog        // whether Chrome still answers (watchdog.go)
	// identity names the browser alike in every process that drives it
	// (Identity); set before done closes.
	identity string
	// ownContext is the browser context of Config.OwnContext, "" without
	// it; set before done closes.
	ownContext cdp.BrowserContextID
}

// New returns a Browser for cfg. It does not start Chrome.
func New(cfg Config) *Browser {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := &Browser{cfg: cfg, log: log, byTarget: map[target.ID]*Page{}, byID: map[int]*Page{}, nextID: 1, opening: semaphore.NewWeighted(openAtOnce), front: semaphore.NewWeighted(1)}
	for _, u := range cfg.attachURLs() {
		b.members = append(b.members, &member{url: u})
	}
	b.ObservePages(observeCollectors) // every page's console and network, from attach on
	if cfg.OwnContext {
		b.ObservePages(b.frames.observe)
	}
	return b
}

// OnPageClosed sets a func called once, from any goroutine, for each page that
// closes or crashes away. Set it before the first Start.
func (b *Browser) OnPageClosed(fn func(*Page)) { b.onClose = fn }

// OnPageOpened sets a func called once for each tab that a page of
// pagemux's opened (window.open, a target=_blank link), with its opener's
// id, as soon as Chrome tells of it: before any call can learn its id, and
// whether or not a call of its opener still runs. It is called from
// chromedp's event loop: it must return fast and send no command. Set it
// before the first Start.
func (b *Browser) OnPageOpened(fn func(p *Page, opener int)) { b.onOpened = fn }

// ObservePages adds a func called for every page pagemux learns of, before
// it attaches; the func it returns sees each of the page's events, in the
// order Chrome sent them, from the page's event loop (return fast, send no
// command). Collectors use it to see a page's events from its attach on.
// Call it before the first Start.
func (b *Browser) ObservePages(newObserver func(*Page) func(ev any)) {
	b.observers = append(b.observers, newObserver)
}

// Start launches or attaches to Chrome unless that is done, and waits for it.
// A failed start is tried again by the next call; a Chrome that went away is
// started anew. While Chrome is being checked (watchdog.go), it waits for
// the outcome first, so that a call does not go to a Chrome found frozen a
// moment later. ctx bounds only this caller's wait, not the launch. With a
// pool (Config.Pool), it attaches to each Chrome of it and succeeds when
// one of them runs (startPool).
func (b *Browser) Start(ctx context.Context) error {
	if len(b.members) > 1 {
		return b.startPool(ctx)
	}
	return b.startMember(ctx, b.members[0])
}

// startMember is Start for one Chrome.
func (b *Browser) startMember(ctx context.Context, m *member) error {
	b.mu.Lock()
	l := m.launch
	b.mu.Unlock()
	if l != nil {
		if err := l.awaitCheck(ctx); err != nil {
			return err
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("%w: the server is shutting down", ErrStart)
	}
	l = m.launch
	if l == nil || l.failed() || l.gone() || l.unresponsiveErr() != nil {
		next := &launch{done: make(chan struct{}), dead: make(chan struct{}), out: &tail.Buffer{}, url: m.url}
		next.wd.reattach = l != nil && b.cfg.Attaches() && (l.unresponsiveErr() != nil || l.failed() && l.wd.reattach)
		l = next
		m.launch = l
		go b.start(l)
	}
	b.mu.Unlock()
	select {
	case <-l.done:
		return l.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startPool is Start for a pool: it attaches to every Chrome of it that
// does not run, and succeeds when one runs. It waits for each Chrome's
// first attach, so that the first page list shows the pages of all, but
// for a Chrome whose attach failed or that went away (killed, or let go of
// as unresponsive) only while no other runs: its attach is tried again on
// each call, in the background, and a dead Chrome of the pool delays no
// call on the others.
func (b *Browser) startPool(ctx context.Context) error {
	b.mu.Lock()
	all, one := true, false
	for _, m := range b.members {
		up := m.launch != nil && m.launch.ready() && m.launch.unresponsiveErr() == nil
		all, one = all && up, one || up
	}
	b.mu.Unlock()
	if all {
		return nil
	}
	errs := make([]error, len(b.members))
	var wg sync.WaitGroup
	for i, m := range b.members {
		b.mu.Lock()
		background := one && m.launch != nil
		b.mu.Unlock()
		if background {
			go func() { _ = b.startMember(context.Background(), m) }() // bounded by startTimeout
			continue
		}
		wg.Go(func() { errs[i] = b.startMember(ctx, m) })
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			return nil
		}
		b.log.Warn("a browser of the pool did not start", "browser", b.members[i].url, "error", err)
	}
	return errors.Join(errs...)
}

func (l *launch) failed() bool {
	select {
	case <-l.done:
		return l.err != nil
	default:
		return false
	}
}

func (l *launch) gone() bool {
	select {
	case <-l.dead:
		return true
	default:
		return false
	}
}

// start runs one launch to its end and records the outcome in l.
func (b *Browser) start(l *launch) {
	defer close(l.done)
	if err := b.check(); err != nil {
		l.err = err
		return
	}
	allocCtx, allocCancel, err := b.allocator(l)
	if err != nil {
		l.err = err
		return
	}
	var ctxOpts []chromedp.ContextOption
	switch {
	case b.cfg.OwnContext:
		// chromedp makes the context, with a tab in a window of its own,
		// and on cancel closes the tab and disposes of the context; Chrome
		// disposes of it too once this connection drops (disposeOnDetach).
		ctxOpts = append(ctxOpts, chromedp.WithNewBrowserContext())
	case b.cfg.Attaches():
		ctxOpts = append(ctxOpts, chromedp.WithDetachOnCancel())
	}
	rootCtx, rootCancel := chromedp.NewContext(allocCtx, ctxOpts...)
	l.rootCtx = rootCtx
	l.cancel = func() { rootCancel(); allocCancel() }

	started := make(chan error, 1)
	go func() { started <- chromedp.Do(rootCtx) }()
	limit := startTimeout
	if l.wd.reattach {
		limit = reattachTimeout
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err = <-started:
		if l.mux != nil {
			// chromedp is done starting Chrome, whether or not it did
			// (cdppipe.Mux.CloseChromeEnds says why this waits until now).
			l.mux.CloseChromeEnds()
		}
	case <-timer.C:
		err = fmt.Errorf("no answer after %s", limit)
		if l.wd.reattach {
			err = fmt.Errorf("%w: it still does not answer (%v); pagemux reconnects on a later call once it answers again", ErrUnresponsive, err)
		}
	}
	if err == nil {
		l.ownContext = chromedp.FromContext(rootCtx).BrowserContextID
		err = b.adoptExisting(l)
	}
	if err == nil {
		b.defaultDownloads(l)
		b.launchCookies(l) // cookies.go
	}
	if err != nil {
		l.cancel()
		l.err = b.startError(err, l)
		return
	}
	b.counts.launches.Add(1)
	go func() {
		<-rootCtx.Done()
		close(l.dead)
		b.mu.Lock()
		closing := b.closed
		b.mu.Unlock()
		if !closing {
			b.counts.browserExits.Add(1)
		}
		b.browserGone(l)
	}()
}

// allocator returns the chromedp allocator context for the config. For a
// Chrome that pagemux launches, the cancel func kills Chrome if it still runs
// and removes what it leaves: its helpers, its temporary profile, its
// singleton directory; that also happens by itself once a started Chrome went
// away, so a Chrome that died and was started anew leaves nothing either.
// Close ends a launch in progress through the allocator's parent context.
func (b *Browser) allocator(l *launch) (context.Context, context.CancelFunc, error) {
	if b.cfg.Attaches() {
		u, err := checkAttachURL(l.url)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := newAttachAllocator(b.quitContext(), u, &b.fences, func(id string) { l.identity = id })
		return ctx, cancel, nil
	}
	c, err := newChromeProc(b.cfg, l, b.log)
	if err != nil {
		return nil, nil, err
	}
	opts, err := b.cfg.allocatorOptions(l.out, c.tempDir(), b.log, func(dir string, mux *cdppipe.Mux) { l.profileDir, l.mux = dir, mux })
	if err != nil {
		c.stop()
		return nil, nil, err
	}
	ctx, cancel := chromedp.NewExecAllocator(b.quitContext(), opts...)
	c.stopAlloc = cancel
	l.chrome = c
	go func() {
		// A Chrome that goes away by itself (it crashed, or was killed)
		// leaves nothing either; a failed start already called stop.
		<-l.done
		if l.err == nil {
			c.noteStarted()
			<-l.dead
			c.stop()
		}
	}()
	return ctx, c.stop, nil
}

// startError explains a failed start with what was tried and what Chrome said.
func (b *Browser) startError(err error, l *launch) error {
	if errors.Is(err, ErrStart) {
		return err
	}
	out := l.out
	var what string
	if b.cfg.Attaches() {
		what = "attaching to " + l.url
	} else {
		path, _ := b.cfg.ResolveExecPath()
		what = "launching " + path
	}
	msg := fmt.Sprintf("%v: %s: %v", ErrStart, what, err)
	if tail := out.String(); tail != "" {
		msg += "\nChrome said:\n" + tail
	}
	return &startError{msg: msg, err: err}
}

type startError struct {
	msg string
	err error
}

func (e *startError) Error() string   { return e.msg }
func (e *startError) Unwrap() []error { return []error{ErrStart, e.err} }

// adoptExisting registers the tabs Chrome has now and starts watching for new
// and closed ones.
func (b *Browser) adoptExisting(l *launch) error {
	root := chromedp.FromContext(l.rootCtx)
	first, err := b.register(l, root.Target.TargetID, "")
	if err != nil {
		return err
	}
	if b.cfg.Attaches() {
		// chromedp made this tab to attach with: pagemux's own, closed on
		// exit, or every run would leave an about:blank tab behind.
		b.mu.Lock()
		first.owned = true
		b.mu.Unlock()
	}
	first.adoptRoot(l.rootCtx)
	if err := chromedp.ListenBrowser(l.rootCtx, func(ev any) { b.onBrowserEvent(l, ev) }); err != nil {
		return err
	}
	if _, err := chromedp.CallBrowser(l.rootCtx, target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true}); err != nil {
		return err
	}
	if err := b.guardBrowser(l); err != nil {
		return err
	}
	infos, err := chromedp.Targets(l.rootCtx)
	if err != nil {
		return err
	}
	for _, info := range infos {
		if info.Type == "page" && b.ours(l, info) {
			p, err := b.register(l, info.TargetID, info.URL)
			if err != nil {
				return err
			}
			p.setInfo(info.URL, info.Title)
			if b.sharedIDs(l) && p != first {
				b.watchShared(p)
			}
		}
	}
	return nil
}

// onBrowserEvent runs in chromedp's browser loop: it must return fast and send
// no command.
func (b *Browser) onBrowserEvent(l *launch, ev any) {
	if b.sharedIDs(l) && b.pendingEvent(ev) {
		return
	}
	switch ev := ev.(type) {
	case *target.EventTargetCreated:
		switch {
		case ev.TargetInfo.Type != "page" || !b.ours(l, ev.TargetInfo):
		case b.sharedIDs(l):
			b.tabCreated(l, ev.TargetInfo)
		default:
			p, _ := b.register(l, ev.TargetInfo.TargetID, ev.TargetInfo.URL)
			b.noteOpener(p, ev.TargetInfo.OpenerID)
		}
	case *target.EventTargetInfoChanged:
		if p := b.pageByTarget(ev.TargetInfo.TargetID); p != nil && ev.TargetInfo.URL != "" {
			p.setInfo(ev.TargetInfo.URL, ev.TargetInfo.Title)
		}
	case *target.EventTargetDestroyed:
		if p := b.pageByTarget(ev.TargetID); p != nil {
			// Not here: closing the tab's context talks to the browser, and
			// this loop is what reads the browser's answers.
			go func() {
				b.pageGone(p)
				b.forgetTab(l, p.TargetID)
			}()
		}
	case *target.EventTargetCrashed:
		if p := b.pageByTarget(ev.TargetID); p != nil {
			b.log.Warn("page crashed", "page", p.ID, "status", ev.Status, "code", ev.ErrorCode)
			b.counts.crashes.Add(1)
			p.crashed()
		}
	}
}

// register returns the page of a target, making one if the target is new:
// with the next id, or with the id PageIDs gives it (which may wait on
// etcd, so never in chromedp's event loop). It is idempotent, so the event
// and the creator may race. It fails only for a shared id: PageIDs failed,
// or the tab closed meanwhile (errTabGone).
func (b *Browser) register(l *launch, tid target.ID, url string) (*Page, error) {
	if p := b.pageByTarget(tid); p != nil {
		return p, nil
	}
	id, err := b.sharedID(l, tid)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.byTarget[tid]; ok {
		return p, nil
	}
	pend := b.pending[tid]
	delete(b.pending, tid)
	if pend != nil && pend.gone {
		go b.forgetTab(l, tid)
		return nil, errTabGone
	}
	if id == 0 {
		id = b.nextID
	}
	p := newPage(b, l, id, tid, url)
	if pend != nil {
		p.setInfo(pend.url, pend.title) // p is no one else's yet
	}
	for _, newObserver := range b.observers {
		if fn := newObserver(p); fn != nil {
			p.observers = append(p.observers, fn)
		}
	}
	b.nextID = max(b.nextID, id+1)
	b.byTarget[tid] = p
	b.byID[p.ID] = p
	if b.selected == 0 {
		b.selected = p.ID
	}
	return p, nil
}

// freeAfter is how long after the last page closed pagemux hands the
// memory its pages used back to the system.
const freeAfter = 2 * time.Second

// freeMemorySoon returns freed memory to the system once pages stop closing
// for freeAfter. Go's runtime would keep it for minutes: a long-running
// server (many agents over HTTP) that opened and closed many busy pages
// would look as big as at its peak.
func (b *Browser) freeMemorySoon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freeTimer == nil {
		b.freeTimer = time.AfterFunc(freeAfter, debug.FreeOSMemory)
		return
	}
	b.freeTimer.Reset(freeAfter)
}

// noteOpener records which page opened p, once, when its target says so,
// and tells the OnPageOpened func.
func (b *Browser) noteOpener(p *Page, opener target.ID) {
	if opener == "" {
		return
	}
	b.mu.Lock()
	o, ok := b.byTarget[opener]
	first := ok && p.Opener == 0 && o != p
	if first {
		p.Opener = o.ID
	}
	b.mu.Unlock()
	if first && b.onOpened != nil {
		b.onOpened(p, o.ID)
	}
}

// NextID is the id the next page will get: pages with this id or more were
// found after the call.
func (b *Browser) NextID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nextID
}

// OpenedBy returns the open pages that opener opened, with ids from since
// on, in id order.
func (b *Browser) OpenedBy(opener, since int) []*Page {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*Page
	for _, p := range b.sortedLocked() {
		if p.ID >= since && p.Opener == opener {
			out = append(out, p)
		}
	}
	return out
}

func (b *Browser) pageByTarget(id target.ID) *Page {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byTarget[id]
}

// pageGone forgets a page that closed, moves the selection off it, and tells
// the OnPageClosed func. It is idempotent.
func (b *Browser) pageGone(p *Page) {
	b.mu.Lock()
	if b.byTarget[p.TargetID] != p {
		b.mu.Unlock()
		return
	}
	delete(b.byTarget, p.TargetID)
	if p.closing.Load() {
		p.setWhy(ClosedByPagemux)
	}
	p.setWhy(ClosedOutside) // unless a reason came first
	if b.selected == p.ID {
		b.selected = 0
		if open := b.sortedLocked(); len(open) > 0 {
			b.selected = open[0].ID
			b.selectionMoved = true
		}
	}
	b.mu.Unlock()
	p.markClosed()
	b.mu.Lock()
	b.gone.add(p.ID, p.closeReason())
	delete(b.byID, p.ID)
	b.mu.Unlock()
	if b.onClose != nil {
		b.onClose(p)
	}
	b.freeMemorySoon()
}

// goneReason is why the pages of l are gone once it went away: restarted
// when pagemux launched it, lost when it attached to it.
func (l *launch) goneReason() CloseReason {
	if l.url != "" {
		return ClosedChromeLost
	}
	return ClosedRestart
}

// browserGone closes every page of a Chrome that went away.
func (b *Browser) browserGone(l *launch) {
	b.mu.Lock()
	var gone []*Page
	for _, p := range b.byTarget {
		if p.launch == l {
			gone = append(gone, p)
		}
	}
	closing := b.closed
	b.mu.Unlock()
	if !closing {
		b.log.Warn("chrome went away; the next call starts it again", "pages", len(gone), "output", l.out.String())
	}
	for _, p := range gone {
		p.setWhy(l.goneReason())
		b.pageGone(p)
	}
	// Its tabs leave the shared registry too: the browser's identity is
	// never seen again (a Chrome restarted is another), so no event of
	// its tabs would ever drop them. Every process that saw it go does.
	if b.sharedIDs(l) && !closing {
		for _, p := range gone {
			b.forgetTab(l, p.TargetID)
		}
	}
}

func (b *Browser) sortedLocked() []*Page {
	ps := make([]*Page, 0, len(b.byTarget))
	for _, p := range b.byTarget {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(x, y *Page) int { return x.ID - y.ID })
	return ps
}

// Pages returns the open pages in id order. It does not start Chrome.
func (b *Browser) Pages() []*Page {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sortedLocked()
}

// Page returns the open page with the id. It does not start Chrome.
func (b *Browser) Page(id int) (*Page, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.byID[id]
	switch {
	case !ok && id > 0 && id < b.nextID: // handed out, so gone
		return nil, &PageClosedError{ID: id, Why: b.gone.reason(id)}
	case !ok:
		return nil, &NoPageError{ID: id}
	case p.Closed():
		return nil, p.Err()
	}
	return p, nil
}

// Selected returns the selected page, starting Chrome if needed.
func (b *Browser) Selected(ctx context.Context) (*Page, error) {
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	id := b.selected
	b.mu.Unlock()
	if id == 0 {
		return nil, fmt.Errorf("%w: no page is open; call new_page", ErrNoPage)
	}
	return b.Page(id)
}

// TakeSelectionNote reports, once, that the selected page closed and the
// selection moved to another page.
func (b *Browser) TakeSelectionNote() (moved bool, now int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	moved, b.selectionMoved = b.selectionMoved, false
	return moved, b.selected
}

// SelectedID returns the id of the selected page, 0 when none is.
func (b *Browser) SelectedID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.selected
}

// Select makes the page the one that calls without a pageId act on. It does
// not bring the tab to the front.
func (b *Browser) Select(id int) (*Page, error) {
	p, err := b.Page(id)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.selected = id
	b.selectionMoved = false
	b.mu.Unlock()
	return p, nil
}

// NewPage opens a tab on about:blank and selects it; background keeps it
// from the front, InContext puts it in a named browser context. It does not
// navigate.
func (b *Browser) NewPage(ctx context.Context, background bool, opts ...PageOption) (*Page, error) {
	var o pageOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	l := b.place(&o)
	params := target.CreateTargetParams{
		URL:              "about:blank",
		BrowserContextID: l.ownContext,
		// A tab hidden behind another gets no animation frames: without
		// focus emulation (Config.Tabs), each page has a window.
		NewWindow:  new(!b.cfg.Tabs || o.named() || o.ownWindow),
		Background: new(background),
	}
	var nc *namedContext
	if o.named() {
		var release func()
		var err error
		nc, release, err = b.contexts.acquire(ctx, l, &o)
		if err != nil {
			return nil, err
		}
		defer release()
		if err := b.contextDownloads(ctx, l, nc); err != nil {
			return nil, err
		}
		params.BrowserContextID = nc.id
	}
	p, err := b.openTab(ctx, l, params, nc)
	if err != nil {
		return nil, err
	}
	p.ownWindow.Store(*params.NewWindow)
	// Like chrome-devtools-mcp, a background page is selected too:
	// background only keeps it from the front.
	b.mu.Lock()
	b.selected = p.ID
	b.mu.Unlock()
	return p, nil
}

// place picks the Chrome a new page of o opens on: on one, that one; in a
// pool, that of o's Beside page, or else of its named context, while they
// are there, else the running one with the fewest pages, the first given
// of those on a tie. Every page counts, whichever process opened it: the
// processes that share a pool through etcd see the same tabs, and so
// place a page alike.
func (b *Browser) place(o *pageOptions) *launch {
	if len(b.members) == 1 {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.members[0].launch
	}
	up := func(l *launch) bool { return l != nil && l.ready() && l.unresponsiveErr() == nil }
	if o.beside != nil && !o.beside.Closed() && up(o.beside.launch) {
		return o.beside.launch
	}
	if o.named() {
		if l := b.contexts.launchOf(o.key()); up(l) {
			return l
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	pages := map[*launch]int{}
	for _, p := range b.byTarget {
		pages[p.launch]++
	}
	var best *launch
	for _, m := range b.members {
		if up(m.launch) && (best == nil || pages[m.launch] < pages[best]) {
			best = m.launch
		}
	}
	if best == nil { // the one Start found went away since: its error says so
		return b.members[0].launch
	}
	return best
}

// openAtOnce bounds the tabs being made and attached at a time. Chrome makes
// windows one after another, and an attach waits behind every window asked
// for before it: 16 asked at once were all ready only after the last, 1.0 s
// later (2026-12-01, 2 CPUs). Three at a time, the first is ready within
// 0.1 s and can load while the others are made; one at a time, the round
// trips of each attach leave Chrome idle. Tabs (Config.Tabs) are made
// faster, but three at a time is still best: the smoke bench's 16 pages
// took 1.81 s over HTTP/2 at 3, 2.03 s at 1 and 1.87 s at 16.
const openAtOnce = 3

// openTab makes the target, registers its page (in context nc, if any) and
// attaches to it, with at most openAtOnce others doing so.
func (b *Browser) openTab(ctx context.Context, l *launch, params target.CreateTargetParams, nc *namedContext) (*Page, error) {
	start := time.Now()
	if err := b.opening.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer b.opening.Release(1)
	waited := time.Since(start)
	res, err := chromedp.CallBrowser(l.rootCtx, target.CreateTarget, params)
	if err != nil {
		return nil, fmt.Errorf("open a new tab: %w", l.explainBrowser(err))
	}
	created := time.Since(start)
	if nc != nil {
		b.contexts.addPage(nc, res.TargetID)
	}
	p, err := b.register(l, res.TargetID, "about:blank")
	if err != nil {
		// The tab is of no use without its id: close it rather than leave
		// it to whoever finds it.
		_, _ = chromedp.CallBrowser(l.rootCtx, target.CloseTarget, target.CloseTargetParams{TargetID: res.TargetID})
		return nil, err
	}
	b.mu.Lock() // Close reads it, and the page is listed already
	// On a browser shared with other processes, a tab is the agents', not
	// this process's: it stays when this process exits.
	p.owned = !b.sharedIDs(l)
	b.mu.Unlock()
	if err := p.attach(ctx); err != nil {
		return nil, err
	}
	b.log.Debug("new page", "page", p.ID, "waited", waited, "created", created-waited, "attached", time.Since(start)-created)
	return p, nil
}

// ClosePage closes the tab and waits until Chrome says it is gone. It refuses
// to close the last open page. On a browser being closed it fails with
// ErrBrowserClosed: the page goes with the browser.
func (b *Browser) ClosePage(ctx context.Context, p *Page) error {
	b.mu.Lock()
	n, closed := len(b.byTarget), b.closed
	b.mu.Unlock()
	if p.Closed() {
		return p.closedErr()
	}
	if closed {
		return fmt.Errorf("close page %d: %w", p.ID, ErrBrowserClosed)
	}
	if n <= 1 {
		return ErrLastPage
	}
	p.closing.Store(true)
	nc := b.contexts.contextOf(p.TargetID)
	if _, err := chromedp.CallBrowser(p.launch.rootCtx, target.CloseTarget, target.CloseTargetParams{TargetID: p.TargetID}); err != nil && !p.Closed() {
		p.closing.Store(false)
		b.mu.Lock()
		closed = b.closed
		b.mu.Unlock()
		if closed {
			return fmt.Errorf("close page %d: %w", p.ID, ErrBrowserClosed)
		}
		return fmt.Errorf("close page %d: %w", p.ID, p.launch.explainBrowser(err))
	}
	select {
	case <-p.closed:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
		// Chrome closed the tab but sent no event: forget it anyway.
		b.pageGone(p)
	}
	// Here, not only on the event: a new_page of the same name that follows
	// must find the context gone.
	b.contexts.pageClosed(p.TargetID)
	if nc != nil {
		b.contexts.awaitGone(ctx, nc)
	}
	return nil
}

// CommandLine returns the command line Chrome runs with: in a pool, the
// first Chrome's (each may have its own).
func (b *Browser) CommandLine(ctx context.Context) ([]string, error) {
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	res, err := chromedp.CallBrowser(l.rootCtx, browser.GetBrowserCommandLine, cdp.Empty{})
	return res.Arguments, err
}

// Close closes the pages pagemux opened and Chrome if pagemux launched it; an
// attached browser is only detached from. On an attached browser whose tabs
// it shares with other processes (SetPageIDs), it closes only its own first
// tab: the pages it opened, and their contexts, are the agents', who may
// go on with them through another process. A launch in progress ends at once.
// A launched Chrome gets a moment to exit after Browser.close (so that a kept
// profile is saved); past it, its process group is killed. Close waits for
// Chrome to exit and removes its temporary profile before it returns; it takes
// at most about a second for a launched Chrome. On an attached one it waits
// for its tabs to be gone, at most 5 s. A second Close returns at once.
func (b *Browser) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	var launches []*launch
	for _, m := range b.members {
		if m.launch != nil {
			launches = append(launches, m.launch)
		}
	}
	owned := map[*launch][]*Page{}
	for _, p := range b.byTarget {
		if p.owned {
			owned[p.launch] = append(owned[p.launch], p)
		}
	}
	b.mu.Unlock()
	if len(launches) == 0 {
		return nil
	}
	for _, l := range launches {
		select {
		case <-l.done:
		default:
			b.stopLaunches() // Chrome is still starting: end that at once
			<-l.done
		}
	}
	defer b.stopLaunches()
	launches = slices.DeleteFunc(launches, func(l *launch) bool { return l.err != nil })
	if len(launches) == 0 {
		return nil
	}
	if b.cfg.Attaches() {
		b.contexts.closeAll()
	}
	var wg sync.WaitGroup
	for _, l := range launches {
		wg.Go(func() { b.closeLaunch(l, owned[l]) })
	}
	wg.Wait()
	b.downloads.removeEmpty()
	return nil
}

// closeLaunch closes the pages of l that pagemux owns, on an attached
// Chrome, or quits a launched one, and ends l.
func (b *Browser) closeLaunch(l *launch, owned []*Page) {
	if b.cfg.Attaches() {
		ctx, cancel := context.WithTimeout(l.rootCtx, 5*time.Second)
		defer cancel()
		for _, p := range owned {
			_, _ = chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: p.TargetID})
		}
		// Chrome answers closeTarget before the tab is gone: wait for the
		// tabs to be destroyed, so that whoever lists that Chrome's tabs
		// once pagemux has exited finds none of pagemux's.
		for _, p := range owned {
			select {
			case <-p.closed:
			case <-ctx.Done():
			}
		}
	} else {
		l.chrome.quit()
	}
	l.cancel()
}

// Refresh reads the URLs and titles of the pages from Chrome, so that a page
// list shows what loaded a moment ago. It asks the browser processes, never
// a page, so a busy page does not delay it.
func (b *Browser) Refresh(ctx context.Context) {
	b.mu.Lock()
	var launches []*launch
	for _, m := range b.members {
		launches = append(launches, m.launch)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range launches {
		wg.Go(func() { b.refresh(ctx, l) })
	}
	wg.Wait()
}

// refresh is Refresh for the pages of l.
func (b *Browser) refresh(ctx context.Context, l *launch) {
	if l == nil || l.failed() || l.gone() {
		return
	}
	select {
	case <-l.done:
	default:
		return
	}
	cctx, cancel := context.WithTimeout(l.rootCtx, 2*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	res, err := chromedp.CallBrowser(cctx, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return
	}
	for _, info := range res.TargetInfos {
		// While a navigation commits Chrome reports an empty URL for a
		// moment: keep the last one then.
		if p := b.pageByTarget(info.TargetID); p != nil && info.URL != "" {
			p.setInfo(info.URL, info.Title)
		}
	}
}
