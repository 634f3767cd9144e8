package tools

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pagemux/pagemux/agents"
)

// Holds across calls. A performance trace (performance_start_trace with
// autoStop false) and a screencast (screencast_start) go on after the call
// that started them, until their agent stops them: a trace holds its
// Chrome's one tracing slot (pagelock.Tracing), a screencast its page's
// recording and an ffmpeg. An agent that never stops one would hold it for
// ever, so every such hold has a limit (holdLimit): Options.MaxHold
// (--max-hold), unless the action rules give the agent one of its own
// (Server.holdLimits). Past it pagemux ends the hold itself and keeps what
// it recorded in the agent's workspace; the agent's next answer of any
// tool says so once, with the file's path (holdNotes, which agentNotes
// adds). The stop tool hands the result out too, and then the note goes.
// A hold that ends otherwise (stopped, its page closed) tells no one.

// DefaultMaxHold is the limit of a hold across calls when Options.MaxHold
// is zero, and the default of --max-hold.
const DefaultMaxHold = 5 * time.Minute

// The kinds of hold across calls, as holdLimit and Server.holdLimits name
// them.
const (
	holdTrace      = "trace"      // performance_start_trace to performance_stop_trace
	holdScreencast = "screencast" // screencast_start to screencast_stop
)

// holdLimit is how long a hold of kind (holdTrace, holdScreencast) that
// the call in ctx starts may last: what Server.holdLimits says for the
// call's agent, if it says a positive duration, else the server's
// Options.MaxHold. It does not start a timer; the caller does.
func (s *Server) holdLimit(ctx context.Context, kind string) time.Duration {
	if s.holdLimits != nil {
		if d := s.holdLimits(ctx, kind); d > 0 {
			return d
		}
	}
	return s.maxHold
}

// holdAgent names whose next answer hears that a hold the call in ctx
// starts reached its limit: the call's agent (agents.Agent.ID, the same
// in its later sessions), or "" for a call without one (stdio: its one
// client).
func holdAgent(ctx context.Context) string {
	if a, ok := agents.From(ctx); ok {
		return a.ID
	}
	return ""
}

// maxHoldNotes bounds the notes kept for one agent that never calls
// again: past it the oldest goes.
const maxHoldNotes = 16

// holdNotes are the lines agents are yet to read in their next answer,
// one for each hold whose limit ended it. Its zero value is ready for use.
type holdNotes struct {
	mu      sync.Mutex
	pending map[string][]holdNote // by holdAgent
}

// holdNote is one line, and the hold it tells of (a *traceRun, a
// *castHold), by which the stop tool that hands the result out withdraws
// it.
type holdNote struct {
	of   any
	text string
}

// add keeps text for agent's next answer.
func (n *holdNotes) add(agent string, of any, text string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pending == nil {
		n.pending = map[string][]holdNote{}
	}
	notes := append(n.pending[agent], holdNote{of: of, text: text})
	if len(notes) > maxHoldNotes {
		notes = slices.Delete(notes, 0, len(notes)-maxHoldNotes)
	}
	n.pending[agent] = notes
}

// take returns agent's notes, once.
func (n *holdNotes) take(agent string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, note := range n.pending[agent] {
		out = append(out, note.text)
	}
	delete(n.pending, agent)
	return out
}

// drop withdraws agent's note of the hold of, if it is yet to be read: the
// answer that hands the hold's result out says as much.
func (n *holdNotes) drop(agent string, of any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	notes := slices.DeleteFunc(n.pending[agent], func(note holdNote) bool { return note.of == of })
	if len(notes) == 0 {
		delete(n.pending, agent)
		return
	}
	n.pending[agent] = notes
}
