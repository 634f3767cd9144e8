// Package browser owns one Chrome (or, with Config.Pool, a few) and what is
// done in it:
//
//   - Launch: it launches Chrome with a profile of its own, or attaches to a
//     running one (the user's own, found by its DevToolsActivePort:
//     autoconnect*.go), on the first call that needs it, relaunches or
//     reattaches after a crash, and closes one it launched when idle
//     (launch.go, config.go, profile*.go, idle.go); the
//     DevTools address other clients such as Lighthouse connect to
//     (devtools.go).
//   - Pages: it tracks Chrome's tabs as Pages with small ids, alike in every
//     process that shares a browser (registry.go: the registry, the
//     selection, opening and closing tabs; page.go, pageids.go), in named or own
//     browser contexts (contexts.go, owncontext.go), and fences the commands
//     and events of a stale generation (fence.go).
//   - Actions: navigation, scripts, emulation, headers, downloads and the
//     waits after them (actions.go, navigate.go, emulate.go, wait.go …);
//     a page's input is its Input view (Page.Input: clicks, keys, typing,
//     forms, drags, uploads, by uid or selector: actions.go, keys.go,
//     forms.go, selector.go) and its context's cookies, web storage and
//     IndexedDB its Storage view (Page.Storage, state.go); network routes
//     that mock, fail, delay or change requests (routes.go); all kept to a
//     URL policy (urlguard.go).
//   - Collectors: a page's console messages, network requests and DevTools
//     issues, kept per document (collect*.go).
//   - Captures: snapshots of the accessibility tree (snapshot*.go), and a
//     page's Capture view (Page.Capture): screenshots, screencasts, traces,
//     heap snapshots, HAR, PDF and the live view's thumbnails (capture_*.go,
//     har.go, pdf.go, thumbnail.go).
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
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/target"
	"golang.org/x/sync/semaphore"
)

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
	// preset is what PresetState gives each default context (state.go).
	preset presetState
	// frames are the frames of the pages (owncontext.go, routes.go).
	frames frameSet
	// routes are the network routes (routes.go).
	routes routeSet
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
	b.ObservePages(b.frames.observe)  // whose a request is: Config.OwnContext's, and the routes'
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
