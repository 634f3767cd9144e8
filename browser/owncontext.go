package browser

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// With Config.OwnContext, pagemux shares its Chrome with others, each in a
// browser context of its own, and keeps to its own: the tabs of its context
// and of the named contexts it made (ours), and the requests of their frames
// (ownsRequest). Interception on the browser's session (guardBrowser) pauses
// the requests of every context's tabs; those of frames not pagemux's go on
// untouched: they get none of its origin headers (a secret such as a
// preview's token) and are not judged by its URL policy, which is its
// agents', not the others'.

// check says what is wrong with b's config, and what was set on b before
// Start, that no start can mend.
func (b *Browser) check() error {
	switch c := b.cfg; {
	case c.OwnContext && !c.Attaches():
		return fmt.Errorf("%w: a context of its own is for a Chrome pagemux attaches to (give BrowserURL or WSEndpoint); a Chrome it launches is its own already", ErrStart)
	case c.OwnContext && len(c.Pool) > 0:
		return fmt.Errorf("%w: a context of its own is for one attached Chrome, not a pool", ErrStart)
	case c.OwnContext && b.pageIDs != nil:
		return fmt.Errorf("%w: a context of its own shares no page with other processes, so it takes no shared page ids", ErrStart)
	}
	return nil
}

// ours reports whether a tab of l is pagemux's to drive: any, but with
// Config.OwnContext only those of its own context and of the named contexts
// it made.
func (b *Browser) ours(l *launch, info *target.Info) bool {
	return l.ownContext == "" || info.BrowserContextID == l.ownContext || b.contexts.made(info.BrowserContextID)
}

// ownership is whose a paused request is.
type ownership int

const (
	notOurs ownership = iota // another context's: it goes on untouched
	ours                     // pagemux's: the URL policy's, with the origin headers
	// unsure: a frame of none of pagemux's pages as far as it knows, but a
	// tab of its own did not answer the check of its frames. The request is
	// judged by the URL policy (a frame of a page of its own must not get
	// past it) and gets no origin headers (another's must not get them).
	unsure
)

// ownsRequest says whose a paused request is: any is pagemux's, but with
// Config.OwnContext only one of a frame of its pages. A tab's main frame has
// the tab's id; its other frames are seen as they attach, on the tab's own
// session, which chromedp reads on a goroutine of its own: Chrome sent a
// frame's frameAttached before its first request, but that event may still
// wait in its tab's queue when the request's pause arrives on the browser's
// session. So a frame not known yet is looked for again after a round trip
// on each tab of pagemux's (syncTabs): by then each tab has handled what
// Chrome sent it before.
func (b *Browser) ownsRequest(ctx context.Context, l *launch, ev *fetch.EventRequestPaused) ownership {
	known := func() bool { return b.pageByTarget(target.ID(ev.FrameID)) != nil || b.frames.has(ev.FrameID) }
	if l.ownContext == "" || known() {
		return ours
	}
	synced := b.syncTabs(ctx, l)
	switch {
	case known():
		return ours
	case synced:
		return notOurs
	}
	return unsure
}

// syncWait bounds a tab's round trip in syncTabs. The command is answered by
// the browser process, not the page, so a busy page does not hold it up.
const syncWait = 2 * time.Second

// syncTabs makes a round trip on the session of each attached tab of l,
// all at once, and reports whether every one answered within syncWait:
// chromedp hands a tab its answers and events in the order Chrome sent
// them, so each tab's events sent before its answer have been handled.
func (b *Browser) syncTabs(ctx context.Context, l *launch) bool {
	b.mu.Lock()
	var tabs []*Page
	for _, p := range b.byTarget {
		if p.launch == l && !p.Closed() {
			tabs = append(tabs, p)
		}
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	var unanswered atomic.Bool
	var wg sync.WaitGroup
	for _, p := range tabs {
		select {
		case <-p.attached:
		default: // not attached yet: it has handled no event to wait for
			continue
		}
		if p.attachErr != nil {
			continue
		}
		wg.Go(func() {
			cctx, cancel := p.Context(ctx)
			defer cancel()
			if _, err := chromedp.Call(cctx, target.GetTargetInfo, target.GetTargetInfoParams{}); err != nil && !p.Closed() {
				unanswered.Store(true)
			}
		})
	}
	wg.Wait()
	return !unanswered.Load()
}

// frameSet is the frames of the pages besides their main frames, each with
// its page. Its zero value is ready.
type frameSet struct {
	mu  sync.Mutex
	ids map[cdp.FrameID]*Page
}

// pruneAt is the size at which a frameSet drops the frames of closed pages,
// which may close without detaching them.
const pruneAt = 4096

// observe is a page observer (ObservePages) that keeps the page's frames.
func (fs *frameSet) observe(p *Page) func(ev any) {
	return func(ev any) {
		switch ev := ev.(type) {
		case *page.EventFrameAttached:
			fs.mu.Lock()
			if fs.ids == nil {
				fs.ids = map[cdp.FrameID]*Page{}
			}
			if len(fs.ids) >= pruneAt {
				maps.DeleteFunc(fs.ids, func(_ cdp.FrameID, p *Page) bool { return p.Closed() })
			}
			fs.ids[ev.FrameID] = p
			fs.mu.Unlock()
		case *page.EventFrameDetached:
			if ev.Reason == page.FrameDetachedReasonRemove {
				fs.mu.Lock()
				delete(fs.ids, ev.FrameID)
				fs.mu.Unlock()
			}
		}
	}
}

func (fs *frameSet) has(id cdp.FrameID) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := fs.ids[id]
	return p != nil && !p.Closed()
}
