// Package ui is pagemux's live view: one page, served at /ui, that shows
// who does what on which tab and who waits on whom. It shows the agents
// (state, calls in flight, pages), each page (URL, title, owner, a
// thumbnail kept fresh while someone looks), the lock queues, and a
// timeline of the calls on each page, pushed to the page as they change
// (server-sent events at /ui/events, at most one push per Options.Push).
//
// A View is a tools.Observer: it learns of calls as they queue, start and
// end, and reads the rest (pages, locks) from its Source when it builds a
// push, which it does only while someone looks. With no viewer it keeps
// the recent calls and does nothing else: no thumbnails, no pushes.
//
// The View authenticates no one: it is served behind the --http listener's
// admin tokens (serve.HTTPOptions.UI), or on a loopback --ui address. It
// shows every agent's data to whoever reaches it.
package ui

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/tools"
)

// Source is what the View reads from the tools side: *tools.Server.
type Source interface {
	// LocksFor is every lock, its holder and waiters (tools.Server.LocksFor).
	LocksFor(ctx context.Context) []tools.LockState
	// PagesView is every open page with its owner (tools.Server.PagesView).
	PagesView() []tools.PageView
}

// Options are a View's settings; the zero value is ready.
type Options struct {
	// Log receives the view's logs; nil discards them.
	Log *slog.Logger
	// Window is how long the timeline keeps an ended call; 0: DefaultWindow.
	Window time.Duration
	// Push is the least time between two pushes to a viewer; 0: DefaultPush.
	Push time.Duration
	// Thumbnails size and pace the pages' thumbnails.
	Thumbnails browser.ThumbnailOptions
	// Replica, with --etcd, names this process among the replicas (as the
	// cluster's lock holders name it: host:pid), shown in the header.
	Replica string
	// Records, if set, is served at /ui/records/ (the session records of
	// package record); else that path says how to get them.
	Records http.Handler
}

// The defaults of Options.
const (
	DefaultWindow = 2 * time.Minute
	DefaultPush   = 200 * time.Millisecond
)

// maxCalls bounds the ended calls the timeline keeps, whatever Window says.
const maxCalls = 2000

// refresh is how often a push goes out while someone looks even when no
// call came: held locks' durations and pages' titles change by themselves.
const refresh = time.Second

// View is the live view of one pagemux server. Make one with New, give it
// to tools.Options.Observers, then Attach the server. Close ends its
// thumbnails and streams.
type View struct {
	opts Options
	log  *slog.Logger
	src  atomic.Pointer[Source]

	mu      sync.Mutex
	calls   map[uint64]*call // in flight
	ended   []*call          // oldest first
	viewers map[*viewer]struct{}
	stop    context.CancelFunc // ends the push loop; nil when no one looks
	thumbs  map[int]*thumb     // by page id, while someone looks
	closed  bool

	dirty   chan struct{} // a call changed since the last push
	frames  atomic.Uint64 // thumbnail frames received, ever
	running atomic.Int64  // thumbnail goroutines not yet returned
}

// New returns a View; it shows nothing until Attach.
func New(opts Options) *View {
	opts.Window, opts.Push = cmp.Or(opts.Window, DefaultWindow), cmp.Or(opts.Push, DefaultPush)
	v := &View{opts: opts, log: opts.Log, calls: map[uint64]*call{}, viewers: map[*viewer]struct{}{},
		thumbs: map[int]*thumb{}, dirty: make(chan struct{}, 1)}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	return v
}

// Attach gives the View the server it shows.
func (v *View) Attach(src Source) { v.src.Store(&src) }

// Frames counts the thumbnail frames the View has received from Chrome:
// it grows only while someone looks.
func (v *View) Frames() uint64 { return v.frames.Load() }

// Close ends every stream and thumbnail; the View serves no more.
func (v *View) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	v.stopLocked()
	for vw := range v.viewers {
		close(vw.gone)
		delete(v.viewers, vw)
	}
}

// markDirty asks for a push.
func (v *View) markDirty() {
	select {
	case v.dirty <- struct{}{}:
	default:
	}
}
