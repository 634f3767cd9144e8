package tools

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

// Many tests need a server of their own lock mode and timeouts, with no
// other test's calls in its locks, but nothing of its Chrome: they take one
// on lease. There is one server and Chrome for each set of options, which
// one test at a time holds and which is put back as it was found (its
// pages closed, the selection note taken). A Chrome of their own each cost
// 1-1.5 CPU-s to launch and end, on a machine whose 2 CPUs run every
// package's tests at once (issue 16). A test that kills, freezes or
// restarts Chrome, changes the server (a tool of its own) or reads counts
// that outlive a test (the lock resource's totals) starts its own.

// leaseKey is the options a leased server was made with.
type leaseKey struct {
	locks        pagelock.Options
	toolTimeout  time.Duration
	snapshotMode string
}

// lease is one leased server: turn holds a token while a test has it.
type lease struct {
	turn chan struct{}
	env  *testEnv // made by the first test to hold it
}

var (
	leaseMu sync.Mutex
	leases  = map[leaseKey]*lease{}
)

// leaseEnv waits for the server of opts and sopts to be free, and holds it
// until the test ends. Of the server options only ToolTimeout and
// SnapshotMode may be set: the others hold what a test makes (agents,
// workspaces) or change what every answer says.
func leaseEnv(t *testing.T, opts pagelock.Options, sopts Options) *testEnv {
	t.Helper()
	key := leaseKey{opts, sopts.ToolTimeout, sopts.SnapshotMode}
	if !reflect.DeepEqual(sopts, Options{ToolTimeout: key.toolTimeout, SnapshotMode: key.snapshotMode}) {
		t.Fatalf("leaseEnv: server options beyond ToolTimeout and SnapshotMode (%+v): start a server of the test's own (newEnv)", sopts)
	}
	leaseMu.Lock()
	l, ok := leases[key]
	if !ok {
		l = &lease{turn: make(chan struct{}, 1)}
		leases[key] = l
	}
	leaseMu.Unlock()
	select {
	case l.turn <- struct{}{}:
	case <-t.Context().Done():
		t.Fatalf("the leased server of %+v was never free", key)
	}
	if l.env == nil {
		l.env = newEnv(t, envOptions{Locks: opts, Server: sopts, Kept: true})
		// Chrome's first tab is there from now on, and stays: its tab is
		// the browser's root, which must not be closed.
		l.env.ok(t, "list_pages", nil)
	}
	e := l.env
	kept := map[int]bool{}
	for _, p := range e.b.Pages() {
		kept[p.ID] = true
	}
	t.Cleanup(func() {
		e.putBack(t, kept)
		<-l.turn
	})
	return e
}

// leaseStdioEnv is leaseEnv with a client of the test's own over the stdio
// transport, for what only stdio does (its worker pool); the server's
// in-process client stays with the lease.
func leaseStdioEnv(t *testing.T, opts pagelock.Options) *testEnv {
	t.Helper()
	e := leaseEnv(t, opts, Options{})
	c, cancel, done := connect(t, e.srv, testLogger(), true)
	t.Cleanup(func() { // before the lease is put back
		c.Close()
		cancel()
		<-done
	})
	return &testEnv{srv: e.srv, b: e.b, client: c, cancel: cancel, done: done}
}

// putBack closes the pages a test left open, waits for its calls to let go
// of their locks, and takes the note that the selected page closed, which
// would otherwise be the next test's.
func (e *testEnv) putBack(t *testing.T, kept map[int]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range e.b.Pages() {
		if !kept[p.ID] {
			if err := e.b.ClosePage(ctx, p); err != nil {
				t.Logf("closing page %d the test left: %v", p.ID, err)
			}
		}
	}
	for !e.locksIdle() {
		if ctx.Err() != nil {
			t.Errorf("a call of the test still holds or waits for a lock of the leased server: %+v", e.srv.locks.Stats())
			break
		}
		time.Sleep(10 * time.Millisecond) // bounded polling: locks tell no one when they go idle
	}
	e.b.TakeSelectionNote()
}

// locksIdle reports whether no call holds or waits for a lock.
func (e *testEnv) locksIdle() bool {
	for _, s := range e.srv.locks.Stats() {
		if s.Holder != "" || s.Queued > 0 {
			return false
		}
	}
	return true
}

// closeLeases closes the leased servers, once every test is done.
func closeLeases() {
	for _, l := range leases {
		if l.env != nil {
			l.env.close()
		}
	}
}
