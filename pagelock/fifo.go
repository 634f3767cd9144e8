package pagelock

import (
	"sync"
	"sync/atomic"
	"time"
)

// fifo is one lock that serves its waiters strictly in order of arrival, with
// the bookkeeping Stats reports.
//
// It is written here rather than built on semaphore.Weighted because the
// queue has to be visible under the same mutex as the holder: MaxQueue must
// count the real queue, Stats must show the real queue depth and holder, and a
// release must name the next holder in the same step that wakes it. The
// semaphore keeps its queue private, so those would race with it.
//
// Invariant: a waiter is queued only while the lock is held, because a
// release hands the lock straight to the first waiter. So a free lock has an
// empty queue, and tryLock taking a free lock never jumps the queue.
type fifo struct {
	name   Key
	obs    Observer    // the Locker's; nil if none
	closed atomic.Bool // PerPage mode: Close dropped this lock from its Locker

	mu         sync.Mutex
	held       bool
	owner      string  // the holder's owner name; "" when free
	since      instant // when the holder got the lock
	head, tail *slot   // the queue, first arrival at head
	queued     int
	st         counters
}

// counters are the running totals of one lock, guarded by fifo.mu.
type counters struct {
	acquired, timeouts, busy, cancelled uint64
	waitTotal, holdTotal, maxWait       time.Duration
}

// closedFifo marks a closed key in Locker.locks. It is never locked.
var closedFifo = &fifo{name: "closed"}

// tryLock takes f for owner if f is free, without waiting.
func (f *fifo) tryLock(owner string) bool {
	now := monoNow()
	f.mu.Lock()
	free := !f.held
	if free {
		f.grant(owner, now)
		f.st.acquired++
	}
	f.mu.Unlock()
	return free
}

// gotHandoff records, once the waiter of s has read its ready channel, how
// long s waited in f's queue, and returns that wait.
func (f *fifo) gotHandoff(s *slot) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	waited := f.since.Sub(s.since) // f.since is when f was handed to s
	f.st.acquired++
	f.st.waitTotal += waited
	f.st.maxWait = max(f.st.maxWait, waited)
	return waited
}

// unlock releases f, handing it to the first waiter if there is one.
func (f *fifo) unlock() {
	now := monoNow()
	f.mu.Lock()
	held := now.Sub(f.since)
	f.st.holdTotal += held
	f.handoff(now)
	f.mu.Unlock()
	if f.obs != nil {
		f.obs.Released(f.name, held)
	}
}

// abandon gives up s after its waiter's wait ended without all its locks at
// now, counting why (whyCancelled, whyTimeout, or neither) if s had queued.
// If f was granted to s, at once or by a handoff in the meantime, s passes it
// on, so the lock is never stranded. Otherwise it leaves the queue and
// returns the holder it gave up on, with waiting set.
func (f *fifo) abandon(s *slot, why reason, now instant) (holder string, heldFor time.Duration, waiting bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.queued {
		switch why {
		case whyCancelled:
			f.st.cancelled++
		case whyTimeout:
			f.st.timeouts++
		}
	}
	if s.granted {
		f.handoff(now) // s never used the lock: no hold time to count
		return "", 0, false
	}
	f.remove(s)
	return f.owner, now.Sub(f.since), true
}

// stats returns f's figures at now.
func (f *fifo) stats(now instant) KeyStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := KeyStats{
		Key:       f.name,
		Holder:    f.owner,
		Queued:    f.queued,
		Acquired:  f.st.acquired,
		Timeouts:  f.st.timeouts,
		Busy:      f.st.busy,
		Cancelled: f.st.cancelled,
		WaitTotal: f.st.waitTotal,
		HoldTotal: f.st.holdTotal,
		MaxWait:   f.st.maxWait,
	}
	if f.held {
		s.HeldFor = now.Sub(f.since)
	}
	for w := f.head; w != nil; w = w.next {
		s.Waiting = append(s.Waiting, w.w.owner)
	}
	return s
}

// grant makes owner the holder from now. f.mu must be held.
func (f *fifo) grant(owner string, now instant) {
	f.held = true
	f.owner = owner
	f.since = now
}

// handoff passes f from its holder to the first waiter, or frees it. f.mu
// must be held.
func (f *fifo) handoff(now instant) {
	s := f.head
	if s == nil {
		f.held = false
		f.owner = ""
		return
	}
	f.remove(s)
	f.grant(s.w.owner, now)
	s.granted = true
	s.w.ready <- struct{}{} // never blocks: room for one value per slot
}

// push appends w to the queue. f.mu must be held.
func (f *fifo) push(w *slot) {
	w.prev, w.next = f.tail, nil
	if f.tail == nil {
		f.head = w
	} else {
		f.tail.next = w
	}
	f.tail = w
	f.queued++
}

// remove unlinks w from the queue. f.mu must be held.
func (f *fifo) remove(w *slot) {
	if w.prev == nil {
		f.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		f.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	f.queued--
}

// instant is a reading of the monotonic clock, as an offset from epoch. The
// locks keep time this way because time.Since reads only the monotonic clock,
// where time.Now reads the wall clock too: on the fast path that halves the
// cost of keeping time. An instant does not say what time of day it is.
type instant time.Duration

// epoch is the origin of instants.
var epoch = time.Now()

// monoNow returns the current instant.
func monoNow() instant { return instant(time.Since(epoch)) }

// Sub returns i-j, or zero if j is later. The locks read the clock before
// taking their mutex, to keep it short, so two readings can land in the
// other order, though by no more than one wait for that mutex.
func (i instant) Sub(j instant) time.Duration { return time.Duration(max(i-j, 0)) }
