package tools

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pagemux/pagemux/agents"

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
	// Cluster marks a lock in etcd (--etcd), as every pagemux process
	// sharing the browser sees it: Holder and Waiting then name each
	// call's process, and the counts are this process's own.
	Cluster bool `json:"cluster,omitempty"`
}

// Locks reports who holds what now and who waits, lock by lock, all of it.
func (s *Server) Locks() []LockState { return s.LocksFor(context.Background()) }

// LocksFor is Locks as the agent of ctx may see it: its own calls by tool
// and page, every other agent's as "another agent" (forAgent), and no lock
// of a page it may not see. An agent of an admin token (--admin-token),
// and a caller without an agent (stdio, a bare context), see all of it.
func (s *Server) LocksFor(ctx context.Context) []LockState {
	a, redact := s.agentOf(ctx)
	redact = redact && !a.Admin
	stats := s.locks.Stats()
	out := make([]LockState, 0, len(stats))
	for _, st := range stats {
		name := st.Key.String()
		if redact && !s.seesLock(a, name) {
			continue
		}
		ls := LockState{Lock: name, Holder: st.Holder, HeldForMS: st.HeldFor.Milliseconds(),
			Waiting: st.Waiting, Acquired: st.Acquired, Timeouts: st.Timeouts, Busy: st.Busy, Cancelled: st.Cancelled}
		if redact {
			ls.Holder = s.forAgent(ctx, ls.Holder)
			ls.Waiting = make([]string, len(st.Waiting))
			for i, w := range st.Waiting {
				ls.Waiting[i] = s.forAgent(ctx, w)
			}
		}
		if ls.Waiting == nil {
			ls.Waiting = []string{}
		}
		out = append(out, ls)
	}
	return append(out, s.clusterLocks(ctx, a, redact)...)
}

// seesLock reports whether a may see the lock named name: a page's only
// when the page is a's (or every agent's, in shared mode); any other lock
// (the global lock, a browser-wide resource) always.
func (s *Server) seesLock(a agents.Agent, name string) bool {
	n, ok := strings.CutPrefix(name, "page ")
	if !ok {
		return true
	}
	id, err := strconv.Atoi(n)
	if err != nil {
		return false
	}
	if s.agents.Mode() == agents.Shared {
		return true
	}
	owner, ok := s.agents.Owner(id)
	return ok && sameOwner(a, owner)
}

// locksURI is the MCP resource of Locks.
const locksURI = "pagemux://locks"

// addLockResource registers pagemux://locks, read without taking any lock.
func (s *Server) addLockResource() {
	s.mcp.AddResource(mcp.NewResource(locksURI, "locks",
		mcp.WithResourceDescription("Every lock pagemux keeps: who holds it (the tool, for how long) and the calls waiting for it, first in line first. Over HTTP an agent sees its own calls and pages; other agents' calls are \"another agent\"."),
		mcp.WithMIMEType("application/json")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			b, err := json.MarshalIndent(s.LocksFor(ctx), "", "  ")
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: locksURI, MIMEType: "application/json", Text: string(b)}}, nil
		})
}
