package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// lease is one etcd lease of a Locks, kept alive by its own loop of
// KeepAliveOnce calls rather than clientv3's KeepAlive stream, because
// fencing needs to know when each renewal was asked for: etcd renewed the
// lease no sooner than that moment, so the lease lives at least until that
// moment plus the TTL the answer granted (liveUntil), whatever the network
// did to the answer afterwards.
type lease struct {
	l   *Locks
	id  clientv3.LeaseID
	ttl time.Duration // as granted

	// liveUntil and lastAnswer are in nanoseconds on l's monotonic clock.
	liveUntil  atomic.Int64
	lastAnswer atomic.Int64
	// failing is set while keepalives go unanswered; waits use it to tell
	// an etcd outage from a long queue.
	failing atomic.Bool

	// lost holds why the lease was lost, once it is; ctx is cancelled
	// then, and when the Locks are closed.
	lost     atomic.Pointer[error]
	lostOnce sync.Once
	ctx      context.Context
	cancel   context.CancelFunc

	mu      sync.Mutex
	pending []pendingDelete // keys whose deletion failed, retried by clean
	kick    chan struct{}   // wakes clean; buffered, one signal
}

// pendingDelete is a key to delete once etcd answers: rev is its create
// revision, or 0 when the put's outcome is unknown (the key is this call's
// alone, so deleting it whatever its revision is safe).
type pendingDelete struct {
	key string
	rev int64
}

// grant asks etcd for a new lease and starts keeping it alive.
func (l *Locks) grant(ctx context.Context, what string) (*lease, error) {
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	start := time.Now()
	asked := l.now()
	resp, err := l.cli.Grant(rctx, int64(l.ttlSeconds()))
	if err != nil {
		return nil, l.unavailable(ctx, what+": grant a lease", start, err)
	}
	l.counts.grants.Add(1)
	s := &lease{l: l, id: resp.ID, ttl: time.Duration(resp.TTL) * time.Second}
	s.liveUntil.Store(asked + int64(s.ttl))
	s.lastAnswer.Store(l.now())
	s.ctx, s.cancel = context.WithCancel(l.ctx)
	s.kick = make(chan struct{}, 1)
	l.log.Debug("etcd lease granted", "lease", fmt.Sprintf("%x", int64(s.id)), "ttl", s.ttl)
	go s.keep()
	go s.clean()
	return s, nil
}

// check returns nil while the lease is known live, and an error wrapping
// ErrLockLost that says why once it is not. It makes no request.
func (s *lease) check() error {
	if err := s.lost.Load(); err != nil {
		return *err
	}
	if now := s.l.now(); now >= s.liveUntil.Load() {
		return s.expiredErr(now)
	}
	return nil
}

func (s *lease) expiredErr(now int64) error {
	return fmt.Errorf("%w: etcd at %s answered no keepalive of lease %x for %s, and its TTL is %s",
		ErrLockLost, strings.Join(s.l.cli.Endpoints(), ","), int64(s.id),
		time.Duration(now-s.lastAnswer.Load()).Round(time.Millisecond), s.ttl)
}

// lose marks the lease lost for good, with err (wrapping ErrLockLost) as
// the reason, and revokes it if etcd answers, which frees its keys at once.
func (s *lease) lose(err error) {
	s.lostOnce.Do(func() {
		s.lost.Store(&err)
		s.cancel()
		if s.l.ctx.Err() != nil {
			return // Close revokes the lease itself
		}
		s.l.counts.leaseLosses.Add(1)
		s.l.log.Warn("etcd lease lost; locks held under it are lost", "lease", fmt.Sprintf("%x", int64(s.id)), "err", err)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.ttl)
			defer cancel()
			_, _ = s.l.cli.Revoke(ctx, s.id)
		}()
	})
}

// lostError says why the lease is gone, for a wait that ended with it.
func (s *lease) lostError() error {
	if err := s.check(); err != nil {
		return err
	}
	return fmt.Errorf("%w: the process closed its cluster locks", ErrLockLost)
}

// keep renews the lease every TTL/3 until it is lost or the Locks closed.
func (s *lease) keep() {
	interval := s.ttl / 3
	// The timer marks the lease lost the moment liveUntil passes, for
	// Lost() and waits; check() does not depend on it.
	expiry := time.AfterFunc(time.Duration(s.liveUntil.Load()-s.l.now()), s.expireIfDue)
	defer expiry.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		asked := s.l.now()
		ctx, cancel := context.WithTimeout(s.ctx, interval)
		resp, err := s.l.cli.KeepAliveOnce(ctx, s.id)
		cancel()
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			s.lose(fmt.Errorf("%w: etcd at %s says lease %x has expired (no keepalive reached it within its TTL %s)",
				ErrLockLost, strings.Join(s.l.cli.Endpoints(), ","), int64(s.id), s.ttl))
			return
		case err != nil:
			if s.ctx.Err() != nil {
				return
			}
			s.l.counts.keepaliveFailures.Add(1)
			if !s.failing.Swap(true) {
				s.l.log.Warn("etcd keepalive failed; the lease stays live until its TTL runs out", "lease", fmt.Sprintf("%x", int64(s.id)), "err", err)
			}
			s.expireIfDue()
			continue
		}
		if s.check() != nil {
			// The answer came too late: check() may already have told a
			// caller the lock was lost, and lost stays lost.
			s.expireIfDue()
			return
		}
		until := asked + int64(time.Duration(resp.TTL)*time.Second)
		s.liveUntil.Store(until)
		s.lastAnswer.Store(s.l.now())
		if s.failing.Swap(false) {
			s.l.log.Info("etcd keepalive answered again", "lease", fmt.Sprintf("%x", int64(s.id)))
		}
		expiry.Reset(time.Duration(until - s.l.now()))
	}
}

// expireIfDue marks the lease lost when liveUntil has passed.
func (s *lease) expireIfDue() {
	if now := s.l.now(); now >= s.liveUntil.Load() {
		s.lose(s.expiredErr(now))
	}
}

// deleteLater queues keys whose deletion failed for clean to retry.
func (s *lease) deleteLater(d ...pendingDelete) {
	if len(d) == 0 {
		return
	}
	s.mu.Lock()
	s.pending = append(s.pending, d...)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// retryEvery spaces clean's attempts while etcd does not answer: a key left
// behind blocks every call queued after it, so it is retried soon after
// etcd is back rather than at the next keepalive.
const retryEvery = 250 * time.Millisecond

// clean deletes the pending keys, retrying until they are gone or the lease
// is: with the lease, etcd deletes them itself. It runs beside keep, so
// that a slow etcd never delays a keepalive.
func (s *lease) clean() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		}
		for {
			s.mu.Lock()
			todo := s.pending
			s.pending = nil
			s.mu.Unlock()
			if len(todo) == 0 {
				break
			}
			ctx, cancel := s.l.requestContext(s.ctx)
			err := s.l.deleteKeys(ctx, todo)
			cancel()
			if err == nil {
				continue
			}
			s.mu.Lock()
			s.pending = append(todo, s.pending...)
			s.mu.Unlock()
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(retryEvery):
			}
		}
	}
}
