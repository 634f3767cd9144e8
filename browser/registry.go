package browser

// This file is the browser's page registry: the tabs of every Chrome by
// their small ids, their openers, the selection, and opening and closing
// tabs.

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

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
