package browser

import (
	"fmt"
	"maps"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
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

// ownsRequest reports whether a paused request is one of pagemux's: any,
// but with Config.OwnContext only one of a frame of its pages. A tab's main
// frame has the tab's id; its other frames are seen as they attach, before
// their first request.
func (b *Browser) ownsRequest(l *launch, ev *fetch.EventRequestPaused) bool {
	return l.ownContext == "" || b.pageByTarget(target.ID(ev.FrameID)) != nil || b.frames.has(ev.FrameID)
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
