package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults of Options.
const (
	DefaultPrefix         = "/pagemux/"
	DefaultTTL            = 10 * time.Second
	DefaultRequestTimeout = 5 * time.Second
)

// Options configure Locks. The zero value takes every default.
type Options struct {
	// Prefix is where in etcd the keys live; every process sharing the
	// browsers must use the same one. Default DefaultPrefix; a missing
	// trailing slash is added.
	Prefix string
	// TTL is the lease's time to live: a process that dies or is cut off
	// from etcd frees its locks within it. etcd counts whole seconds, so it
	// is rounded up to one; etcd may raise it to its own minimum. Default
	// DefaultTTL.
	TTL time.Duration
	// Process names this process in the holders' metadata (a replica's
	// name, say). Default "HOSTNAME:PID".
	Process string
	// RequestTimeout bounds each single request to etcd when the caller's
	// context allows longer, so that a call with no deadline cannot hang on
	// an etcd that never answers. Waiting in a queue is bounded by the
	// caller's context and by the lease staying live, not by it. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Logger gets keepalive failures, lease losses and recoveries. Default
	// slog.Default().
	Logger *slog.Logger
	// OneCounter hands out the page ids of every browser from one counter
	// (PageID), instead of one per browser: a pool of browsers driven as
	// one needs ids unique across it. Every process on one Prefix must
	// agree on it.
	OneCounter bool
}

// Holder is what a lock's key says about the call that holds it or waits
// for it, for Holders and /locks. Every field is the caller's; none is
// checked.
type Holder struct {
	// Process is filled from Options.Process when empty.
	Process string `json:"process"`
	Agent   string `json:"agent,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Page    string `json:"page,omitempty"`
}

// Locks takes named FIFO locks in etcd for one process. It keeps one lease
// alive for all its locks, granting a new one when that is lost. It is safe
// for concurrent use; make one per process and Close it at exit.
type Locks struct {
	cli    *clientv3.Client
	opts   Options
	log    *slog.Logger
	epoch  time.Time
	seq    atomic.Uint64
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	counts struct{ grants, leaseLosses, keepaliveFailures atomic.Int64 }

	mu       sync.Mutex
	cur      *lease
	granting chan struct{} // closed when a grant in flight ends
	closed   bool
}

// New returns Locks on cli with opts. It makes no request: the lease is
// granted by the first Acquire, so New works while etcd is down. It does
// not close cli.
func New(cli *clientv3.Client, opts Options) *Locks {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if !strings.HasSuffix(opts.Prefix, "/") {
		opts.Prefix += "/"
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Process == "" {
		host, _ := os.Hostname()
		opts.Process = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Locks{cli: cli, opts: opts, log: log.With("etcd", strings.Join(cli.Endpoints(), ",")),
		epoch: time.Now(), ctx: ctx, cancel: cancel}
}

// now reads the monotonic clock, in nanoseconds since l was made.
func (l *Locks) now() int64 { return int64(time.Since(l.epoch)) }

func (l *Locks) ttlSeconds() int {
	return int(math.Ceil(l.opts.TTL.Seconds()))
}

// requestContext bounds one request by Options.RequestTimeout.
func (l *Locks) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.opts.RequestTimeout)
}

// Close revokes the lease, which frees every lock still held under it
// (their Check fails from then on), and makes Acquire fail with ErrClosed.
// It does not close the client.
func (l *Locks) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	s := l.cur
	l.cur = nil
	l.mu.Unlock()
	l.cancel()
	if s == nil {
		return nil
	}
	s.lose(fmt.Errorf("%w: the process closed its cluster locks", ErrLockLost))
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	start := time.Now()
	if _, err := l.cli.Revoke(rctx, s.id); err != nil {
		return l.unavailable(ctx, "revoke the lease", start, err)
	}
	return nil
}

// lease returns the live lease, granting one when there is none or it was
// lost. Concurrent callers share one grant, each waiting within its ctx.
func (l *Locks) lease(ctx context.Context, what string) (*lease, error) {
	start := time.Now()
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, ErrClosed
		}
		if s := l.cur; s != nil {
			err := s.check()
			if err == nil {
				l.mu.Unlock()
				return s, nil
			}
			s.lose(err) // its timer may not have fired yet
		}
		if ch := l.granting; ch != nil {
			l.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, l.unavailable(ctx, what+": grant a lease", start, ctx.Err())
			}
		}
		ch := make(chan struct{})
		l.granting = ch
		l.mu.Unlock()

		s, err := l.grant(ctx, what)
		l.mu.Lock()
		l.granting = nil
		if err == nil {
			if l.closed {
				s.cancel()
				go func() {
					rctx, cancel := l.requestContext(context.Background())
					defer cancel()
					_, _ = l.cli.Revoke(rctx, s.id)
				}()
				s, err = nil, ErrClosed
			} else {
				l.cur = s
			}
		}
		l.mu.Unlock()
		close(ch)
		return s, err
	}
}

// Held is the locks one Acquire took. Check it before each step done
// under them; Release it when done.
type Held struct {
	l        *Locks
	s        *lease
	keys     []heldKey
	released atomic.Bool
}

type heldKey struct {
	name string
	key  string
	rev  int64 // create revision: the fencing token
}

// Acquire waits for the locks of names (at least one; duplicates count
// once) and returns them held, with h as the holder metadata. It waits its
// turn behind every call of any process that asked for the same name
// before it, by etcd revision, taking the names one by one in sorted
// order. Each call gets keys of its own, never shared with another call.
//
// It fails when ctx ends (wrapping ctx.Err(), and ErrUnavailable when etcd
// was not answering), when a request to etcd fails or times out
// (ErrUnavailable), and when the lease is lost while waiting
// (ErrUnavailable). Whatever the failure, it deletes the keys it put, or
// leaves them to be deleted as soon as etcd answers. Once etcd is back, the
// next Acquire works, on a new lease if the old one was lost.
func (l *Locks) Acquire(ctx context.Context, names []string, h Holder) (*Held, error) {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 || names[0] == "" {
		return nil, errors.New("cluster: Acquire needs at least one lock name, and no empty one")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster: lock %q: %w", names[0], err)
	}
	if h.Process == "" {
		h.Process = l.opts.Process
	}
	value, err := json.Marshal(entryValue{Holder: h, Queued: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	s, err := l.lease(ctx, fmt.Sprintf("lock %q", names[0]))
	if err != nil {
		return nil, err
	}
	held := &Held{l: l, s: s}
	for _, name := range names {
		k, err := l.lockOne(ctx, s, name, string(value))
		if err != nil {
			l.abandon(s, append(held.keys, k))
			return nil, err
		}
		held.keys = append(held.keys, k)
	}
	return held, nil
}

// lockPrefix is where the keys of lock name live. The name is escaped so
// that no lock's prefix is a prefix of another's ("a/" and "a/b/").
func (l *Locks) lockPrefix(name string) string {
	return l.opts.Prefix + "lock/" + url.PathEscape(name) + "/"
}

// lockOne puts this call's key for name and waits until every key of name
// with a lower create revision is deleted: the recipe of
// concurrency.Mutex, with a key of its own. It returns the key even on
// failure (rev 0 when the put's outcome is unknown), for abandon.
func (l *Locks) lockOne(ctx context.Context, s *lease, name, value string) (heldKey, error) {
	pfx := l.lockPrefix(name)
	k := heldKey{name: name, key: fmt.Sprintf("%s%016x-%d", pfx, int64(s.id), l.seq.Add(1))}
	what := fmt.Sprintf("lock %q", name)

	start := time.Now()
	rctx, cancel := l.requestContext(ctx)
	resp, err := l.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(k.key), "=", 0)).
		Then(clientv3.OpPut(k.key, value, clientv3.WithLease(s.id)), clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)).
		Commit()
	cancel()
	if err != nil {
		return k, l.unavailable(ctx, what, start, err)
	}
	if !resp.Succeeded {
		// Keys are never reused, so this means a second Locks shares the
		// lease and sequence: a bug, not a state to wait on.
		return k, fmt.Errorf("cluster: %s: key %s already exists", what, k.key)
	}
	k.rev = resp.Header.Revision
	if owner := resp.Responses[1].GetResponseRange().Kvs; len(owner) > 0 && owner[0].CreateRevision != k.rev {
		if err := l.waitTurn(ctx, s, what, pfx, k.rev); err != nil {
			return k, err
		}
		// As concurrency.Mutex does: make sure the key is still there, as
		// an expired lease would have taken it.
		rctx, cancel := l.requestContext(ctx)
		g, err := l.cli.Get(rctx, k.key, clientv3.WithCountOnly())
		cancel()
		if err != nil {
			return k, l.unavailable(ctx, what, start, err)
		}
		if g.Count == 0 {
			return k, fmt.Errorf("cluster: %w: %s: its key %s is gone from etcd", ErrUnavailable, what, k.key)
		}
	}
	if err := s.check(); err != nil {
		return k, fmt.Errorf("cluster: %w: %s: %v", ErrUnavailable, what, err)
	}
	return k, nil
}

// waitTurn waits until no key under pfx has a create revision below rev,
// watching the last such key each time (concurrency's waitDeletes), so
// that a queue of N calls wakes one call per release, not N. It ends when
// ctx does or the lease is lost.
func (l *Locks) waitTurn(ctx context.Context, s *lease, what, pfx string, rev int64) error {
	start := time.Now()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))
	var ahead *mvccpb.KeyValue
	var count int64
	fail := func(err error) error {
		if l.ctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("cluster: %s: %w while waiting", what, ErrClosed)
		}
		if s.ctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("cluster: %w: %s: lost the lease while waiting: %v", ErrUnavailable, what, s.lostError())
		}
		if ctx.Err() != nil && !s.failing.Load() {
			return fmt.Errorf("cluster: %s: waited %s behind %d earlier calls (the one just ahead: %s): %w",
				what, time.Since(start).Round(time.Millisecond), count, describe(ahead), ctx.Err())
		}
		return l.unavailable(ctx, what, start, err)
	}
	for {
		rctx, rcancel := l.requestContext(wctx)
		resp, err := l.cli.Get(rctx, pfx, opts...)
		rcancel()
		if err != nil {
			return fail(err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		ahead, count = resp.Kvs[0], resp.Count
		if err := waitDelete(wctx, l.cli, string(ahead.Key), resp.Header.Revision); err != nil {
			return fail(err)
		}
	}
}

// waitDelete waits for key to be deleted at or after revision rev.
func waitDelete(ctx context.Context, cli *clientv3.Client, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range cli.Watch(wctx, key, clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("etcd closed the watch")
}

// describe says who a key belongs to, from its metadata.
func describe(kv *mvccpb.KeyValue) string {
	if kv == nil {
		return "none"
	}
	var v entryValue
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return string(kv.Key)
	}
	return v.Holder.String()
}

// String says who a holder is, as /locks would: "process p, agent a, tool t, page 3".
func (h Holder) String() string {
	parts := []string{"process " + h.Process}
	for _, f := range [][2]string{{"agent", h.Agent}, {"tool", h.Tool}, {"page", h.Page}} {
		if f[1] != "" {
			parts = append(parts, f[0]+" "+f[1])
		}
	}
	return strings.Join(parts, ", ")
}

// abandon deletes the keys of a failed Acquire in the background (the
// failure is returned at once, within the caller's context), or leaves them
// to the lease's keeper when etcd does not answer. A key whose put had an
// unknown outcome (rev 0) is deleted now and once more later, as the put
// may land after the first delete.
func (l *Locks) abandon(s *lease, keys []heldKey) {
	var todo, unsure []pendingDelete
	for _, k := range keys {
		todo = append(todo, pendingDelete{key: k.key, rev: k.rev})
		if k.rev == 0 {
			unsure = append(unsure, pendingDelete{key: k.key})
		}
	}
	go func() {
		ctx, cancel := l.requestContext(s.ctx)
		defer cancel()
		if err := l.deleteKeys(ctx, todo); err != nil {
			s.deleteLater(todo...)
			return
		}
		s.deleteLater(unsure...)
	}()
}

// deleteKeys deletes each key if its create revision is still rev (any
// revision when rev is 0), in one transaction.
func (l *Locks) deleteKeys(ctx context.Context, keys []pendingDelete) error {
	if len(keys) == 0 {
		return nil
	}
	var ops []clientv3.Op
	for _, k := range keys {
		if k.rev == 0 {
			ops = append(ops, clientv3.OpDelete(k.key))
			continue
		}
		ops = append(ops, clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k.key), "=", k.rev)},
			[]clientv3.Op{clientv3.OpDelete(k.key)}, nil))
	}
	_, err := l.cli.Txn(ctx).Then(ops...).Commit()
	return err
}

// Check returns nil while the locks are held under a lease known live in
// etcd, and otherwise an error wrapping ErrLockLost (or ErrReleased) that
// names the locks, their fencing tokens and etcd. It makes no request (a
// clock read and atomic loads), so it can run before every CDP command.
// Once it has failed it keeps failing.
func (h *Held) Check() error {
	if h.released.Load() {
		return fmt.Errorf("cluster: %s: %w", h.describe(), ErrReleased)
	}
	if err := h.s.check(); err != nil {
		return fmt.Errorf("cluster: %s: %w", h.describe(), err)
	}
	return nil
}

// Lost returns a channel closed when the lease the locks are held under is
// lost (when Check starts failing with ErrLockLost, within a timer's
// precision), for a call that waits on something else and must stop at
// once. Release does not close it.
func (h *Held) Lost() <-chan struct{} { return h.s.ctx.Done() }

// Token returns the fencing token of lock name, the create revision of its
// key: later holders of the same lock always have higher ones. It returns
// 0 for a name not held.
func (h *Held) Token(name string) int64 {
	for _, k := range h.keys {
		if k.name == name {
			return k.rev
		}
	}
	return 0
}

// Names returns the names held, in the order they were taken (sorted).
func (h *Held) Names() []string {
	var names []string
	for _, k := range h.keys {
		names = append(names, k.name)
	}
	return names
}

func (h *Held) describe() string {
	var parts []string
	for _, k := range h.keys {
		parts = append(parts, fmt.Sprintf("lock %q (fencing token %d)", k.name, k.rev))
	}
	return strings.Join(parts, ", ")
}

// Release frees the locks: it deletes this call's keys, each only if its
// create revision is still this call's, so it can never free another
// call's lock. Releasing twice returns ErrReleased and deletes nothing. When
// etcd does not answer, Release returns an error wrapping ErrUnavailable
// and leaves the keys to be deleted as soon as it does (or to expire with
// the lease); the locks count as released either way.
func (h *Held) Release(ctx context.Context) error {
	if h.released.Swap(true) {
		return fmt.Errorf("cluster: %s: %w", h.describe(), ErrReleased)
	}
	var todo []pendingDelete
	for _, k := range slices.Backward(h.keys) {
		todo = append(todo, pendingDelete{key: k.key, rev: k.rev})
	}
	start := time.Now()
	rctx, cancel := h.l.requestContext(ctx)
	defer cancel()
	if err := h.l.deleteKeys(rctx, todo); err != nil {
		h.s.deleteLater(todo...)
		return h.l.unavailable(ctx, "release "+h.describe(), start, err)
	}
	return nil
}

// entryValue is the JSON value of a lock key.
type entryValue struct {
	Holder
	Queued time.Time `json:"queued"`
}

// Entry is one call's key in a lock's queue.
type Entry struct {
	Holder Holder
	// Token is the key's create revision: its place in the queue, and the
	// fencing token once it holds the lock.
	Token int64
	// Lease is the etcd lease the key lives under (one per process).
	Lease int64
	// Queued is when the call asked for the lock, by its process's clock.
	Queued time.Time
	// Key is the etcd key.
	Key string
}

// Queue is one lock's keys across the cluster: Entries[0] holds the lock,
// the others wait, in order.
type Queue struct {
	Name    string
	Entries []Entry
}

// Holders lists every lock that has a holder, with its queue, across all
// processes under the prefix, sorted by name. It is one read of etcd.
func (l *Locks) Holders(ctx context.Context) ([]Queue, error) {
	start := time.Now()
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	resp, err := l.cli.Get(rctx, l.opts.Prefix+"lock/", clientv3.WithPrefix())
	if err != nil {
		return nil, l.unavailable(ctx, "list the locks", start, err)
	}
	byName := map[string]*Queue{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), l.opts.Prefix+"lock/")
		esc, _, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		name, err := url.PathUnescape(esc)
		if err != nil {
			continue
		}
		var v entryValue
		_ = json.Unmarshal(kv.Value, &v) // a foreign value still shows as a key
		q := byName[name]
		if q == nil {
			q = &Queue{Name: name}
			byName[name] = q
		}
		q.Entries = append(q.Entries, Entry{Holder: v.Holder, Token: kv.CreateRevision, Lease: kv.Lease, Queued: v.Queued, Key: string(kv.Key)})
	}
	var out []Queue
	for _, q := range byName {
		slices.SortFunc(q.Entries, func(a, b Entry) int { return cmp.Compare(a.Token, b.Token) })
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Stats are counts since the Locks were made, for metrics.
type Stats struct {
	// LeasesGranted counts the leases etcd granted this process: one at
	// the first Acquire, one more after each loss.
	LeasesGranted int64
	// LeasesLost counts the leases lost while in use (not by Close).
	LeasesLost int64
	// KeepaliveFailures counts keepalives etcd did not answer in time.
	KeepaliveFailures int64
}

// Stats returns the counts so far. It makes no request.
func (l *Locks) Stats() Stats {
	return Stats{LeasesGranted: l.counts.grants.Load(), LeasesLost: l.counts.leaseLosses.Load(), KeepaliveFailures: l.counts.keepaliveFailures.Load()}
}
