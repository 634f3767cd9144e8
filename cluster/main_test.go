package cluster

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The tests run against real etcd processes (internal/etcdtest), each test
// its own cluster so that they run in parallel and a test that stops
// members disturbs no other. They wait for events (watches, channels), each
// wait bounded by waitLimit, never for a guessed delay.

// waitLimit bounds every wait for an event: generous, as a loaded 2-CPU
// machine running the whole -race suite is slow; a passing test waits for
// the event, not for the limit.
const waitLimit = 30 * time.Second

// testTTL is the lease TTL of the tests that wait for a lease to run out.
const testTTL = 2 * time.Second

// newLocks returns Locks on cli under a prefix named for the test, closed
// when the test ends.
func newLocks(t *testing.T, cli *clientv3.Client, process string, ttl time.Duration) *Locks {
	t.Helper()
	l := New(cli, Options{Prefix: "/test/" + t.Name() + "/", TTL: ttl, Process: process, Logger: testLogger(process)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = l.Close(ctx)
	})
	return l
}

// testLogger discards the log unless PAGEMUX_TEST_LOG asks for it.
func testLogger(process string) *slog.Logger {
	if os.Getenv("PAGEMUX_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("process", process)
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// keyEvent is a put or delete of a lock key.
type keyEvent struct {
	put bool
	key string
}

// watchKeys reports every put and delete under the test's lock keys from
// now on: the tests wait on it to know that a call has joined a queue or
// left it. It starts at the current revision, so no event is missed.
func watchKeys(t *testing.T, cli *clientv3.Client) <-chan keyEvent {
	t.Helper()
	pfx := "/test/" + t.Name() + "/lock/"
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan keyEvent, 1024)
	wch := cli.Watch(ctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		for wr := range wch {
			for _, ev := range wr.Events {
				out <- keyEvent{put: ev.Type == mvccpb.PUT, key: string(ev.Kv.Key)}
			}
		}
	}()
	return out
}

// next returns the next event, failing the test past waitLimit.
func next(t *testing.T, events <-chan keyEvent) keyEvent {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(waitLimit):
		t.Fatalf("no lock key put or deleted within %s", waitLimit)
		return keyEvent{}
	}
}

// nextPut waits for the next put, failing on a delete.
func nextPut(t *testing.T, events <-chan keyEvent) string {
	t.Helper()
	ev := next(t, events)
	if !ev.put {
		t.Fatalf("key %s deleted, want a put", ev.key)
	}
	return ev.key
}

// acquire takes names with l, bounded by waitLimit, failing the test on error.
func acquire(t *testing.T, l *Locks, h Holder, names ...string) *Held {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	held, err := l.Acquire(ctx, names, h)
	if err != nil {
		t.Fatalf("Acquire %v: %v", names, err)
	}
	return held
}

// release releases held, failing the test on error.
func release(t *testing.T, held *Held) {
	t.Helper()
	if err := held.Release(t.Context()); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// result is what an Acquire started in the background returned.
type result struct {
	held *Held
	err  error
	at   time.Time
}

// acquireAsync starts Acquire in the background and returns where its
// result will arrive.
func acquireAsync(ctx context.Context, l *Locks, h Holder, names ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		held, err := l.Acquire(ctx, names, h)
		ch <- result{held, err, time.Now()}
	}()
	return ch
}

// await waits for an async Acquire's result.
func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatalf("Acquire did not return within %s", waitLimit)
		return result{}
	}
}

// got is await for an Acquire that must succeed.
func got(t *testing.T, ch <-chan result) result {
	t.Helper()
	r := await(t, ch)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r
}

// pending fails the test if an async Acquire has already returned.
func pending(t *testing.T, ch <-chan result, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: Acquire returned (%v) while the lock was held", what, r.err)
	default:
	}
}

// queue returns the keys' holders of lock name, in queue order.
func queue(t *testing.T, l *Locks, name string) []Entry {
	t.Helper()
	qs, err := l.Holders(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Name == name {
			return q.Entries
		}
	}
	return nil
}

// agents returns the Agent of each entry.
func agents(es []Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Holder.Agent)
	}
	return strings.Join(s, " ")
}
