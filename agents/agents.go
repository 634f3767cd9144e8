// Package agents knows who is calling when many agents share one browser:
// each agent's identity, its own selected page, the pages it owns, and the
// generation that fences a session whose identity a newer session took
// over. It knows nothing of Chrome, MCP or locks: pages are ids, agents are
// names, sessions are strings.
package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Agent is one caller. Its ID is its identity: the name of its bearer
// token (and the agent name it gave, with several agents on one token),
// else the agent name alone, else its MCP session, else the one shared
// anonymous agent. Sessions of one named identity are its generations: the
// newest takes over the identity's pages (Registry.Arrive).
type Agent struct {
	// ID names the agent: "token:…", "token:…/agent:…", "agent:…",
	// "session:…" or "anonymous".
	ID string
	// Token is the name of the agent's bearer token, "" without one.
	Token string
	// Session is the MCP session the call came on, "" in the stateless
	// revision.
	Session string
	// Gen is the generation of ID that Session is, set by Registry.Arrive;
	// 0 for a stateless call, which always acts as the agent's newest.
	Gen uint64
	// Admin says the agent's token is an admin token (--admin-token): it
	// sees every agent's locks by name. It gives no rights over pages.
	Admin bool
}

// Anonymous is the agent of calls that carry no session and no token.
const Anonymous = "anonymous"

// Named reports whether the agent can be told apart from other callers, so
// that it can have a selected page of its own.
func (a Agent) Named() bool { return a.ID != "" && a.ID != Anonymous }

// Identity returns the ID of the agent named by a token name, an agent
// name and a session, any of them "": see Agent.
func Identity(token, name, session string) string {
	switch {
	case token != "" && name != "":
		return "token:" + token + "/agent:" + name
	case token != "":
		return "token:" + token
	case name != "":
		return "agent:" + name
	case session != "":
		return "session:" + session
	}
	return Anonymous
}

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

// ErrTakenOver is why a session's calls fail once a newer session of the
// same identity took over its pages: its calls still queued or running are
// cancelled with it, and none of them may publish a result.
type ErrTakenOver struct {
	Agent string    // the identity
	Gen   uint64    // the session's generation
	By    uint64    // the generation that took over
	At    time.Time // when
}

func (e *ErrTakenOver) Error() string {
	return fmt.Sprintf("this session was taken over: a newer session of agent %s (generation %d, at %s) now has its pages, and this session's calls no longer run. "+
		"If several agents share one token, give each its own token (--auth-token NAME=SECRET) or its own agent name (header Pagemux-Agent: NAME; pagemux --join … --agent NAME); otherwise reconnect",
		e.Agent, e.By, e.At.UTC().Format(time.TimeOnly))
}

// ErrEnded is why a call fails when its session ended (DELETE, or the idle
// bound) while it was queued or running.
var ErrEnded = errors.New("this session ended (closed by its client, or idle past --agent-idle): its queued and running calls were cancelled and its locks released; start a new session")

// Registry is the agents of one server and what is theirs. The zero value
// is not ready: make one with New. It is safe for concurrent use.
type Registry struct {
	mode Mode
	now  func() time.Time

	// maxPages bounds the pages one agent owns (LimitPages); 0: no bound.
	maxPages int
	// keep leaves the pages of an agent that left its identity's (KeepPages).
	keep bool
	// replicas is told every change of an owner or a selection (Share).
	replicas Replicas

	mu       sync.Mutex
	agents   map[string]*state   // by Agent.ID
	sessions map[string]*session // by MCP session id
	owners   map[int]string      // page id → the Agent.ID that owns it (whichever of its sessions is the newest); pages missing here are no one's
	opening  map[string]int      // by Agent.ID: pages being opened under a slot of Reserve
	notes    map[string]*notes   // by Agent.ID: what the agent is told in its next answer
}

// notes is what an agent has not been told yet.
type notes struct {
	closedPopups []int // popups closed at once, over the bound
}

// state is what one agent has.
type state struct {
	token    string
	selected int    // 0: none
	gen      uint64 // the newest generation; 0: none has arrived yet
	session  string // the session of gen
}

// session is one MCP session: which agent and generation it is, and the
// context its calls run under, ended when it is taken over or leaves.
type session struct {
	agent  string
	gen    uint64
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Replicas keeps what a Registry's agents own and select alike in every
// replica that serves them (tools gives it etcd). The Registry tells it
// each change it makes itself, after the change and outside its lock, and
// is told the other replicas' changes through ApplyOwner and
// ApplySelected.
type Replicas interface {
	// Owner says page is agent's; agent "" says it is no one's.
	Owner(page int, agent string)
	// Selected says agent's selected page.
	Selected(agent string, page int)
	// Arrived says session is agent's newest: the other replicas take
	// over its older sessions there (ApplyNewest).
	Arrived(agent, session string)
}

// Share makes r tell rs of its changes. Call it before the first agent.
func (r *Registry) Share(rs Replicas) { r.replicas = rs }

// ApplyOwner takes another replica's change: page is agent's, or no one's
// when agent is "".
func (r *Registry) ApplyOwner(page int, agent string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if agent == "" {
		delete(r.owners, page)
		return
	}
	r.owners[page] = agent
}

// ApplySelected takes another replica's change of agent's selected page.
func (r *Registry) ApplySelected(agent string, page int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.agents[agent]; ok {
		s.selected = page
	} else if page != 0 {
		r.agents[agent] = &state{selected: page}
	}
}

// ApplyNewest takes another replica's news that session is agent's newest
// session: this replica's current session of agent, if any, is taken over,
// as Arrive takes over an older session here. News of one of this
// replica's own sessions changes nothing.
func (r *Registry) ApplyNewest(agent, session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ours := r.sessions[session]; ours {
		return
	}
	st, ok := r.agents[agent]
	if !ok {
		return
	}
	if old, ok := r.sessions[st.session]; ok && old.gen == st.gen && context.Cause(old.ctx) == nil {
		old.cancel(&ErrTakenOver{Agent: agent, Gen: old.gen, By: old.gen + 1, At: r.now()})
	}
}

// changes are what a method tells Replicas once it let go of r.mu: it
// defers publish before it locks, so that publish runs after the unlock.
type changes []func(Replicas)

func (c *changes) owner(page int, agent string) {
	*c = append(*c, func(rs Replicas) { rs.Owner(page, agent) })
}

func (c *changes) selected(agent string, page int) {
	*c = append(*c, func(rs Replicas) { rs.Selected(agent, page) })
}

func (r *Registry) publish(c *changes) {
	if r.replicas == nil {
		return
	}
	for _, f := range *c {
		f(r.replicas)
	}
}

// New returns an empty registry in mode.
func New(mode Mode) *Registry {
	return &Registry{mode: mode, now: time.Now, agents: map[string]*state{}, sessions: map[string]*session{}, owners: map[int]string{},
		opening: map[string]int{}, notes: map[string]*notes{}}
}

// Mode returns the registry's mode.
func (r *Registry) Mode() Mode { return r.mode }

// LimitPages bounds the pages one agent may own at a time, popups its pages
// opened included; 0 or less: no bound. Call it before the first agent.
func (r *Registry) LimitPages(n int) { r.maxPages = max(n, 0) }

// KeepPages makes the pages of an agent that leaves stay its identity's,
// for its next session (same token and agent name), instead of no one's.
// Call it before the first agent.
func (r *Registry) KeepPages(keep bool) { r.keep = keep }

// MaxPages returns the bound of LimitPages, 0 for none.
func (r *Registry) MaxPages() int { return r.maxPages }

// get returns a's state, making it on first sight. r.mu must be held.
func (r *Registry) get(a Agent) *state {
	s, ok := r.agents[a.ID]
	if !ok {
		s = &state{token: a.Token}
		r.agents[a.ID] = s
	}
	return s
}

// Arrive returns a, a caller as its transport knows it, with its
// generation. A session seen for the first time is its identity's newest
// generation: the session it follows is taken over (its calls fail with
// *ErrTakenOver) and tookOver says so. A session seen before keeps the
// generation it had, current or not. A stateless call (no session) has
// generation 0.
func (r *Registry) Arrive(a Agent) (_ Agent, tookOver *ErrTakenOver) {
	if a.Session == "" {
		a.Gen = 0
		return a, nil
	}
	var ch changes
	defer r.publish(&ch)
	r.mu.Lock()
	defer r.mu.Unlock()
	if sess, ok := r.sessions[a.Session]; ok {
		a.ID, a.Gen = sess.agent, sess.gen
		return a, nil
	}
	st := r.get(a)
	st.gen++
	if old, ok := r.sessions[st.session]; ok && old.gen == st.gen-1 {
		tookOver = &ErrTakenOver{Agent: a.ID, Gen: old.gen, By: st.gen, At: r.now()}
		old.cancel(tookOver)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r.sessions[a.Session] = &session{agent: a.ID, gen: st.gen, ctx: ctx, cancel: cancel}
	st.session = a.Session
	if a.Named() {
		id, session := a.ID, a.Session
		ch = append(ch, func(rs Replicas) { rs.Arrived(id, session) })
	}
	a.Gen = st.gen
	return a, tookOver
}

// Bind returns ctx, ended also when a's session is taken over or leaves,
// with the error that says which as its cause (context.Cause). It fails at
// once when that happened already. Call stop when the call is over.
func (r *Registry) Bind(ctx context.Context, a Agent) (_ context.Context, stop func(), err error) {
	sess, err := r.session(a)
	if err != nil {
		return nil, nil, err
	}
	if sess == nil {
		return ctx, func() {}, nil // stateless, or a registry that never saw it
	}
	bound, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(sess.ctx, func() { cancel(context.Cause(sess.ctx)) })
	return bound, func() { unhook(); cancel(nil) }, nil
}

// Current fails when a's session may no longer act: a newer session of its
// identity took over (*ErrTakenOver), or it left (ErrEnded). Stateless calls
// and sessions Arrive never saw are always current.
func (r *Registry) Current(a Agent) error {
	_, err := r.session(a)
	return err
}

// session returns a's session, nil for a stateless call or a session Arrive
// never saw, and why it may no longer act, if it may not.
func (r *Registry) session(a Agent) (*session, error) {
	if a.Session == "" {
		return nil, nil
	}
	r.mu.Lock()
	sess, ok := r.sessions[a.Session]
	r.mu.Unlock()
	switch {
	case !ok && a.Gen > 0:
		return nil, ErrEnded // it left, and was forgotten
	case !ok:
		return nil, nil
	}
	return sess, context.Cause(sess.ctx) // no cause while the context lives
}

// Own makes page a's, and selects it for a, as new_page does. It reports
// false, owning nothing, when a's session left and its identity with it: the
// caller closes the page, or keeps it as no one's.
func (r *Registry) Own(a Agent, page int) bool {
	var ch changes
	defer r.publish(&ch)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sessions[a.Session]; !ok && a.Gen > 0 {
		return false
	}
	s := r.get(a)
	r.owners[page] = a.ID
	s.selected = page
	ch.owner(page, a.ID)
	ch.selected(a.ID, page)
	return true
}

// Inherit gives page the owner of parent, for a tab a page opened itself
// (a popup, a target=_blank link), whenever it appears: the tab is its
// opener's owner's from its first event on, so no other agent ever has a
// moment to use it. A tab of a page of no one is no one's. over reports a
// tab that takes its owner past LimitPages: the caller closes it at once,
// and the owner's next TakeNotes says so. Inheriting again changes nothing.
func (r *Registry) Inherit(page, parent int) (over bool) {
	var ch changes
	defer r.publish(&ch)
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.owners[parent]
	if !ok {
		return false
	}
	if _, ok := r.owners[page]; ok {
		return false // known already (the call that opened it saw it too)
	}
	r.owners[page] = o
	ch.owner(page, o)
	if r.maxPages > 0 && r.ownedLocked(o) > r.maxPages {
		n := r.notes[o]
		if n == nil {
			n = &notes{}
			r.notes[o] = n
		}
		n.closedPopups = append(n.closedPopups, page)
		return true
	}
	return false
}

// ownedLocked counts the pages id owns. r.mu must be held.
func (r *Registry) ownedLocked(id string) int {
	n := 0
	for _, o := range r.owners {
		if o == id {
			n++
		}
	}
	return n
}

// ErrTooManyPages is why a new page is refused: its agent has as many as
// LimitPages allows.
type ErrTooManyPages struct{ Open, Max int }

func (e *ErrTooManyPages) Error() string {
	return fmt.Sprintf("you have %d pages open, the most this server allows one agent (--max-pages-per-agent %d), popups your pages opened included: close some with close_page (list_pages shows them), then open the new one", e.Open, e.Max)
}

// Reserve takes a slot for a page a is about to open, so that calls that
// open pages at the same time cannot pass LimitPages together: it fails
// with *ErrTooManyPages when a owns (or is opening) as many as the bound
// allows. Call done once the page is Own'ed, or failed to open.
func (r *Registry) Reserve(a Agent) (done func(), err error) {
	if r.maxPages <= 0 {
		return func() {}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.ownedLocked(a.ID) + r.opening[a.ID]; n >= r.maxPages {
		return nil, &ErrTooManyPages{Open: n, Max: r.maxPages}
	}
	r.opening[a.ID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.opening[a.ID]--; r.opening[a.ID] <= 0 {
				delete(r.opening, a.ID)
			}
		})
	}, nil
}

// TakeNotes returns, once, what a should be told of things done to its
// pages without a call of its own: popups closed at once over LimitPages.
func (r *Registry) TakeNotes(a Agent) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.notes[a.ID]
	if n == nil {
		return nil
	}
	delete(r.notes, a.ID)
	var out []string
	if k := len(n.closedPopups); k > 0 {
		what := fmt.Sprintf("popup %d", n.closedPopups[0])
		if k > 1 {
			what = fmt.Sprintf("%d popups (pages %d to %d)", k, n.closedPopups[0], n.closedPopups[k-1])
		}
		out = append(out, fmt.Sprintf("Note: closed %s that your pages opened, at once: you had %d pages open, the most this server allows one agent (--max-pages-per-agent %d). Close pages you no longer need with close_page.",
			what, r.maxPages, r.maxPages))
	}
	return out
}

// ErrNotYours is the error of a call on another agent's page.
type ErrNotYours struct{ Page int }

func (e *ErrNotYours) Error() string {
	return fmt.Sprintf("page %d belongs to another agent; use a page of your own (list_pages shows them) or open one with new_page", e.Page)
}

// ErrNotOpened is the error of a call on a page of no one in Owned mode:
// a tab made outside pagemux (Chrome's first tab, one another program made,
// one a page of no one opened), or one kept after its agent left.
type ErrNotOpened struct{ Page int }

func (e *ErrNotOpened) Error() string {
	return fmt.Sprintf("page %d was not opened by pagemux for this agent, so it may not use it; use a page of your own (list_pages shows them) or open one with new_page", e.Page)
}

// Owner returns the Agent.ID that owns page; false for a page of no one.
func (r *Registry) Owner(page int) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.owners[page]
	return o, ok
}

// Check fails when a may not use page: in Owned mode, a page of another
// agent (*ErrNotYours) or of no one (*ErrNotOpened). In Shared mode every
// page is everyone's.
func (r *Registry) Check(a Agent, page int) error {
	if r.mode == Shared {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.owners[page]
	switch {
	case !ok:
		return &ErrNotOpened{Page: page}
	case o != a.ID:
		return &ErrNotYours{Page: page}
	}
	return nil
}

// Visible reports whether a sees page in its page list: in Owned mode its
// own pages only, in Shared mode every page.
func (r *Registry) Visible(a Agent, page int) bool {
	if r.mode == Shared {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.owners[page]
	return ok && o == a.ID
}

// Select makes page the one a's calls without pageId act on.
func (r *Registry) Select(a Agent, page int) {
	var ch changes
	defer r.publish(&ch)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.get(a).selected = page
	ch.selected(a.ID, page)
}

// Selected returns a's selected page; 0 when it has none.
func (r *Registry) Selected(a Agent) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.agents[a.ID]; ok {
		return s.selected
	}
	return 0
}

// PageClosed forgets page; agents that had it selected have none selected.
// Every replica sees the tab close, so each clears the selections itself.
func (r *Registry) PageClosed(page int) {
	var ch changes
	defer r.publish(&ch)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.owners[page]; ok {
		ch.owner(page, "")
	}
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
		if o == a.ID {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Leave ends an MCP session, as when its client closed it or it idled out:
// its calls still queued or running fail with ErrEnded. When it was its
// identity's newest session the agent leaves with it: Leave returns the
// agent and the pages it owned, for the caller to close or keep, and those
// pages are no one's from now on, or, with KeepPages, still its
// identity's. A session taken over before it ended leaves nothing behind:
// its pages are the newer session's.
func (r *Registry) Leave(sessionID string) (_ Agent, pages []int) {
	var ch changes
	defer r.publish(&ch)
	r.mu.Lock()
	defer r.mu.Unlock()
	sess, ok := r.sessions[sessionID]
	if !ok {
		return Agent{}, nil
	}
	delete(r.sessions, sessionID)
	sess.cancel(ErrEnded)
	st, ok := r.agents[sess.agent]
	if !ok || st.gen != sess.gen {
		return Agent{}, nil
	}
	for p, o := range r.owners {
		if o == sess.agent {
			pages = append(pages, p)
			if !r.keep {
				delete(r.owners, p)
				ch.owner(p, "")
			}
		}
	}
	delete(r.agents, sess.agent)
	delete(r.notes, sess.agent)
	slices.Sort(pages)
	return Agent{ID: sess.agent, Token: st.token, Session: sessionID, Gen: sess.gen}, pages
}

// Agents counts the agents known now.
func (r *Registry) Agents() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.agents)
}
