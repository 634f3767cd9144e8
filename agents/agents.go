// Package agents knows who is calling when many agents share one browser:
// each agent's identity, its own selected page, the pages it owns, and the
// generation that fences an agent whose identity was taken over. It knows
// nothing of Chrome, MCP or locks: pages are ids, agents are names.
package agents

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Agent is one caller: an MCP session where the protocol has one, else the
// name of its bearer token, else the one shared anonymous agent.
type Agent struct {
	// ID names the agent: "session:…", "token:…" or "anonymous".
	ID string
	// Token is the name of the agent's bearer token, "" without one.
	Token string
}

// Anonymous is the agent of calls that carry no session and no token.
const Anonymous = "anonymous"

// Named reports whether the agent can be told apart from other callers, so
// that it can have a selected page of its own.
func (a Agent) Named() bool { return a.ID != "" && a.ID != Anonymous }

type agentKey struct{}

// With returns a copy of ctx that carries a.
func With(ctx context.Context, a Agent) context.Context {
	return context.WithValue(ctx, agentKey{}, a)
}

// From returns the agent in ctx; false for a call that came without one
// (stdio, where the one client is the only agent).
func From(ctx context.Context) (Agent, bool) {
	a, ok := ctx.Value(agentKey{}).(Agent)
	return a, ok
}

// Mode says whether agents see each other's pages.
type Mode int

const (
	// Owned: a page belongs to the agent that opened it; others cannot use it.
	Owned Mode = iota
	// Shared: every agent sees and uses every page, under the same locks.
	Shared
)

// ParseMode reads "owned" or "shared".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "owned":
		return Owned, nil
	case "shared":
		return Shared, nil
	}
	return 0, fmt.Errorf("unknown page mode %q: want owned or shared", s)
}

// Owner is who owns a page: the ID of an agent.
type Owner struct {
	Agent string
}

// Registry is the agents of one server and what is theirs. The zero value
// is not ready: make one with New. It is safe for concurrent use.
type Registry struct {
	mode Mode

	mu     sync.Mutex
	agents map[string]*state
	owners map[int]Owner // page id → owner; pages missing here are no one's
}

// state is what one agent has.
type state struct {
	token    string
	selected int // 0: none
}

// New returns an empty registry in mode.
func New(mode Mode) *Registry {
	return &Registry{mode: mode, agents: map[string]*state{}, owners: map[int]Owner{}}
}

// Mode returns the registry's mode.
func (r *Registry) Mode() Mode { return r.mode }

// get returns a's state, making it on first sight. r.mu must be held.
func (r *Registry) get(a Agent) *state {
	s, ok := r.agents[a.ID]
	if !ok {
		s = &state{token: a.Token}
		r.agents[a.ID] = s
	}
	return s
}

// Own makes page a's, and selects it for a, as new_page does.
func (r *Registry) Own(a Agent, page int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.get(a)
	r.owners[page] = Owner{Agent: a.ID}
	s.selected = page
}

// Inherit gives page the owner of parent, for a tab a page opened itself.
func (r *Registry) Inherit(page, parent int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.owners[parent]; ok {
		r.owners[page] = o
	}
}

// OwnerOf returns the owner of page, if it has one.
func (r *Registry) OwnerOf(page int) (Owner, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.owners[page]
	return o, ok
}

// ErrNotYours is the error of a call on another agent's page.
type ErrNotYours struct{ Page int }

func (e *ErrNotYours) Error() string {
	return fmt.Sprintf("page %d belongs to another agent; use a page of your own (list_pages shows them) or open one with new_page", e.Page)
}

// Check fails when a may not use page: in Owned mode, a page of another
// agent. A page of no one (opened before, or kept after its agent left) is
// everyone's.
func (r *Registry) Check(a Agent, page int) error {
	if r.mode == Shared {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.owners[page]
	if !ok || o.Agent == a.ID {
		return nil
	}
	return &ErrNotYours{Page: page}
}

// Visible reports whether a sees page in its page list.
func (r *Registry) Visible(a Agent, page int) bool { return r.Check(a, page) == nil }

// Select makes page the one a's calls without pageId act on.
func (r *Registry) Select(a Agent, page int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.get(a).selected = page
}

// Selected returns a's selected page; 0 when it has none.
func (r *Registry) Selected(a Agent) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.get(a).selected
}

// PageClosed forgets page; agents that had it selected have none selected.
func (r *Registry) PageClosed(page int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.owners, page)
	for _, s := range r.agents {
		if s.selected == page {
			s.selected = 0
		}
	}
}

// Pages returns the pages a owns, ascending.
func (r *Registry) Pages(a Agent) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for p, o := range r.owners {
		if o.Agent == a.ID {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Leave forgets a, as when its session ends, and returns the pages it
// owned, for the caller to close or keep. keep leaves them to no one.
func (r *Registry) Leave(a Agent) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pages []int
	for p, o := range r.owners {
		if o.Agent == a.ID {
			pages = append(pages, p)
			delete(r.owners, p)
		}
	}
	delete(r.agents, a.ID)
	slices.Sort(pages)
	return pages
}

// Agents counts the agents known now.
func (r *Registry) Agents() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.agents)
}
