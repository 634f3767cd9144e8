package browser

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/target"
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

// SetPageIDs makes the tabs of an attached Chrome take their ids from ids,
// so that every pagemux process on that Chrome shows a tab under the same
// id. A Chrome that pagemux launched is this process's alone and keeps
// counting its own. Call it before the first Start.
//
// A tab another process (or the page's own script) opens is then known
// here only once its id came back: chromedp's event loop cannot wait on
// etcd, so the tab is registered from a goroutine, and events about it
// that come meanwhile are kept for it (pendingTab).
func (b *Browser) SetPageIDs(ids PageIDs) { b.pageIDs = ids }

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
