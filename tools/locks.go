package tools

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// LockState is one lock as /locks and the pagemux://locks resource show it.
type LockState struct {
	Lock      string   `json:"lock"`             // "page 3", "the tracing resource", "the global lock"
	Holder    string   `json:"holder,omitempty"` // the tool holding it; empty when free
	HeldForMS int64    `json:"heldForMs,omitempty"`
	Waiting   []string `json:"waiting"` // the tools waiting, first in line first
	Acquired  uint64   `json:"acquired"`
	Timeouts  uint64   `json:"timeouts"`
	Busy      uint64   `json:"busy"`
	Cancelled uint64   `json:"cancelled"`
}

// Locks reports who holds what now and who waits, lock by lock.
func (s *Server) Locks() []LockState {
	stats := s.locks.Stats()
	out := make([]LockState, 0, len(stats))
	for _, st := range stats {
		ls := LockState{Lock: st.Key.String(), Holder: st.Holder, HeldForMS: st.HeldFor.Milliseconds(),
			Waiting: st.Waiting, Acquired: st.Acquired, Timeouts: st.Timeouts, Busy: st.Busy, Cancelled: st.Cancelled}
		if ls.Waiting == nil {
			ls.Waiting = []string{}
		}
		out = append(out, ls)
	}
	return out
}

// locksURI is the MCP resource of Locks.
const locksURI = "pagemux://locks"

// addLockResource registers pagemux://locks, read without taking any lock.
func (s *Server) addLockResource() {
	s.mcp.AddResource(mcp.NewResource(locksURI, "locks",
		mcp.WithResourceDescription("Every lock pagemux keeps: who holds it (the tool, for how long) and the calls waiting for it, first in line first."),
		mcp.WithMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			b, err := json.MarshalIndent(s.Locks(), "", "  ")
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: locksURI, MIMEType: "application/json", Text: string(b)}}, nil
		})
}
