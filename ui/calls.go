package ui

import (
	"context"
	"time"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/tools"
)

// call is one tool call on the timeline.
type call struct {
	ID      uint64   `json:"id"`
	Agent   string   `json:"agent"`
	Tool    string   `json:"tool"`
	Page    int      `json:"page,omitempty"`
	Locks   []string `json:"locks,omitempty"`
	Arrived int64    `json:"arrived"`           // Unix ms
	Started int64    `json:"started,omitempty"` // Unix ms; 0 while it waits
	Ended   int64    `json:"ended,omitempty"`   // Unix ms; 0 while in flight
	Outcome string   `json:"outcome,omitempty"` // "ok", "error", "cancelled"
}

// agentLabel names a call's agent: its identity, "stdio" for none.
func agentLabel(id string) string {
	if id == "" {
		return "stdio"
	}
	return id
}

// unixMS is t in Unix milliseconds, 0 for the zero time.
func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Queued records a call that waits for its locks (tools.Observer).
func (v *View) Queued(c tools.CallInfo) { v.update(c, nil) }

// Started records a call that holds its locks (tools.Observer).
func (v *View) Started(_ context.Context, c tools.CallInfo) { v.update(c, nil) }

// Ended records a call's outcome (tools.Observer). It does not read the
// page.
func (v *View) Ended(_ context.Context, e tools.CallEnd, _ *browser.Page) { v.update(e.CallInfo, &e) }

// update records what a call is now, and asks for a push.
func (v *View) update(c tools.CallInfo, e *tools.CallEnd) {
	v.mu.Lock()
	cl, ok := v.calls[c.ID]
	if !ok {
		cl = &call{ID: c.ID, Agent: agentLabel(c.Agent), Tool: c.Tool, Arrived: unixMS(c.Arrived)}
		v.calls[c.ID] = cl
	}
	cl.Page, cl.Locks, cl.Started = c.Page, c.Locks, unixMS(c.Started)
	if e != nil {
		cl.Page, cl.Ended, cl.Outcome = e.Page, unixMS(e.Arrived.Add(e.Took)), e.Outcome
		delete(v.calls, c.ID)
		v.ended = append(v.ended, cl)
		v.trimLocked(time.Now())
	}
	v.mu.Unlock()
	v.markDirty()
}

// trimLocked forgets the ended calls older than the window, and the oldest
// past maxCalls.
func (v *View) trimLocked(now time.Time) {
	cut := now.Add(-v.opts.Window).UnixMilli()
	i := 0
	for i < len(v.ended) && (v.ended[i].Ended < cut || len(v.ended)-i > maxCalls) {
		i++
	}
	v.ended = v.ended[i:] // append moves the live ones when it grows the array
}
