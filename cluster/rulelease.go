package cluster

import (
	"context"
	"errors"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file keeps the action rules' leases in etcd: an exclusive resource
// that an agent keeps between its calls (a shop's checkout until it leaves
// the site or idles), one agent's across every replica.
//
// A lease is one key, PREFIX/rulelease/KEY, whose value is the holding
// agent, under an etcd lease of the idle time: each call of the holder
// renews it (KeepAliveOnce), so the key goes by itself once the agent has
// been idle that long, or its process died. Another agent's call waits for
// the key's deletion, then tries to create it again: the waiters of one
// process queue in its own table first, those of several race.

// RuleLease is an agent's hold on a rule's resource in etcd.
type RuleLease struct {
	key   string
	agent string
	id    clientv3.LeaseID
}

func (l *Locks) ruleLeaseKey(key string) string {
	return l.opts.Prefix + "rulelease/" + url.PathEscape(key)
}

// TakeRuleLease gives agent the resource key for idle, or renews it when
// the agent holds it; when another agent holds it, it waits, within ctx,
// until that agent's lease ends. holder is who held it when the call had
// to wait ("" if it did not).
func (l *Locks) TakeRuleLease(ctx context.Context, key, agent string, idle time.Duration) (rl *RuleLease, holder string, err error) {
	k := l.ruleLeaseKey(key)
	secs := max(int64((idle+time.Second-1)/time.Second), 1)
	for {
		rctx, cancel := l.requestContext(ctx)
		g, err := l.cli.Grant(rctx, secs)
		if err != nil {
			cancel()
			return nil, holder, l.unavailable(ctx, "take a rule's lease", time.Now(), err)
		}
		resp, err := l.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, agent, clientv3.WithLease(g.ID))).
			Else(clientv3.OpGet(k)).Commit()
		cancel()
		if err != nil {
			l.revokeQuietly(g.ID) // granted for a key that may not be written
			return nil, holder, l.unavailable(ctx, "take a rule's lease", time.Now(), err)
		}
		if resp.Succeeded {
			return &RuleLease{key: k, agent: agent, id: g.ID}, holder, nil
		}
		l.revokeQuietly(g.ID)
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue
		}
		if string(kvs[0].Value) == agent {
			rl := &RuleLease{key: k, agent: agent, id: clientv3.LeaseID(kvs[0].Lease)}
			return rl, holder, rl.Renew(ctx, l)
		}
		holder = string(kvs[0].Value)
		if err := waitDelete(ctx, l.cli, k, kvs[0].ModRevision); err != nil {
			if ctx.Err() != nil {
				return nil, holder, ctx.Err()
			}
			return nil, holder, l.unavailable(ctx, "wait for a rule's lease", time.Now(), err)
		}
	}
}

// Renew starts the lease's idle time afresh.
func (rl *RuleLease) Renew(ctx context.Context, l *Locks) error {
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	_, err := l.cli.KeepAliveOnce(rctx, rl.id)
	return err
}

// Release ends the lease now, if the agent still holds it.
func (rl *RuleLease) Release(ctx context.Context, l *Locks) error {
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	_, err := l.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.Value(rl.key), "=", rl.agent)).
		Then(clientv3.OpDelete(rl.key)).Commit()
	l.revokeQuietly(rl.id)
	return err
}

// Held reports whether the agent still holds the lease (it did not idle
// out); false with an error when etcd did not answer.
func (rl *RuleLease) Held(ctx context.Context, l *Locks) (bool, error) {
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	resp, err := l.cli.Get(rctx, rl.key)
	if err != nil {
		return false, err
	}
	return len(resp.Kvs) > 0 && string(resp.Kvs[0].Value) == rl.agent, nil
}

// revokeQuietly revokes an etcd lease in the background.
func (l *Locks) revokeQuietly(id clientv3.LeaseID) {
	go func() {
		rctx, cancel := l.requestContext(context.Background())
		defer cancel()
		if _, err := l.cli.Revoke(rctx, id); err != nil && !errors.Is(err, context.Canceled) {
			l.log.Debug("revoking a rule lease's etcd lease", "error", err)
		}
	}()
}
