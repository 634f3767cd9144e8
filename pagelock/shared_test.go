package pagelock

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// withAgent is r for agent.
func withAgent(r Request, agent string) Request {
	r.Agent = agent
	return r
}

// shared is the request of owner for keys, Audit shared, as a Lighthouse
// audit without performance asks.
func shared(owner string, keys ...Key) Request {
	return Request{Keys: keys, Owner: owner, Shared: []Key{Audit}}
}

// expectNoResult fails the test if ch already has a result: the call should
// still be waiting. What came before it (waitQueued) makes that certain.
func expectNoResult(t *testing.T, ch <-chan result, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s got the lock (err %v), want it waiting", what, r.err)
	default:
	}
}

// TestSharedHoldTogether checks that sharers hold a lock at once, that Stats
// says so, and that a call taking it alone waits for every one of them.
func TestSharedHoldTogether(t *testing.T) {
	l := New(Options{Mode: PerPage})
	ctx := t.Context()
	a := mustAcquire(t, ctx, l, shared("audit a", PageKey(1), Audit))
	b := mustAcquire(t, ctx, l, shared("audit b", PageKey(2), Audit))
	s := statsOf(t, l, Audit)
	if s.Holders != 2 || s.MaxHolders != 2 || s.Holder != "audit a, audit b" {
		t.Fatalf("stats of two sharers: holders %d, max %d, holder %q; want 2, 2, \"audit a, audit b\"", s.Holders, s.MaxHolders, s.Holder)
	}
	alone := acquireAsync(ctx, l, Request{Keys: []Key{PageKey(3), Audit}, Owner: "perf"})
	waitQueued(t, l, Audit, 1)
	a.Release()
	if s := statsOf(t, l, Audit); s.Holders != 1 || s.Holder != "audit b" || s.Queued != 1 {
		t.Fatalf("after one sharer left: holders %d, holder %q, queued %d; want 1, \"audit b\", 1", s.Holders, s.Holder, s.Queued)
	}
	expectNoResult(t, alone, "the call taking the lock alone")
	b.Release()
	r := receive(t, alone)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if s := statsOf(t, l, Audit); s.Holders != 1 || s.Holder != "perf" {
		t.Fatalf("after the sharers left: holders %d, holder %q; want 1, \"perf\"", s.Holders, s.Holder)
	}
	r.g.Release()
	if s := statsOf(t, l, Audit); s.Holders != 0 || s.Holder != "" || s.MaxHolders != 2 || s.Acquired != 3 {
		t.Fatalf("at the end: holders %d, holder %q, max %d, acquired %d; want 0, \"\", 2, 3", s.Holders, s.Holder, s.MaxHolders, s.Acquired)
	}
}

// TestSharedKeepsArrivalOrder checks that a sharer coming after a call
// waiting to take the lock alone waits behind it (the lone call is not
// starved by a stream of sharers), and that the sharers queued behind it
// get the lock together when it is done.
func TestSharedKeepsArrivalOrder(t *testing.T) {
	l := New(Options{Mode: PerPage})
	ctx := t.Context()
	first := mustAcquire(t, ctx, l, shared("first", Audit))
	alone := acquireAsync(ctx, l, Request{Keys: []Key{Audit}, Owner: "alone"})
	waitQueued(t, l, Audit, 1)
	late1 := acquireAsync(ctx, l, shared("late 1", Audit))
	waitQueued(t, l, Audit, 2)
	late2 := acquireAsync(ctx, l, shared("late 2", Audit))
	waitQueued(t, l, Audit, 3)
	expectNoResult(t, late1, "a sharer behind a lone waiter")
	first.Release()
	ra := receive(t, alone)
	if ra.err != nil {
		t.Fatal(ra.err)
	}
	expectNoResult(t, late1, "a sharer behind the lone holder")
	ra.g.Release()
	r1, r2 := receive(t, late1), receive(t, late2)
	if r1.err != nil || r2.err != nil {
		t.Fatal(r1.err, r2.err)
	}
	if s := statsOf(t, l, Audit); s.Holders != 2 || s.Queued != 0 {
		t.Fatalf("the two late sharers: holders %d, queued %d; want 2, 0", s.Holders, s.Queued)
	}
	r1.g.Release()
	r2.g.Release()
}

// TestSharedAfterLoneWaiterGivesUp checks that sharers queued behind a call
// that wanted the lock alone join the holders at once when that call gives
// up, rather than wait for holders they may share with.
func TestSharedAfterLoneWaiterGivesUp(t *testing.T) {
	l := New(Options{Mode: PerPage})
	ctx := t.Context()
	holder := mustAcquire(t, ctx, l, shared("holder", Audit))
	lctx, cancel := context.WithCancel(ctx)
	alone := acquireAsync(lctx, l, Request{Keys: []Key{Audit}, Owner: "alone"})
	waitQueued(t, l, Audit, 1)
	late := acquireAsync(ctx, l, shared("late", Audit))
	waitQueued(t, l, Audit, 2)
	cancel()
	if r := receive(t, alone); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the lone waiter: err %v, want cancelled", r.err)
	}
	r := receive(t, late)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if s := statsOf(t, l, Audit); s.Holders != 2 {
		t.Fatalf("holders %d, want 2: the late sharer beside the first", s.Holders)
	}
	r.g.Release()
	holder.Release()
}

// TestSharedGlobalMode checks that Global mode ignores Request.Shared: its one
// lock is always taken alone.
func TestSharedGlobalMode(t *testing.T) {
	l := New(Options{Mode: Global})
	ctx := t.Context()
	g := mustAcquire(t, ctx, l, shared("a", Audit))
	second := acquireAsync(ctx, l, shared("b", Audit))
	waitQueued(t, l, Audit, 1)
	g.Release()
	r := receive(t, second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.g.Release()
	if s := statsOf(t, l, Audit); s.MaxHolders != 1 {
		t.Fatalf("max holders %d in global mode, want 1", s.MaxHolders)
	}
}

// TestSharedStress mixes sharers and lone holders of Audit with page keys,
// some giving up, and checks that a lone holder never meets another holder,
// that sharers did meet, and that no call deadlocks.
func TestSharedStress(t *testing.T) {
	l := New(Options{Mode: PerPage})
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	var mu sync.Mutex
	sharers, alone := 0, 0
	enter := func(isShared bool) error {
		mu.Lock()
		defer mu.Unlock()
		if alone > 0 || (!isShared && sharers > 0) {
			return errors.New("audit held alone beside another holder")
		}
		if isShared {
			sharers++
		} else {
			alone++
		}
		return nil
	}
	leave := func(isShared bool) {
		mu.Lock()
		defer mu.Unlock()
		if isShared {
			sharers--
		} else {
			alone--
		}
	}
	var g errgroup.Group
	for worker := range 8 {
		g.Go(func() error {
			rng := rand.New(rand.NewPCG(uint64(worker), 2))
			for range 500 {
				isShared := rng.IntN(5) != 0
				r := Request{Keys: []Key{PageKey(rng.IntN(4)), Audit}, Owner: "stress"}
				if isShared {
					r.Shared = []Key{Audit}
				}
				short := ctx
				if rng.IntN(4) == 0 {
					var cancel context.CancelFunc
					short, cancel = context.WithCancel(ctx)
					go cancel()
				}
				gd, err := l.Acquire(short, r)
				if err != nil && short.Err() != nil && ctx.Err() == nil {
					continue
				}
				if err != nil {
					return err
				}
				if err := enter(isShared); err != nil {
					gd.Release()
					return err
				}
				runtime.Gosched()
				leave(isShared)
				gd.Release()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Stats() {
		if s.Holder != "" || s.Queued != 0 || s.Holders != 0 {
			t.Errorf("after the stress %s: holder %q, %d holders, %d queued", s.Key, s.Holder, s.Holders, s.Queued)
		}
	}
	if s := statsOf(t, l, Audit); s.MaxHolders < 2 {
		t.Errorf("max holders of audit %d: the sharers never met", s.MaxHolders)
	}
}

// TestSharedHeldByOther checks that Request.FailIfHeld sees every sharer:
// after alice's sharer left the lock to bob's, her call that may not wait
// behind another agent fails at once, though she was the first sharer.
func TestSharedHeldByOther(t *testing.T) {
	l := New(Options{Mode: PerPage})
	ctx := t.Context()
	a := mustAcquire(t, ctx, l, withAgent(shared("audit a", PageKey(1), Audit), "alice"))
	b := mustAcquire(t, ctx, l, withAgent(shared("audit b", PageKey(2), Audit), "bob"))
	a.Release()
	bounded, cancel := context.WithTimeout(ctx, time.Minute) // a call that waits fails, not hangs
	defer cancel()
	alone := Request{Keys: []Key{PageKey(1), Audit}, Owner: "perf", Agent: "alice", FailIfHeld: []Key{Audit}}
	_, err := l.Acquire(bounded, alone)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "audit b" {
		t.Fatalf("alice's call while bob shares the lock: %v, want a HeldError naming audit b", err)
	}
	b.Release()
	g, err := l.Acquire(bounded, alone)
	if err != nil {
		t.Fatal(err)
	}
	g.Release()
}
