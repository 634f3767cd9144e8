package pagelock

import (
	"slices"
	"strings"
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
// release hands the lock straight to the next waiter. So a free lock has an
// empty queue, and tryLock taking a free lock never jumps the queue.
//
// A lock can be held shared (Request.Shared) by several calls at once. A shared
// call joins the holders at once only while they hold it shared and nobody
// queues; else it queues like any other, so a call that wants it alone is
// never overtaken, and waits only for the sharers ahead of it. A handoff to
// a shared waiter takes the shared waiters right behind it along. So the
// head of the queue of a lock held shared always wants it alone.
//
// The queue is also kept by agent (see Request.Agent), for Options.MaxQueue,
// which bounds each agent's waiters, and, when rr is set, for turns: the
// next holder is then the first waiter of the agent whose turn it is, the
// agents with waiters taking turns in the order they began to wait. Within
// one agent the order is always that of arrival.
type fifo struct {
	name   Key
	obs    Observer    // the Locker's; nil if none
	closed atomic.Bool // PerPage mode: Close dropped this lock from its Locker
	rr     bool        // agents take turns (Global mode); else strict FIFO

	mu          sync.Mutex
	holds       []hold  // the calls holding f, in order of grant: none when free, more than one when they share it
	shared      bool    // the holders share f
	since       instant // when the first holder got the lock
	head, tail  *slot   // the queue, first arrival at head
	queued      int
	groups      map[string]*group // the queue by agent; agents without waiters drop out
	first, last *group            // the agents with waiters, next turn first
	st          counters
}

// group is the part of one fifo's queue that is one agent's, in order of
// arrival, and that agent's place in the turns.
type group struct {
	agent      string
	head, tail *slot
	n          int
	prev, next *group
}

// counters are the running totals of one lock, guarded by fifo.mu.
type counters struct {
	acquired, timeouts, busy, cancelled uint64
	waitTotal, holdTotal, maxWait       time.Duration
	maxHolders                          int
}

// hold is one call's hold on a fifo.
type hold struct {
	owner string // its owner name (Request.Owner)
	agent string // its agent (Request.Agent); "" when unnamed
}

// closedFifo marks a closed key in Locker.locks. It is never locked.
var closedFifo = &fifo{name: "closed"}

// tryLock takes f for owner of agent if f is free, or shared and open to
// one more sharer, without waiting.
func (f *fifo) tryLock(owner, agent string, shared bool) bool {
	now := monoNow()
	f.mu.Lock()
	free := f.open(shared)
	if free {
		f.grant(owner, agent, shared, now)
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
	waited := s.grantedAt.Sub(s.since)
	f.st.acquired++
	f.st.waitTotal += waited
	f.st.maxWait = max(f.st.maxWait, waited)
	return waited
}

// unlock releases the hold of owner on f, which it got at since if shared,
// handing f to the first waiter if it was the last holder.
func (f *fifo) unlock(owner string, shared bool, since instant) {
	now := monoNow()
	f.mu.Lock()
	if !shared {
		since = f.since
	}
	held := now.Sub(since)
	f.st.holdTotal += held
	f.release(owner, now)
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
		f.release(s.w.owner, now) // s never used the lock: no hold time to count
		return "", 0, false
	}
	f.remove(s)
	f.admitSharers(now) // s may have been the one the sharers behind it waited for
	return f.holder(), now.Sub(f.since), true
}

// stats returns f's figures at now.
func (f *fifo) stats(now instant) KeyStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := KeyStats{
		Key:       f.name,
		Holder:    f.holder(),
		Holders:   len(f.holds),
		Queued:    f.queued,
		Acquired:  f.st.acquired,
		Timeouts:  f.st.timeouts,
		Busy:      f.st.busy,
		Cancelled: f.st.cancelled,
		WaitTotal: f.st.waitTotal,
		HoldTotal: f.st.holdTotal,
		MaxWait:   f.st.maxWait,

		MaxHolders: f.st.maxHolders,
	}
	if f.held() {
		s.HeldFor = now.Sub(f.since)
	}
	for w := f.head; w != nil; w = w.next {
		s.Waiting = append(s.Waiting, w.w.owner)
	}
	return s
}

// held reports whether a call holds f. f.mu must be held.
func (f *fifo) held() bool { return len(f.holds) > 0 }

// holder is the owner name of f's holder, its sharers' joined with ", ";
// "" when f is free. f.mu must be held.
func (f *fifo) holder() string {
	if len(f.holds) == 1 {
		return f.holds[0].owner
	}
	names := make([]string, len(f.holds))
	for i, h := range f.holds {
		names[i] = h.owner
	}
	return strings.Join(names, ", ")
}

// heldByOther reports whether a call of an agent other than agent holds f.
// f.mu must be held.
func (f *fifo) heldByOther(agent string) bool {
	return slices.ContainsFunc(f.holds, func(h hold) bool { return h.agent != agent })
}

// open reports whether a call could take f now without queuing: f is free,
// or the call shares it with holders who share it and nobody waits. f.mu
// must be held.
func (f *fifo) open(shared bool) bool {
	return !f.held() || (shared && f.shared && f.head == nil)
}

// grant makes owner, of agent, a holder from now: the holder, or one more
// sharer of a lock held shared. f.mu must be held.
func (f *fifo) grant(owner, agent string, shared bool, now instant) {
	if !f.held() {
		f.shared, f.since = shared, now
	}
	f.holds = append(f.holds, hold{owner, agent})
	f.st.maxHolders = max(f.st.maxHolders, len(f.holds))
}

// release ends one hold of owner on f: a sharer leaves, and the last
// holder hands f on. f.mu must be held.
func (f *fifo) release(owner string, now instant) {
	if len(f.holds) > 1 {
		i := slices.IndexFunc(f.holds, func(h hold) bool { return h.owner == owner })
		f.holds = slices.Delete(f.holds, max(i, 0), max(i, 0)+1)
		return
	}
	f.handoff(now)
}

// handoff passes f from its holder to the next waiter, with the sharers
// right behind a shared one, or frees it. f.mu must be held.
func (f *fifo) handoff(now instant) {
	s := f.next() // before the holds go: next reads whose turn just ended
	f.holds = f.holds[:0]
	if s == nil {
		f.shared = false
		return
	}
	g := s.g
	f.give(s, now)
	if f.rr && g.n > 0 {
		f.unring(g) // its turn is over: to the back of the turns
		f.ring(g)
	}
	f.admitSharers(now)
}

// admitSharers hands f to the shared waiters at the head of the queue while
// f is held shared. f.mu must be held.
func (f *fifo) admitSharers(now instant) {
	for f.held() && f.shared && f.head != nil && f.head.shared {
		f.give(f.head, now)
	}
}

// give takes s out of the queue and hands it f. f.mu must be held.
func (f *fifo) give(s *slot, now instant) {
	f.remove(s)
	f.grant(s.w.owner, s.w.agent, s.shared, now)
	s.granted, s.grantedAt = true, now
	s.w.ready <- struct{}{} // never blocks: room for one value per slot
}

// next returns the waiter a release hands f to: the first to arrive, or,
// when agents take turns, the first of the agent whose turn it is. An agent
// whose call just held f lets the others go first. f.mu must be held.
func (f *fifo) next() *slot {
	if !f.rr || f.first == nil {
		return f.head
	}
	g := f.first
	if f.held() && g.agent == f.holds[0].agent && g.next != nil {
		g = g.next
	}
	return g.head
}

// waitingOf returns how many waiters of agent queue for f, and whether a
// waiter of another agent does. f.mu must be held.
func (f *fifo) waitingOf(agent string) (mine int, others bool) {
	if g := f.groups[agent]; g != nil {
		mine = g.n
	}
	return mine, f.queued > mine
}

// push appends s to the queue, and to its agent's. f.mu must be held.
func (f *fifo) push(s *slot) {
	s.prev, s.next = f.tail, nil
	if f.tail == nil {
		f.head = s
	} else {
		f.tail.next = s
	}
	f.tail = s
	f.queued++

	g := f.groups[s.w.agent]
	if g == nil {
		if f.groups == nil {
			f.groups = make(map[string]*group)
		}
		g = &group{agent: s.w.agent}
		f.groups[g.agent] = g
		f.ring(g)
	}
	s.g, s.gprev, s.gnext = g, g.tail, nil
	if g.tail == nil {
		g.head = s
	} else {
		g.tail.gnext = s
	}
	g.tail = s
	g.n++
}

// remove unlinks s from the queue and from its agent's. f.mu must be held.
func (f *fifo) remove(s *slot) {
	if s.prev == nil {
		f.head = s.next
	} else {
		s.prev.next = s.next
	}
	if s.next == nil {
		f.tail = s.prev
	} else {
		s.next.prev = s.prev
	}
	s.prev, s.next = nil, nil
	f.queued--

	g := s.g
	if s.gprev == nil {
		g.head = s.gnext
	} else {
		s.gprev.gnext = s.gnext
	}
	if s.gnext == nil {
		g.tail = s.gprev
	} else {
		s.gnext.gprev = s.gprev
	}
	s.g, s.gprev, s.gnext = nil, nil, nil
	if g.n--; g.n == 0 {
		f.unring(g)
		delete(f.groups, g.agent)
	}
}

// ring gives g the last turn. f.mu must be held.
func (f *fifo) ring(g *group) {
	g.prev, g.next = f.last, nil
	if f.last == nil {
		f.first = g
	} else {
		f.last.next = g
	}
	f.last = g
}

// unring takes g out of the turns. f.mu must be held.
func (f *fifo) unring(g *group) {
	if g.prev == nil {
		f.first = g.next
	} else {
		g.prev.next = g.next
	}
	if g.next == nil {
		f.last = g.prev
	} else {
		g.next.prev = g.prev
	}
	g.prev, g.next = nil, nil
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
