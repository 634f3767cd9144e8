package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error is a sentinel error of this package; test for one with errors.Is.
type Error string

func (e Error) Error() string { return string(e) }

const (
	// ErrLockLost is wrapped by Held.Check once the lease the lock is held
	// under is no longer known live in etcd: no keepalive was answered
	// within its TTL, or etcd said the lease had expired. Another process
	// may hold the lock by now; the caller must stop before its next step.
	ErrLockLost Error = "lock lost: its etcd lease is no longer known live"

	// ErrUnavailable is wrapped by Acquire, Release and Holders when etcd
	// did not answer in time, refused for want of a quorum, or the lease
	// could not be kept while waiting. The message names the endpoints.
	ErrUnavailable Error = "etcd unavailable"

	// ErrReleased is returned by Release and Check on a Held that was
	// already released.
	ErrReleased Error = "lock already released"

	// ErrClosed is returned by Acquire after Locks.Close.
	ErrClosed Error = "cluster locks closed"
)

// unavailable wraps err, a failed etcd request made for what, as
// ErrUnavailable with what to do next. The caller's cancellation is not
// etcd's fault and is returned as it is, wrapped with what.
func (l *Locks) unavailable(ctx context.Context, what string, start time.Time, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("cluster: %s: %w", what, ctx.Err())
	}
	eps := strings.Join(l.cli.Endpoints(), ",")
	return fmt.Errorf("cluster: %w: %s: etcd at %s did not answer in %s (%w); check that etcd is running and reachable from here, and that a majority of its members are up (etcdctl --endpoints=%s endpoint health)",
		ErrUnavailable, what, eps, time.Since(start).Round(time.Millisecond), err, eps)
}
