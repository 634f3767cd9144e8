package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

// DefaultToolTimeout bounds how long one call may hold its locks, unless
// Options.ToolTimeout says otherwise.
const DefaultToolTimeout = 2 * time.Minute

// ownBounds are the tools whose work rightly takes longer than a tool call
// usually does; they are bounded by the longer of this and --tool-timeout.
var ownBounds = map[string]time.Duration{
	"lighthouse_audit":        4 * time.Minute, // the runner itself is killed after 3 minutes
	"performance_start_trace": 3 * time.Minute, // a reload and an autoStop trace
	"performance_stop_trace":  3 * time.Minute, // saving a big trace
	"take_heapsnapshot":       3 * time.Minute, // streaming a big heap to a file
	"screencast_stop":         3 * time.Minute, // encoding a long recording
}

// OwnBounds describes the tools that keep longer bounds, for --help.
func OwnBounds() string {
	return fmt.Sprintf("lighthouse_audit %v; performance_start_trace, performance_stop_trace, take_heapsnapshot, screencast_stop %v",
		ownBounds["lighthouse_audit"], ownBounds["performance_start_trace"])
}

// straggle is how long a call past its bound, or cancelled, gets to return
// on its own before the Guard answers and releases its locks without it.
const straggle = 2 * time.Second

// chromeCheckWait bounds the wait for the check of Chrome that a call past
// its bound makes (browser.Watch.Check): a Chrome that answers does so in
// milliseconds, and one that is stopped is found 2 s after it last sent
// anything; this leaves room for a starved machine. A Chrome that hangs
// without being stopped takes longer to tell from a slow one: the call then
// says it did not answer, and the next call waits for the outcome.
const chromeCheckWait = 3 * time.Second

// OverBound is how long past its bound a call may take to be answered: it
// gets straggle to return, then Chrome is checked for at most
// chromeCheckWait.
const OverBound = straggle + chromeCheckWait

// boundError is the cause of a call's context when its bound passed, and,
// once the call ended and Chrome was checked, the error the agent reads.
// It says only what pagemux knows: that a script was terminated when Chrome
// answered the termination, that the page can be used when Chrome answered
// the check.
type boundError struct {
	tool  string
	bound time.Duration
	page  int // 0 for browser tools

	// Set on the copy made once the call ended (checked).
	checked bool
	script  *browser.AbandonedScriptError // what became of evaluate_script's script
	chrome  error                         // the check's outcome: nil when Chrome answered
}

func (e *boundError) Error() string {
	head := fmt.Sprintf("%s ran past its %v limit (--tool-timeout)", e.tool, e.bound)
	switch {
	case !e.checked:
		return head + "; pagemux stopped waiting for it"
	case errors.Is(e.chrome, browser.ErrNoAnswer):
		return fmt.Sprintf("%s, and %v. Its locks were released; whether its work stopped is not known. "+
			"Call again (list_pages, say): the next call waits for that check, and gets a new Chrome if this one stopped responding (its pages are then gone)", head, e.chrome)
	case e.chrome != nil:
		return head + ": " + e.chrome.Error()
	}
	advice := "Split the work into shorter calls, or start pagemux with a longer --tool-timeout"
	switch {
	case e.script != nil && (e.script.Fate == browser.ScriptUnanswered || e.script.Fate == browser.ScriptUnknown):
		return fmt.Sprintf("%s, and its script in page %d %s; its locks were released, but the page may stay busy until the script ends. %s", head, e.page, e.script.Fate.Say(), advice)
	case e.script != nil:
		return fmt.Sprintf("%s, and its script in page %d %s; its locks were released and the page can be used again. %s", head, e.page, e.script.Fate.Say(), advice)
	case e.page != 0:
		return fmt.Sprintf("%s, and pagemux stopped waiting for its work on page %d; its locks were released and the page can be used again. %s", head, e.page, advice)
	}
	return fmt.Sprintf("%s, and pagemux stopped waiting for it; its locks were released. %s", head, advice)
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) hold, and
// errors.Is(err, browser.ErrUnresponsive) when the check found Chrome so.
func (e *boundError) Unwrap() []error {
	if e.chrome != nil {
		return []error{context.DeadlineExceeded, e.chrome}
	}
	return []error{context.DeadlineExceeded}
}

// bound is how long a call of t may hold its locks.
func (s *Server) bound(t tool) time.Duration {
	return max(s.toolTimeout, ownBounds[t.def.Name])
}

// handled is how a call's handler ended: its result, and its error if it
// failed.
type handled struct {
	res *mcp.CallToolResult
	err error
}

// runBounded runs the handler and the rendering of its answer while g is
// held, for at most the tool's bound. Past the bound, or when the call is
// cancelled, the handler's context ends (a script it runs is terminated);
// if the handler does not return within straggle of that, the Guard answers
// without it and releases the locks anyway, so no call holds them for long.
// A call past its bound has Chrome checked at once (w), so that its error
// says what is true of Chrome and its page.
func (s *Server) runBounded(ctx context.Context, t tool, c *call, g *pagelock.Guard, w *browser.Watch) *mcp.CallToolResult {
	limit := s.bound(t)
	cause := &boundError{tool: t.def.Name, bound: limit}
	if c.page != nil {
		cause.page = c.page.ID
	}
	hctx, cancel := context.WithTimeoutCause(ctx, limit, cause)
	defer cancel()
	done := make(chan handled, 1)
	go func() {
		var h handled
		defer func() { done <- h }()
		defer s.recoverCall(t.def.Name, &h.res)
		if h.err = t.handle(hctx, c); h.err != nil {
			h.res = toolError(s.redactErr(ctx, h.err)) // agents.go: a lock another agent holds
			return
		}
		h.res = s.render(hctx, c, g)
	}()
	select {
	case h := <-done:
		return s.pastBound(ctx, hctx, cause, h, w)
	case <-hctx.Done():
	}
	timer := time.NewTimer(straggle)
	defer timer.Stop()
	select {
	case h := <-done:
		return s.pastBound(ctx, hctx, cause, h, w)
	case <-timer.C:
		s.log.Warn("a tool call did not stop when asked; its locks are released without it",
			"tool", t.def.Name, "waited", straggle, "cause", context.Cause(hctx))
		if !errors.Is(context.Cause(hctx), cause) {
			return toolError(context.Cause(hctx)) // the cancellation's text
		}
		return toolError(s.checkedBound(ctx, cause, nil, w))
	}
}

// pastBound replaces the error of a call that failed because its bound
// passed with the error that says so.
func (s *Server) pastBound(ctx, hctx context.Context, cause *boundError, h handled, w *browser.Watch) *mcp.CallToolResult {
	if h.res.IsError && errors.Is(context.Cause(hctx), cause) {
		s.log.Warn("tool call ran past its bound", "tool", cause.tool, "bound", cause.bound, "page", cause.page)
		return toolError(s.checkedBound(ctx, cause, h.err, w))
	}
	return h.res
}

// checkedBound is the error of a call past its bound whose handler ended
// with err (nil when it did not end): a copy of cause, which the handler
// may still read, with what became of its script and what a check of
// Chrome found. The check waits at most chromeCheckWait.
func (s *Server) checkedBound(ctx context.Context, cause *boundError, err error, w *browser.Watch) *boundError {
	out := *cause
	out.checked = true
	errors.As(err, &out.script)
	cctx, cancel := context.WithTimeout(ctx, chromeCheckWait)
	defer cancel()
	out.chrome = w.Check(cctx)
	if out.chrome != nil {
		s.log.Warn("chrome after a call ran past its bound", "tool", cause.tool, "page", cause.page, "chrome", out.chrome)
	}
	return &out
}
