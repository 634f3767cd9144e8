package browser

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Request is one HTTP request of a page, one hop of a redirect chain, as the
// network collector last saw it. A Request handed out is a copy: it does not
// change when more events arrive; ask the collector again for news.
type Request struct {
	// ID is the reqid: it counts from 1 per page and never changes.
	ID int
	// Gen is the page generation of the document the request belongs to.
	Gen uint64

	RequestID network.RequestID
	LoaderID  cdp.LoaderID
	FrameID   cdp.FrameID
	// Navigation marks a request of the main frame that loads a new document.
	Navigation bool

	URL    string
	Method string
	Type   network.ResourceType
	// Headers are the request headers as sent, raw when Chrome reported them.
	Headers     network.Headers
	HasPostData bool
	// PostData is the body Chrome included in the event; nil when it left a
	// long body out (fetch it with Page.RequestBody).
	PostData []byte

	// Response is nil until the response headers arrive.
	Response *network.Response
	// ResponseHeaders are the raw response headers when Chrome reported them.
	ResponseHeaders network.Headers
	// ExtraStatus is the status the network stack reported separately; it is
	// all there is of a response that arrived after its document went away.
	ExtraStatus int64
	// Failure is Chrome's error text (net::ERR_…) of a request that failed.
	Failure  string
	Canceled bool
	Blocked  network.BlockedReason
	// FromCache says the response came from the memory cache.
	FromCache bool
	// Finished says no more events are expected: loaded, failed or redirected.
	Finished bool
	// EncodedLength is the number of bytes received, when finished.
	EncodedLength float64

	// Start, ResponseAt and End are monotonic seconds; 0 when not reached.
	Start, ResponseAt, End cdp.MonotonicTime
	// Sent is the wall time the request started.
	Sent time.Time

	// RedirectFrom and RedirectTo are the reqids of the hops before and
	// after this one in a redirect chain, 0 for none.
	RedirectFrom, RedirectTo int
}

// Status is what a list shows in brackets: the HTTP status, else the failure
// (net::ERR_…), else "pending".
func (r *Request) Status() string {
	switch {
	case r.Response != nil:
		return strconv.FormatInt(r.Response.Status, 10)
	case r.Failure != "":
		return r.Failure
	case r.ExtraStatus > 0:
		return strconv.FormatInt(r.ExtraStatus, 10)
	}
	return "pending"
}

// Network collects a page's requests from its attach on, filed by document:
// a request belongs to the document that made it (its loader), however late
// its later events arrive. It keeps the current document and the
// PreservedDocuments before it, BucketCap requests each. It sends no command;
// bodies are fetched on demand by Page.ResponseBody and Page.RequestBody.
type Network struct {
	d docSource

	mu      sync.Mutex
	ring    *ring[*Request]
	current uint64                        // generation of the current document
	loaders map[cdp.LoaderID]uint64       // loader → generation of its document
	flights map[network.RequestID]*flight // requests by Chrome's id
	orphans []network.RequestID           // flights made by extra info, oldest first
	started bool                          // the first event was seen

	// The page's fetch and XHR requests in flight, for an action to wait
	// for those it started (WaitRequests): each numbered when sent.
	sent     uint64
	inflight map[network.RequestID]uint64
	landed   chan struct{} // closed, and replaced, when one ends
	// blocks, if set, is called each time WaitRequests is about to wait
	// (tests order their events after it).
	blocks func()
}

// flight is everything Chrome said under one request id: the hops of its
// redirect chain and the extra-info events, which may come before or after
// the hop they belong to (the i-th extra info belongs to the i-th hop).
type flight struct {
	chain     []*Request
	live      int // hops still in the ring
	reqExtra  []network.Headers
	respExtra []*network.EventResponseReceivedExtraInfo
}

// maxOrphans bounds the flights kept for extra-info events whose request
// never showed up (it went to another session, or the page closed).
const maxOrphans = 256

// maxInflight bounds the fetch and XHR requests in flight the collector
// tracks for WaitRequests; a page that keeps more open (streams that never
// end) has them forgotten, and an action waits for none of them.
const maxInflight = 1024

// maxLoaders is how many loaders the collector remembers before it forgets
// those of evicted documents.
const maxLoaders = 512

func newNetwork(d docSource) *Network {
	n := &Network{d: d, loaders: map[cdp.LoaderID]uint64{}, flights: map[network.RequestID]*flight{},
		inflight: map[network.RequestID]uint64{}, landed: make(chan struct{})}
	n.current = d.gen()
	n.ring = newRing(n.current, BucketCap, PreservedDocuments+1, n.dropped)
	return n
}

// dropped forgets a request that left the ring.
func (n *Network) dropped(r *Request) {
	if f := n.flights[r.RequestID]; f != nil {
		f.live--
		if f.live <= 0 {
			delete(n.flights, r.RequestID)
		}
	}
}

// observe runs in the page's event loop: it files the event and returns.
func (n *Network) observe(ev any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.started {
		n.started = true
		n.ring.current().partial = n.d.partialStart()
	}
	switch ev := ev.(type) {
	case *page.EventFrameNavigated:
		n.frameNavigated(ev.Frame)
	case *network.EventRequestWillBeSent:
		n.requestWillBeSent(ev)
	case *network.EventResponseReceived:
		if r := n.last(ev.RequestID); r != nil {
			r.Response, r.ResponseAt, r.Type = ev.Response, ev.Timestamp, ev.Type
		}
	case *network.EventRequestServedFromCache:
		if r := n.last(ev.RequestID); r != nil {
			r.FromCache = true
		}
	case *network.EventLoadingFinished:
		n.land(ev.RequestID)
		if r := n.last(ev.RequestID); r != nil {
			r.Finished, r.End, r.EncodedLength = true, ev.Timestamp, ev.EncodedDataLength
		}
	case *network.EventLoadingFailed:
		n.land(ev.RequestID)
		if r := n.last(ev.RequestID); r != nil {
			r.Finished, r.End = true, ev.Timestamp
			r.Failure, r.Canceled, r.Blocked = ev.ErrorText, ev.Canceled, ev.BlockedReason
		}
	case *network.EventRequestWillBeSentExtraInfo:
		f := n.flight(ev.RequestID)
		f.reqExtra = append(f.reqExtra, ev.Headers)
		f.reconcile()
	case *network.EventResponseReceivedExtraInfo:
		f := n.flight(ev.RequestID)
		f.respExtra = append(f.respExtra, ev)
		f.reconcile()
	}
}

// frameNavigated starts a document on a main-frame navigation, and files the
// loader of a child frame's document under the current document.
func (n *Network) frameNavigated(f *cdp.Frame) {
	if f.ParentID != "" {
		if _, ok := n.loaders[f.LoaderID]; !ok {
			n.loaders[f.LoaderID] = n.current
		}
		return
	}
	prev := n.current
	n.current = n.d.gen()
	n.ring.navigate(n.current)
	// The document that sent the requests in flight is gone: nothing waits
	// for them any more (an action that navigates waits for the navigation).
	n.landAll()
	n.loaders[f.LoaderID] = n.current
	// The navigation request was filed under the document it left; it
	// belongs to the one it made.
	n.ring.move(prev, n.current, func(r *Request) bool {
		if r.Navigation && r.LoaderID == f.LoaderID {
			r.Gen = n.current
			return true
		}
		return false
	})
	// Loaders of evicted documents stay known for a while, so that their
	// late requests are dropped rather than taken for new frames.
	if len(n.loaders) > maxLoaders {
		for l, g := range n.loaders {
			if g < n.ring.oldest() {
				delete(n.loaders, l)
			}
		}
	}
}

// requestWillBeSent files a new request, or the next hop of a redirect.
func (n *Network) requestWillBeSent(ev *network.EventRequestWillBeSent) {
	if _, ok := n.inflight[ev.RequestID]; !ok && (ev.Type == network.ResourceTypeFetch || ev.Type == network.ResourceTypeXHR) {
		if len(n.inflight) >= maxInflight { // requests that never end: forget them
			n.landAll()
		}
		n.sent++
		n.inflight[ev.RequestID] = n.sent
	}
	f := n.flights[ev.RequestID]
	var prev *Request
	if f != nil && len(f.chain) > 0 {
		prev = f.chain[len(f.chain)-1]
	}
	if prev != nil && ev.RedirectResponse != nil {
		prev.Response, prev.ResponseAt = ev.RedirectResponse, ev.Timestamp
		prev.Finished, prev.End = true, ev.Timestamp
	}
	nav := ev.FrameID == n.d.main && ev.Type == network.ResourceTypeDocument
	gen := n.current
	switch {
	case prev != nil:
		gen = prev.Gen // a redirect stays with its chain
	case nav:
		// Filed under the current document until its commit moves it.
	case ev.LoaderID != "":
		if g, ok := n.loaders[ev.LoaderID]; ok {
			gen = g
		} else {
			n.loaders[ev.LoaderID] = gen // a child frame's new document
		}
	}
	req := &Request{
		Gen: gen, RequestID: ev.RequestID, LoaderID: ev.LoaderID, FrameID: ev.FrameID, Navigation: nav,
		URL: ev.Request.URL + ev.Request.URLFragment, Method: ev.Request.Method, Type: ev.Type,
		Headers: ev.Request.Headers, HasPostData: ev.Request.HasPostData,
		Start: ev.Timestamp,
	}
	if ev.WallTime > 0 {
		req.Sent = time.UnixMilli(int64(float64(ev.WallTime) * 1000))
	}
	for _, e := range ev.Request.PostDataEntries {
		req.PostData = append(req.PostData, e.Bytes...)
	}
	if req.Type == "" {
		req.Type = network.ResourceTypeOther
	}
	id := n.ring.add(gen, func(id int) *Request { req.ID = id; return req })
	if id == 0 {
		return // its document is gone
	}
	if f == nil {
		f = n.flight(ev.RequestID)
	}
	if prev != nil {
		prev.RedirectTo, req.RedirectFrom = id, prev.ID
	}
	f.chain = append(f.chain, req)
	f.live++
	f.reconcile()
}

// land notes that a request in flight ended.
func (n *Network) land(id network.RequestID) {
	if _, ok := n.inflight[id]; ok {
		delete(n.inflight, id)
		close(n.landed)
		n.landed = make(chan struct{})
	}
}

// landAll forgets every request in flight, as if each had ended.
func (n *Network) landAll() {
	if len(n.inflight) > 0 {
		clear(n.inflight)
		close(n.landed)
		n.landed = make(chan struct{})
	}
}

// RequestMark is where the page's requests stood at one moment, for
// WaitRequests.
type RequestMark uint64

// Mark returns where the page's fetch and XHR requests stand now.
func (n *Network) Mark() RequestMark {
	n.mu.Lock()
	defer n.mu.Unlock()
	return RequestMark(n.sent)
}

// WaitRequests waits until every fetch or XHR request the page sent since
// m has ended (loaded or failed), until until at the latest, or ctx ends.
// It reports whether it waited: whether any was in flight when it began.
// It knows only the requests Chrome told of so far.
func (n *Network) WaitRequests(ctx context.Context, m RequestMark, until time.Time) (waited bool) {
	for {
		n.mu.Lock()
		pending := false
		for _, seq := range n.inflight {
			if seq > uint64(m) {
				pending = true
				break
			}
		}
		landed := n.landed
		n.mu.Unlock()
		wait := time.Until(until)
		if !pending || wait <= 0 || ctx.Err() != nil {
			return waited
		}
		waited = true
		if n.blocks != nil {
			n.blocks()
		}
		t := time.NewTimer(wait)
		select {
		case <-landed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// flight returns the flight of a request id, making an orphan one if new.
func (n *Network) flight(id network.RequestID) *flight {
	if f := n.flights[id]; f != nil {
		return f
	}
	f := &flight{}
	n.flights[id] = f
	n.orphans = append(n.orphans, id)
	for len(n.orphans) > maxOrphans {
		old := n.orphans[0]
		n.orphans = n.orphans[1:]
		if o := n.flights[old]; o != nil && len(o.chain) == 0 {
			delete(n.flights, old)
		}
	}
	return f
}

// last is the latest hop of a request id, nil when unknown or dropped.
func (n *Network) last(id network.RequestID) *Request {
	f := n.flights[id]
	if f == nil || len(f.chain) == 0 {
		return nil
	}
	return f.chain[len(f.chain)-1]
}

// reconcile gives each hop the extra info of its position.
func (f *flight) reconcile() {
	for i, r := range f.chain {
		if i < len(f.reqExtra) {
			r.Headers = f.reqExtra[i]
		}
		if i < len(f.respExtra) {
			r.ResponseHeaders = f.respExtra[i].Headers
			r.ExtraStatus = f.respExtra[i].StatusCode
		}
	}
}

// genOf returns the generation of the document a request id belongs to.
func (n *Network) genOf(id network.RequestID) (uint64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r := n.last(id); r != nil {
		return r.Gen, true
	}
	return 0, false
}

// List returns copies of the requests of the current document, or with
// preserved those of the kept documents too, oldest first.
func (n *Network) List(preserved bool) ([]Request, Completeness) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rs, info := n.ring.list(preserved)
	out := make([]Request, len(rs))
	for i, r := range rs {
		out[i] = *r
	}
	return out, info
}

// Get returns a copy of the request with the reqid. A reqid that was given
// out but is no longer kept is an error that says so.
func (n *Network) Get(id int) (Request, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, _, ok := n.ring.get(id); ok {
		return *r, nil
	}
	if n.ring.issued(id) {
		return Request{}, notFoundf("request %d is no longer kept: pagemux keeps the requests of the current document and the %d before it, at most %d each; call list_network_requests for the ids kept", id, PreservedDocuments, BucketCap)
	}
	return Request{}, notFoundf("no request with reqid %d on this page; call list_network_requests for the ids", id)
}

// Latest returns the most recent request of the current document.
func (n *Network) Latest() (Request, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	items := n.ring.current().items
	if len(items) == 0 {
		return Request{}, false
	}
	return *items[len(items)-1].v, true
}

// Network returns the page's network collector.
func (p *Page) Network() *Network { return p.network }

// ErrNoBody says Chrome has no body to give for a request; its message says
// why and what to do.
var ErrNoBody = errors.New("body not available")

// ResponseBody fetches the response body Chrome kept for the request. It
// fails with ErrNoBody when there is none to have: not loaded yet, failed, a
// redirect, or dropped by Chrome (it keeps bodies for a limited time and
// size, and none for streamed or evicted responses). Call it holding the
// page's lock; it does not wait for a pending request.
func (p *Page) ResponseBody(ctx context.Context, r Request) ([]byte, error) {
	switch {
	case r.RedirectTo != 0:
		return nil, fmt.Errorf("%w: a redirect response has no body (see reqid=%d for where it led)", ErrNoBody, r.RedirectTo)
	case r.Response == nil && r.Failure != "":
		return nil, fmt.Errorf("%w: the request failed (%s)", ErrNoBody, r.Failure)
	case r.Response == nil:
		return nil, fmt.Errorf("%w: no response yet; call again once it shows a status", ErrNoBody)
	case !r.Finished:
		return nil, fmt.Errorf("%w: the response is still loading; call again once it finished", ErrNoBody)
	}
	if err := p.refuseTarget(r.URL); err != nil {
		return nil, fmt.Errorf("the body of reqid=%d is not shown: %w", r.ID, err) // urlguard.go
	}
	var body []byte
	err := p.body(ctx, func(ctx context.Context) error {
		res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: r.RequestID})
		body = res.Body
		return err
	})
	return body, err
}

// RequestBody returns the body the request sent: from the event when Chrome
// included it, else fetched. A request without a body is ErrNoBody.
func (p *Page) RequestBody(ctx context.Context, r Request) ([]byte, error) {
	if !r.HasPostData {
		return nil, fmt.Errorf("%w: the request has no body", ErrNoBody)
	}
	if r.PostData != nil {
		return r.PostData, nil
	}
	var body []byte
	err := p.body(ctx, func(ctx context.Context) error {
		res, err := chromedp.Call(ctx, network.GetRequestPostData, network.GetRequestPostDataParams{RequestID: r.RequestID})
		body = res.PostData
		return err
	})
	return body, err
}

// bodyTimeout bounds a body fetch: Chrome answers from memory or not at all.
const bodyTimeout = 10 * time.Second

// body runs a body fetch and explains Chrome's refusals.
func (p *Page) body(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := p.Ready(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, bodyTimeout)
	defer cancel()
	err := p.await(ctx, fn)
	if err == nil {
		return nil
	}
	var dlg *DialogOpenedError
	if errors.As(err, &dlg) || errors.Is(err, ErrPageClosed) || errors.Is(err, context.Canceled) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "No resource with given identifier") || strings.Contains(msg, "No data found") ||
		strings.Contains(msg, "No post data") || strings.Contains(msg, "not available") {
		return fmt.Errorf("%w: Chrome no longer holds it (it keeps bodies for a limited time and size, drops them with old documents, and keeps none of streamed responses)", ErrNoBody)
	}
	return fmt.Errorf("%w: %v", ErrNoBody, err)
}
