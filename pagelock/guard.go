package pagelock

import (
	"slices"
	"sync/atomic"
	"time"
)

// Guard holds the locks of one successful Acquire until Release. It does not
// expire and cannot be renewed: it holds until released, however long that
// is, so every path of the holder must call Release.
type Guard struct {
	keys   []Key   // sorted, without duplicates
	fifos  []*fifo // the locks held, in keys order; one in Global mode
	waited time.Duration
	// waitKey and waitHolder name the lock the longest wait was for and who
	// held it when the call queued.
	waitKey    Key
	waitHolder string
	released   atomic.Bool
	// shared says, for each of fifos, that g shares it (Request.Shared); nil
	// when g shares none. owner is g's owner name, at when g got its locks.
	shared []bool
	owner  string
	at     instant

	// Room for the common one-key call, so that it allocates only the Guard.
	key1  [1]Key
	fifo1 [1]*fifo
}

// newGuard returns an empty Guard for keys, with the locks they map to, or an
// error if a key is closed. It takes no lock.
func (l *Locker) newGuard(keys []Key) (*Guard, error) {
	g := new(Guard)
	g.keys = append(g.key1[:0], keys...)
	if len(g.keys) > 1 {
		slices.Sort(g.keys)
		g.keys = slices.Compact(g.keys)
	}
	switch {
	case len(g.keys) == 0:
		return g, nil
	case l.mode == Global:
		return g, l.globalFifos(g)
	}
	g.fifos = g.fifo1[:0]
	if len(g.keys) > 1 {
		g.fifos = make([]*fifo, 0, len(g.keys))
	}
	for _, k := range g.keys {
		f, err := l.fifoFor(k)
		if err != nil {
			return nil, err
		}
		g.fifos = append(g.fifos, f)
	}
	return g, nil
}

// globalFifos points g at the one lock of Global mode.
func (l *Locker) globalFifos(g *Guard) error {
	for _, k := range g.keys {
		if l.isClosed(k) {
			return &ClosedError{Key: k}
		}
	}
	g.fifos = append(g.fifo1[:0], l.global)
	return nil
}

// Release gives up the locks g holds, waking the next waiter of each. It is
// idempotent, safe to call from any goroutine and concurrently, and a no-op on
// a nil Guard. It does not wait.
func (g *Guard) Release() {
	if g == nil || !g.released.CompareAndSwap(false, true) {
		return
	}
	g.unlockFirst(len(g.fifos))
}

// unlockFirst releases g.fifos[:n], the last taken first.
func (g *Guard) unlockFirst(n int) {
	for i := n - 1; i >= 0; i-- {
		g.fifos[i].unlock(g.owner, g.sharedAt(i), g.at)
	}
}

// markShared notes which of g's locks it takes shared: those of keys.
func (g *Guard) markShared(keys []Key) {
	for i, k := range g.keys {
		if slices.Contains(keys, k) {
			if g.shared == nil {
				g.shared = make([]bool, len(g.keys))
			}
			g.shared[i] = true
		}
	}
}

// sharedAt reports whether g takes g.fifos[i] shared.
func (g *Guard) sharedAt(i int) bool { return g.shared != nil && g.shared[i] }

// Waited returns the total time the Acquire that made g spent waiting in
// queues; zero when no lock was contended. It does not include hold time.
func (g *Guard) Waited() time.Duration {
	if g == nil {
		return 0
	}
	return g.waited
}

// WaitedFor names the lock the call waited for longest, as in errors ("page
// 3", "the global lock"), and who held it when the call queued. Both are
// empty when the call did not wait.
func (g *Guard) WaitedFor() (lock, holder string) {
	if g == nil || g.waitKey == "" {
		return "", ""
	}
	return g.waitKey.String(), g.waitHolder
}

// Keys returns a new slice of the keys g was acquired for, sorted and without
// duplicates. In Global mode these are the keys asked for, not the one lock
// they map to. It does not say whether g is released.
func (g *Guard) Keys() []Key {
	if g == nil {
		return nil
	}
	return slices.Clone(g.keys)
}
