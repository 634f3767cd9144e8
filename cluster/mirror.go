package cluster

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Mirror keeps a set of small records alike in every process: the keys
// under PREFIX/NAME/ in etcd, loaded once, then watched, each change handed
// to apply in revision order. Set writes through. Every change also puts
// the set's marker key (NAME/~changed), so that the marker's revision is
// that of the set's last change, deletions included: CatchUp reads it and
// waits until the watch has brought that far, which is how a process sees
// what another wrote before the call it serves began, at the cost of one
// read.
//
// A Mirror serves a process whether etcd is up or not: Set and CatchUp fail
// with ErrUnavailable while it is down, and the watch picks up where it was
// (or loads the set again, when etcd compacted past it) once it is back.
type Mirror struct {
	l      *Locks
	prefix string
	marker string
	apply  func(key, value string) // value "" for a key deleted

	mu      sync.Mutex
	applied int64               // the revision the watch has brought; 0: not loaded
	known   map[string]struct{} // keys applied and not deleted, for a reload
	changed chan struct{}       // closed and replaced when applied grows
	done    chan struct{}       // closed when the watch ended (Close)
	cancel  context.CancelFunc
}

// markerName is the key, under a set, whose revision is its last change.
const markerName = "~changed"

// Mirror starts mirroring the set NAME: apply is called, from one
// goroutine at a time, with each key (without the set's prefix) and its
// value as it is now, then with every change. Close ends it.
func (l *Locks) Mirror(name string, apply func(key, value string)) *Mirror {
	ctx, cancel := context.WithCancel(l.ctx)
	m := &Mirror{l: l, prefix: l.opts.Prefix + name + "/", apply: apply, known: map[string]struct{}{},
		changed: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	m.marker = m.prefix + markerName
	go m.run(ctx)
	return m
}

// Close stops the watch.
func (m *Mirror) Close() {
	m.cancel()
	<-m.done
}

// Set writes key's value, "" deleting it, and returns once etcd has it.
func (m *Mirror) Set(ctx context.Context, key, value string) error {
	start := time.Now()
	op := clientv3.OpPut(m.prefix+key, value)
	if value == "" {
		op = clientv3.OpDelete(m.prefix + key)
	}
	rctx, cancel := m.l.requestContext(ctx)
	defer cancel()
	if _, err := m.l.cli.Txn(rctx).Then(op, clientv3.OpPut(m.marker, "")).Commit(); err != nil {
		return m.l.unavailable(ctx, "writing "+m.prefix+key, start, err)
	}
	return nil
}

// CatchUp returns once every change made to the set before it was called,
// by any process, has been applied here. It waits at most the request
// timeout for the watch to bring them.
func (m *Mirror) CatchUp(ctx context.Context) error {
	start := time.Now()
	rctx, cancel := m.l.requestContext(ctx)
	res, err := m.l.cli.Get(rctx, m.marker)
	cancel()
	if err != nil {
		return m.l.unavailable(ctx, "reading "+m.marker, start, err)
	}
	want := int64(0)
	if len(res.Kvs) == 1 {
		want = res.Kvs[0].ModRevision
	}
	// The watch is etcd's too: bounded as a request is.
	ctx, cancel = m.l.requestContext(ctx)
	defer cancel()
	for {
		m.mu.Lock()
		applied, changed := m.applied, m.changed
		m.mu.Unlock()
		if applied >= want && applied > 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return m.l.unavailable(ctx, "waiting for the changes to "+m.prefix, start, context.Cause(ctx))
		}
	}
}

// run loads the set and watches it until ctx ends, loading it again
// whenever the watch cannot go on from where it was.
func (m *Mirror) run(ctx context.Context) {
	defer close(m.done)
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		rev, err := m.load(ctx)
		if err == nil {
			delay = 100 * time.Millisecond
			err = m.watch(ctx, rev)
		}
		if ctx.Err() != nil {
			return
		}
		m.l.log.Warn("etcd: mirroring "+m.prefix+" failed; trying again", "in", delay, "error", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// load reads the whole set, applies what changed since what was known, and
// returns the revision read.
func (m *Mirror) load(ctx context.Context) (int64, error) {
	rctx, cancel := m.l.requestContext(ctx)
	defer cancel()
	res, err := m.l.cli.Get(rctx, m.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	now := map[string]struct{}{}
	for _, kv := range res.Kvs {
		if key := m.key(kv); key != "" {
			now[key] = struct{}{}
			m.apply(key, string(kv.Value))
		}
	}
	for key := range m.known {
		if _, ok := now[key]; !ok {
			m.apply(key, "")
		}
	}
	m.known = now
	m.advance(res.Header.Revision)
	return res.Header.Revision, nil
}

// watch applies the set's changes after rev until the watch ends.
func (m *Mirror) watch(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for res := range m.l.cli.Watch(wctx, m.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := res.Err(); err != nil {
			return err // compacted past rev, or no leader: load again
		}
		for _, ev := range res.Events {
			key := m.key(ev.Kv)
			if key == "" {
				continue
			}
			if ev.Type == mvccpb.DELETE {
				delete(m.known, key)
				m.apply(key, "")
				continue
			}
			m.known[key] = struct{}{}
			m.apply(key, string(ev.Kv.Value))
		}
		if n := len(res.Events); n > 0 {
			m.advance(res.Events[n-1].Kv.ModRevision)
		}
	}
	return ctx.Err()
}

// key is kv's key within the set; "" for the marker.
func (m *Mirror) key(kv *mvccpb.KeyValue) string {
	key := strings.TrimPrefix(string(kv.Key), m.prefix)
	if key == markerName {
		return ""
	}
	return key
}

// advance notes that the watch has brought the set to rev.
func (m *Mirror) advance(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev > m.applied {
		m.applied = rev
		close(m.changed)
		m.changed = make(chan struct{})
	}
}
