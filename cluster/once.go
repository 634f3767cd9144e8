package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file keeps the records of once-only actions (the action rules'
// once-only actions and idempotencyKey) in etcd, so that a retry that
// reaches another replica answers the first call's result too.
//
// A record is one key, PREFIX/once/KEY. The first call creates it
// (a transaction that succeeds only if the key has no create revision),
// "running", under the process's lease: a process that dies mid-action
// frees its keys within the lease's TTL. The call's end writes it "done"
// with the answer, under a lease of the record's TTL of its own, or deletes
// it when the call could not have acted. A second call finds it and waits
// (watching the key) for "done", then answers the first's answer.

// OnceRecord is a once-only action's record as etcd keeps it.
type OnceRecord struct {
	State   string          `json:"state"` // "running" or "done"
	Agent   string          `json:"agent"`
	Process string          `json:"process"`
	At      time.Time       `json:"at"`
	Answer  json.RawMessage `json:"answer,omitempty"`
	key     string
}

// MaxOnceAnswer bounds the answer a record keeps: etcd's default request
// limit is 1.5 MiB. The caller trims a longer one.
const MaxOnceAnswer = 1 << 20

func (l *Locks) onceKey(key string) string {
	return l.opts.Prefix + "once/" + url.PathEscape(key)
}

// OnceBegin starts the action of key for agent. When no record has the key
// it makes one and returns first true: the caller runs the action and ends
// with OnceFinish. Otherwise it waits, within ctx, until the record is done
// and returns it (a record whose process died before it finished is gone:
// the call then makes its own).
func (l *Locks) OnceBegin(ctx context.Context, key, agent string) (rec *OnceRecord, first bool, err error) {
	k := l.onceKey(key)
	for {
		s, err := l.lease(ctx, "begin a once-only action")
		if err != nil {
			return nil, false, err
		}
		mine := &OnceRecord{State: "running", Agent: agent, Process: l.opts.Process, At: time.Now(), key: k}
		v, _ := json.Marshal(mine)
		rctx, cancel := l.requestContext(ctx)
		resp, err := l.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(v), clientv3.WithLease(s.id))).
			Else(clientv3.OpGet(k)).Commit()
		cancel()
		if err != nil {
			return nil, false, l.unavailable(ctx, "begin a once-only action", time.Now(), err)
		}
		if resp.Succeeded {
			return mine, true, nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // deleted meanwhile
		}
		var cur OnceRecord
		if err := json.Unmarshal(kvs[0].Value, &cur); err != nil {
			return nil, false, fmt.Errorf("a once-only record in etcd does not read: %w", err)
		}
		if cur.State == "done" {
			return &cur, false, nil
		}
		done, err := l.waitDone(ctx, k, kvs[0].ModRevision)
		if err != nil {
			return nil, false, err
		}
		if done != nil {
			return done, false, nil
		}
		// Deleted: the first call could not act, or its process died.
	}
}

// waitDone watches k from after rev until it is written done (the record)
// or deleted (nil).
func (l *Locks) waitDone(ctx context.Context, k string, rev int64) (*OnceRecord, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range l.cli.Watch(wctx, k, clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			return nil, l.unavailable(ctx, "wait for a once-only action", time.Now(), err)
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return nil, nil
			}
			var cur OnceRecord
			if json.Unmarshal(ev.Kv.Value, &cur) == nil && cur.State == "done" {
				return &cur, nil
			}
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, l.unavailable(ctx, "wait for a once-only action", time.Now(), errors.New("the watch ended"))
}

// OnceFinish ends the first call's record: done with answer, kept for ttl,
// when the action may have happened (keep); deleted otherwise, so that a
// later call may act. It gives up with ctx.
func (l *Locks) OnceFinish(ctx context.Context, rec *OnceRecord, answer json.RawMessage, keep bool, ttl time.Duration) error {
	rctx, cancel := l.requestContext(ctx)
	defer cancel()
	if !keep {
		_, err := l.cli.Delete(rctx, rec.key)
		return err
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
	g, err := l.cli.Grant(rctx, secs)
	if err != nil {
		return err
	}
	done := *rec
	done.State, done.Answer = "done", answer
	v, _ := json.Marshal(done)
	_, err = l.cli.Put(rctx, rec.key, string(v), clientv3.WithLease(g.ID))
	return err
}
