package pagelock

import (
	"fmt"
	"time"
)

// Error is the type of the sentinel errors of this package.
type Error string

// Error satisfies the error interface.
func (e Error) Error() string { return string(e) }

// Sentinel errors. Acquire returns the typed errors below, whose messages say
// what to do next; match them with errors.Is, or errors.As for the details.
const (
	// ErrTimeout is wrapped by TimeoutError.
	ErrTimeout Error = "lock wait timed out"
	// ErrBusy is wrapped by BusyError.
	ErrBusy Error = "lock queue is full"
	// ErrClosed is wrapped by ClosedError.
	ErrClosed Error = "lock key is closed"
	// ErrHeld is wrapped by HeldError.
	ErrHeld Error = "lock key is held by another agent"
)

// The hints name the server's flags that set Options.Timeout and
// Options.MaxQueue, because the messages reach the agent and its user.
const (
	timeoutHint = "try again later or raise --lock-timeout"
	busyHint    = "try again later"
)

// TimeoutError is returned when Acquire waited Options.Timeout in queues. It
// does not say how many calls were ahead.
type TimeoutError struct {
	Key     Key           // the key whose lock was waited for
	Waited  time.Duration // the call's total wait
	Holder  string        // who held the lock when the wait ended; "" if it had just come free
	HeldFor time.Duration // how long Holder had held it
}

// Error says how long the call waited, for which key, behind whom, and what
// to do next. It does not list the other waiters.
func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("timed out after %v waiting for %s", e.Waited.Round(time.Millisecond), e.Key)
	if e.Holder == "" {
		return msg + "; " + timeoutHint
	}
	return fmt.Sprintf("%s: held by %s for %v; %s",
		msg, e.Holder, e.HeldFor.Round(time.Millisecond), timeoutHint)
}

// Unwrap makes errors.Is(err, ErrTimeout) hold.
func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// BusyError is returned at once, without queuing, when Options.MaxQueue calls
// of the caller's agent already wait for a lock. It does not say who holds
// the lock, nor how many calls other agents queued.
type BusyError struct {
	Key      Key  // the key whose lock was full
	Queued   int  // the calls of the caller's agent waiting for it
	Max      int  // Options.MaxQueue
	PerAgent bool // the caller named its agent (Request.Agent)
}

// Error says which key is busy, how many calls queue for it, and what to do
// next.
func (e *BusyError) Error() string {
	calls := "calls"
	if e.Queued == 1 {
		calls = "call"
	}
	if e.PerAgent {
		return fmt.Sprintf("%s is busy: %d %s of this agent already queued (--max-queue %d per agent); %s, once some of them have answered",
			e.Key, e.Queued, calls, e.Max, busyHint)
	}
	return fmt.Sprintf("%s is busy: %d %s already queued (--max-queue %d); %s",
		e.Key, e.Queued, calls, e.Max, busyHint)
}

// Unwrap makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Unwrap() error { return ErrBusy }

// ClosedError is returned for a key that Close closed, whether the call was
// waiting or came later. It does not say who closed it.
type ClosedError struct {
	Key Key
}

// Error says which key is closed: "page 3 is closed". It does not say what to
// do next, which depends on the caller (for a page: pick another).
func (e *ClosedError) Error() string { return e.Key.String() + " is closed" }

// Unwrap makes errors.Is(err, ErrClosed) hold.
func (e *ClosedError) Unwrap() error { return ErrClosed }

// HeldError is returned at once, without queuing, for a key the call asked
// not to wait for behind another agent (Request.FailIfHeld). It does not name
// that agent; Holder, the holder's owner name, is for the caller to say what
// the lock is held for, not to show.
type HeldError struct {
	Key    Key
	Holder string
}

// Error says which key is held by another agent and what to do next.
func (e *HeldError) Error() string {
	return e.Key.String() + " is held by another agent; " + busyHint
}

// Unwrap makes errors.Is(err, ErrHeld) hold.
func (e *HeldError) Unwrap() error { return ErrHeld }
