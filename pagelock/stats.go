package pagelock

import (
	"cmp"
	"slices"
	"time"
)

// KeyStats are the figures of one lock at the time Stats was called. They
// are a snapshot: they do not change afterwards.
type KeyStats struct {
	// Key names the lock: the key in PerPage mode, "global" in Global mode.
	Key Key
	// Holder is the owner name (see Request.Owner) of the current holder, or ""
	// if the lock is free; of a lock held shared, its holders' names
	// joined with ", ".
	Holder string
	// Holders counts the calls holding the lock now: 0 or 1, or more when
	// they share it (Request.Shared).
	Holders int
	// HeldFor is how long the current holder has held the lock.
	HeldFor time.Duration
	// Queued counts the calls waiting now.
	Queued int
	// Waiting names the owners of the calls waiting now, first in line first.
	Waiting []string

	// Acquired counts successful acquisitions, waited for or not.
	Acquired uint64
	// Timeouts, Busy and Cancelled count the calls that gave up on this lock:
	// after Options.Timeout, on a full queue, and when their ctx ended.
	Timeouts, Busy, Cancelled uint64

	// WaitTotal and HoldTotal sum the time spent waiting for and holding the
	// lock; a hold counts once it is released.
	WaitTotal, HoldTotal time.Duration
	// MaxWait is the longest wait that ended with the lock.
	MaxWait time.Duration
	// MaxHolders is the most calls that held the lock at once: 1, or more
	// when calls shared it; 0 if none ever held it.
	MaxHolders int
}

// Stats returns the figures of every lock, sorted by key: one entry, with Key
// "global", in Global mode; one per live key in PerPage mode, where closed
// keys drop out with their locks. It does not reset anything.
func (l *Locker) Stats() []KeyStats {
	now := monoNow()
	if l.mode == Global {
		return []KeyStats{l.global.stats(now)}
	}
	var out []KeyStats
	l.locks.Range(func(_, v any) bool {
		if f := v.(*fifo); f != closedFifo {
			out = append(out, f.stats(now))
		}
		return true
	})
	slices.SortFunc(out, func(a, b KeyStats) int { return cmp.Compare(a.Key, b.Key) })
	return out
}
