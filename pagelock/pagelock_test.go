package pagelock

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"
)

// TestMain fails the run if a test leaves a goroutine behind, such as a
// waiter that never woke.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// modes are the modes most tests run in.
var modes = []Mode{Global, PerPage}

// patience bounds every wait of a test for something that should happen. It
// is generous on purpose: it only turns a hang into a failure.
const patience = 20 * time.Second

// result is what an Acquire run in the background returned.
type result struct {
	g   *Guard
	err error
}

// acquireAsync runs Acquire in a new goroutine and returns where its result
// will arrive.
func acquireAsync(ctx context.Context, l *Locker, r Request) <-chan result {
	ch := make(chan result, 1)
	go func() {
		g, err := l.Acquire(ctx, r)
		ch <- result{g, err}
	}()
	return ch
}

// receive returns the result from ch, failing the test if none comes.
func receive(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(patience):
		t.Fatal("Acquire did not return")
		return result{}
	}
}

// mustAcquire returns a Guard for r, failing the test on error, and
// releases it when the test ends.
func mustAcquire(t *testing.T, ctx context.Context, l *Locker, r Request) *Guard {
	t.Helper()
	g, err := l.Acquire(ctx, r)
	if err != nil {
		t.Fatalf("Acquire(%v): %v", r.Keys, err)
	}
	t.Cleanup(g.Release)
	return g
}

// lockName is the name Stats gives the lock of key.
func lockName(l *Locker, key Key) Key {
	if l.Mode() == Global {
		return globalKey
	}
	return key
}

// statsOf returns the Stats entry of the lock of key; a zero KeyStats if
// there is none.
func statsOf(t *testing.T, l *Locker, key Key) KeyStats {
	t.Helper()
	for _, s := range l.Stats() {
		if s.Key == lockName(l, key) {
			return s
		}
	}
	return KeyStats{}
}

// waitQueued waits until n calls queue on the lock of key. It polls: a
// queued call gives no other sign, and this is what makes arrival order
// deterministic in tests.
func waitQueued(t *testing.T, l *Locker, key Key, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for statsOf(t, l, key).Queued != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue of %s: got %d waiters, want %d", key, statsOf(t, l, key).Queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// state returns what f says of itself, including a lock that Close dropped
// and Stats no longer shows.
func state(f *fifo) (held bool, owner string, queued int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held(), f.holder(), f.queued
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"global", Global, false},
		{"page", PerPage, false},
		{"", 0, true},
		{"Global", 0, true},
		{"perpage", 0, true},
		{" page", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, error %t", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !(strings.Contains(err.Error(), `"global"`) && strings.Contains(err.Error(), `"page"`)) {
			t.Errorf("ParseMode(%q) error %q does not list the valid modes", tt.in, err)
		}
	}
}

func TestModeString(t *testing.T) {
	tests := []struct {
		m    Mode
		want string
	}{
		{Global, "global"},
		{PerPage, "page"},
		{Mode(7), "Mode(7)"},
		{Mode(-1), "Mode(-1)"},
	}
	for _, tt := range tests {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(tt.m), got, tt.want)
		}
	}
	for _, m := range modes {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%v.String()) = %v, %v", m, got, err)
		}
	}
}

func TestNewRejectsUnknownMode(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New(Options{Mode: 9}) did not panic")
		}
	}()
	New(Options{Mode: 9})
}

func TestKey(t *testing.T) {
	tests := []struct {
		k        Key
		wantRaw  string
		wantText string
	}{
		{PageKey(3), "page/3", "page 3"},
		{PageKey(0), "page/0", "page 0"},
		{Tracing, "tracing", "the tracing resource"},
		{Audit, "audit", "the audit resource"},
		{globalKey, "global", "the global lock"},
		{Key("heap"), "heap", "the heap resource"},
		{Tracing.Of("http://127.0.0.1:9222"), "tracing@http://127.0.0.1:9222", "the tracing resource of the Chrome at http://127.0.0.1:9222"},
		{Audit.Of(""), "audit", "the audit resource"},
		{PageKey(3).Of("http://127.0.0.1:9222"), "page/3", "page 3"},
	}
	for _, tt := range tests {
		if string(tt.k) != tt.wantRaw {
			t.Errorf("key = %q, want %q", string(tt.k), tt.wantRaw)
		}
		if got := tt.k.String(); got != tt.wantText {
			t.Errorf("Key(%q).String() = %q, want %q", string(tt.k), got, tt.wantText)
		}
	}
	for k, want := range map[Key]Key{Tracing.Of("http://a:1"): Tracing, Audit.Of("ws://b/x@y"): Audit, Audit: Audit, PageKey(7): PageKey(7)} {
		if got := k.Resource(); got != want {
			t.Errorf("Key(%q).Resource() = %q, want %q", string(k), got, want)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     string
		sentinel error
	}{
		{
			name:     "timeout with holder",
			err:      &TimeoutError{Key: PageKey(2), Waited: 2 * time.Minute, Holder: "take_snapshot", HeldFor: 123 * time.Second},
			want:     "timed out after 2m0s waiting for page 2: held by take_snapshot for 2m3s; try again later or raise --lock-timeout",
			sentinel: ErrTimeout,
		},
		{
			name:     "timeout rounds to milliseconds",
			err:      &TimeoutError{Key: Tracing, Waited: 1234567891, Holder: "stop_trace", HeldFor: 5*time.Second + 400*time.Microsecond},
			want:     "timed out after 1.235s waiting for the tracing resource: held by stop_trace for 5s; try again later or raise --lock-timeout",
			sentinel: ErrTimeout,
		},
		{
			name:     "timeout without holder",
			err:      &TimeoutError{Key: PageKey(2), Waited: time.Second},
			want:     "timed out after 1s waiting for page 2; try again later or raise --lock-timeout",
			sentinel: ErrTimeout,
		},
		{
			name:     "busy",
			err:      &BusyError{Key: PageKey(2), Queued: 64, Max: 64},
			want:     "page 2 is busy: 64 calls already queued (--max-queue 64); try again later",
			sentinel: ErrBusy,
		},
		{
			name:     "busy with one call",
			err:      &BusyError{Key: Audit, Queued: 1, Max: 1},
			want:     "the audit resource is busy: 1 call already queued (--max-queue 1); try again later",
			sentinel: ErrBusy,
		},
		{name: "closed page", err: &ClosedError{Key: PageKey(3)}, want: "page 3 is closed", sentinel: ErrClosed},
		{name: "closed tracing", err: &ClosedError{Key: Tracing}, want: "the tracing resource is closed", sentinel: ErrClosed},
	}
	sentinels := []error{ErrTimeout, ErrBusy, ErrClosed}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q\nwant      %q", got, tt.want)
			}
			for _, s := range sentinels {
				if got := errors.Is(tt.err, s); got != (s == tt.sentinel) {
					t.Errorf("errors.Is(err, %v) = %t", s, got)
				}
			}
		})
	}
}

// TestFIFO queues waiters in a known order behind a holder and checks that
// they get the lock in that order. In Global mode the waiters ask for
// different keys, which all share the one queue.
func TestFIFO(t *testing.T) {
	const n = 8
	tests := []struct {
		mode  Mode
		keyOf func(i int) Key
	}{
		{Global, func(i int) Key { return PageKey(1 + i%3) }},
		{PerPage, func(int) Key { return PageKey(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			l := New(Options{Mode: tt.mode})
			holder := mustAcquire(t, t.Context(), l, For(PageKey(1)))
			var (
				mu    sync.Mutex
				order []int
			)
			var g errgroup.Group
			for i := range n {
				g.Go(func() error {
					guard, err := l.Acquire(t.Context(), For(tt.keyOf(i)))
					if err != nil {
						return err
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					guard.Release()
					return nil
				})
				waitQueued(t, l, PageKey(1), i+1)
			}
			holder.Release()
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(order, want) {
				t.Errorf("lock order = %v, want %v", order, want)
			}
		})
	}
}

// TestModesKeysBlocking checks that a held page blocks a call on another page
// in Global mode and not in PerPage mode.
func TestModesKeysBlocking(t *testing.T) {
	tests := []struct {
		mode      Mode
		wantQueue bool
	}{
		{Global, true},
		{PerPage, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			l := New(Options{Mode: tt.mode})
			holder := mustAcquire(t, t.Context(), l, For(PageKey(1)))
			ch := acquireAsync(t.Context(), l, For(PageKey(2), Tracing))
			if tt.wantQueue {
				waitQueued(t, l, PageKey(2), 1)
				holder.Release()
			}
			r := receive(t, ch)
			if r.err != nil {
				t.Fatal(r.err)
			}
			defer r.g.Release()
			if waited := r.g.Waited() > 0; waited != tt.wantQueue {
				t.Errorf("Waited() = %v; want waiting %t", r.g.Waited(), tt.wantQueue)
			}
		})
	}
}

func TestKeysCanonical(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			g := mustAcquire(t, t.Context(), l, For(PageKey(3), Tracing, PageKey(1), PageKey(3), Tracing))
			want := []Key{PageKey(1), PageKey(3), Tracing}
			keys := g.Keys()
			if !slices.Equal(keys, want) {
				t.Errorf("Keys() = %v, want %v", keys, want)
			}
			keys[0] = Audit
			if got := g.Keys(); !slices.Equal(got, want) {
				t.Errorf("Keys() after changing its result = %v, want %v", got, want)
			}
			wantLocks := len(want)
			if m == Global {
				wantLocks = 1
			}
			if len(g.fifos) != wantLocks {
				t.Errorf("guard holds %d locks, want %d", len(g.fifos), wantLocks)
			}
		})
	}
}

func TestZeroKeys(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			holder := mustAcquire(t, t.Context(), l, For(PageKey(1)))
			g, err := l.Acquire(t.Context(), For())
			if err != nil || g == nil {
				t.Fatalf("Acquire() = %v, %v; want a Guard", g, err)
			}
			if len(g.Keys()) != 0 || g.Waited() != 0 {
				t.Errorf("empty Guard: Keys() = %v, Waited() = %v", g.Keys(), g.Waited())
			}
			g.Release()
			if s := statsOf(t, l, PageKey(1)); s.Holder == "" {
				t.Error("releasing an empty Guard freed another lock")
			}
			holder.Release()
		})
	}
}

// TestStressMultiKey takes random sets of keys, in random order and with
// duplicates, from several goroutines, checking that no two holders overlap.
// A deadlock makes the Acquire calls fail at the deadline rather than hang.
func TestStressMultiKey(t *testing.T) {
	pool := []Key{PageKey(0), PageKey(1), PageKey(2), PageKey(3), Tracing, Audit}
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			ctx, cancel := context.WithTimeout(t.Context(), patience)
			defer cancel()
			var inUse sync.Map // Key -> *atomic.Int32
			for _, k := range slices.Concat(pool, []Key{globalKey}) {
				inUse.Store(k, new(atomic.Int32))
			}
			hold := func(keys []Key, delta int32) error {
				if m == Global {
					keys = []Key{globalKey}
				}
				for _, k := range keys {
					c, _ := inUse.Load(k)
					if n := c.(*atomic.Int32).Add(delta); n != 0 && n != 1 {
						return errors.New(string(k) + " held twice")
					}
				}
				return nil
			}
			var g errgroup.Group
			for worker := range 8 {
				g.Go(func() error {
					rng := rand.New(rand.NewPCG(uint64(worker), 1))
					for range 1000 {
						keys := make([]Key, 1+rng.IntN(4))
						for i := range keys {
							keys[i] = pool[rng.IntN(len(pool))]
						}
						if err := stressOnce(ctx, l, keys, rng, hold); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			for _, s := range l.Stats() {
				if s.Holder != "" || s.Queued != 0 {
					t.Errorf("after the stress %s: holder %q, %d queued", s.Key, s.Holder, s.Queued)
				}
			}
		})
	}
}

// stressOnce takes keys, sometimes with a ctx that soon gives up, marks them
// held with hold, and releases them. Only the short ctx may end the wait:
// the end of ctx means a deadlock.
func stressOnce(ctx context.Context, l *Locker, keys []Key, rng *rand.Rand, hold func([]Key, int32) error) error {
	short := ctx
	if rng.IntN(4) == 0 {
		var cancel context.CancelFunc
		short, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(200))*time.Microsecond)
		defer cancel()
	}
	g, err := l.Acquire(short, For(keys...))
	if err != nil && short != ctx && short.Err() != nil && ctx.Err() == nil {
		return nil // the short ctx gave up, as it may
	}
	if err != nil {
		return err
	}
	defer g.Release()
	distinct := g.Keys()
	if err := hold(distinct, 1); err != nil {
		return err
	}
	runtime.Gosched()
	return hold(distinct, -1)
}

// TestCancelLeavesQueue checks that a waiter whose ctx ends leaves the queue
// at once, and that the waiter behind it gets the lock next.
func TestCancelLeavesQueue(t *testing.T) {
	gone := errors.New("client went away")
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			holder := mustAcquire(t, t.Context(), l, For(PageKey(1)))
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			cancelled := acquireAsync(ctx, l, For(PageKey(1)))
			waitQueued(t, l, PageKey(1), 1)
			next := acquireAsync(t.Context(), l, For(PageKey(1)))
			waitQueued(t, l, PageKey(1), 2)

			cancel(gone)
			r := receive(t, cancelled)
			if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, gone) {
				t.Fatalf("cancelled Acquire: %v; want context.Canceled and its cause", r.err)
			}
			if !strings.Contains(r.err.Error(), "page 1") {
				t.Errorf("error %q does not name the key", r.err)
			}
			if s := statsOf(t, l, PageKey(1)); s.Queued != 1 || s.Cancelled != 1 {
				t.Errorf("after cancel: Queued %d, Cancelled %d; want 1, 1", s.Queued, s.Cancelled)
			}
			holder.Release()
			if r := receive(t, next); r.err != nil {
				t.Fatal(r.err)
			} else {
				r.g.Release()
			}
		})
	}
}

func TestDoneContextFailsAtOnce(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := l.Acquire(ctx, For(PageKey(1))); !errors.Is(err, context.Canceled) {
				t.Fatalf("Acquire with a done ctx: %v; want context.Canceled", err)
			}
			if s := statsOf(t, l, PageKey(1)); s.Holder != "" || s.Acquired != 0 {
				t.Errorf("a done ctx took the lock: %+v", s)
			}
		})
	}
}

// TestTimeout checks the TimeoutError of a call that waits past
// Options.Timeout: it names the key, the holder and both durations.
func TestTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m, Timeout: timeout})
			holder := mustAcquire(t, t.Context(), l, Request{Keys: []Key{PageKey(2)}, Owner: "take_snapshot"})
			_, err := l.Acquire(t.Context(), Request{Keys: []Key{PageKey(2)}, Owner: "click"})
			var te *TimeoutError
			if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) {
				t.Fatalf("Acquire: %v; want a *TimeoutError", err)
			}
			if te.Key != PageKey(2) || te.Holder != "take_snapshot" {
				t.Errorf("TimeoutError names %q held by %q; want page/2 held by take_snapshot", te.Key, te.Holder)
			}
			if te.Waited < timeout || te.HeldFor < te.Waited {
				t.Errorf("Waited %v, HeldFor %v; want Waited >= %v <= HeldFor", te.Waited, te.HeldFor, timeout)
			}
			for _, part := range []string{"timed out after", "page 2", "held by take_snapshot", "--lock-timeout"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
			s := statsOf(t, l, PageKey(2))
			if s.Timeouts != 1 || s.Queued != 0 || s.Holder != "take_snapshot" {
				t.Errorf("after the timeout: %+v", s)
			}
			holder.Release()
		})
	}
}

// TestFailedAcquireReleasesTaken checks that a multi-key Acquire that fails
// part-way gives back the locks it took on the way.
func TestFailedAcquireReleasesTaken(t *testing.T) {
	l := New(Options{Mode: PerPage, Timeout: 50 * time.Millisecond})
	mustAcquire(t, t.Context(), l, Request{Keys: []Key{Tracing}, Owner: "start_trace"})
	_, err := l.Acquire(t.Context(), For(Tracing, PageKey(1)))
	var te *TimeoutError
	if !errors.As(err, &te) || te.Key != Tracing {
		t.Fatalf("Acquire: %v; want a timeout on tracing", err)
	}
	g, err := l.Acquire(t.Context(), For(PageKey(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	if g.Waited() != 0 {
		t.Errorf("page/1 was still held: waited %v", g.Waited())
	}
}

func TestReleaseIdempotent(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			first := mustAcquire(t, t.Context(), l, For(PageKey(1), Tracing))
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(first.Release)
			}
			wg.Wait()
			second := mustAcquire(t, t.Context(), l, Request{Keys: []Key{PageKey(1), Tracing}, Owner: "second"})
			if second.Waited() != 0 {
				t.Errorf("concurrent releases left the lock held: waited %v", second.Waited())
			}
			first.Release() // must not free the second holder's locks
			if s := statsOf(t, l, PageKey(1)); s.Holder != "second" {
				t.Errorf("holder after a stale Release = %q, want second", s.Holder)
			}
			var none *Guard
			none.Release()
			if none.Waited() != 0 || none.Keys() != nil {
				t.Error("nil Guard is not empty")
			}
		})
	}
}

// TestMaxQueue checks that a call past the queue bound fails at once, and
// leaves the queued calls alone.
func TestMaxQueue(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m, MaxQueue: 2})
			holder := mustAcquire(t, t.Context(), l, For(PageKey(2)))
			var queued []<-chan result
			for i := range 2 {
				queued = append(queued, acquireAsync(t.Context(), l, For(PageKey(2))))
				waitQueued(t, l, PageKey(2), i+1)
			}
			_, err := l.Acquire(t.Context(), For(PageKey(2)))
			var be *BusyError
			if !errors.As(err, &be) || !errors.Is(err, ErrBusy) {
				t.Fatalf("Acquire past the bound: %v; want a *BusyError", err)
			}
			if *be != (BusyError{Key: PageKey(2), Queued: 2, Max: 2}) {
				t.Errorf("BusyError = %+v", *be)
			}
			if want := "page 2 is busy: 2 calls already queued (--max-queue 2); try again later"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			if s := statsOf(t, l, PageKey(2)); s.Busy != 1 || s.Queued != 2 {
				t.Errorf("Busy %d, Queued %d; want 1, 2", s.Busy, s.Queued)
			}
			holder.Release()
			for _, ch := range queued {
				r := receive(t, ch)
				if r.err != nil {
					t.Fatal(r.err)
				}
				r.g.Release()
			}
		})
	}
}

// TestClose checks that closing a key fails its waiters at once, including a
// multi-key waiter queued on another key, fails later calls naming it, spares
// other keys' waiters, and leaves the holder alone until it releases.
func TestClose(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			page3 := mustAcquire(t, t.Context(), l, Request{Keys: []Key{PageKey(3)}, Owner: "navigate"})
			var page1 *Guard
			if m == PerPage {
				page1 = mustAcquire(t, t.Context(), l, For(PageKey(1)))
			}
			waiter := acquireAsync(t.Context(), l, For(PageKey(3)))
			waitQueued(t, l, PageKey(3), 1)
			multi := acquireAsync(t.Context(), l, For(PageKey(3), PageKey(1))) // queues on page/1 in PerPage mode
			waitQueued(t, l, PageKey(1), map[Mode]int{Global: 2, PerPage: 1}[m])
			var other <-chan result
			if m == Global {
				other = acquireAsync(t.Context(), l, For(PageKey(4)))
				waitQueued(t, l, PageKey(4), 3)
			}

			l.Close(PageKey(3))
			for _, ch := range []<-chan result{waiter, multi} {
				r := receive(t, ch)
				var ce *ClosedError
				if !errors.As(r.err, &ce) || !errors.Is(r.err, ErrClosed) || r.err.Error() != "page 3 is closed" {
					t.Errorf("waiter on a closed key: %v; want \"page 3 is closed\"", r.err)
				}
			}
			for _, keys := range [][]Key{{PageKey(3)}, {PageKey(5), PageKey(3)}} {
				if _, err := l.Acquire(t.Context(), For(keys...)); !errors.Is(err, ErrClosed) {
					t.Errorf("Acquire(%v) after Close: %v; want ErrClosed", keys, err)
				}
			}
			if held, owner, _ := state(page3.fifos[0]); !held || owner != "navigate" {
				t.Errorf("the holder lost its lock at Close: held %t by %q", held, owner)
			}
			page3.Release()
			page1.Release()
			if m == Global {
				r := receive(t, other)
				if r.err != nil {
					t.Fatalf("waiter on another key: %v", r.err)
				}
				r.g.Release()
			}
		})
	}
}

// TestCloseDropsLock checks that PerPage mode forgets a closed page's lock.
func TestCloseDropsLock(t *testing.T) {
	l := New(Options{Mode: PerPage})
	for _, k := range []Key{PageKey(1), PageKey(2)} {
		g, err := l.Acquire(t.Context(), For(k))
		if err != nil {
			t.Fatal(err)
		}
		g.Release()
	}
	l.Close(PageKey(1))
	l.Close(PageKey(1))
	var keys []Key
	for _, s := range l.Stats() {
		keys = append(keys, s.Key)
	}
	if !slices.Equal(keys, []Key{PageKey(2)}) {
		t.Errorf("Stats keys after Close = %v, want [page/2]", keys)
	}
}

// TestCloseRacesHandoff closes a key just as its holder hands it to a waiter,
// many times. The waiter must either get the lock or fail with ErrClosed, and
// the lock must never be left held.
func TestCloseRacesHandoff(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			for i := range 100 {
				key := PageKey(i)
				holder, err := l.Acquire(t.Context(), For(key))
				if err != nil {
					t.Fatal(err)
				}
				waiter := acquireAsync(t.Context(), l, For(key))
				waitQueued(t, l, key, 1)
				var wg sync.WaitGroup
				wg.Go(holder.Release)
				wg.Go(func() { l.Close(key) })
				wg.Wait()
				r := receive(t, waiter)
				if r.err != nil && !errors.Is(r.err, ErrClosed) {
					t.Fatalf("waiter: %v", r.err)
				}
				r.g.Release()
				if held, _, queued := state(holder.fifos[0]); held || queued != 0 {
					t.Fatalf("lock left held (%t) or queued (%d)", held, queued)
				}
			}
		})
	}
}

func TestStats(t *testing.T) {
	l := New(Options{Mode: PerPage})
	ctx := t.Context()
	for _, k := range []Key{Tracing, PageKey(1), Audit} {
		g := mustAcquire(t, ctx, l, For(k))
		g.Release()
	}
	first := mustAcquire(t, ctx, l, Request{Keys: []Key{PageKey(2)}, Owner: "take_snapshot"})
	ch := acquireAsync(ctx, l, Request{Keys: []Key{PageKey(2)}, Owner: "click"})
	waitQueued(t, l, PageKey(2), 1)

	s := statsOf(t, l, PageKey(2))
	if s.Holder != "take_snapshot" || s.Queued != 1 || s.Acquired != 1 || s.HeldFor <= 0 {
		t.Errorf("while held and queued: %+v", s)
	}
	first.Release()
	r := receive(t, ch)
	if r.err != nil {
		t.Fatal(r.err)
	}
	s = statsOf(t, l, PageKey(2))
	if s.Holder != "click" || s.Queued != 0 || s.Acquired != 2 {
		t.Errorf("after the handoff: %+v", s)
	}
	if s.WaitTotal <= 0 || s.MaxWait != s.WaitTotal || r.g.Waited() != s.WaitTotal || s.HoldTotal < s.WaitTotal {
		t.Errorf("after one wait of %v: WaitTotal %v, MaxWait %v, HoldTotal %v", r.g.Waited(), s.WaitTotal, s.MaxWait, s.HoldTotal)
	}
	r.g.Release()

	var keys []Key
	for _, s := range l.Stats() {
		keys = append(keys, s.Key)
	}
	if want := []Key{Audit, PageKey(1), PageKey(2), Tracing}; !slices.Equal(keys, want) {
		t.Errorf("Stats keys = %v, want %v", keys, want)
	}
}

func TestStatsGlobal(t *testing.T) {
	l := New(Options{Mode: Global})
	g := mustAcquire(t, t.Context(), l, For(PageKey(1), Tracing))
	stats := l.Stats()
	if len(stats) != 1 || stats[0].Key != "global" || stats[0].Holder != unnamed || stats[0].Acquired != 1 {
		t.Errorf("Stats() = %+v; want one held entry named global", stats)
	}
	g.Release()
	if s := l.Stats()[0]; s.Holder != "" || s.HeldFor != 0 || s.HoldTotal <= 0 {
		t.Errorf("after release: %+v", s)
	}
}

// TestGiveBack drives one lock through the race the other tests can only hope
// to hit: the lock is handed to a waiter whose wait has just ended. The
// waiter must pass the lock on, to the next waiter or to nobody.
func TestGiveBack(t *testing.T) {
	tests := []struct {
		why           reason
		next          bool
		wantCancelled uint64
		wantTimeouts  uint64
	}{
		{whyCancelled, false, 1, 0},
		{whyTimeout, false, 0, 1},
		{whyClosed, false, 0, 0},
		{whyCancelled, true, 1, 0},
	}
	for _, tt := range tests {
		f := &fifo{name: PageKey(1)}
		f.tryLock("holder", "", false)
		late := queueOn(f, "late")
		if tt.next {
			queueOn(f, "next")
		}
		f.unlock("holder", false, 0) // hands f to late
		if holder, _, waiting := f.abandon(late, tt.why, monoNow()); holder != "" || waiting {
			t.Errorf("abandon after a handoff reports holder %q (waiting %t), want none", holder, waiting)
		}
		held, owner, queued := state(f)
		wantOwner := map[bool]string{false: "", true: "next"}[tt.next]
		if held != tt.next || owner != wantOwner || queued != 0 {
			t.Errorf("why %d, next %t: held %t by %q, %d queued; want held %t by %q", tt.why, tt.next, held, owner, queued, tt.next, wantOwner)
		}
		if s := f.stats(monoNow()); s.Cancelled != tt.wantCancelled || s.Timeouts != tt.wantTimeouts {
			t.Errorf("why %d: Cancelled %d, Timeouts %d", tt.why, s.Cancelled, s.Timeouts)
		}
	}
}

// queueOn queues a new waiter named owner on the held lock f, as queueAll
// does, and returns its slot.
func queueOn(f *fifo, owner string) *slot {
	w := &waiter{owner: owner, ready: make(chan struct{}, 1)}
	s := &slot{w: w, f: f, key: f.name, queued: true, since: monoNow()}
	f.mu.Lock()
	f.push(s)
	f.mu.Unlock()
	return s
}

// TestCloseBeforeAcquireReturns closes a key after its lock was taken but
// before Acquire returned: the call must give the lock back and fail, and a
// call that closes before it queues must not queue.
func TestCloseBeforeAcquireReturns(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			l := New(Options{Mode: m})
			g, err := l.newGuard([]Key{PageKey(1)})
			if err != nil || !g.fifos[0].tryLock("late", "", false) {
				t.Fatalf("could not take page/1: %v", err)
			}
			l.Close(PageKey(1))
			if _, err := l.checkOpen(g); !errors.Is(err, ErrClosed) {
				t.Errorf("checkOpen after Close: %v; want ErrClosed", err)
			}
			if held, _, _ := state(g.fifos[0]); held {
				t.Error("the lock of a call that failed stays held")
			}
			if _, err := l.register(t.Context(), g, Request{Owner: "late"}); !errors.Is(err, ErrClosed) {
				t.Errorf("register after Close: %v; want ErrClosed", err)
			}
			if len(l.waiting) != 0 {
				t.Errorf("%d waiters registered for a closed key", len(l.waiting))
			}
		})
	}
}

func TestSentinelText(t *testing.T) {
	for _, e := range []Error{ErrTimeout, ErrBusy, ErrClosed} {
		if e.Error() != string(e) || e.Error() != strings.ToLower(e.Error()) {
			t.Errorf("sentinel %q is not its lowercase text", string(e))
		}
	}
}
