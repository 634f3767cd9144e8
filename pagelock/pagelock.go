// Package pagelock serialises browser tool calls with FIFO locks.
//
// A Locker runs in one of two modes. In Global mode every call takes the same
// lock, so one tool call at a time touches the browser. In PerPage mode each
// page, and each browser-wide resource such as tracing or a Lighthouse audit,
// has its own lock, so calls on different pages run side by side.
//
// The calls of one agent (see Request.Agent) are served strictly in the order
// they arrived, in both modes. Between agents, PerPage mode keeps that order
// too, while in Global mode agents take turns: the one lock goes round the
// agents that wait for it, one call each, so one agent's backlog delays
// another agent's next call by one call of each agent at most. Options.MaxQueue
// bounds each agent's waiters, so one agent's backlog never makes another's
// call fail as busy.
//
// The package knows nothing of Chrome or MCP: keys are plain names and owners
// are plain strings, so it can be tested and benchmarked alone.
package pagelock

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode says how keys map to locks. The zero value is Global.
type Mode int

const (
	// Global maps every key to one FIFO lock: one call at a time, browser-wide.
	Global Mode = iota
	// PerPage gives each key its own FIFO lock, so calls on different keys
	// do not wait for each other.
	PerPage
)

// modeNames are the names ParseMode accepts and String returns.
var modeNames = [...]string{Global: "global", PerPage: "page"}

// ParseMode returns the Mode named s: "global" or "page". It does not trim
// spaces or fold case; the error lists the valid names.
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("unknown lock mode %q: valid modes are %q and %q",
		s, modeNames[Global], modeNames[PerPage])
}

// String returns the name ParseMode accepts for m: "global" or "page". For a
// value that is not a Mode it returns "Mode(n)", which ParseMode rejects.
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Key names one lockable thing: a page (see PageKey) or a browser-wide
// resource (Tracing, Audit). A Key is only a name: making one takes no lock
// and allocates no lock; the Locker makes a lock on first use.
type Key string

const (
	// Tracing is the browser-wide tracing resource: Chrome runs one trace at
	// a time, whatever page it records.
	Tracing Key = "tracing"
	// Audit is the browser-wide Lighthouse resource: one audit per browser.
	Audit Key = "audit"

	// globalKey is the Key Stats reports for the one lock of Global mode.
	globalKey Key = "global"

	pagePrefix = "page/"
)

// PageKey returns the Key of the page with the given id, such as "page/3". It
// does not check that such a page exists.
func PageKey(id int) Key { return Key(pagePrefix + strconv.Itoa(id)) }

// chromeSep parts a resource's Key from the Chrome it is of (Of).
const chromeSep = "@"

// Of returns the Key of resource k of one browser of several, named by
// chrome (its address, say): in a pool each Chrome records its own trace
// and runs its own audit. An empty chrome, or a page's Key, gives k.
func (k Key) Of(chrome string) Key {
	if chrome == "" || strings.HasPrefix(string(k), pagePrefix) {
		return k
	}
	return Key(string(k) + chromeSep + chrome)
}

// Resource returns the resource k names, without the browser Of gave it:
// Tracing for Tracing.Of(chrome). Other keys are their own resource.
func (k Key) Resource() Key {
	if strings.HasPrefix(string(k), pagePrefix) {
		return k
	}
	r, _, _ := strings.Cut(string(k), chromeSep)
	return Key(r)
}

// String returns k as error messages name it: "page 3", "the tracing
// resource", "the audit resource", "the tracing resource of the Chrome at
// http://127.0.0.1:9222". It is for people, not for parsing.
func (k Key) String() string {
	if id, ok := strings.CutPrefix(string(k), pagePrefix); ok {
		return "page " + id
	}
	if k == globalKey {
		return "the global lock"
	}
	if r, chrome, ok := strings.Cut(string(k), chromeSep); ok {
		return "the " + r + " resource of the Chrome at " + chrome
	}
	return "the " + string(k) + " resource"
}

// Options configure a Locker. The zero value is Global mode, no timeout and
// no queue bound.
type Options struct {
	// Mode says how keys map to locks.
	Mode Mode
	// Timeout bounds the total time one Acquire waits in queues; past it
	// Acquire fails with *TimeoutError. Zero waits until ctx ends. It does
	// not bound how long a Guard is held.
	Timeout time.Duration
	// MaxQueue bounds the waiters one agent (see Request.Agent) has queued on
	// one lock; an Acquire that would queue past it fails at once with
	// *BusyError. A lock's queue holds at most MaxQueue per agent that
	// waits, so other agents still queue. Zero means unbounded.
	MaxQueue int
	// Observer, if set, is told of every acquisition, release and failure,
	// for metrics. It is called without any lock's mutex held.
	Observer Observer
}

// Observer sees what the locks do, for metrics. Its methods must be quick
// and safe for concurrent use; key names the lock: "global" in Global mode.
type Observer interface {
	// Acquired: a call got the lock of key after waiting (0 if it was free).
	Acquired(key Key, waited time.Duration)
	// Released: a call gave the lock of key back after holding it.
	Released(key Key, held time.Duration)
	// Failed: a call gave up on the lock of key: "timeout", "busy" (a full
	// queue, or held by another agent: see Request.FailIfHeld), "cancelled"
	// or "closed".
	Failed(key Key, why string)
}

// Locker hands out FIFO locks by Key. Make one with New; the zero value is
// not ready for use. It is safe for concurrent use. It does not know what a
// key protects, and it never takes a lock by itself: a lock is held only by a
// Guard that Acquire returned.
type Locker struct {
	mode     Mode
	timeout  time.Duration
	maxQueue int
	obs      Observer
	global   *fifo // the one lock of Global mode; nil in PerPage mode

	// locks maps a Key to its *fifo in PerPage mode and, in both modes, a
	// closed Key to closedFifo. A sync.Map so that calls on distinct pages
	// look their lock up without contending.
	locks sync.Map

	mu      sync.Mutex           // serialises lock creation, Close and waiter registration
	waiting map[*waiter]struct{} // the Acquire calls now queued, for Close to wake
}

// New returns a Locker configured by opts. Negative Timeout and MaxQueue count
// as zero. It panics if opts.Mode is neither Global nor PerPage, a programming
// error that ParseMode prevents. It takes no lock and starts no goroutine.
func New(opts Options) *Locker {
	if opts.Mode != Global && opts.Mode != PerPage {
		panic("pagelock: invalid mode " + opts.Mode.String())
	}
	l := &Locker{
		mode:     opts.Mode,
		timeout:  max(opts.Timeout, 0),
		maxQueue: max(opts.MaxQueue, 0),
		obs:      opts.Observer,
		waiting:  make(map[*waiter]struct{}),
	}
	if l.mode == Global {
		// Turns between agents are safe on the one lock only: a call that
		// waits for one lock holds none, so no order of handoffs can make a
		// cycle. In PerPage mode a call queues for several locks at once
		// (a page and tracing), and turns on one lock against arrival order
		// on another could hand each of two calls one lock the other waits
		// for; strict arrival order on every lock cannot (TestTurnsNotPerPage).
		l.global = &fifo{name: globalKey, obs: l.obs, rr: true}
	}
	return l
}

// Mode returns the mode l was made with. It cannot change.
func (l *Locker) Mode() Mode { return l.mode }

// Timeout returns Options.Timeout as l uses it: zero for none.
func (l *Locker) Timeout() time.Duration { return l.timeout }

// unnamed is the holder recorded for a call that names no owner, so that
// Stats can tell a held lock ("unnamed") from a free one ("").
const unnamed = "unnamed"

// Request is what one call asks of a Locker (Acquire, Reserve): the locks
// and how to take them. Its zero value asks for nothing; For makes the
// request of keys alone.
type Request struct {
	// Keys are the locks to take, in any order; duplicates are fine.
	Keys []Key
	// Owner names the work, such as the MCP tool "click on page 3": the
	// holder that Stats and the errors of the calls waiting behind it
	// name. "" is recorded as "unnamed".
	Owner string
	// Agent names the agent the call is for, such as the bearer token it
	// came with. The calls of one agent keep their order of arrival and
	// share its Options.MaxQueue; in Global mode agents take turns. ""
	// is the one agent of calls that name none.
	Agent string
	// Shared are keys of Keys taken shared: the call holds such a lock
	// together with every other call that shares it, and excludes only
	// the calls that take it alone. It is for a resource whose users
	// disturb each other only in some uses, such as Audit: Lighthouse
	// audits that do not measure performance run side by side, one that
	// does runs alone. Arrival order still holds on the lock: a sharer
	// that comes after a call waiting to take the lock alone waits behind
	// it, so that call is not starved. PerPage mode only: in Global mode
	// every call takes the one lock alone.
	Shared []Key
	// FailIfHeld are keys of Keys that another agent holds or waits for
	// fail the call at once with *HeldError, rather than queue. It is for
	// a browser-wide resource, such as Tracing, that a call should not
	// wait for behind another agent unless it asked to. The caller's own
	// agent is waited for as ever. PerPage mode only: in Global mode every
	// call waits for the one lock, whoever holds it.
	FailIfHeld []Key
}

// For is the Request of keys alone: no owner, no agent, each taken alone.
func For(keys ...Key) Request { return Request{Keys: keys} }

// owner is the holder name the request records.
func (r Request) owner() string {
	if r.Owner != "" {
		return r.Owner
	}
	return unnamed
}
