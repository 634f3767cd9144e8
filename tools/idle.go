package tools

// This file is --browser-idle: a Chrome pagemux launched is closed after a
// time without calls, so that none is left running when no one uses it,
// and the next call starts a new one (browser.Browser.CloseIdle). A call
// that runs (an MCP task's too: its handler runs until the task ends), a
// performance trace or a screencast that goes on across calls keep it
// open. Each agent that called since Chrome last started is told, in its
// next answer, that its tabs were closed.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// idleCloser closes the browser after a time without calls.
type idleCloser struct {
	s     *Server
	after time.Duration

	mu sync.Mutex // held while Chrome closes: a call that comes waits for it
	// active counts the calls that run; timer fires after the last ended.
	active int
	timer  *time.Timer
	// callers are the agents (holdAgent) that called since the last close.
	callers map[string]bool
	stopped bool
	// onClose and onHeld, set by tests, are told when Chrome closed for
	// idleness, and when a hold kept it open past the time.
	onClose, onHeld func()
}

// newIdleCloser returns nil, no closer, for after <= 0.
func newIdleCloser(s *Server, after time.Duration) *idleCloser {
	if after <= 0 {
		return nil
	}
	return &idleCloser{s: s, after: after, callers: map[string]bool{}}
}

// idling counts a call as activity for --browser-idle.
func (s *Server) idling(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	ic := s.idle
	if ic == nil {
		return next
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ic.begin(ctx)
		defer ic.end()
		return next(ctx, req)
	}
}

// begin notes a call that starts: no close until it ended.
func (ic *idleCloser) begin(ctx context.Context) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.active++
	ic.callers[holdAgent(ctx)] = true
	if ic.timer != nil {
		ic.timer.Stop()
	}
}

// end notes a call that ended; the last one starts the wait.
func (ic *idleCloser) end() {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.active--
	if ic.active == 0 {
		ic.arm()
	}
}

// arm starts the wait anew; under mu.
func (ic *idleCloser) arm() {
	if ic.stopped {
		return
	}
	if ic.timer == nil {
		ic.timer = time.AfterFunc(ic.after, ic.fire)
		return
	}
	ic.timer.Reset(ic.after)
}

// fire closes Chrome if nothing ran or held it since the wait began.
func (ic *idleCloser) fire() {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.active > 0 || ic.stopped {
		return
	}
	if what := ic.s.heldOpen(); what != "" {
		ic.s.log.Debug("chrome stays open past --browser-idle", "held by", what)
		ic.arm()
		if ic.onHeld != nil {
			ic.onHeld()
		}
		return
	}
	if !ic.s.browser.CloseIdle() {
		return
	}
	note := fmt.Sprintf("Note: pagemux closed Chrome after %s without calls (--browser-idle), and its tabs with it; this call started a new one. Pages of before are gone: list_pages shows the open ones.", ic.after)
	for agent := range ic.callers {
		ic.s.holdNotes.add(agent, ic, note) // holds.go: told in the agent's next answer
	}
	clear(ic.callers)
	if ic.onClose != nil {
		ic.onClose()
	}
}

// forget drops an agent that left from the callers to tell of a close.
func (ic *idleCloser) forget(agent string) {
	if ic == nil {
		return
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	delete(ic.callers, agent)
}

// stop ends the closer: no close after it.
func (ic *idleCloser) stop() {
	if ic == nil {
		return
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.stopped = true
	if ic.timer != nil {
		ic.timer.Stop()
	}
}

// heldOpen names what keeps Chrome open across calls: a running
// performance trace or screencast; "" for nothing.
func (s *Server) heldOpen() string {
	s.perf.mu.Lock()
	traces := len(s.perf.active)
	s.perf.mu.Unlock()
	if traces > 0 {
		return "a performance trace"
	}
	s.casts.mu.Lock()
	defer s.casts.mu.Unlock()
	for _, h := range s.casts.of {
		if !h.expired && !h.stopped {
			return "a screencast"
		}
	}
	return ""
}
