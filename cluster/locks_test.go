package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/cutproxy"
	"github.com/pagemux/pagemux/internal/etcdtest"
)

// TestFIFOAcrossProcesses proves that calls from two processes (two
// clients) on one lock get it in the order they asked, one at a time, and
// that Holders shows the holder and the queue in that order with their
// metadata.
func TestFIFOAcrossProcesses(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cliA, cliB := c.Client(t), c.Client(t)
	procs := []*Locks{newLocks(t, cliA, "a", DefaultTTL), newLocks(t, cliB, "b", DefaultTTL)}
	events := watchKeys(t, cliA)

	first := acquire(t, procs[0], Holder{Agent: "first", Tool: "click", Page: "3"}, "page")
	nextPut(t, events)
	const n = 12
	var (
		mu      sync.Mutex
		order   []int
		inside  atomic.Int32
		results []<-chan result
	)
	for i := range n {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		t.Cleanup(cancel)
		ch := make(chan result, 1)
		go func() {
			held, err := procs[i%2].Acquire(ctx, []string{"page"}, Holder{Agent: strconv.Itoa(i)})
			if err == nil {
				if inside.Add(1) != 1 {
					t.Errorf("call %d holds the lock with another", i)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				inside.Add(-1)
				err = held.Release(ctx)
			}
			ch <- result{held, err, time.Now()}
		}()
		results = append(results, ch)
		// Start the next call only once this one is in the queue, so that
		// the order asked is known.
		nextPut(t, events)
	}

	q := queue(t, procs[1], "page")
	want := "first"
	for i := range n {
		want += " " + strconv.Itoa(i)
	}
	if got := agents(q); got != want {
		t.Fatalf("Holders queue = %q, want %q", got, want)
	}
	if h := q[0].Holder; h.Process != "a" || h.Tool != "click" || h.Page != "3" {
		t.Errorf("holder metadata = %+v, want process a, tool click, page 3", h)
	}
	if q[1].Holder.Process != "a" || q[2].Holder.Process != "b" {
		t.Errorf("waiters' processes = %s, %s; want a, b", q[1].Holder.Process, q[2].Holder.Process)
	}
	if q[0].Token != first.Token("page") {
		t.Errorf("holder token %d, want %d", q[0].Token, first.Token("page"))
	}

	release(t, first)
	for i, ch := range results {
		if r := await(t, ch); r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("order of calls = %v, want 0..%d", order, n-1)
		}
	}
	if q := queue(t, procs[0], "page"); len(q) != 0 {
		t.Fatalf("keys left after every release: %v", agents(q))
	}
}

// TestCallsOfOneProcessNeverShareAKey is etcd issue #22082's scenario:
// with concurrency.Mutex two calls of one session on one lock share a key,
// so the second "holds" at once and a stale Unlock frees a third's turn.
// Here each call has its own key: the second waits, and a stale second
// Release of the first deletes nothing.
func TestCallsOfOneProcessNeverShareAKey(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	a := newLocks(t, cli, "a", DefaultTTL)
	b := newLocks(t, c.Client(t), "b", DefaultTTL)
	events := watchKeys(t, cli)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()

	one := acquire(t, a, Holder{Agent: "one"}, "page")
	keyOne := nextPut(t, events)
	two := acquireAsync(ctx, a, Holder{Agent: "two"}, "page")
	keyTwo := nextPut(t, events)
	three := acquireAsync(ctx, b, Holder{Agent: "three"}, "page")
	nextPut(t, events)
	if keyOne == keyTwo {
		t.Fatalf("two calls of one process share the key %s", keyOne)
	}
	pending(t, two, "second call of the same process")
	if got := agents(queue(t, a, "page")); got != "one two three" {
		t.Fatalf("queue = %q, want \"one two three\"", got)
	}

	release(t, one)
	r := await(t, two)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := one.Release(t.Context()); !errors.Is(err, ErrReleased) {
		t.Fatalf("second Release of the first call = %v, want ErrReleased", err)
	}
	if err := one.Check(); !errors.Is(err, ErrReleased) {
		t.Fatalf("Check after Release = %v, want ErrReleased", err)
	}
	if got := agents(queue(t, a, "page")); got != "two three" {
		t.Fatalf("after a stale Release, queue = %q, want \"two three\"", got)
	}
	pending(t, three, "third call, after a stale Release of the first")
	if err := r.held.Check(); err != nil {
		t.Fatalf("second call's Check: %v", err)
	}
	if r.held.Token("page") <= one.Token("page") {
		t.Fatalf("tokens %d then %d, want increasing", one.Token("page"), r.held.Token("page"))
	}
	release(t, r.held)
	release(t, got(t, three).held)
}

// TestGivingUpWhileWaitingRemovesTheKey proves that a call whose context
// is cancelled, or times out, while it waits deletes its key and that the
// call behind it gets the lock once the holder releases it.
func TestGivingUpWhileWaitingRemovesTheKey(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	a := newLocks(t, cli, "a", DefaultTTL)
	b := newLocks(t, c.Client(t), "b", DefaultTTL)
	events := watchKeys(t, cli)

	holder := acquire(t, a, Holder{Agent: "holder"}, "page")
	nextPut(t, events)
	cancelCtx, cancel := context.WithCancel(t.Context())
	cancelled := acquireAsync(cancelCtx, a, Holder{Agent: "cancelled"}, "page")
	keyCancelled := nextPut(t, events)
	timeoutCtx, cancelTimeout := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancelTimeout()
	timedOut := acquireAsync(timeoutCtx, b, Holder{Agent: "timed-out"}, "page")
	keyTimedOut := nextPut(t, events)
	ctx, cancelLast := context.WithTimeout(t.Context(), waitLimit)
	defer cancelLast()
	last := acquireAsync(ctx, b, Holder{Agent: "last"}, "page")
	nextPut(t, events)

	cancel()
	if r := await(t, cancelled); !errors.Is(r.err, context.Canceled) || errors.Is(r.err, ErrUnavailable) {
		t.Fatalf("cancelled call: %v, want context.Canceled and not ErrUnavailable", r.err)
	}
	r := await(t, timedOut)
	if !errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, ErrUnavailable) {
		t.Fatalf("timed-out call: %v, want context.DeadlineExceeded and not ErrUnavailable", r.err)
	}
	if msg := r.err.Error(); !strings.Contains(msg, "waited") || !strings.Contains(msg, "earlier calls") {
		t.Errorf("timeout message %q does not say it waited behind earlier calls", msg)
	}
	deleted := map[string]bool{}
	for len(deleted) < 2 {
		ev := next(t, events)
		if ev.put {
			t.Fatalf("unexpected put of %s", ev.key)
		}
		deleted[ev.key] = true
	}
	if !deleted[keyCancelled] || !deleted[keyTimedOut] {
		t.Fatalf("deleted %v, want the keys of the calls that gave up", deleted)
	}
	if got := agents(queue(t, a, "page")); got != "holder last" {
		t.Fatalf("queue = %q, want \"holder last\"", got)
	}
	pending(t, last, "last call")
	release(t, holder)
	release(t, got(t, last).held)
}

// TestDeadProcessFreesItsLocks proves that a process that dies holding a
// lock (its client closed without a Release, so its lease is no longer
// kept alive) frees it for a call of another process within TTL + 1 s.
func TestDeadProcessFreesItsLocks(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cliA, cliB := c.Client(t), c.Client(t)
	a := newLocks(t, cliA, "a", testTTL)
	b := newLocks(t, cliB, "b", testTTL)
	events := watchKeys(t, cliB)

	dead := acquire(t, a, Holder{Agent: "dies"}, "page", "audit")
	nextPut(t, events)
	nextPut(t, events)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	waiter := acquireAsync(ctx, b, Holder{Agent: "waits"}, "page")
	nextPut(t, events)

	died := time.Now()
	if err := cliA.Close(); err != nil {
		t.Fatal(err)
	}
	r := await(t, waiter)
	if r.err != nil {
		t.Fatal(r.err)
	}
	took := r.at.Sub(died)
	t.Logf("the other process got the lock %s after the holder died (TTL %s)", took.Round(time.Millisecond), testTTL)
	if took > testTTL+time.Second {
		t.Errorf("lock freed %s after its holder died, want within TTL + 1 s = %s", took, testTTL+time.Second)
	}
	if err := dead.Check(); !errors.Is(err, ErrLockLost) {
		t.Errorf("dead holder's Check = %v, want ErrLockLost", err)
	}
	if r.held.Token("page") <= dead.Token("page") {
		t.Errorf("token %d after %d, want higher", r.held.Token("page"), dead.Token("page"))
	}
	release(t, r.held)
}

// TestCutOffHolderLosesItsLockFirst cuts a holder off from etcd (a proxy
// that stops forwarding): its Check fails within the TTL, before the other
// process gets the lock, so the two never both hold it live. Once the
// proxy forwards again the cut-off process takes locks again, on a new
// lease, without being remade.
func TestCutOffHolderLosesItsLockFirst(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	proxy, err := cutproxy.New(strings.TrimPrefix(c.Members[0].ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	cliA := etcdtest.NewClient(t, proxy.URL())
	cliB := c.Client(t)
	a := newLocks(t, cliA, "a", testTTL)
	b := newLocks(t, cliB, "b", testTTL)
	events := watchKeys(t, cliB)

	cutOff := acquire(t, a, Holder{Agent: "cut-off"}, "page")
	nextPut(t, events)
	if err := cutOff.Check(); err != nil {
		t.Fatalf("Check before the cut: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	waiter := acquireAsync(ctx, b, Holder{Agent: "waits"}, "page")
	nextPut(t, events)

	cut := time.Now()
	proxy.Cut()
	var lostAt time.Time
	select {
	case <-cutOff.Lost():
		lostAt = time.Now()
	case r := <-waiter:
		t.Fatalf("the other process got the lock (%v) before the cut-off holder saw it lost", r.err)
	case <-time.After(waitLimit):
		t.Fatal("the cut-off holder never saw its lock lost")
	}
	err = cutOff.Check()
	if !errors.Is(err, ErrLockLost) || !strings.Contains(err.Error(), "etcd") {
		t.Fatalf("cut-off holder's Check = %v, want ErrLockLost naming etcd", err)
	}
	t.Logf("cut off: lock lost after %s (TTL %s): %v", lostAt.Sub(cut).Round(time.Millisecond), testTTL, err)
	// Check fails from the lease's known-live deadline on, which the last
	// keepalive asked before the cut set; Lost's timer may fire a little
	// later on a loaded machine.
	if deadline := a.epoch.Add(time.Duration(cutOff.s.liveUntil.Load())); deadline.After(cut.Add(testTTL)) {
		t.Errorf("Check fails from %s after the cut on, want within the TTL %s", deadline.Sub(cut), testTTL)
	}
	if d := lostAt.Sub(cut); d > testTTL+time.Second {
		t.Errorf("Lost closed %s after the cut, want about the TTL %s", d, testTTL)
	}

	r := await(t, waiter)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if cutOff.Check() == nil {
		t.Fatal("two live holders: the cut-off holder's Check passes while the other process holds the lock")
	}
	t.Logf("the other process got the lock %s after the cut, %s after the cut-off holder saw it lost",
		r.at.Sub(cut).Round(time.Millisecond), r.at.Sub(lostAt).Round(time.Millisecond))
	if !r.at.After(lostAt) {
		t.Fatalf("the other process got the lock at %s, before the holder lost it at %s", r.at, lostAt)
	}

	proxy.Resume()
	release(t, r.held)
	if err := cutOff.Release(t.Context()); err != nil {
		t.Logf("Release of the lost lock: %v", err) // its key went with the lease
	}
	again := acquire(t, a, Holder{Agent: "back"}, "page")
	if err := again.Check(); err != nil {
		t.Fatalf("Check after the proxy resumed: %v", err)
	}
	if again.s.id == cutOff.s.id {
		t.Errorf("after the lease was lost, Acquire reused it (%x)", int64(again.s.id))
	}
	if again.Token("page") <= r.held.Token("page") {
		t.Errorf("token after resume %d, want above %d", again.Token("page"), r.held.Token("page"))
	}
	release(t, again)
}

// TestUnreachableEtcdFailsFast proves that Acquire with etcd unreachable
// fails within its context with ErrUnavailable, naming etcd, the endpoints
// and what to check, and that once etcd is reachable again Acquire works
// on the same Locks.
func TestUnreachableEtcdFailsFast(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	proxy, err := cutproxy.New(strings.TrimPrefix(c.Members[0].ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	l := newLocks(t, etcdtest.NewClient(t, proxy.URL()), "a", testTTL)

	proxy.Cut()
	const timeout = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	start := time.Now()
	_, err = l.Acquire(ctx, []string{"page"}, Holder{})
	took := time.Since(start)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire with etcd unreachable = %v, want ErrUnavailable", err)
	}
	if took > timeout+time.Second {
		t.Errorf("Acquire took %s to fail, want about its %s timeout", took, timeout)
	}
	for _, want := range []string{"etcd", proxy.URL(), "endpoint health"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	t.Logf("unreachable: failed in %s: %v", took.Round(time.Millisecond), err)

	proxy.Resume()
	release(t, acquire(t, l, Holder{}, "page"))
}

// TestQuorum proves that a 3-member cluster keeps working with one member
// stopped, that without a quorum Acquire fails with ErrUnavailable within
// its timeout, and that it works again, on the same Locks, once the
// members are back.
func TestQuorum(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	l := newLocks(t, c.Client(t), "a", testTTL)
	release(t, acquire(t, l, Holder{}, "page"))

	c.Members[2].Stop(t)
	release(t, acquire(t, l, Holder{}, "page"))

	c.Members[1].Stop(t)
	const timeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	start := time.Now()
	_, err := l.Acquire(ctx, []string{"page"}, Holder{})
	took := time.Since(start)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire without quorum = %v, want ErrUnavailable", err)
	}
	if took > timeout+time.Second {
		t.Errorf("Acquire without quorum took %s, want about its %s timeout", took, timeout)
	}
	if !strings.Contains(err.Error(), "majority of its members") || !strings.Contains(err.Error(), c.Members[0].ClientURL) {
		t.Errorf("error %q does not say what to check, or where", err)
	}
	t.Logf("no quorum: failed in %s: %v", took.Round(time.Millisecond), err)

	c.Members[1].StartNoWait(t)
	c.Members[2].Start(t)
	c.Members[1].WaitReady(t)
	release(t, acquire(t, l, Holder{}, "page"))
}

// TestSeveralLocksInOneCall proves that a call holding several locks
// excludes every call that wants any of them, and that calls asking for
// overlapping sets in any order, from two processes, all finish (the
// sorted order of taking them rules out a deadlock) with no lock ever held
// twice.
func TestSeveralLocksInOneCall(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	procs := []*Locks{newLocks(t, c.Client(t), "a", DefaultTTL), newLocks(t, c.Client(t), "b", DefaultTTL)}

	held := acquire(t, procs[0], Holder{}, "page-2", "audit", "page-1", "audit")
	if got := strings.Join(held.Names(), " "); got != "audit page-1 page-2" {
		t.Fatalf("Names() = %q, want sorted and once each", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	events := watchKeys(t, c.Client(t))
	other := acquireAsync(ctx, procs[1], Holder{}, "tracing", "page-1")
	nextPut(t, events) // page-1, its first in sorted order, behind the holder
	pending(t, other, "a call wanting one of the held locks")
	release(t, held)
	release(t, got(t, other).held)

	names := []string{"audit", "tracing", "page-1", "page-2"}
	var inside [4]atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 5 {
				i, j := rng.IntN(4), rng.IntN(4)
				h, err := procs[g%2].Acquire(ctx, []string{names[i], names[j]}, Holder{Agent: fmt.Sprint(g)})
				if err != nil {
					t.Error(err)
					return
				}
				ks := []int{i}
				if j != i {
					ks = append(ks, j)
				}
				for _, k := range ks {
					if inside[k].Add(1) != 1 {
						t.Errorf("lock %s held by two calls", names[k])
					}
				}
				for _, k := range ks {
					inside[k].Add(-1)
				}
				if err := h.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLockNamesDoNotNest proves that names that are prefixes of each other
// ("a" and "a/b") are separate locks.
func TestLockNamesDoNotNest(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	l := newLocks(t, c.Client(t), "a", DefaultTTL)
	outer := acquire(t, l, Holder{}, "browser/1")
	inner := acquire(t, l, Holder{}, "browser/1/target/ABC")
	qs, err := l.Holders(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Name != "browser/1" || qs[1].Name != "browser/1/target/ABC" || len(qs[0].Entries) != 1 {
		t.Fatalf("Holders = %+v, want two locks of one entry each", qs)
	}
	release(t, inner)
	release(t, outer)
}

// TestCloseFreesLocks proves that Close revokes the lease at once: a call
// of another process waiting on a lock of the closed process gets it
// without waiting for the TTL, the closed process's locks fail Check, and
// its Acquire fails with ErrClosed.
func TestCloseFreesLocks(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	a := newLocks(t, cli, "a", DefaultTTL)
	b := newLocks(t, c.Client(t), "b", DefaultTTL)
	events := watchKeys(t, cli)
	held := acquire(t, a, Holder{}, "page")
	nextPut(t, events)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	waiter := acquireAsync(ctx, b, Holder{}, "page")
	nextPut(t, events)

	closed := time.Now()
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := held.Check(); !errors.Is(err, ErrLockLost) {
		t.Errorf("Check after Close = %v, want ErrLockLost", err)
	}
	r := await(t, waiter)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if d := r.at.Sub(closed); d > DefaultTTL/2 {
		t.Errorf("the waiter got the lock %s after Close, want at once (the TTL is %s)", d, DefaultTTL)
	}
	release(t, r.held)
	if _, err := a.Acquire(ctx, []string{"page"}, Holder{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close = %v, want ErrClosed", err)
	}
}

// TestReleaseWhileEtcdIsUnreachable proves that a Release that etcd does
// not answer fails with ErrUnavailable within its context and leaves no
// key behind: the key is deleted once etcd answers again, well before the
// lease would expire, and a waiting call of another process gets the lock.
func TestReleaseWhileEtcdIsUnreachable(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	proxy, err := cutproxy.New(strings.TrimPrefix(c.Members[0].ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	cliB := c.Client(t)
	a := New(etcdtest.NewClient(t, proxy.URL()), Options{Prefix: "/test/" + t.Name() + "/", Process: "a",
		TTL: time.Minute, RequestTimeout: 300 * time.Millisecond, Logger: testLogger("a")})
	// A TTL of a minute: the key must go because Locks deletes it once etcd
	// answers, not because the lease expired.
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	b := newLocks(t, cliB, "b", DefaultTTL)
	events := watchKeys(t, cliB)

	held := acquire(t, a, Holder{}, "page")
	key := nextPut(t, events)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	waiter := acquireAsync(ctx, b, Holder{}, "page")
	nextPut(t, events)

	proxy.Cut()
	start := time.Now()
	err = held.Release(t.Context())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Release with etcd unreachable = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Release took %s to fail, want about its 300ms request timeout", d)
	}
	pending(t, waiter, "the other process, while the release is held up")
	resumed := time.Now()
	proxy.Resume()
	if ev := next(t, events); ev.put || ev.key != key {
		t.Fatalf("after resume: %+v, want the delete of %s", ev, key)
	}
	r := await(t, waiter)
	if r.err != nil {
		t.Fatal(r.err)
	}
	took := r.at.Sub(resumed)
	t.Logf("the key was deleted and the lock passed on %s after etcd was reachable again (lease TTL %s)", took.Round(time.Millisecond), time.Minute)
	if took > 5*time.Second {
		t.Errorf("the key was deleted %s after etcd was back, want within a few retries of %s", took, retryEvery)
	}
	if err := held.Check(); !errors.Is(err, ErrReleased) {
		t.Errorf("Check after a failed Release = %v, want ErrReleased", err)
	}
	release(t, r.held)
}
