package browser

import "fmt"

// Error is the type of the sentinel errors of this package.
type Error string

// Error satisfies the error interface.
func (e Error) Error() string { return string(e) }

// Sentinel errors. The errors that reach an agent wrap them with a message
// that says what to do next; match them with errors.Is.
const (
	// ErrPageClosed is wrapped by PageClosedError.
	ErrPageClosed Error = "page is closed"
	// ErrNoPage means a page id that was never handed out.
	ErrNoPage Error = "no such page"
	// ErrLastPage means an attempt to close the only open page.
	ErrLastPage Error = "the last open page cannot be closed"
	// ErrDialogOpen means a JavaScript dialog blocks the page.
	ErrDialogOpen Error = "A dialog is open"
	// ErrNoDialog means handle_dialog was called with no dialog open.
	ErrNoDialog Error = "No open dialog found"
	// ErrNavigationTimeout means the page still loads when the wait ends.
	ErrNavigationTimeout Error = "navigation timed out: the page is still loading; wait_for the content you need or navigate again with a longer timeout"
	// ErrCrashed means the page's renderer died.
	ErrCrashed Error = "the page crashed"
	// ErrStart means Chrome could not be started or attached.
	ErrStart Error = "chrome could not start"
	// ErrUnresponsive means Chrome stopped answering: a call ran past its
	// expected time and a check of the browser's connection got no answer.
	// The calls in flight fail with it; a Chrome pagemux launched is killed
	// and a new one started for the next call.
	ErrUnresponsive Error = "Chrome stopped responding"
	// ErrNoAnswer means a check of Chrome (Watch.Check) was not answered in
	// the time its caller gave it: Chrome may be frozen, and the check goes
	// on. It does not mean Chrome stopped responding.
	ErrNoAnswer Error = "Chrome did not answer"
	// ErrBrowserClosed means the browser was closed (Browser.Close) while
	// or before the call ran: its pages are going with it.
	ErrBrowserClosed Error = "the browser is closed"
	// ErrScriptStopped means Chrome terminated a script before it returned.
	ErrScriptStopped Error = "the script was stopped before it returned"
)

// CloseReason says why a page went away.
type CloseReason int

// The reasons a page goes away. The zero value is a close by pagemux.
const (
	// ClosedByPagemux is a close_page.
	ClosedByPagemux CloseReason = iota
	// ClosedOutside is a tab that closed itself (window.close) or that
	// another DevTools client closed.
	ClosedOutside
	// ClosedRestart is a tab of a Chrome that pagemux launched and that went
	// away: it crashed, was killed, or stopped responding (pagemux starts a
	// new one).
	ClosedRestart
	// ClosedChromeLost is a tab of a Chrome that pagemux attached to (not
	// launched) and that went away or stopped responding: pagemux starts
	// none in its place, and attaches again once it answers.
	ClosedChromeLost
	// ClosedIdle is a tab of a Chrome that pagemux launched and closed as
	// idle (CloseIdle); the next call starts a new one.
	ClosedIdle
)

// PageClosedError is returned for a page that went away. Why says how, and
// the message with it: "page 3 is closed" (close_page), "page 3 was closed
// (outside pagemux)", "page 3 is gone (the browser was restarted)", "page 3
// is gone (the Chrome it was on, which pagemux attached to, went away or
// stopped responding)".
type PageClosedError struct {
	ID  int
	Why CloseReason
}

func (e *PageClosedError) Error() string {
	switch e.Why {
	case ClosedOutside:
		return fmt.Sprintf("page %d was closed (outside pagemux)", e.ID)
	case ClosedRestart:
		return fmt.Sprintf("page %d is gone (the browser was restarted)", e.ID)
	case ClosedChromeLost:
		return fmt.Sprintf("page %d is gone (the Chrome it was on, which pagemux attached to, went away or stopped responding)", e.ID)
	case ClosedIdle:
		return fmt.Sprintf("page %d is gone (pagemux closed its Chrome after a time without calls; call list_pages or new_page)", e.ID)
	}
	return fmt.Sprintf("page %d is closed", e.ID)
}

// Unwrap makes errors.Is(err, ErrPageClosed) hold.
func (e *PageClosedError) Unwrap() error { return ErrPageClosed }

// NoPageError is returned for a page id that no page ever had.
type NoPageError struct{ ID int }

func (e *NoPageError) Error() string {
	return fmt.Sprintf("no page with id %d; call list_pages to see the open pages", e.ID)
}

// Unwrap makes errors.Is(err, ErrNoPage) hold.
func (e *NoPageError) Unwrap() error { return ErrNoPage }

// unresponsiveError is ErrUnresponsive with what pagemux did about it.
type unresponsiveError struct{ msg string }

func (e *unresponsiveError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrUnresponsive) hold.
func (e *unresponsiveError) Unwrap() error { return ErrUnresponsive }

// pageUnresponsiveError is the error of a call on a page that was in flight
// when Chrome stopped responding: the page is gone with its browser.
type pageUnresponsiveError struct {
	cause error // an *unresponsiveError
	page  *PageClosedError
}

func (e *pageUnresponsiveError) Error() string {
	return fmt.Sprintf("%v; %v", e.cause, e.page)
}

// Unwrap makes errors.Is hold for ErrUnresponsive and ErrPageClosed.
func (e *pageUnresponsiveError) Unwrap() []error { return []error{e.cause, e.page} }

// ScriptStoppedError is a script that Chrome terminated before it returned:
// a script of another call on a page that shares the renderer was stopped,
// or the page's renderer stopped it.
type ScriptStoppedError struct{ Detail string }

func (e *ScriptStoppedError) Error() string {
	return fmt.Sprintf("%s: Chrome terminated it (%s); run it again if it still needs to run", ErrScriptStopped, e.Detail)
}

// Unwrap makes errors.Is(err, ErrScriptStopped) hold.
func (e *ScriptStoppedError) Unwrap() error { return ErrScriptStopped }

// AbandonedScriptError is the error of evaluate_script's script when its
// call gave up (its context ended) before the script returned: Fate says
// what became of the script. It wraps the call's context error, so
// errors.Is(err, context.DeadlineExceeded) holds for a call out of time.
type AbandonedScriptError struct {
	Page int
	Fate ScriptFate
	err  error
}

func (e *AbandonedScriptError) Error() string {
	return fmt.Sprintf("%v; its script in page %d %s", e.err, e.Page, e.Fate.Say())
}

// Unwrap returns the call's context error.
func (e *AbandonedScriptError) Unwrap() error { return e.err }

// maxGone bounds the closed pages whose CloseReason is kept; an id closed
// longer ago still says "page N is closed".
const maxGone = 4096

// goneLog keeps why the latest maxGone pages went away, so that a server
// that opens and closes pages for months keeps a bounded record of them.
type goneLog struct {
	why  map[int]CloseReason
	ring []int // ids in the order they went; next is the oldest once full
	next int
}

func (g *goneLog) add(id int, why CloseReason) {
	if g.why == nil {
		g.why = map[int]CloseReason{}
	}
	if _, ok := g.why[id]; !ok {
		if len(g.ring) < maxGone {
			g.ring = append(g.ring, id)
		} else {
			delete(g.why, g.ring[g.next])
			g.ring[g.next] = id
			g.next = (g.next + 1) % maxGone
		}
	}
	g.why[id] = why
}

// reason is why page id went away, ClosedByPagemux once forgotten.
func (g *goneLog) reason(id int) CloseReason { return g.why[id] }
