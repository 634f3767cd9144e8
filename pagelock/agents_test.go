package pagelock

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// queueAs starts an Acquire of keys for agent, named owner, and waits until
// it queued on the lock of key, the nth waiter there; it returns where its
// result arrives.
func queueAs(t *testing.T, l *Locker, agent, owner string, key Key, n int, keys ...Key) <-chan result {
	t.Helper()
	ch := acquireAsync(t.Context(), l, Request{Keys: keys, Owner: owner, Agent: agent})
	waitQueued(t, l, key, n)
	return ch
}

// TestTurnsGlobal: in Global mode agents take turns, one call each, in the
// order they began to wait, and each agent's calls keep their order; the
// agent that just held the lock lets the others go first.
func TestTurnsGlobal(t *testing.T) {
	l := New(Options{Mode: Global})
	holder, err := l.Acquire(t.Context(), Request{Keys: []Key{PageKey(1)}, Owner: "a0", Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	waiting := map[string]<-chan result{}
	n := 0
	for _, q := range []struct{ agent, owner string }{{"a", "a1"}, {"a", "a2"}, {"a", "a3"}, {"b", "b1"}, {"b", "b2"}, {"c", "c1"}} {
		n++
		waiting[q.owner] = queueAs(t, l, q.agent, q.owner, PageKey(1), n, PageKey(n))
	}
	// The next holder is read from the head of Stats' view, which lists
	// arrival order, so follow the handoffs by holder instead.
	var got []string
	holder.Release()
	for range len(waiting) {
		var owner string
		deadline := time.Now().Add(patience)
		for {
			owner = statsOf(t, l, PageKey(1)).Holder
			if _, ok := waiting[owner]; ok && !slices.Contains(got, owner) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no new holder after %v", got)
			}
			time.Sleep(time.Millisecond)
		}
		r := receive(t, waiting[owner])
		if r.err != nil {
			t.Fatal(r.err)
		}
		got = append(got, owner)
		r.g.Release()
	}
	want := []string{"b1", "a1", "c1", "b2", "a2", "a3"}
	if !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

// TestMaxQueuePerAgent: --max-queue counts one agent's waiters, so a second
// agent queues while the first is at its bound, and the error says whose
// calls filled it.
func TestMaxQueuePerAgent(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m, MaxQueue: 2})
			holder := mustAcquire(t, t.Context(), l, Request{Keys: []Key{PageKey(2)}, Agent: "a"})
			var queued []<-chan result
			for i := range 2 {
				queued = append(queued, queueAs(t, l, "a", "a", PageKey(2), i+1, PageKey(2)))
			}
			_, err := l.Acquire(t.Context(), Request{Keys: []Key{PageKey(2)}, Agent: "a"})
			var be *BusyError
			if !errors.As(err, &be) || *be != (BusyError{Key: PageKey(2), Queued: 2, Max: 2, PerAgent: true}) {
				t.Fatalf("agent a past its bound: %v; want a *BusyError", err)
			}
			if want := "page 2 is busy: 2 calls of this agent already queued (--max-queue 2 per agent); try again later, once some of them have answered"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			for i := range 2 {
				queued = append(queued, queueAs(t, l, "b", "b", PageKey(2), 3+i, PageKey(2)))
			}
			if _, err := l.Acquire(t.Context(), Request{Keys: []Key{PageKey(2)}, Agent: "b"}); !errors.Is(err, ErrBusy) {
				t.Errorf("agent b past its bound: %v; want busy", err)
			}
			holder.Release()
			drain(t, queued)
		})
	}
}

// drain releases each Guard of chs as it arrives, in whatever order the
// locks hand over, failing on an error.
func drain(t *testing.T, chs []<-chan result) {
	t.Helper()
	errs := make(chan error, len(chs))
	for _, ch := range chs {
		go func() {
			select {
			case r := <-ch:
				r.g.Release()
				errs <- r.err
			case <-time.After(patience):
				errs <- errors.New("Acquire did not return")
			}
		}()
	}
	for range chs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestTurnsNotPerPage forces the order that turns would deadlock on: two
// calls of two agents queue for the same page and tracing, the page lock
// handed over in turns and tracing in arrival order, so each call gets one
// lock and waits for the other's. With turns forced onto the page lock the
// locks end in that cycle; as New makes them (arrival order on every lock in
// PerPage mode) the first to arrive gets both, then the second.
func TestTurnsNotPerPage(t *testing.T) {
	for _, forced := range []bool{true, false} {
		l := New(Options{Mode: PerPage})
		holder, err := l.Acquire(t.Context(), Request{Keys: []Key{PageKey(1), Tracing}, Agent: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if forced {
			f, _ := l.fifoFor(PageKey(1))
			f.mu.Lock()
			f.rr = true
			f.mu.Unlock()
		}
		ctx, cancel := context.WithCancel(t.Context())
		first := acquireAsync(ctx, l, Request{Keys: []Key{PageKey(1), Tracing}, Owner: "a1", Agent: "a"})
		waitQueued(t, l, Tracing, 1)
		second := acquireAsync(ctx, l, Request{Keys: []Key{PageKey(1), Tracing}, Owner: "b1", Agent: "b"})
		waitQueued(t, l, Tracing, 2)
		holder.Release()
		if forced {
			deadline := time.Now().Add(patience)
			for statsOf(t, l, PageKey(1)).Holder != "b1" || statsOf(t, l, Tracing).Holder != "a1" {
				if time.Now().After(deadline) {
					t.Fatalf("turns on the page lock: page 1 held by %q, tracing by %q; want the cycle b1, a1",
						statsOf(t, l, PageKey(1)).Holder, statsOf(t, l, Tracing).Holder)
				}
				time.Sleep(time.Millisecond)
			}
			if p, tr := statsOf(t, l, PageKey(1)), statsOf(t, l, Tracing); !slices.Equal(p.Waiting, []string{"a1"}) || !slices.Equal(tr.Waiting, []string{"b1"}) {
				t.Errorf("page 1 waited for by %v, tracing by %v; want each call waiting for the other's lock", p.Waiting, tr.Waiting)
			}
			cancel()
			receive(t, first)
			receive(t, second)
			continue
		}
		r1 := receive(t, first)
		if r1.err != nil {
			t.Fatal(r1.err)
		}
		if h := statsOf(t, l, PageKey(1)).Holder; h != "a1" {
			t.Errorf("page 1 held by %q, want a1", h)
		}
		r1.g.Release()
		if r2 := receive(t, second); r2.err != nil {
			t.Fatal(r2.err)
		} else {
			r2.g.Release()
		}
		cancel()
	}
}

// TestFailIfHeldByOther: a call that asked not to wait behind another agent
// for tracing fails at once while another agent holds it or waits for it,
// without naming that agent; its own agent's hold is waited for as ever.
// Global mode ignores the request.
func TestFailIfHeldByOther(t *testing.T) {
	l := New(Options{Mode: PerPage})
	holder, err := l.Acquire(t.Context(), Request{Keys: []Key{Tracing}, Owner: "performance_start_trace on page 1 for agent token:alice", Agent: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob := func(keys ...Key) Request { return Request{Keys: keys, Agent: "bob", FailIfHeld: []Key{Tracing}} }
	_, err = l.Acquire(t.Context(), bob(PageKey(2), Tracing))
	var he *HeldError
	if !errors.As(err, &he) || he.Key != Tracing {
		t.Fatalf("bob's Acquire: %v; want a *HeldError for tracing", err)
	}
	if want := "the tracing resource is held by another agent; try again later"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if s := statsOf(t, l, PageKey(2)); s.Holder != "" || s.Queued != 0 {
		t.Errorf("page 2 after the refusal: %+v; want it free", s)
	}
	// Bob without the request queues; then alice's own call, which asked
	// too, fails as well: bob waits for it.
	waits := queueAs(t, l, "bob", "bob", Tracing, 1, Tracing)
	alice := Request{Keys: []Key{Tracing}, Agent: "alice", FailIfHeld: []Key{Tracing}}
	if _, err := l.Acquire(t.Context(), alice); !errors.Is(err, ErrHeld) {
		t.Errorf("alice behind bob's waiter: %v; want ErrHeld", err)
	}
	holder.Release()
	r := receive(t, waits)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Bob's own hold: bob's asking call waits for it.
	ctx, cancel := context.WithCancel(t.Context())
	ch := acquireAsync(ctx, l, bob(Tracing))
	waitQueued(t, l, Tracing, 1)
	r.g.Release()
	if r := receive(t, ch); r.err != nil {
		t.Fatalf("bob after his own hold: %v", r.err)
	} else {
		r.g.Release()
	}
	cancel()

	g := New(Options{Mode: Global})
	h := mustAcquire(t, t.Context(), g, Request{Keys: []Key{Tracing}, Agent: "alice"})
	ch = acquireAsync(t.Context(), g, bob(Tracing))
	waitQueued(t, g, Tracing, 1)
	h.Release()
	if r := receive(t, ch); r.err != nil {
		t.Errorf("global mode: %v; want the call to wait", r.err)
	} else {
		r.g.Release()
	}
}
