package browser

// This file launches or attaches to each Chrome of the browser (a pool has
// several), follows its targets, and closes it.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/cdppipe"
	"github.com/pagemux/pagemux/internal/tail"
)

// startTimeout bounds a launch or an attach, so a Chrome that hangs at start
// gives an error instead of a hung tool call.
const startTimeout = 45 * time.Second

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
	if err := b.checkHeld(); err != nil { // autoconnect.go
		return nil, nil, err
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
	if a := b.cfg.Profile; a != nil {
		// Its address was read from its profile when pagemux started.
		msg += fmt.Sprintf("\nthat address is from %s: if that Chrome was restarted since pagemux started, or now runs without remote debugging (%s), start pagemux again", filepath.Join(a.Dir, ActivePortFile), howToDebug)
	}
	if tail := out.String(); tail != "" {
		msg += "\nChrome said:\n" + tail
	}
	return &startError{msg: msg, err: err}
}

type startError struct {
	msg string
	err error
}

func (e *startError) Error() string { return e.msg }

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
