package pagelock

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestLineOrdersReservations starts the workers of ten tickets in a shuffled
// order, as a transport's worker pool may: each must still get the lock in
// ticket order, in both modes.
func TestLineOrdersReservations(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			for round := range 50 {
				var line Line
				tickets := make([]*Ticket, 10)
				for i := range tickets {
					tickets[i] = line.Take()
				}
				var mu sync.Mutex
				var order []int
				var wg sync.WaitGroup
				for _, i := range rand.Perm(len(tickets)) {
					wg.Go(func() {
						tk := tickets[i]
						if err := tk.Turn(t.Context()); err != nil {
							t.Error(err)
							return
						}
						r, err := l.Reserve(t.Context(), For(PageKey(1)))
						tk.Admit()
						if err != nil {
							t.Error(err)
							return
						}
						g, err := r.Wait()
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						order = append(order, i)
						mu.Unlock()
						g.Release()
					})
				}
				wg.Wait()
				if !slices.IsSorted(order) {
					t.Fatalf("round %d: locks taken in order %v, want ticket order", round, order)
				}
			}
		})
	}
}

// TestLineAdmitBeforeTurn: a call that fails before its turn (the transport
// admits its ticket when it answers) must not block the tickets behind it,
// nor be admitted before the tickets ahead of it.
func TestLineAdmitBeforeTurn(t *testing.T) {
	var line Line
	first, second, third := line.Take(), line.Take(), line.Take()
	second.Admit()
	turned := make(chan struct{})
	go func() {
		if err := third.Turn(t.Context()); err != nil {
			t.Error(err)
		}
		close(turned)
	}()
	select {
	case <-turned:
		t.Fatal("the third ticket's turn came before the first was admitted")
	case <-time.After(20 * time.Millisecond):
	}
	first.Admit()
	select {
	case <-turned:
	case <-time.After(patience):
		t.Fatal("the third ticket's turn never came")
	}
	third.Admit()
}

// TestLineCancelledTurn: a ticket whose ctx ends while it waits admits itself
// once its turn comes.
func TestLineCancelledTurn(t *testing.T) {
	var line Line
	first, second, third := line.Take(), line.Take(), line.Take()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := second.Turn(ctx); err == nil {
		t.Fatal("Turn with a done ctx returned nil")
	}
	first.Admit()
	if err := third.Turn(t.Context()); err != nil {
		t.Fatal(err)
	}
	third.Admit()
}

// TestLineHolds: a call that changes the line's state holds it; a later call
// that reads the state waits for the release, an earlier one does not.
func TestLineHolds(t *testing.T) {
	var line Line
	before, changer, after := line.Take(), line.Take(), line.Take()
	before.Admit()
	release := changer.Hold()
	changer.Admit()
	if err := after.Turn(t.Context()); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- after.AwaitHolds(t.Context()) }()
	select {
	case <-waited:
		t.Fatal("AwaitHolds returned while an earlier hold was held")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	release()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(patience):
		t.Fatal("AwaitHolds never returned")
	}
	after.Admit()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	last := line.Take()
	if err := last.AwaitHolds(ctx); err != nil {
		t.Errorf("AwaitHolds with no hold: %v", err)
	}
	last.Admit()
}

func TestNilTicket(t *testing.T) {
	var tk *Ticket
	if tk.Turn(t.Context()) != nil || tk.AwaitHolds(t.Context()) != nil {
		t.Error("a nil ticket waited")
	}
	tk.Admit()
	tk.Hold()()
	if TicketFrom(t.Context()) != nil {
		t.Error("TicketFrom a bare context is not nil")
	}
	var line Line
	real := line.Take()
	if TicketFrom(WithTicket(t.Context(), real)) != real {
		t.Error("TicketFrom does not return the ticket WithTicket stored")
	}
	real.Admit()
}

// TestReserveAllAtOnce: a call queued on two locks holds its place on both,
// so a later call on the free one waits behind it, and no order of grants
// can deadlock.
func TestReserveAllAtOnce(t *testing.T) {
	l := New(Options{Mode: PerPage})
	holder := mustAcquire(t, t.Context(), l, Request{Keys: []Key{PageKey(1)}, Owner: "holder"})
	first, err := l.Reserve(t.Context(), Request{Keys: []Key{PageKey(1), Tracing}, Owner: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if s := statsOf(t, l, Tracing); s.Holder != "first" {
		t.Fatalf("tracing is held by %q, want the first call, which reserved it free", s.Holder)
	}
	later := acquireAsync(t.Context(), l, Request{Keys: []Key{Tracing}, Owner: "later"})
	waitQueued(t, l, Tracing, 1)
	holder.Release()
	g, err := first.Wait()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-later:
		t.Fatal("the later call got tracing while the first held it")
	default:
	}
	g.Release()
	r := receive(t, later)
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.g.Release()
}

// TestReserveTimeoutGivesBack: a reservation that times out on one lock gives
// back the other lock it was granted.
func TestReserveTimeoutGivesBack(t *testing.T) {
	l := New(Options{Mode: PerPage, Timeout: 30 * time.Millisecond})
	mustAcquire(t, t.Context(), l, Request{Keys: []Key{Tracing}, Owner: "trace"})
	r, err := l.Reserve(t.Context(), For(PageKey(1), Tracing))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err == nil {
		t.Fatal("Wait did not time out")
	}
	if s := statsOf(t, l, PageKey(1)); s.Holder != "" {
		t.Errorf("page/1 is still held by %q after the timeout", s.Holder)
	}
}

// TestLineNumbered: numbered tickets taken in any order take their turns
// in number order; a number that never comes holds the rest only a while.
func TestLineNumbered(t *testing.T) {
	var line Line
	order := rand.Perm(20)
	tickets := make([]*Ticket, 20)
	for _, i := range order {
		tickets[i] = line.TakeNumbered(uint64(i + 1))
	}
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for _, i := range rand.Perm(20) {
		wg.Go(func() {
			if err := tickets[i].Turn(t.Context()); err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			tickets[i].Admit()
		})
	}
	wg.Wait()
	if !slices.IsSorted(got) {
		t.Fatalf("numbered turns came in the order %v", got)
	}
	if len(line.numbered) > 1 {
		t.Errorf("%d numbered slots kept after every ticket was taken", len(line.numbered))
	}

	// Number 22 comes, 21 never does: 22's turn still comes.
	var gappy Line
	for i := uint64(1); i <= 20; i++ {
		gappy.TakeNumbered(i).Admit()
	}
	late := gappy.TakeNumbered(22)
	start := time.Now()
	if err := late.Turn(t.Context()); err != nil {
		t.Fatal(err)
	}
	late.Admit()
	if waited := time.Since(start); waited < gapWait/2 {
		t.Errorf("ticket 22 did not wait for the missing 21 (%v)", waited)
	}
}

// countingObserver counts what an Observer is told.
type countingObserver struct {
	mu       sync.Mutex
	acquired map[Key]int
	waited   time.Duration
	released map[Key]int
	failed   map[string]int
	failedOn []Key
}

func newCountingObserver() *countingObserver {
	return &countingObserver{acquired: map[Key]int{}, released: map[Key]int{}, failed: map[string]int{}}
}

func (o *countingObserver) Acquired(k Key, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acquired[k]++
	o.waited += d
}

func (o *countingObserver) Released(k Key, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.released[k]++
}

func (o *countingObserver) Failed(k Key, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed[why]++
	o.failedOn = append(o.failedOn, k)
}

// TestObserver: every acquisition, release and failure reaches the Observer.
func TestObserver(t *testing.T) {
	obs := newCountingObserver()
	l := New(Options{Mode: PerPage, Timeout: 30 * time.Millisecond, MaxQueue: 1, Observer: obs})
	g := mustAcquire(t, t.Context(), l, For(PageKey(1)))
	waiter := acquireAsync(t.Context(), l, For(PageKey(1)))
	waitQueued(t, l, PageKey(1), 1)
	if _, err := l.Acquire(t.Context(), For(PageKey(1))); err == nil {
		t.Fatal("a full queue took a call")
	}
	if r := receive(t, waiter); r.err == nil {
		t.Fatal("the waiter did not time out")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Acquire(ctx, For(PageKey(2))); err == nil {
		t.Fatal("a cancelled call took a lock")
	}
	g.Release()
	two := mustAcquire(t, t.Context(), l, For(PageKey(1), Tracing))
	two.Release()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.acquired[PageKey(1)] != 2 || obs.acquired[Tracing] != 1 || obs.released[PageKey(1)] != 2 || obs.released[Tracing] != 1 {
		t.Errorf("acquired %v, released %v", obs.acquired, obs.released)
	}
	if obs.failed["busy"] != 1 || obs.failed["timeout"] != 1 || obs.failed["cancelled"] != 1 {
		t.Errorf("failed %v", obs.failed)
	}
}

// TestLineNumberedTwice: a number that comes twice (a client that retried,
// or restarted its count on the same line) neither crashes the server by
// admitting one ticket twice nor holds the line.
func TestLineNumberedTwice(t *testing.T) {
	var line Line
	first := line.TakeNumbered(1)
	again := line.TakeNumbered(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := again.Turn(t.Context()); err != nil {
			t.Error(err)
		}
		again.Admit()
		first.Admit()
	}()
	select {
	case <-done:
	case <-time.After(gapWait / 2):
		t.Fatal("the repeated number waited")
	}
	next := line.TakeNumbered(2)
	ctx, cancel := context.WithTimeout(t.Context(), gapWait/2)
	defer cancel()
	if err := next.Turn(ctx); err != nil {
		t.Fatalf("ticket 2 after a repeated 1: %v", err)
	}
	next.Admit()
}

// statsObserver reads the Locker's Stats whenever it is told of a failure,
// as an Observer may: it must be called without any lock's mutex held.
type statsObserver struct {
	l      *Locker
	failed chan string
}

func (o *statsObserver) Acquired(Key, time.Duration) {}
func (o *statsObserver) Released(Key, time.Duration) {}
func (o *statsObserver) Failed(_ Key, why string) {
	o.l.Stats()
	o.failed <- why
}

// TestObserverBusyUnlocked: the Observer hears of a full queue after the
// lock's mutex is given back, so an Observer that reads Stats does not
// deadlock the lock.
func TestObserverBusyUnlocked(t *testing.T) {
	obs := &statsObserver{failed: make(chan string, 1)}
	l := New(Options{Mode: PerPage, MaxQueue: 1, Observer: obs})
	obs.l = l
	g := mustAcquire(t, t.Context(), l, For(PageKey(1))) // released at the end, not deferred: on a deadlock that would hang
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiter := acquireAsync(ctx, l, For(PageKey(1)))
	waitQueued(t, l, PageKey(1), 1)
	busy := acquireAsync(t.Context(), l, For(PageKey(1)))
	select {
	case why := <-obs.failed:
		if why != "busy" {
			t.Fatalf("the Observer was told %q", why)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Observer, told of a full queue, deadlocked on the lock's mutex")
	}
	if r := receive(t, busy); r.err == nil {
		t.Fatal("a full queue took a call")
	}
	cancel()
	receive(t, waiter)
	<-obs.failed // the waiter's cancellation
	g.Release()
}

// TestLineNumberedGapKeepsOrder: when a number never comes, only the ticket
// right after it waits out gapWait; the ones after that, whose numbers
// came, keep their order however long they waited already.
func TestLineNumberedGapKeepsOrder(t *testing.T) {
	t.Parallel()
	var line Line
	line.TakeNumbered(1).Admit()
	// 2 never comes.
	three, four := line.TakeNumbered(3), line.TakeNumbered(4)
	turns := make(chan int, 2)
	var wg sync.WaitGroup
	wg.Go(func() { // 4 waits first, so its gapWait would pass first
		if err := four.Turn(t.Context()); err != nil {
			t.Error(err)
		}
		turns <- 4
		four.Admit()
	})
	time.Sleep(200 * time.Millisecond)
	wg.Go(func() {
		if err := three.Turn(t.Context()); err != nil {
			t.Error(err)
		}
		turns <- 3
		time.Sleep(100 * time.Millisecond) // 3 is still in its turn
		three.Admit()
	})
	wg.Wait()
	if first := <-turns; first != 3 {
		t.Errorf("ticket %d took its turn before ticket 3", first)
	}
}

// TestObserverNamesTheLockGivenUp: a call that times out on the second of
// its locks is a failure on that lock, not on its first.
func TestObserverNamesTheLockGivenUp(t *testing.T) {
	obs := newCountingObserver()
	l := New(Options{Mode: PerPage, Timeout: 30 * time.Millisecond, Observer: obs})
	g := mustAcquire(t, t.Context(), l, For(Tracing))
	if _, err := l.Acquire(t.Context(), For(PageKey(1), Tracing)); err == nil {
		t.Fatal("the call got a held lock")
	}
	g.Release()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.Equal(obs.failedOn, []Key{Tracing}) || obs.failed["timeout"] != 1 {
		t.Errorf("the Observer was told of failures on %v (%v), want one timeout on %s", obs.failedOn, obs.failed, Tracing)
	}
}
