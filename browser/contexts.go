package browser

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// This file keeps the named browser contexts of new_page's isolatedContext:
// pages of one name share cookies and storage, pages of different names (and
// the default context) do not. A context is made on the first page of its
// name and disposed of when its last page closes, or at Close.

// disposeTimeout bounds the disposal of one browser context, so a browser
// that stopped answering cannot hang a close_page or a shutdown.
const disposeTimeout = 5 * time.Second

// PageOption is an option of NewPage.
type PageOption func(*pageOptions)

type pageOptions struct {
	isolatedContext string
	scope           string // InScope
	ownWindow       bool   // InOwnWindow
	beside          *Page  // Beside
}

// named reports whether the page opens in a context of pagemux's own.
func (o *pageOptions) named() bool { return o.isolatedContext != "" || o.scope != "" }

// key is the contextSet key of the options' context.
func (o *pageOptions) key() string { return o.scope + "\x00" + o.isolatedContext }

// InContext opens the page in the browser context named name, made on first
// use; "" means Chrome's default context (or, with InScope, the scope's
// own). It does not share anything with contexts of other names, nor with
// pages opened without it.
func InContext(name string) PageOption {
	return func(o *pageOptions) { o.isolatedContext = name }
}

// InOwnWindow opens the page in a window of its own even with Config.Tabs,
// so that it draws, and captures it (screenshots, Lighthouse) without taking
// turns at the front of a shared window (Page.HoldFront does nothing for
// it). A window costs more to make than a tab. It does not change the
// page's context.
func InOwnWindow() PageOption {
	return func(o *pageOptions) { o.ownWindow = true }
}

// Beside opens the page on the Chrome of p, in a pool (Config.Pool), while
// p is open, instead of on the one with the fewest pages: an agent's pages
// in a context of its own must be on one Chrome, whose context it is. It
// does nothing on one Chrome, nor with p nil.
func Beside(p *Page) PageOption {
	return func(o *pageOptions) { o.beside = p }
}

// InScope puts the names of InContext in a namespace of their own, such as
// one agent's: a name in one scope is never the same context as that name
// in another, nor as the name without a scope, and the scope's "" is a
// context of its own rather than Chrome's default one. Page lists show the
// name alone (IsolatedContext). "" is no scope: names are shared by all.
func InScope(scope string) PageOption {
	return func(o *pageOptions) { o.scope = scope }
}

// IsolatedContext returns the name of the page's browser context, or "" for a
// page of the default context or of its scope's own (InScope). Popups opened
// by a page of a named context belong to that context too.
func (p *Page) IsolatedContext() string {
	return p.b.contexts.nameOf(p.TargetID)
}

// contextSet is the named browser contexts of a Browser. Its zero value is
// ready to use. It does not open pages: NewPage does.
type contextSet struct {
	mu        sync.Mutex
	byName    map[string]*namedContext // by pageOptions.key
	byID      map[cdp.BrowserContextID]*namedContext
	byTarget  map[target.ID]*namedContext
	listening map[*launch]bool // launches whose target events are watched
	// shared keeps the contexts of an attached Chrome alike in every
	// process on it (SetPageIDs); nil: this process's own.
	shared ContextIDs
}

// namedContext is one browser context and the pages in it.
type namedContext struct {
	name   string // as page lists show it
	key    string // in contextSet.byName: its scope and name
	launch *launch
	ready  chan struct{} // closed when the creation ended; err says how
	err    error
	id     cdp.BrowserContextID
	pages  map[target.ID]bool
	// users counts the NewPage calls that are opening a page in it, so the
	// context is not disposed of under them.
	users int
	// gone is closed once the context was forgotten and Chrome's answer to
	// its disposal is in (or there was nothing to dispose of).
	gone     chan struct{}
	goneOnce sync.Once
}

// markGone closes nc.gone; only the first call does.
func (nc *namedContext) markGone() { nc.goneOnce.Do(func() { close(nc.gone) }) }

// acquire returns the context of o in launch l, making it if needed, and
// counts the caller as a user until it calls release.
func (cs *contextSet) acquire(ctx context.Context, l *launch, o *pageOptions) (*namedContext, func(), error) {
	name, key := o.isolatedContext, o.key()
	cs.mu.Lock()
	if cs.byName == nil {
		cs.byName = map[string]*namedContext{}
		cs.byID = map[cdp.BrowserContextID]*namedContext{}
		cs.byTarget = map[target.ID]*namedContext{}
		cs.listening = map[*launch]bool{}
	}
	nc := cs.byName[key]
	if nc != nil && nc.launch != l {
		cs.forgetLocked(nc) // from a Chrome that went away
		nc.markGone()
		nc = nil
	}
	creator := nc == nil
	if creator {
		nc = &namedContext{name: name, key: key, launch: l, ready: make(chan struct{}), gone: make(chan struct{}), pages: map[target.ID]bool{}}
		cs.byName[key] = nc
	}
	nc.users++
	listen := !cs.listening[l]
	cs.listening[l] = true
	cs.mu.Unlock()
	release := func() {
		cs.mu.Lock()
		nc.users--
		cs.mu.Unlock()
		cs.disposeIfEmpty(nc)
	}

	if listen {
		if err := chromedp.ListenBrowser(l.rootCtx, func(ev any) { cs.onBrowserEvent(ev) }); err != nil {
			cs.mu.Lock()
			delete(cs.listening, l)
			cs.mu.Unlock()
		}
	}
	if creator {
		// Not bound to ctx: other callers may wait for this creation.
		cctx, cancel := context.WithTimeout(l.rootCtx, startTimeout)
		id, err := cs.create(cctx, l, key)
		cancel()
		cs.mu.Lock()
		if err != nil {
			nc.err = fmt.Errorf("create the browser context %q: %w", name, err)
			if cs.byName[key] == nc {
				delete(cs.byName, key)
			}
		} else {
			nc.id = id
			cs.byID[nc.id] = nc
		}
		cs.mu.Unlock()
		close(nc.ready)
	}
	select {
	case <-nc.ready:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if nc.err != nil {
		release()
		return nil, nil, nc.err
	}
	return nc, release, nil
}

// create makes the browser context of key in l: shared with the other
// processes on l's browser when they share its tabs' ids, else one of this
// connection's, disposed of with it.
func (cs *contextSet) create(ctx context.Context, l *launch, key string) (cdp.BrowserContextID, error) {
	if cs.sharedOn(l) {
		return cs.sharedContext(ctx, l, key)
	}
	res, err := chromedp.CallBrowser(ctx, target.CreateBrowserContext, target.CreateBrowserContextParams{DisposeOnDetach: new(true)})
	if err != nil {
		return "", err
	}
	return res.BrowserContextID, nil
}

// made reports whether id is one of the named contexts.
func (cs *contextSet) made(id cdp.BrowserContextID) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byID[id] != nil
}

// launchOf returns the launch that has the context of key, nil when
// none has it.
func (cs *contextSet) launchOf(key string) *launch {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if nc := cs.byName[key]; nc != nil {
		return nc.launch
	}
	return nil
}

// launchOfID returns the launch that has the context id, nil when it is
// none of the named contexts.
func (cs *contextSet) launchOfID(id cdp.BrowserContextID) *launch {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if nc := cs.byID[id]; nc != nil {
		return nc.launch
	}
	return nil
}

// addPage records a page of the context.
func (cs *contextSet) addPage(nc *namedContext, id target.ID) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byID[nc.id] != nc {
		return // disposed of meanwhile
	}
	nc.pages[id] = true
	cs.byTarget[id] = nc
}

// nameOf returns the name of the context of a page, "" for the default one.
func (cs *contextSet) nameOf(id target.ID) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if nc := cs.byTarget[id]; nc != nil {
		return nc.name
	}
	return ""
}

// pageClosed forgets a page and disposes of its context when it was the
// last page in it. It is idempotent.
func (cs *contextSet) pageClosed(id target.ID) {
	cs.mu.Lock()
	nc := cs.byTarget[id]
	if nc != nil {
		delete(cs.byTarget, id)
		delete(nc.pages, id)
	}
	cs.mu.Unlock()
	if nc != nil {
		cs.disposeIfEmpty(nc)
	}
}

// disposeIfEmpty disposes of a context that has no page and no user, and
// waits for Chrome to confirm.
func (cs *contextSet) disposeIfEmpty(nc *namedContext) {
	cs.mu.Lock()
	if len(nc.pages) > 0 || nc.users > 0 || nc.id == "" || cs.byID[nc.id] != nc {
		cs.mu.Unlock()
		return
	}
	cs.forgetLocked(nc)
	cs.mu.Unlock()
	defer nc.markGone()
	if cs.sharedOn(nc.launch) {
		cs.disposeShared(nc)
		return
	}
	dispose(nc)
}

// sharedOn reports whether the contexts of l are shared with other
// processes (ContextIDs).
func (cs *contextSet) sharedOn(l *launch) bool { return cs.shared != nil && l.identity != "" }

// forgetLocked removes a context from the set; the caller disposes of it.
func (cs *contextSet) forgetLocked(nc *namedContext) {
	if cs.byName[nc.key] == nc {
		delete(cs.byName, nc.key)
	}
	if nc.id != "" && cs.byID[nc.id] == nc {
		delete(cs.byID, nc.id)
	}
	for id := range nc.pages {
		delete(cs.byTarget, id)
	}
}

// dispose asks Chrome to drop a context, which closes any page left in it.
func dispose(nc *namedContext) {
	if nc.launch.gone() {
		return
	}
	ctx, cancel := context.WithTimeout(nc.launch.rootCtx, disposeTimeout)
	defer cancel()
	_, _ = chromedp.CallBrowser(ctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: nc.id})
}

// closeAll forgets every context and disposes of those of a live Chrome.
func (cs *contextSet) closeAll() {
	cs.mu.Lock()
	var all []*namedContext
	for _, nc := range cs.byID {
		all = append(all, nc)
	}
	for _, nc := range all {
		cs.forgetLocked(nc)
	}
	cs.mu.Unlock()
	for _, nc := range all {
		if !cs.sharedOn(nc.launch) { // other processes' pages may be in it
			dispose(nc)
		}
		nc.markGone()
	}
}

// contextOf returns the context the page id is in, or nil.
func (cs *contextSet) contextOf(id target.ID) *namedContext {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byTarget[id]
}

// awaitGone waits, until ctx ends and at most disposeTimeout, for the
// disposal of nc when it was forgotten (its last page closed): whichever of
// close_page and Chrome's event came first disposes of it, and close_page
// returns when Chrome dropped it. A context that still has pages returns at
// once.
func (cs *contextSet) awaitGone(ctx context.Context, nc *namedContext) {
	cs.mu.Lock()
	live := nc.id != "" && cs.byID[nc.id] == nc
	cs.mu.Unlock()
	if live {
		return
	}
	timer := time.NewTimer(disposeTimeout)
	defer timer.Stop()
	select {
	case <-nc.gone:
	case <-ctx.Done():
	case <-timer.C:
	}
}

// onBrowserEvent runs in chromedp's browser loop: it must return fast and
// send no command. It learns of pages the contexts' pages open (popups) and
// of pages that close without close_page (window.close).
func (cs *contextSet) onBrowserEvent(ev any) {
	switch ev := ev.(type) {
	case *target.EventTargetCreated:
		info := ev.TargetInfo
		if info.Type != "page" || info.BrowserContextID == "" {
			return
		}
		cs.mu.Lock()
		if nc := cs.byID[info.BrowserContextID]; nc != nil {
			nc.pages[info.TargetID] = true
			cs.byTarget[info.TargetID] = nc
		}
		cs.mu.Unlock()
	case *target.EventTargetDestroyed:
		cs.mu.Lock()
		_, ours := cs.byTarget[ev.TargetID]
		cs.mu.Unlock()
		if ours {
			// Not here: disposal is a command, and this loop reads its answer.
			go cs.pageClosed(ev.TargetID)
		}
	}
}
