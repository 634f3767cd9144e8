package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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

// boundError is the cause of a call's context when its bound passed.
type boundError struct {
	tool  string
	bound time.Duration
	page  int // 0 for browser tools
}

func (e *boundError) Error() string {
	stopped := "its work was stopped"
	if e.page != 0 {
		stopped = fmt.Sprintf("its work on page %d was stopped", e.page)
		if e.tool == "evaluate_script" {
			stopped = fmt.Sprintf("the script still running in page %d was terminated", e.page)
		}
	}
	return fmt.Sprintf("%s ran past its %v limit (--tool-timeout) and %s; its locks were released and the page can be used again. Split the work into shorter calls, or start pagemux with a longer --tool-timeout",
		e.tool, e.bound, stopped)
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) hold.
func (e *boundError) Unwrap() error { return context.DeadlineExceeded }

// bound is how long a call of t may hold its locks.
func (s *Server) bound(t tool) time.Duration {
	return max(s.toolTimeout, ownBounds[t.def.Name])
}

// runBounded runs the handler and the rendering of its answer while g is
// held, for at most the tool's bound. Past the bound, or when the call is
// cancelled, the handler's context ends (a script it runs is terminated);
// if the handler does not return within straggle of that, the Guard answers
// without it and releases the locks anyway, so no call holds them for long.
func (s *Server) runBounded(ctx context.Context, t tool, c *call, g *pagelock.Guard) *mcp.CallToolResult {
	limit := s.bound(t)
	cause := &boundError{tool: t.def.Name, bound: limit}
	if c.page != nil {
		cause.page = c.page.ID
	}
	hctx, cancel := context.WithTimeoutCause(ctx, limit, cause)
	defer cancel()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		var res *mcp.CallToolResult
		defer func() { done <- res }()
		defer s.recoverCall(t.def.Name, &res)
		if err := t.handle(hctx, c); err != nil {
			res = toolError(s.redactErr(ctx, err)) // agents.go: a lock another agent holds
			return
		}
		res = s.render(hctx, c, g)
	}()
	select {
	case res := <-done:
		return s.pastBound(hctx, cause, res)
	case <-hctx.Done():
	}
	timer := time.NewTimer(straggle)
	defer timer.Stop()
	select {
	case res := <-done:
		return s.pastBound(hctx, cause, res)
	case <-timer.C:
		s.log.Warn("a tool call did not stop when asked; its locks are released without it",
			"tool", t.def.Name, "waited", straggle, "cause", context.Cause(hctx))
		return toolError(context.Cause(hctx)) // the bound's own text, or the cancellation's
	}
}

// pastBound replaces the error of a call that failed because its bound
// passed with the error that says so.
func (s *Server) pastBound(hctx context.Context, cause *boundError, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res.IsError && errors.Is(context.Cause(hctx), cause) {
		s.log.Warn("tool call ran past its bound", "tool", cause.tool, "bound", cause.bound, "page", cause.page)
		return toolError(cause)
	}
	return res
}
