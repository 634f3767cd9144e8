package pagelock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// reason says why a wait ended without the lock.
type reason int

const (
	whyCancelled reason = iota // ctx ended
	whyTimeout                 // Options.Timeout passed
	whyClosed                  // one of the call's keys was closed
)

// waiter is one Acquire call that had to queue. It lives until that call
// returns and queues on the call's locks one at a time, in key order.
type waiter struct {
	ctx    context.Context
	owner  string
	keys   []Key         // all the call's keys, for Close to match
	ready  chan struct{} // one slot: a lock was handed to this waiter
	timer  *time.Timer   // Options.Timeout for the whole call; nil if none
	start  instant       // when the call first queued; the timer counts from here
	waited time.Duration // the waits finished so far

	// Guarded by Locker.mu; closedKey is read only after cancel is closed.
	cancel    chan struct{} // closed when one of keys is closed
	closedKey Key
	woken     bool

	// Guarded by the mu of the fifo the waiter is queued on.
	granted    bool
	since      instant // when it joined that queue
	prev, next *waiter
}

// Acquire waits, in strict FIFO order of arrival, for every lock that keys
// map to, and returns a Guard holding them all. Several keys are taken in one
// canonical (sorted) order, so no two calls can deadlock; duplicate keys are
// fine, and in Global mode all keys map to the one lock, taken once. Zero keys
// return a Guard that holds nothing, without waiting.
//
// Acquire fails with *ClosedError if a key is closed, *BusyError if a queue is
// full, *TimeoutError after Options.Timeout, and with an error wrapping
// ctx.Err() when ctx ends first. A failed call holds nothing: locks it took on
// the way are released. The holder is recorded under the name WithOwner put
// in ctx. Acquire does not retry, and unless it has to wait it allocates
// nothing but the Guard.
func (l *Locker) Acquire(ctx context.Context, keys ...Key) (*Guard, error) {
	g, err := l.newGuard(keys)
	if err != nil || len(g.keys) == 0 {
		return g, err
	}
	if ctx.Err() != nil {
		return nil, cancelError(ctx, g.keys[0])
	}
	owner := ownerOf(ctx)
	for i, f := range g.fifos {
		if !f.tryLock(owner) {
			return l.acquireSlow(ctx, g, i, owner)
		}
	}
	return l.checkOpen(g)
}

// acquireSlow queues for g.fifos[from:] in order; g.fifos[:from] are held.
func (l *Locker) acquireSlow(ctx context.Context, g *Guard, from int, owner string) (*Guard, error) {
	w, err := l.register(ctx, g.keys, owner)
	if err != nil {
		g.unlockFirst(from)
		return nil, err
	}
	defer l.unregister(w)
	for i := from; i < len(g.fifos); i++ {
		if err := l.wait(w, g.fifos[i], g.keys[i]); err != nil {
			g.unlockFirst(i)
			return nil, err
		}
	}
	g.waited = w.waited
	return l.checkOpen(g)
}

// wait takes f for w, queuing if f is held, until it is handed over or the
// wait ends. key names f in errors.
func (l *Locker) wait(w *waiter, f *fifo, key Key) error {
	got, err := f.enqueue(w, l.maxQueue, key)
	if got || err != nil {
		return err
	}
	select {
	case <-w.ready:
		w.waited += f.gotHandoff(w)
		return nil
	case <-w.cancel:
		f.abandon(w, whyClosed, monoNow())
		return &ClosedError{Key: w.closedKey}
	case <-w.ctx.Done():
		f.abandon(w, whyCancelled, monoNow())
		return cancelError(w.ctx, key)
	case <-w.timeout():
		now := monoNow()
		holder, heldFor := f.abandon(w, whyTimeout, now)
		return &TimeoutError{Key: key, Waited: now.Sub(w.start), Holder: holder, HeldFor: heldFor}
	}
}

// timeout returns the channel of the call's timer; nil, which never fires,
// if there is none.
func (w *waiter) timeout() <-chan time.Time {
	if w.timer == nil {
		return nil
	}
	return w.timer.C
}

// register makes w known to Close before it queues anywhere, so a key that
// closes from now on wakes it, and fails if a key closed already.
func (l *Locker) register(ctx context.Context, keys []Key, owner string) (*waiter, error) {
	w := &waiter{
		ctx:    ctx,
		owner:  owner,
		keys:   keys,
		ready:  make(chan struct{}, 1),
		cancel: make(chan struct{}),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
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
		v, _ = l.locks.LoadOrStore(k, &fifo{name: k})
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
