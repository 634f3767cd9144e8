package pagelock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// reason says why a wait ended without the lock.
type reason int

const (
	whyCancelled reason = iota // ctx ended
	whyTimeout                 // Options.Timeout passed
	whyClosed                  // one of the call's keys was closed
)

// String is how the Observer names r.
func (r reason) String() string {
	switch r {
	case whyTimeout:
		return "timeout"
	case whyClosed:
		return "closed"
	}
	return "cancelled"
}

// waiter is one call that had to queue. It lives until that call's wait
// ends, and holds a place in the queue of every lock the call needs at once:
// one slot per lock.
type waiter struct {
	ctx     context.Context
	owner   string
	agent   string        // Request.Agent, "" if none
	noWait  []Key         // Request.FailIfHeld
	keys    []Key         // all the call's keys, for Close to match
	slots   []slot        // one per lock of the call, in Guard.fifos order
	ready   chan struct{} // one value per lock handed over after queuing
	pending int           // the slots that queued, so the values ready will get
	timer   *time.Timer   // Options.Timeout for the whole call; nil if none
	start   instant       // when the call reserved; the timer counts from here

	// Guarded by Locker.mu; closedKey is read only after cancel is closed.
	cancel    chan struct{} // closed when one of keys is closed
	closedKey Key
	woken     bool
}

// slot is a waiter's place on one lock. Its fields are guarded by the mu of
// that lock.
type slot struct {
	w          *waiter
	f          *fifo
	key        Key  // the key that names f in errors
	granted    bool // f was given to w, at once or by a handoff
	grantedAt  instant
	shared     bool   // w shares f with other sharers (Request.Shared)
	queued     bool   // w joined f's queue (rather than taking f free)
	holder     string // f's holder when w queued, for Guard.WaitedFor
	since      instant
	prev, next *slot
	// g is w's agent's part of f's queue while queued; gprev and gnext
	// link it there.
	g            *group
	gprev, gnext *slot
}

// Acquire waits, in strict FIFO order of arrival, for every lock that the
// request's keys map to, and returns a Guard holding them all. Everything
// that decides how it waits is in r, not in ctx, which only bounds the
// wait. It is Reserve followed by
// Wait: the call takes its place in every queue at once, so no two calls can
// deadlock and no later call overtakes an earlier one on any lock. Duplicate
// keys are fine, and in Global mode all keys map to the one lock, taken
// once. Zero keys return a Guard that holds nothing, without waiting.
//
// Acquire fails with *ClosedError if a key is closed, *BusyError if a queue is
// full, *TimeoutError after Options.Timeout, and with an error wrapping
// ctx.Err() when ctx ends first. A failed call holds nothing: locks it took on
// the way are released. The holder is recorded under r.Owner. Acquire does
// not retry, and unless it has to wait it allocates nothing but the Guard.
func (l *Locker) Acquire(ctx context.Context, r Request) (*Guard, error) {
	g, w, err := l.reserve(ctx, r)
	if err != nil || w == nil {
		return g, err
	}
	return l.await(g, w)
}

// Reservation is a call's place in the queues of its locks, taken by Reserve
// and redeemed by Wait. It holds the locks it was granted so far; Wait must
// be called once, or the places are never given up.
type Reservation struct {
	l *Locker
	g *Guard
	w *waiter // nil when g was complete at once
}

// Keys are the locks the reservation waits for, in locking order.
func (r *Reservation) Keys() []Key { return r.g.Keys() }

// Reserve takes the call's place in the queue of every lock the request's
// keys map to, all in one step, and returns without waiting for them. A call reserved later
// never gets one of these locks before this one. This lets a caller fix the
// order of calls when they arrive and wait for the locks elsewhere. ctx
// governs the wait that follows in Wait; errors are those of Acquire, except
// that timeouts and cancellation come from Wait.
func (l *Locker) Reserve(ctx context.Context, r Request) (*Reservation, error) {
	g, w, err := l.reserve(ctx, r)
	if err != nil {
		return nil, err
	}
	return &Reservation{l: l, g: g, w: w}, nil
}

// Wait waits until every lock of r was handed over and returns the Guard
// holding them, with the errors of Acquire. It must be called once.
func (r *Reservation) Wait() (*Guard, error) {
	if r.w == nil {
		return r.g, nil
	}
	return r.l.await(r.g, r.w)
}

// reserve makes g for r's keys and takes every lock of g that is free, or
// queues for all of them at once. It returns a nil waiter when g holds all
// its locks.
func (l *Locker) reserve(ctx context.Context, r Request) (*Guard, *waiter, error) {
	g, err := l.newGuard(r.Keys)
	if err != nil || len(g.keys) == 0 {
		return g, nil, err
	}
	if ctx.Err() != nil {
		err := cancelError(ctx, g.keys[0])
		l.failed(g.fifos[0], err)
		return nil, nil, err
	}
	owner, agent := r.owner(), r.Agent
	g.owner = owner
	if l.mode == PerPage {
		g.markShared(r.Shared)
	}
	if g.tryLockAll(owner, agent) {
		g, err := l.acquired(g, nil)
		return g, nil, err
	}
	w, err := l.register(ctx, g, r)
	if err != nil {
		l.failed(g.fifos[0], err)
		return nil, nil, err
	}
	if err := l.queueAll(w); err != nil {
		l.unregister(w)
		return nil, nil, err
	}
	if w.pending == 0 { // the holders left between the two looks
		l.unregister(w)
		g, err := l.acquired(g, nil)
		return g, nil, err
	}
	return g, w, nil
}

// acquired returns g once it holds its locks, unless a key closed meanwhile,
// and tells the Observer how long each lock was waited for (waits may be
// nil: none was).
func (l *Locker) acquired(g *Guard, waits []time.Duration) (*Guard, error) {
	first := g.fifos[0]
	g.at = monoNow()
	g, err := l.checkOpen(g)
	if err != nil {
		l.failed(first, err)
		return nil, err
	}
	if l.obs != nil {
		for i, f := range g.fifos {
			var d time.Duration
			if i < len(waits) {
				d = waits[i]
			}
			l.obs.Acquired(f.name, d)
		}
	}
	return g, nil
}

// failed tells the Observer why a call gave up on f.
func (l *Locker) failed(f *fifo, err error) {
	if l.obs == nil {
		return
	}
	why := "cancelled"
	switch {
	case errors.Is(err, ErrTimeout):
		why = "timeout"
	case errors.Is(err, ErrBusy), errors.Is(err, ErrHeld):
		why = "busy"
	case errors.Is(err, ErrClosed):
		why = "closed"
	}
	l.obs.Failed(f.name, why)
}

// tryLockAll takes every lock of g if all are open to it, and none
// otherwise.
func (g *Guard) tryLockAll(owner, agent string) bool {
	if len(g.fifos) == 1 {
		return g.fifos[0].tryLock(owner, agent, g.sharedAt(0))
	}
	for _, f := range g.fifos {
		f.mu.Lock()
	}
	free := true
	for i, f := range g.fifos {
		free = free && f.open(g.sharedAt(i))
	}
	if free {
		now := monoNow()
		for i, f := range g.fifos {
			f.grant(owner, agent, g.sharedAt(i), now)
			f.st.acquired++
		}
	}
	for _, f := range g.fifos {
		f.mu.Unlock()
	}
	return free
}

// queueAll takes the free locks of w and queues w on the held ones, in one
// step under all their mutexes (taken in key order). It fails with
// *BusyError, taking and queuing nothing, if w's agent has Options.MaxQueue
// waiters on one of them already, and with *HeldError if another agent holds
// or waits for a lock w asked not to wait for.
func (l *Locker) queueAll(w *waiter) (err error) {
	var full *fifo
	defer func() { // deferred first, so it runs after the mutexes are given back
		if full != nil {
			l.failed(full, err)
		}
	}()
	for _, s := range w.slots {
		s.f.mu.Lock()
	}
	defer func() {
		for _, s := range w.slots {
			s.f.mu.Unlock()
		}
	}()
	for _, s := range w.slots {
		f := s.f
		if f.open(s.shared) {
			continue
		}
		mine, others := f.waitingOf(w.agent)
		if l.maxQueue > 0 && mine >= l.maxQueue {
			f.st.busy++
			full = f
			return &BusyError{Key: s.key, Queued: mine, Max: l.maxQueue, PerAgent: w.agent != ""}
		}
		if (f.heldByOther(w.agent) || others) && l.mode == PerPage && slices.Contains(w.noWait, s.key) {
			f.st.busy++
			full = f
			return &HeldError{Key: s.key, Holder: f.holder()}
		}
	}
	now := monoNow()
	for i := range w.slots {
		s := &w.slots[i]
		s.since = now
		if s.f.open(s.shared) {
			s.f.grant(w.owner, w.agent, s.shared, now)
			s.f.st.acquired++
			s.granted, s.grantedAt = true, now
			continue
		}
		s.queued = true
		s.holder = s.f.holder()
		s.f.push(s)
		w.pending++
	}
	return nil
}

// await waits until every lock w queued for is handed over, or the wait
// ends: then it gives back what w got and fails.
func (l *Locker) await(g *Guard, w *waiter) (*Guard, error) {
	defer l.unregister(w)
	waits, err := l.awaitAll(g, w)
	if err != nil {
		return nil, err // abandonAll told the Observer
	}
	return l.acquired(g, waits)
}

// awaitAll waits for the locks w queued for and returns how long each was
// waited for, or gives back what w got and fails.
func (l *Locker) awaitAll(g *Guard, w *waiter) ([]time.Duration, error) {
	for got := 0; got < w.pending; {
		select {
		case <-w.ready:
			got++
			continue
		case <-w.cancel:
			l.abandonAll(w, whyClosed)
			return nil, &ClosedError{Key: w.closedKey}
		case <-w.ctx.Done():
			s := l.abandonAll(w, whyCancelled)
			return nil, cancelError(w.ctx, s.key)
		case <-w.timeout():
			now := monoNow()
			s := l.abandonAll(w, whyTimeout)
			return nil, &TimeoutError{Key: s.key, Waited: now.Sub(w.start), Holder: s.holder, HeldFor: s.heldFor}
		}
	}
	waits := make([]time.Duration, len(w.slots))
	for i := range w.slots {
		if s := &w.slots[i]; s.queued {
			waits[i] = s.f.gotHandoff(s)
			if waits[i] >= g.waited {
				g.waited, g.waitKey, g.waitHolder = waits[i], s.f.name, s.holder
			}
		}
	}
	return waits, nil
}

// gaveUp is what a waiter saw of the first lock it still waited for.
type gaveUp struct {
	key     Key
	f       *fifo
	holder  string
	heldFor time.Duration
}

// abandonAll gives back every lock w was granted and leaves every queue it
// is still in. It returns the first lock w had not got yet, for the error,
// and tells the Observer that the call gave up on that lock.
func (l *Locker) abandonAll(w *waiter, why reason) gaveUp {
	now := monoNow()
	first := gaveUp{key: w.slots[0].key, f: w.slots[0].f}
	found := false
	for i := range w.slots {
		s := &w.slots[i]
		holder, heldFor, waiting := s.f.abandon(s, why, now)
		if waiting && !found {
			first, found = gaveUp{key: s.key, f: s.f, holder: holder, heldFor: heldFor}, true
		}
	}
	if l.obs != nil {
		l.obs.Failed(first.f.name, why.String())
	}
	return first
}

// timeout returns the channel of the call's timer; nil, which never fires,
// if there is none.
func (w *waiter) timeout() <-chan time.Time {
	if w.timer == nil {
		return nil
	}
	return w.timer.C
}

// register makes a waiter for g known to Close before it queues anywhere, so
// a key that closes from now on wakes it, and fails if a key closed already.
func (l *Locker) register(ctx context.Context, g *Guard, r Request) (*waiter, error) {
	w := &waiter{
		ctx:    ctx,
		owner:  r.owner(),
		agent:  r.Agent,
		noWait: r.FailIfHeld,
		keys:   g.keys,
		slots:  make([]slot, len(g.fifos)),
		ready:  make(chan struct{}, len(g.fifos)),
		cancel: make(chan struct{}),
	}
	for i, f := range g.fifos {
		key := f.name
		if l.mode == Global {
			key = g.keys[0]
		}
		w.slots[i] = slot{w: w, f: f, key: key, shared: g.sharedAt(i)}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range g.keys {
		if l.isClosed(k) {
			return nil, &ClosedError{Key: k}
		}
	}
	l.waiting[w] = struct{}{}
	w.start = monoNow()
	if l.timeout > 0 {
		w.timer = time.NewTimer(l.timeout)
	}
	return w, nil
}

// unregister forgets w and stops its timer once its call is done.
func (l *Locker) unregister(w *waiter) {
	if w.timer != nil {
		w.timer.Stop()
	}
	l.mu.Lock()
	delete(l.waiting, w)
	l.mu.Unlock()
}

// checkOpen returns g unless a key of g was closed before g was complete:
// the Close came first, so the call fails as if it had come after.
func (l *Locker) checkOpen(g *Guard) (*Guard, error) {
	for i, k := range g.keys {
		if l.closedSince(g, i) {
			g.Release()
			return nil, &ClosedError{Key: k}
		}
	}
	return g, nil
}

// closedSince reports whether g.keys[i] was closed after newGuard looked it
// up. In PerPage mode the lock itself says so, which spares a map lookup.
func (l *Locker) closedSince(g *Guard, i int) bool {
	if l.mode == PerPage {
		return g.fifos[i].closed.Load()
	}
	return l.isClosed(g.keys[i])
}

// Close marks key closed. Its queued waiters fail at once with *ClosedError
// (in Global mode, the waiters that asked for key), and so do later Acquire
// calls naming it. The current holder keeps its Guard until it releases it.
// In PerPage mode Close drops the key's lock, so memory does not grow with
// closed pages; only the closed name is kept. A key cannot be reopened, so do
// not reuse page ids. Close does not wait, and closing twice is harmless.
func (l *Locker) Close(key Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.locks.Swap(key, closedFifo); ok && old.(*fifo) != closedFifo {
		old.(*fifo).closed.Store(true)
	}
	for w := range l.waiting {
		w.keyClosed(key)
	}
}

// keyClosed wakes w if it asked for key. Locker.mu must be held.
func (w *waiter) keyClosed(key Key) {
	if w.woken {
		return
	}
	for _, k := range w.keys {
		if k == key {
			w.woken = true
			w.closedKey = key
			close(w.cancel)
			return
		}
	}
}

// isClosed reports whether Close was called for k.
func (l *Locker) isClosed(k Key) bool {
	v, ok := l.locks.Load(k)
	return ok && v.(*fifo) == closedFifo
}

// fifoFor returns the lock of k in PerPage mode, making it on first use.
// No Locker.mu is needed: Close and the first use race on the one map entry.
func (l *Locker) fifoFor(k Key) (*fifo, error) {
	v, ok := l.locks.Load(k)
	if !ok {
		v, _ = l.locks.LoadOrStore(k, &fifo{name: k, obs: l.obs})
	}
	if f := v.(*fifo); f != closedFifo {
		return f, nil
	}
	return nil, &ClosedError{Key: k}
}

// cancelError is the error of a call whose ctx ended while it wanted key. It
// wraps ctx.Err(), and the cause as well when the cause says more.
func cancelError(ctx context.Context, key Key) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("gave up waiting for %s: %w: %w", key, err, cause)
	}
	return fmt.Errorf("gave up waiting for %s: %w", key, err)
}
