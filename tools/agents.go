package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

// Many agents, one browser (Options.Agents): calls that a transport marks
// with an agents.Agent (HTTP) get that agent's own selected page and, in
// owned mode, only its own pages. Calls without one (stdio: one client) use
// the browser's selection and see every page, as before.

// agentOf returns the agent of a call, when the server tells agents apart
// and the call came with one.
func (s *Server) agentOf(ctx context.Context) (agents.Agent, bool) {
	if s.agents == nil {
		return agents.Agent{}, false
	}
	return agents.From(ctx)
}

// selectedPage is the page a call without pageId acts on.
func (s *Server) selectedPage(ctx context.Context) (*browser.Page, error) {
	a, ok := s.agentOf(ctx)
	if !ok {
		return s.browser.Selected(ctx)
	}
	if !a.Named() {
		return nil, &argError{"this call names no page and carries neither a session nor a token, so pagemux cannot tell which page is yours: pass pageId (list_pages shows the ids)"}
	}
	if id := s.agents.Selected(a); id != 0 {
		if p, err := s.browser.Page(id); err == nil {
			return p, nil
		}
	}
	// None selected, or it closed: the agent's newest open page.
	for _, id := range slices.Backward(s.agents.Pages(a)) {
		if p, err := s.browser.Page(id); err == nil {
			s.agents.Select(a, id)
			return p, nil
		}
	}
	// None at all: a page of its own, as a fresh stdio server starts with
	// one, so that an agent may begin with navigate_page.
	done, err := s.reservePage(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: you have no page selected, and %w", browser.ErrNoPage, err)
	}
	defer done()
	p, err := s.browser.NewPage(ctx, true, s.contextFor(ctx, "")...)
	if err != nil {
		return nil, fmt.Errorf("%w: you have no page, and opening one failed (%w); open one with new_page", browser.ErrNoPage, err)
	}
	if err := s.own(ctx, p); err != nil {
		return nil, err
	}
	s.log.Info("opened a first page for an agent", "agent", agentLabel(a), "page", p.ID)
	return p, nil
}

// checkAccess fails a call on a page its agent may not use.
func (s *Server) checkAccess(ctx context.Context, p *browser.Page) error {
	if a, ok := s.agentOf(ctx); ok {
		return s.agents.Check(a, p.ID)
	}
	return nil
}

// pageList is what a call's "## Pages" shows: the pages its agent sees and
// the one selected for it.
func (s *Server) pageList(ctx context.Context) ([]*browser.Page, int) {
	a, ok := s.agentOf(ctx)
	if !ok {
		return s.browser.Pages(), s.browser.SelectedID()
	}
	var pages []*browser.Page
	for _, p := range s.browser.Pages() {
		if s.agents.Visible(a, p.ID) {
			pages = append(pages, p)
		}
	}
	return pages, s.agents.Selected(a)
}

// selectFor makes p the selected page of the call's agent, or the browser's.
func (s *Server) selectFor(ctx context.Context, id int) (*browser.Page, error) {
	a, ok := s.agentOf(ctx)
	if !ok {
		return s.browser.Select(id)
	}
	p, err := s.browser.Page(id)
	if err != nil {
		return nil, err
	}
	if err := s.agents.Check(a, id); err != nil {
		return nil, err
	}
	s.agents.Select(a, id)
	return p, nil
}

// contextFor is the browser context a new page of the call's agent opens
// in. Over HTTP, in owned mode, the names of isolatedContext are the
// agent's own (browser.InScope): two agents that give the same name get
// two contexts, and no name reaches another agent's context. Without a
// name, with Options.IsolateAgents (the default over HTTP), the page opens
// in a context of the agent's own (cookies, storage, cache), disposed of
// with its last page; otherwise in Chrome's default context, shared by all.
// In shared mode the names are shared, as every page is. Without an agent
// (stdio) a name is the browser's, as chrome-devtools-mcp has it.
func (s *Server) contextFor(ctx context.Context, named string) []browser.PageOption {
	opts := []browser.PageOption{browser.InContext(named)}
	a, ok := s.agentOf(ctx)
	if !ok {
		return opts
	}
	switch {
	case named == "" && s.isolateAgents, named != "" && s.agents.Mode() == agents.Owned:
		opts = append(opts, browser.InScope(a.ID))
	}
	if s.isolateAgents && s.browser.Pooled() {
		// An agent's contexts are on the Chrome of its pages: in a pool,
		// its pages stay on one.
		for _, id := range slices.Backward(s.agents.Pages(a)) {
			if p, err := s.browser.Page(id); err == nil {
				opts = append(opts, browser.Beside(p))
				break
			}
		}
	}
	return opts
}

// maxContextName bounds an isolatedContext name.
const maxContextName = 100

// checkContextName refuses an isolatedContext name an agent could not read
// back in its page list.
func checkContextName(name string) error {
	if len(name) > maxContextName || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return &argError{fmt.Sprintf("isolatedContext %.40q: want a name of at most %d characters without control characters, such as login-test", name, maxContextName)}
	}
	return nil
}

// reservePage takes a slot under --max-pages-per-agent for a page the
// call's agent is about to open; done gives it back once the page is the
// agent's or failed to open.
func (s *Server) reservePage(ctx context.Context) (done func(), err error) {
	if a, ok := s.agentOf(ctx); ok {
		return s.agents.Reserve(a)
	}
	return func() {}, nil
}

// pageOpened makes a tab that a page opened its opener's owner's, at once,
// and closes it again when it takes the owner past --max-pages-per-agent;
// the owner's next answer says so (agentNotes). It runs in the browser's
// event loop (browser.OnPageOpened).
func (s *Server) pageOpened(p *browser.Page, opener int) {
	if !s.agents.Inherit(p.ID, opener) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaveWait)
		defer cancel()
		if err := s.browser.ClosePage(ctx, p); err != nil && !p.Closed() {
			s.log.Warn("closing a popup over --max-pages-per-agent", "page", p.ID, "error", err)
		}
	}()
}

// agentNotes is what the call's agent is told of things done to its pages
// without a call of its own (popups closed over the bound), and of its
// holds that their limit ended (holds.go), also to a call without an agent.
func (s *Server) agentNotes(ctx context.Context) []string {
	notes := s.holdNotes.take(holdAgent(ctx))
	if a, ok := s.agentOf(ctx); ok {
		notes = append(s.agents.TakeNotes(a), notes...)
	}
	return notes
}

// selectionNote says that the browser's selected page closed, for a call
// without an agent (stdio). Agents have selections of their own, and the
// browser's would name another agent's page.
func (s *Server) selectionNote(ctx context.Context) string {
	if _, ok := s.agentOf(ctx); ok {
		return ""
	}
	if moved, now := s.browser.TakeSelectionNote(); moved {
		return fmt.Sprintf("Note: the previously selected page was closed. Page %d is now selected.", now)
	}
	return ""
}

// agentLabel names a to other callers (in lock holders): its ID, but a
// digest of a session's, since a session id is a secret of its client.
func agentLabel(a agents.Agent) string {
	if strings.HasPrefix(a.ID, "session:") {
		return "session-" + digest(a.ID)
	}
	return a.ID
}

// digest is a short, stable stand-in for s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// forAgent is how the holder of a lock (holderName) is named to the call's
// agent: as it is to itself, to an admin token's agent and without agents
// (stdio); "another agent" for every other agent's call, so that no agent
// learns another's name, tools or pages. A holder that names no agent (a
// departed agent's page closing, a trace) is another agent's too.
func (s *Server) forAgent(ctx context.Context, holder string) string {
	a, ok := s.agentOf(ctx)
	if !ok || a.Admin || holder == "" {
		return holder
	}
	if i := strings.LastIndex(holder, holderMark); i >= 0 && sameAgent(a, holder[i+len(holderMark):]) {
		return holder
	}
	return anotherAgent
}

// holderMark comes before the agent's label in holderName.
const holderMark = " for agent "

// anotherAgent is how an agent's call is named to the others.
const anotherAgent = "another agent"

// sameAgent reports whether label (agentLabel) is a's, or, when a is a
// token without an agent name (as /locks is asked), an agent of a's token.
func sameAgent(a agents.Agent, label string) bool {
	if label == agentLabel(a) {
		return true
	}
	return a.ID == "token:"+a.Token && a.Token != "" && strings.HasPrefix(label, a.ID+"/agent:")
}

// sameOwner is sameAgent for a page's owner (an agents.Agent ID).
func sameOwner(a agents.Agent, owner string) bool {
	return owner == a.ID || a.Token != "" && a.ID == "token:"+a.Token && strings.HasPrefix(owner, a.ID+"/agent:")
}

// redactErr names the holder of a lock a call timed out on as forAgent
// does, in the whole message, however the timeout was wrapped.
func (s *Server) redactErr(ctx context.Context, err error) error {
	var te *pagelock.TimeoutError
	if !errors.As(err, &te) || te.Holder == "" {
		return err
	}
	shown := s.forAgent(ctx, te.Holder)
	if shown == te.Holder {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), "held by "+te.Holder, "held by "+shown)
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error with another message, for errors.Is and As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// own records that the call's agent opened p. When the agent's session
// ended while the page opened, the page is closed again (or, with
// KeepPages, left to no one), and the call fails with why.
func (s *Server) own(ctx context.Context, p *browser.Page) error {
	a, ok := s.agentOf(ctx)
	if !ok || s.agents.Own(a, p.ID) {
		return nil
	}
	if !s.keepPages {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveWait)
		defer cancel()
		if err := s.browser.ClosePage(cctx, p); err != nil {
			s.log.Warn("closing a page its departed agent opened", "page", p.ID, "error", err)
		}
	}
	return agents.ErrEnded
}

// bindAgent gives the call's agent its generation: the first call of a
// session takes over the pages of its identity's older session (see
// agents.Registry.Arrive). The context it returns ends when the call's
// session is taken over or ends; it fails at once when that happened
// already. A call without an agent is unbound.
func (s *Server) bindAgent(ctx context.Context) (context.Context, func(), error) {
	a, ok := s.agentOf(ctx)
	if !ok {
		return ctx, func() {}, nil
	}
	if err := s.replicas.catchUp(ctx); err != nil { // replicas.go
		return nil, nil, err
	}
	a, took := s.agents.Arrive(a)
	if took != nil {
		s.log.Info("a new session took over an agent's pages", "agent", a.ID, "generation", a.Gen, "pages", s.agents.Pages(a))
	}
	return s.agents.Bind(agents.With(ctx, a), a)
}

// fenced is why the call's result may not be published: its session was
// taken over or ended while it ran. nil for a call that may answer.
func (s *Server) fenced(ctx context.Context) error {
	if a, ok := s.agentOf(ctx); ok {
		return s.agents.Current(a)
	}
	return nil
}

// agentGone ends an MCP session: its calls still queued or running fail
// (agents.ErrEnded). When the session's agent leaves with it, its pages
// close, unless the server keeps them; either way they belong to no one
// afterwards. A call still running on such a page is given leaveWait to
// finish.
func (s *Server) agentGone(session string) {
	a, pages := s.agents.Leave(session)
	s.seen.forget(func(k seenKey) bool { return strings.HasPrefix(k.viewer, a.ID+"#") })
	s.leases.agentLeft(a.ID)                                              // rules.go
	s.routesGone(a.ID)                                                    // routes.go
	s.harMarks.forget(func(k harMarkKey) bool { return k.agent == a.ID }) // har.go
	if strings.HasPrefix(a.ID, "session:") {
		// An agent of one session never comes back: the notes it was yet
		// to read go with it (a token's or a name's agent reads them in its
		// next session).
		s.holdNotes.take(a.ID) // holds.go
		s.idle.forget(a.ID)    // idle.go
	}
	if s.keepPages || len(pages) == 0 {
		return
	}
	s.log.Info("agent left; closing its pages", "agent", a.ID, "pages", pages)
	for _, id := range pages {
		p, err := s.browser.Page(id)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), leaveWait)
		g, err := s.locks.Acquire(ctx, pagelock.Request{Keys: []pagelock.Key{pagelock.PageKey(id)}, Owner: "agent left"})
		if err != nil {
			s.log.Warn("closing a departed agent's page without its lock", "page", id, "error", err)
		}
		switch err := s.browser.ClosePage(ctx, p); {
		case errors.Is(err, browser.ErrBrowserClosed), errors.Is(err, browser.ErrPageClosed):
			// pagemux is shutting down, or the page went meanwhile.
			s.log.Debug("a departed agent's page is gone already", "page", id, "error", err)
		case err != nil:
			s.log.Warn("closing a departed agent's page", "page", id, "error", err)
		}
		g.Release()
		cancel()
	}
}

// leaveWait bounds how long a departed agent's page waits for the call that
// holds it before it is closed anyway.
const leaveWait = 5 * time.Second

// agentHooks end an agent with its MCP session (a DELETE, or the idle TTL of
// the HTTP transport).
func (s *Server) agentHooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddOnUnregisterSession(func(ctx context.Context, sess server.ClientSession) {
		if s.agents != nil {
			go s.agentGone(sess.SessionID())
		}
	})
	return h
}
