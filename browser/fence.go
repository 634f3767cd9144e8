package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// This file fences the commands pagemux sends to an attached Chrome. Several
// pagemux processes may drive one Chrome, each holding a page's lock in a
// lock service (etcd) under a lease that can expire while a call runs: a
// process cut off from etcd loses its lock, and another process may take the
// page. Chrome cannot check a lock's token itself, so pagemux checks for it:
// before each command goes on the wire to a fenced session, its Fence must
// say the lock is still held; a command it refuses is answered at once, by
// pagemux, with the Fence's error, and never reaches Chrome.
//
// What is left is the window between the check and Chrome's running of the
// command: a lease that expires in that window is noticed at the next
// command, or by the caller when the call ends. A Chrome that pagemux
// launches is its own, so its commands are not fenced; neither are those of
// other DevTools clients on an attached Chrome (Lighthouse connects to it
// itself).

// Fence says whether the commands of a call may still go to Chrome: nil to
// send one, else why not (such as "the lock of page 3 was lost"). It is
// called before every command of the sessions it fences, on chromedp's
// writing goroutine, so it must be quick and must not block: read a state,
// do not ask a server.
type Fence func() error

// fenceRefused is the protocol error code of a command a Fence refused; it
// is outside the codes Chrome uses.
const fenceRefused = -32099

// fenceSet holds the fences now active, by session id. It is safe for
// concurrent use, and nearly free while it holds none.
type fenceSet struct {
	n   atomic.Int32 // len(all) + the entries of bySession
	mu  sync.Mutex
	all []*fenceEntry // fence every session and the browser's own
	// bySession fences one session each: a page's, as chromedp attached it.
	bySession map[string][]*fenceEntry
}

type fenceEntry struct{ check Fence }

// add fences the commands of session sid, or of every session when all,
// until the returned func is called (more than once is fine).
func (s *fenceSet) add(sid string, all bool, f Fence) (release func()) {
	e := &fenceEntry{check: f}
	s.mu.Lock()
	if all {
		s.all = append(s.all, e)
	} else {
		if s.bySession == nil {
			s.bySession = map[string][]*fenceEntry{}
		}
		s.bySession[sid] = append(s.bySession[sid], e)
	}
	s.n.Add(1)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if all {
				s.all = removeEntry(s.all, e)
			} else if rest := removeEntry(s.bySession[sid], e); len(rest) > 0 {
				s.bySession[sid] = rest
			} else {
				delete(s.bySession, sid)
			}
			s.n.Add(-1)
		})
	}
}

func removeEntry(es []*fenceEntry, e *fenceEntry) []*fenceEntry {
	for i, x := range es {
		if x == e {
			return append(es[:i:i], es[i+1:]...)
		}
	}
	return es
}

// check runs the fences of session sid ("" for the browser's own) and
// returns the first refusal. It runs them under s.mu, which a Fence never
// blocks on (it reads a state, see Fence), so that a command costs no
// allocation.
func (s *fenceSet) check(sid string) error {
	if s.n.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, es := range [][]*fenceEntry{s.all, s.bySession[sid]} {
		for _, e := range es {
			if err := e.check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// FencePage fences the commands pagemux sends to page p until release is
// called: each one first asks f, and one that f refuses fails at once with
// f's error in its text, without reaching Chrome. It applies to an attached
// Chrome only (see the comment at the top of fence.go); for a launched one
// it does nothing but return a release. It attaches to the page if needed,
// and fails for a closed page.
func (b *Browser) FencePage(ctx context.Context, p *Page, f Fence) (release func(), err error) {
	if !b.cfg.Attaches() {
		return func() {}, nil
	}
	if err := p.ready(ctx); err != nil {
		return nil, err
	}
	sid := p.sessionID()
	if sid == "" {
		return nil, fmt.Errorf("page %d has no DevTools session to fence", p.ID)
	}
	return b.fences.add(sid, false, f), nil
}

// FenceAll fences every command pagemux sends to an attached Chrome, the
// browser's own (new pages, contexts) included, until release is called; as
// FencePage, for the one lock of global mode.
func (b *Browser) FenceAll(f Fence) (release func()) {
	if !b.cfg.Attaches() {
		return func() {}
	}
	return b.fences.add("", true, f)
}

// sessionID is the DevTools session chromedp attached page p with, "" before
// the attach.
func (p *Page) sessionID() string {
	select {
	case <-p.attached:
	default:
		return ""
	}
	if p.attachErr != nil || p.ctx == nil {
		return ""
	}
	c := chromedp.FromContext(p.ctx)
	if c == nil || c.Target == nil {
		return ""
	}
	return string(c.Target.SessionID)
}

// attachAllocator is chromedp's remote allocator with the connection
// fenced: it connects to a running Chrome at url (http://HOST:PORT, whose
// /json/version names the browser's websocket, or that ws:// address).
type attachAllocator struct {
	url    string
	fences *fenceSet
	found  func(identity string) // told the browser's id, before the dial
	wg     sync.WaitGroup
}

// newAttachAllocator returns a context with an attachAllocator, for
// chromedp.NewContext.
func newAttachAllocator(parent context.Context, url string, fences *fenceSet, found func(identity string)) (context.Context, context.CancelFunc) {
	return chromedp.NewAllocatorContext(parent, &attachAllocator{url: url, fences: fences, found: found})
}

// Allocate satisfies chromedp.Allocator: it connects as remote.Allocator
// does, and fences what chromedp writes.
func (a *attachAllocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	if chromedp.FromContext(ctx) == nil {
		return nil, chromedp.ErrInvalidContext
	}
	wsURL, err := browserWebSocket(ctx, a.url)
	if err != nil {
		return nil, err
	}
	a.found(path.Base(wsURL))
	// The connection outlives ctx until chromedp closed the pages it
	// attached, as remote.Allocator's does.
	wctx, cancel := context.WithCancel(context.Background())
	a.wg.Go(func() {
		<-ctx.Done()
		chromedp.Cancel(ctx)
		cancel()
	})
	dctx, dcancel := context.WithTimeout(wctx, 10*time.Second)
	defer dcancel()
	conn, err := remote.DialContext(dctx, wsURL)
	if err != nil {
		return nil, fmt.Errorf("could not dial %q: %w", wsURL, err)
	}
	return chromedp.NewBrowserTransport(wctx, newFencedConn(conn, a.fences), opts...)
}

// Wait satisfies chromedp.Allocator.
func (a *attachAllocator) Wait() { a.wg.Wait() }

// Attaches satisfies chromedp's Attacher: the browser runs already, and
// must go on running when pagemux leaves.
func (a *attachAllocator) Attaches() bool { return true }

// browserWebSocket returns the browser websocket of the Chrome at raw: raw
// itself when it names one (ws://…/devtools/browser/…), else what the
// /json/version of its host says.
func browserWebSocket(ctx context.Context, raw string) (string, error) {
	if strings.Contains(raw, "/devtools/browser/") {
		return raw, nil
	}
	u, err := versionURL(raw)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := freshClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", fmt.Errorf("%s: %w", u, err)
	}
	if v.WebSocketDebuggerURL == "" {
		return "", fmt.Errorf("%s names no webSocketDebuggerUrl", u)
	}
	return v.WebSocketDebuggerURL, nil
}

// fencedConn is a chromedp transport that asks the fences before each
// command it writes. A refused command is answered here, as if Chrome had
// answered it with an error: chromedp waits for an answer to every command
// it wrote, and a Write error alone would leave its caller waiting.
type fencedConn struct {
	conn    *remote.Conn
	fences  *fenceSet
	refused chan *cdproto.Message // answers to refused commands, read first
	reads   chan readResult       // what Chrome sent, read by pump
	stop    chan struct{}
	once    sync.Once
}

type readResult struct {
	msg *cdproto.Message
	err error
}

func newFencedConn(conn *remote.Conn, fences *fenceSet) *fencedConn {
	c := &fencedConn{conn: conn, fences: fences, refused: make(chan *cdproto.Message, 64), reads: make(chan readResult), stop: make(chan struct{})}
	go c.pump()
	return c
}

// pump reads Chrome's messages, so that Read can take refusals between them.
func (c *fencedConn) pump() {
	for {
		msg := new(cdproto.Message)
		err := c.conn.Read(context.Background(), msg)
		select {
		case c.reads <- readResult{msg, err}:
		case <-c.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read satisfies chromedp.Transport.
func (c *fencedConn) Read(ctx context.Context, msg *cdproto.Message) error {
	select {
	case m := <-c.refused:
		*msg = *m
		return nil
	default:
	}
	select {
	case m := <-c.refused:
		*msg = *m
		return nil
	case r := <-c.reads:
		if r.err != nil {
			return r.err
		}
		*msg = *r.msg
		return nil
	case <-c.stop:
		return net.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Write satisfies chromedp.Transport: a command the fences refuse is
// answered with their error instead of being sent.
func (c *fencedConn) Write(ctx context.Context, msg *cdproto.Message) error {
	if msg.ID != 0 && msg.Method != "" {
		if err := c.fences.check(string(msg.SessionID)); err != nil {
			answer := &cdproto.Message{ID: msg.ID, SessionID: msg.SessionID, Error: &cdproto.Error{Code: fenceRefused, Message: "pagemux did not send " + string(msg.Method) + ": " + err.Error()}}
			select {
			case c.refused <- answer:
				return nil
			case <-c.stop:
				return net.ErrClosed
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return c.conn.Write(ctx, msg)
}

// Close satisfies chromedp.Transport.
func (c *fencedConn) Close() error {
	c.once.Do(func() { close(c.stop) })
	return c.conn.Close()
}

// IsFenced reports whether err is the error of a command a Fence refused.
func IsFenced(err error) bool {
	var pe *cdproto.Error
	return errors.As(err, &pe) && pe.Code == fenceRefused
}

// Identity names the browser pagemux drives, alike in every pagemux process
// that drives it, for the locks they share: for an attached Chrome, the id
// of its browser websocket (ws://…/devtools/browser/ID), which Chrome makes
// when it starts, so a restarted Chrome is another browser; for a launched
// one, an id of this launch's own, as no other process drives it. A pool
// (Config.Pool) is named PoolIdentity: each of its Chromes has its own
// identity too (Page.BrowserIdentity). It starts Chrome if needed.
func (b *Browser) Identity(ctx context.Context) (string, error) {
	if err := b.Start(ctx); err != nil {
		return "", err
	}
	if b.Pooled() {
		return PoolIdentity, nil
	}
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	return l.name(), nil
}

// PoolIdentity is the Identity of a pool of browsers. Every process that
// shares a pool through etcd names it alike, so the processes on one etcd
// prefix must drive one pool.
const PoolIdentity = "pool"

// Pooled reports whether the browser is a pool of several Chromes
// (Config.Pool).
func (b *Browser) Pooled() bool { return len(b.members) > 1 }

// Identities are the names of the browser: its Identity, and in a pool
// those of its Chromes that run, too. It starts Chrome if needed.
func (b *Browser) Identities(ctx context.Context) ([]string, error) {
	id, err := b.Identity(ctx)
	if err != nil || !b.Pooled() {
		return []string{id}, err
	}
	ids := []string{id}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.members {
		if m.launch != nil && m.launch.ready() {
			ids = append(ids, m.launch.name())
		}
	}
	return ids, nil
}

// BrowserIdentity is the Identity of the Chrome the page is on, which in a
// pool is the page's own Chrome's.
func (p *Page) BrowserIdentity() string { return p.launch.name() }

// Chrome names the Chrome of a pool the page is on by its --browser-url
// (Config.Pool), for the browser-wide resources each Chrome has of its own
// (one trace, one audit at a time); "" when the browser is one Chrome.
func (p *Page) Chrome() string {
	if !p.b.Pooled() {
		return ""
	}
	return p.launch.url
}

// name is the identity of l (Browser.Identity).
func (l *launch) name() string {
	if l.identity == "" {
		return fmt.Sprintf("launched-%d-%p", os.Getpid(), l)
	}
	return l.identity
}

// versionURL is the /json/version address of the Chrome at raw (http://HOST:PORT,
// or one of its ws:// addresses), which names its browser websocket.
func versionURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", fmt.Errorf("%s: want HOST:PORT: %w", raw, err)
	}
	u.Path, u.RawQuery = "/json/version", ""
	return u.String(), nil
}
