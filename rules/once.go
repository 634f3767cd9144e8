package rules

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Once keeps the records of once-only actions, by key. The first call of a
// key runs (Begin says so) and ends with Finish; a call of the same key
// while it runs waits for it, and one after it gets its answer back: the
// action happens once. Records last their TTL. Safe for concurrent use;
// the zero value is ready.
type Once struct {
	mu      sync.Mutex
	records map[string]*Record
	added   int // since the last sweep
	waiting atomic.Int64
}

// Waiting is how many calls wait now for the first call of their key.
func (o *Once) Waiting() int { return int(o.waiting.Load()) }

// Record is one once-only action: its first call's answer, once it ended.
type Record struct {
	Key   string
	Agent string    // the agent whose call ran
	At    time.Time // when it started
	done  chan struct{}
	// Answer is what the first call answered, set by Finish; for the
	// tools package, opaque here.
	Answer  any
	ttl     time.Duration
	expires time.Time // set by Finish: a record lasts its TTL from its end
}

// expired reports whether the record's call finished more than its TTL
// ago. o.mu is held.
func (r *Record) expired(now time.Time) bool {
	return !r.expires.IsZero() && now.After(r.expires)
}

// Done is closed when the record's call has finished.
func (r *Record) Done() <-chan struct{} { return r.done }

// Begin starts the action of key for agent. When no live record has the
// key it records one and returns it with first true: the caller runs the
// action and must call Finish. Otherwise it waits until the
// record's call finished (or ctx ends) and returns that record, whose
// Answer the caller replays.
func (o *Once) Begin(ctx context.Context, key, agent string, ttl time.Duration) (rec *Record, first bool, err error) {
	now := time.Now()
	o.mu.Lock()
	if o.records == nil {
		o.records = map[string]*Record{}
	}
	rec = o.records[key]
	if rec != nil && rec.expired(now) {
		delete(o.records, key)
		rec = nil
	}
	if rec == nil {
		rec = &Record{Key: key, Agent: agent, At: now, done: make(chan struct{}), ttl: ttl}
		o.records[key] = rec
		o.added++
		if o.added > 1024 || len(o.records) > MaxOnceRecords {
			o.sweepLocked(now)
		}
		o.mu.Unlock()
		return rec, true, nil
	}
	o.mu.Unlock()
	o.waiting.Add(1)
	defer o.waiting.Add(-1)
	select {
	case <-rec.done:
		return rec, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// Finish records the first call's answer and lets the calls that wait for
// it replay it. A record finished with keep false is dropped at once:
// the action did not happen (the call was refused, or failed before it
// acted), and a later call may try it again; the calls that waited for it
// get its answer all the same.
func (o *Once) Finish(rec *Record, answer any, keep bool) {
	o.mu.Lock()
	rec.Answer, rec.expires = answer, time.Now().Add(rec.ttl)
	if !keep && o.records[rec.Key] == rec {
		delete(o.records, rec.Key)
	}
	o.mu.Unlock()
	close(rec.done)
}

// Len is how many records are kept, live or expired but not yet swept.
func (o *Once) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.records)
}

// MaxOnceRecords bounds the records kept: past it the finished ones
// that expire soonest go first, so that a flood of keys cannot fill the
// memory with answers.
const MaxOnceRecords = 10000

func (o *Once) sweepLocked(now time.Time) {
	o.added = 0
	for k, r := range o.records {
		if r.expired(now) {
			delete(o.records, k)
		}
	}
	if len(o.records) <= MaxOnceRecords {
		return
	}
	var done []*Record
	for _, r := range o.records {
		if !r.expires.IsZero() {
			done = append(done, r)
		}
	}
	slices.SortFunc(done, func(a, b *Record) int { return a.expires.Compare(b.expires) })
	for _, r := range done[:min(len(done), len(o.records)-MaxOnceRecords*3/4)] {
		delete(o.records, r.Key)
	}
}
