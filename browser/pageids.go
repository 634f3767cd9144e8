package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// PageIDs hands out the ids of a shared browser's tabs, alike in every
// process that drives the browser (*cluster.Locks, through etcd).
type PageIDs interface {
	// PageID returns the id of the tab with the CDP target id target, in
	// the browser named browser (Identity); it may wait on the network.
	PageID(ctx context.Context, browser, target string) (int, error)
	// ForgetPage drops the id of a tab that is gone.
	ForgetPage(ctx context.Context, browser, target string) error
}

// ContextIDs is a PageIDs that also shares browser contexts between the
// processes on one browser (*cluster.Locks): with it, SetPageIDs makes the
// named contexts of NewPage (an agent's own, over HTTP) one per name in
// all of them, made by whichever needs it first and kept until the last
// page in it, of any process, closes, so that an agent's pages share
// cookies and storage whichever process opened them and outlive it.
type ContextIDs interface {
	PageIDs
	// BrowserContext returns the context kept for key in browser, or one
	// made with create and kept; see cluster.Locks.BrowserContext.
	BrowserContext(ctx context.Context, browser, key string,
		create func(context.Context) (string, error), exists func(context.Context, string) (bool, error), drop func(string)) (string, error)
	// ForgetBrowserContext drops the key of a context disposed of.
	ForgetBrowserContext(ctx context.Context, browser, key, id string) error
}

// SetPageIDs makes the tabs of an attached Chrome take their ids from ids,
// so that every pagemux process on that Chrome shows a tab under the same
// id, and attaches to each tab as it appears (watchShared). A Chrome that pagemux launched is this process's alone and keeps
// counting its own. Call it before the first Start.
//
// A tab another process (or the page's own script) opens is then known
// here only once its id came back: chromedp's event loop cannot wait on
// etcd, so the tab is registered from a goroutine, and events about it
// that come meanwhile are kept for it (pendingTab).
//
// When ids is a ContextIDs, browser contexts are shared too.
func (b *Browser) SetPageIDs(ids PageIDs) {
	b.pageIDs = ids
	b.contexts.shared, _ = ids.(ContextIDs)
}

// Attaches reports whether the browser is one pagemux attaches to, which
// other processes may drive too, rather than one it launches.
func (b *Browser) Attaches() bool { return b.cfg.Attaches() }

// pageIDWait bounds the wait for one tab's id.
const pageIDWait = 10 * time.Second

// errTabGone is register's answer for a tab that closed before it had
// its id.
var errTabGone = errors.New("the tab closed before it had its page id")

// pendingTab is what the event loop saw of a tab waiting for its id.
type pendingTab struct {
	url, title string
	gone       bool
}

// sharedIDs reports whether the tabs of l take their ids from PageIDs.
func (b *Browser) sharedIDs(l *launch) bool { return b.pageIDs != nil && l.identity != "" }

// sharedID returns the id of a tab of l from PageIDs, 0 when l's ids are
// this process's own.
func (b *Browser) sharedID(l *launch, tid target.ID) (int, error) {
	if !b.sharedIDs(l) {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(b.quitContext(), pageIDWait)
	defer cancel()
	id, err := b.pageIDs.PageID(ctx, l.identity, string(tid))
	if err != nil {
		return 0, fmt.Errorf("no page id for the new tab: %w", err)
	}
	return id, nil
}

// tabCreated notes, in the event loop, a tab of l that waits for its id
// and registers it from a goroutine, trying again while PageIDs fails,
// until the tab or the browser is gone.
func (b *Browser) tabCreated(l *launch, info *target.Info) {
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[target.ID]*pendingTab{}
	}
	if _, known := b.byTarget[info.TargetID]; !known {
		b.pending[info.TargetID] = &pendingTab{url: info.URL, title: info.Title}
	}
	b.mu.Unlock()
	go func() {
		delay := 100 * time.Millisecond
		for {
			p, err := b.register(l, info.TargetID, info.URL)
			if err == nil {
				b.noteOpener(p, info.OpenerID)
				b.watchShared(p)
				return
			}
			if errors.Is(err, errTabGone) {
				return
			}
			b.log.Warn("a new tab is not shown until it has its page id; trying again", "target", info.TargetID, "in", delay, "error", err)
			select {
			case <-time.After(delay):
			case <-l.dead:
				return
			case <-b.quitContext().Done():
				return
			}
			delay = min(2*delay, 5*time.Second)
		}
	}()
}

// watchShared attaches to a tab of a shared browser at once, rather than at
// its first call here, so that this process collects its console and
// network from its start as the process that opened it does: an agent's
// list_console_messages and list_network_requests then answer alike on
// every replica, and nothing is lost with the replica that opened the tab.
func (b *Browser) watchShared(p *Page) {
	go func() {
		if err := p.attach(b.quitContext()); err != nil && !p.Closed() {
			b.log.Debug("attaching to a tab of the shared browser", "page", p.ID, "error", err)
		}
	}()
}

// pendingEvent keeps what a target event says of a tab that waits for its
// id; it reports whether the tab was one. It runs in the event loop.
func (b *Browser) pendingEvent(ev any) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *target.EventTargetInfoChanged:
		if t := b.pending[ev.TargetInfo.TargetID]; t != nil {
			t.url, t.title = ev.TargetInfo.URL, ev.TargetInfo.Title
			return true
		}
	case *target.EventTargetDestroyed:
		if t := b.pending[ev.TargetID]; t != nil {
			t.gone = true
			return true
		}
	}
	return false
}

// forgetTab drops the shared id of a tab of l that closed.
func (b *Browser) forgetTab(l *launch, tid target.ID) {
	if !b.sharedIDs(l) {
		return
	}
	// Not the quit context: a tab that closes as pagemux exits is gone too.
	ctx, cancel := context.WithTimeout(context.Background(), pageIDWait)
	defer cancel()
	if err := b.pageIDs.ForgetPage(ctx, l.identity, string(tid)); err != nil {
		b.log.Debug("forgetting a closed tab's page id", "target", tid, "error", err)
	}
}

// sharedContext returns the browser context of key in l from ContextIDs,
// made with disposeOnDetach off when none is kept: the context must
// outlive this process's connection.
func (cs *contextSet) sharedContext(ctx context.Context, l *launch, key string) (cdp.BrowserContextID, error) {
	create := func(ctx context.Context) (string, error) {
		res, err := chromedp.CallBrowser(ctx, target.CreateBrowserContext, target.CreateBrowserContextParams{DisposeOnDetach: new(false)})
		if err != nil {
			return "", err
		}
		return string(res.BrowserContextID), nil
	}
	exists := func(ctx context.Context, id string) (bool, error) {
		res, err := chromedp.CallBrowser(ctx, target.GetBrowserContexts, cdp.Empty{})
		if err != nil {
			return false, err
		}
		return slices.Contains(res.BrowserContextIDs, cdp.BrowserContextID(id)), nil
	}
	drop := func(id string) {
		dctx, cancel := context.WithTimeout(l.rootCtx, disposeTimeout)
		defer cancel()
		_, _ = chromedp.CallBrowser(dctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: cdp.BrowserContextID(id)})
	}
	id, err := cs.shared.BrowserContext(ctx, l.identity, contextKey(key), create, exists, drop)
	return cdp.BrowserContextID(id), err
}

// disposeShared disposes of a shared context that has no page left in
// Chrome, of any process, and drops its key; one that still has pages
// (another process's) is only forgotten here.
func (cs *contextSet) disposeShared(nc *namedContext) {
	l := nc.launch
	if l.gone() {
		return
	}
	ctx, cancel := context.WithTimeout(l.rootCtx, disposeTimeout)
	defer cancel()
	infos, err := chromedp.Targets(ctx) // bounded: a stuck Chrome must not hang a close
	if err != nil {
		return
	}
	for _, info := range infos {
		if info.BrowserContextID == nc.id {
			return
		}
	}
	_, _ = chromedp.CallBrowser(ctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: nc.id})
	_ = cs.shared.ForgetBrowserContext(ctx, l.identity, contextKey(nc.key), string(nc.id))
}

// contextKey is a contextSet key as it goes in etcd: its scope and its
// name, each escaped, joined by a slash.
func contextKey(key string) string {
	scope, name, _ := strings.Cut(key, "\x00")
	return url.PathEscape(scope) + "/" + url.PathEscape(name)
}
