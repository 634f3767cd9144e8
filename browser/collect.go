package browser

import (
	"fmt"
	"slices"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
)

// The collectors of a page: its console messages (collect_console.go), with
// the DevTools issues among them (collect_issues.go), and its network
// requests (collect_network.go). This file feeds them the page's events and
// keeps their records by document.

// What the collectors keep of a page: the records of its current document
// and of the documents before it, each bounded.
const (
	// PreservedDocuments is how many documents before the current one keep
	// their records, for includePreservedMessages and includePreservedRequests.
	PreservedDocuments = 3
	// BucketCap is how many records one document keeps; past it the oldest
	// go, and the bucket counts them.
	BucketCap = 1000
)

// observeCollectors makes the console and network collectors of a new page
// and returns the func that feeds them the page's events. It runs in
// register, before the page is attached or visible to anyone else.
func observeCollectors(p *Page) func(ev any) {
	d := docSource{
		main:   cdp.FrameID(p.TargetID),
		gen:    p.Generation,
		closed: p.Closed,
		url:    p.URL,
	}
	p.network = newNetwork(d)
	p.console = newConsole(d, p.network)
	return feedCollectors(d, p.network, p.console)
}

// feedCollectors returns the func that hands each event to the collectors,
// the network first, so that a log entry about a request finds it.
func feedCollectors(d docSource, n *Network, c *Console) func(ev any) {
	return func(ev any) {
		// The generation decides: once the page closed, its events belong to
		// no document anyone can ask about.
		if d.closed() {
			return
		}
		n.observe(ev)
		c.observe(ev)
	}
}

// docSource is what a collector needs to know of its page, as funcs so that
// tests can feed a collector events without Chrome.
type docSource struct {
	main   cdp.FrameID   // the main frame, whose navigations start documents
	gen    func() uint64 // the page's generation, already bumped by a navigation
	closed func() bool
	url    func() string // the page's URL, to tell a late attach
}

// partialStart reports whether a collector that sees its first event now
// missed the start of the document: the page had loaded something before
// pagemux attached to it (a popup, or a tab of an attached browser).
func (d docSource) partialStart() bool {
	u := d.url()
	return u != "" && u != "about:blank"
}

// ring is the bounded history of a page's records of one kind: a bucket per
// document, the current one last, each document named by the page generation
// it began with. Ids count from 1 per page and stay with their record. A ring
// is not safe for concurrent use: its collector locks.
type ring[T any] struct {
	cap, keep int
	buckets   []*docBucket[T] // oldest first; the last is the current document
	lastID    int
	// onDrop is told of every record that leaves the ring.
	onDrop func(T)
}

// bucket holds the records of one document in id order.
type docBucket[T any] struct {
	gen     uint64
	items   []ringItem[T]
	dropped int  // records dropped because the bucket was full
	partial bool // recording began after the document started
}

type ringItem[T any] struct {
	id int
	v  T
}

// newRing returns a ring with one empty bucket for the document of gen.
func newRing[T any](gen uint64, capacity, keep int, onDrop func(T)) *ring[T] {
	return &ring[T]{cap: capacity, keep: keep, onDrop: onDrop, buckets: []*docBucket[T]{{gen: gen}}}
}

// current is the bucket of the current document.
func (r *ring[T]) current() *docBucket[T] { return r.buckets[len(r.buckets)-1] }

// bucket returns the bucket of the document of gen, nil when that document
// is no longer kept (or never was).
func (r *ring[T]) bucket(gen uint64) *docBucket[T] {
	for i := len(r.buckets) - 1; i >= 0; i-- {
		if r.buckets[i].gen == gen {
			return r.buckets[i]
		}
	}
	return nil
}

// navigate starts the bucket of a new current document and forgets the
// documents past keep.
func (r *ring[T]) navigate(gen uint64) {
	r.buckets = append(r.buckets, &docBucket[T]{gen: gen})
	for len(r.buckets) > r.keep {
		for _, it := range r.buckets[0].items {
			r.drop(it.v)
		}
		r.buckets = slices.Delete(r.buckets, 0, 1)
	}
}

// oldest is the generation of the oldest document kept.
func (r *ring[T]) oldest() uint64 { return r.buckets[0].gen }

// add files a record under the document of gen and returns its new id, or 0
// when that document is no longer kept: then the record is dropped. mk gets
// the id before the record is filed.
func (r *ring[T]) add(gen uint64, mk func(id int) T) int {
	b := r.bucket(gen)
	if b == nil {
		return 0
	}
	r.lastID++
	b.insert(r, ringItem[T]{id: r.lastID, v: mk(r.lastID)})
	return r.lastID
}

// insert keeps the bucket in id order and within its cap.
func (b *docBucket[T]) insert(r *ring[T], it ringItem[T]) {
	i, _ := slices.BinarySearchFunc(b.items, it.id, func(x ringItem[T], id int) int { return x.id - id })
	b.items = slices.Insert(b.items, i, it)
	if len(b.items) > r.cap {
		r.drop(b.items[0].v)
		b.items = slices.Delete(b.items, 0, 1)
		b.dropped++
	}
}

func (r *ring[T]) drop(v T) {
	if r.onDrop != nil {
		r.onDrop(v)
	}
}

// move refiles the records for which match holds from the bucket of gen
// from to the bucket of gen to; their ids do not change.
func (r *ring[T]) move(from, to uint64, match func(T) bool) {
	src, dst := r.bucket(from), r.bucket(to)
	if src == nil || dst == nil || src == dst {
		return
	}
	var kept []ringItem[T]
	for _, it := range src.items {
		if match(it.v) {
			dst.insert(r, it)
		} else {
			kept = append(kept, it)
		}
	}
	src.items = kept
}

// get returns the record with the id and the generation of its document.
func (r *ring[T]) get(id int) (v T, gen uint64, ok bool) {
	for _, b := range r.buckets {
		if i, found := slices.BinarySearchFunc(b.items, id, func(x ringItem[T], id int) int { return x.id - id }); found {
			return b.items[i].v, b.gen, true
		}
	}
	return v, 0, false
}

// issued reports whether the id was ever given out, so that a missing
// record can be told apart from a mistyped id.
func (r *ring[T]) issued(id int) bool { return id >= 1 && id <= r.lastID }

// list returns the records of the current document, or with preserved those
// of every kept document, oldest document first, each in id order; and what
// the listed buckets say of their completeness.
func (r *ring[T]) list(preserved bool) (out []T, info Completeness) {
	bs := r.buckets[len(r.buckets)-1:]
	if preserved {
		bs = r.buckets
	}
	for _, b := range bs {
		for _, it := range b.items {
			out = append(out, it.v)
		}
		info.Dropped += b.dropped
		info.Partial = info.Partial || b.partial
	}
	return out, info
}

// Completeness says what a listing lacks.
type Completeness struct {
	// Dropped counts the records the listed documents lost to BucketCap.
	Dropped int
	// Partial says that recording began after a listed document started:
	// pagemux attached to the page late, so earlier records are missing.
	Partial bool
}

// ErrNotFound means a msgid or reqid names no record the page keeps.
const ErrNotFound Error = "not found"

// notFound is an ErrNotFound whose message says what is missing and what to
// do, without the sentinel's text.
type notFound struct{ msg string }

func (e *notFound) Error() string { return e.msg }
func (e *notFound) Unwrap() error { return ErrNotFound }

func notFoundf(format string, args ...any) error {
	return &notFound{fmt.Sprintf(format, args...)}
}

// release frees what a closed page holds: its requests and console
// messages, its snapshot uids. Browser keeps only why the page went away
// (Browser.gone), but whoever still holds the Page (a call in flight, an
// observer) would otherwise keep its records too. Events that arrive later
// are dropped by feedCollectors, which checks Closed first, so nothing
// refills them.
func (p *Page) release() {
	if n := p.network; n != nil {
		n.release()
	}
	if c := p.console; c != nil {
		c.release()
	}
	p.UIDs.Reset()
}

// release empties the collector, keeping it usable: a call that got the
// page before it closed may still list it, and sees nothing.
func (n *Network) release() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ring = newRing(n.current, BucketCap, PreservedDocuments+1, n.dropped)
	n.loaders = map[cdp.LoaderID]uint64{}
	n.flights = map[network.RequestID]*flight{}
	n.orphans = nil
}

// release empties the collector, as Network.release does.
func (c *Console) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ring = newRing[*ConsoleMessage](c.current, BucketCap, PreservedDocuments+1, nil)
	c.contexts = map[runtime.ExecutionContextID]uint64{}
	c.unique = map[string]runtime.ExecutionContextID{}
}
