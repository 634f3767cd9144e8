package tools

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

// browserKey is the key browser-scope tools take in global mode, where every
// tool takes the one lock. In page mode they take none.
const browserKey pagelock.Key = "browser"

// waitNoticeAfter is the wait past which a result says that it waited.
const waitNoticeAfter = 100 * time.Millisecond

// guard wraps a tool's handler: it starts Chrome, resolves the page the call
// acts on, holds the call's locks while the handler runs, and releases them on
// success, error, panic, cancellation and past the tool's bound alike. Errors
// an agent can act on become results with isError set; none escapes as a
// protocol error.
//
// A call that came with a pagelock.Ticket (the stdio transport gives one to
// each tools/call in reading order) resolves its page and reserves its locks
// in its turn, so the calls of one client take their places in every lock
// queue in the order they arrived; calls on other locks still run side by
// side, since a turn ends as soon as the call has queued.
func (s *Server) guard(t tool) server.ToolHandlerFunc {
	name := t.def.Name
	schema, err := newArgSchema(t.def)
	if err != nil {
		panic(err) // a tool definition's bug, found by every test
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		ctx, endTask, err := s.taskContext(ctx, req) // tasks.go: a task's work outlives its request
		if err != nil {
			return toolError(err), nil
		}
		defer endTask()
		prog := s.startProgress(ctx, req)                                 // progress.go
		res, page := s.serveCall(withProgress(ctx, prog), t, schema, req) // masked: secrets.go
		prog.end()                                                        // before the answer: no progress may follow it
		took := time.Since(start)
		s.logCall(ctx, name, page, took, res)
		if s.onCall != nil {
			outcome := "ok"
			switch {
			case ctx.Err() != nil:
				outcome = "cancelled"
			case res.IsError:
				outcome = "error"
			}
			s.onCall(name, outcome, took)
		}
		return res, nil
	}
}

// serveCall is the Guard of one call. It returns the page the call acted
// on, nil if none, for the log. A call goes through these stages, in this
// order, each of which may end it with a tool error (and each releases
// what it took on every path):
//
//  1. arguments: schema.check (args.go) and _meta's ask for typed
//     answers (checkStructured, answers.go) — bad input waits for nothing;
//  2. agent: bindAgent (agents.go) — who calls, its generation;
//  3. admission, in the call's turn (admit): Chrome started, the page
//     resolved (target), the action rules (ruleStage, rules.go: refusals,
//     rates, leases, once-only records), its place in every lock queue
//     (pagelock.Request: page, resources, rule keys);
//  4. locks: the reservation's Wait, then the same locks in etcd with
//     --etcd (holdInCluster, cluster.go);
//  5. supervision: Chrome watched while the call runs (SuperviseOn), an
//     open dialog answered first;
//  6. the handler, bounded (runBounded, bound.go), reporting progress
//     (progress.go), as a task's work when it is one (tasks.go);
//  7. the answer: render (response.go), its typed answer when asked
//     (withAnswer, answers.go), then the rules' end (ruleEnd:
//     once-only records, leases) and fencing (a session taken over
//     publishes nothing).
func (s *Server) serveCall(ctx context.Context, t tool, schema *argSchema, req mcp.CallToolRequest) (res *mcp.CallToolResult, page *browser.Page) {
	ticket := pagelock.TicketFrom(ctx)
	defer ticket.Admit()
	defer s.recoverCall(t.def.Name, &res)
	args, id, err := schema.check(req)
	if err == nil {
		err = checkStructured(req) // answers.go: _meta's typed answers
	}
	if err != nil {
		return toolError(err), nil // before any turn or lock: bad input waits for nothing
	}
	ctx, unbind, err := s.bindAgent(ctx) // agents.go
	if err != nil {
		return toolError(err), nil
	}
	defer unbind()
	obs := s.observe(ctx, t.def.Name, args) // observe.go
	// The answer is masked once, on every path (secrets.go): the handler's
	// below, before its observers and records see it, and any other here,
	// after the defers that follow made it.
	masked := false
	defer func() {
		if !masked {
			res = s.maskResult(res)
		}
	}()
	defer func() { obs.end(ctx, s.maskedOnce(res, masked), page) }() // a call that ended before its handler
	// The handler's arguments have the agent's secrets in place of their
	// names; the rules, logs and records see the names.
	handlerArgs, err := s.expandSecrets(ctx, t.def.Name, args) // secrets.go
	if err != nil {
		return toolError(err), nil
	}
	defer func() {
		if err := s.fenced(ctx); err != nil {
			res = toolError(err) // its session was taken over or ended: the result is void
		}
	}()
	r, page, release, rc, err := s.admit(ctx, t, req, args, id, ticket)
	var rp *replay
	if errors.As(err, &rp) {
		return s.replayed(rp), page // rules.go: a once-only action's second call
	}
	if err != nil {
		return toolError(err), page
	}
	defer release()
	defer func() { s.ruleEnd(ctx, rc, s.maskedOnce(res, masked), page) }() // rules.go
	obs.queued(page, keyNames(r.Keys()))
	ticket.Admit()
	progressFrom(ctx).phase("waiting for its locks")
	g, err := r.Wait()
	if err != nil {
		if page != nil && page.Closed() {
			err = page.Err() // says how it went: close_page, outside pagemux, a restart
		}
		return toolError(s.redactErr(ctx, err)), page // agents.go
	}
	defer g.Release()
	obs.started(ctx, g.Waited())
	ctx, hold, err := s.holdInCluster(ctx, t, page, g.Keys()) // cluster.go
	if err != nil {
		return toolError(err), page
	}
	defer hold.release(s)
	defer func() {
		if err := hold.void(s); err != nil {
			res = toolError(err)
		}
	}()
	w := s.browser.SuperviseOn(ctx, page)
	defer w.Stop()
	if page != nil && page.Closed() {
		return toolError(page.Err()), page
	}
	if page != nil && !t.answersDialogs {
		if dlg := page.Dialog(); dlg != nil {
			return mcp.NewToolResultError(formatDialog(string(dlg.Type), dlg.Message) + "\n" + errorText(fmt.Errorf("%w (%s: %s)", browser.ErrDialogOpen, dlg.Type, dlg.Message))), page
		}
	}
	progressFrom(ctx).phase("running")
	if rc != nil {
		rc.started = true
	}
	c := &call{req: req, page: page, args: handlerArgs, resp: &response{}, since: s.browser.NextID()}
	if page != nil {
		c.startURL = page.URL()
		s.log.Debug("tool call runs", "tool", t.def.Name, "page", page.ID)
	} else {
		s.log.Debug("tool call runs", "tool", t.def.Name)
	}
	res = s.withAnswer(c, s.runBounded(ctx, t, c, g, w)) // answers.go
	res, masked = s.maskResult(res), true                // secrets.go
	obs.end(ctx, res, page)                              // holding the locks
	return res, page
}

// lockAgent is who a call waits as in the lock queues (pagelock.Request.Agent):
// its bearer token when it has one, so that the agent names one token may
// give share one bound and one turn, else its agent's identity; "" on stdio,
// whose one client is the only agent.
func lockAgent(ctx context.Context) string {
	a, ok := agents.From(ctx)
	switch {
	case !ok:
		return ""
	case a.Token != "":
		return "token:" + a.Token
	}
	return a.ID
}

// logCall writes one line for a call, with its agent and page.
func (s *Server) logCall(ctx context.Context, tool string, p *browser.Page, took time.Duration, res *mcp.CallToolResult) {
	attrs := []any{"tool", tool, "took", took, "error", res.IsError}
	if p != nil {
		attrs = append(attrs, "page", p.ID)
	}
	if a, ok := agents.From(ctx); ok {
		attrs = append(attrs, "agent", a.ID)
	}
	s.log.Debug("tool call", attrs...)
}

// recoverCall turns a panic of the call into an isError result.
func (s *Server) recoverCall(name string, res **mcp.CallToolResult) {
	if r := recover(); r != nil {
		s.log.Error("tool panicked", "tool", name, "panic", r, "stack", string(debug.Stack()))
		*res = toolError(fmt.Errorf("internal error in %s: %v; the server keeps serving, so try again, and report it if it repeats", name, r))
	}
}

// admit does what a call does in its turn: it starts Chrome, waits for the
// selection changes that came before it when it acts on the selected page,
// resolves its page and reserves its locks. release ends the call's hold on
// the selection, for tools that change it. Unless wait, a call fails at once
// for a browser-wide resource of the tool's that another agent holds
// (pagelock.Request.FailIfHeld, performance.go's heldByOther). The action
// rules decide the call once its page is known (rules.go): a refused call
// takes no lock; one given exclusive resources reserves them with its
// page; the second call of a once-only action fails with a *replay.
func (s *Server) admit(ctx context.Context, t tool, req mcp.CallToolRequest, args []byte, id int, ticket *pagelock.Ticket) (r *pagelock.Reservation, p *browser.Page, release func(), rc *ruled, err error) {
	if err := ticket.Turn(ctx); err != nil {
		return nil, nil, nil, nil, err
	}
	if err := s.browser.Start(ctx); err != nil {
		return nil, nil, nil, nil, err
	}
	if t.scope == browserScope || id == 0 {
		if err := ticket.AwaitHolds(ctx); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	release = func() {}
	if t.selects {
		hold := ticket.Hold() // not release, which a failing return sets to nil
		defer func() {
			if r == nil { // an error or a panic: the hold must not outlive the call
				hold()
			}
		}()
		release = hold
	}
	var decided *ruled // what the rules' stage took, until the call has queued
	defer func() {
		if r == nil && decided != nil { // an error or a panic: it never ran, a retry may
			s.ruleEnd(ctx, decided, nil, p)
		}
	}()
	p, keys, err := s.target(ctx, t, id)
	if err == nil {
		decided, err = s.ruleStage(ctx, t, req, args, p)
		if err != nil {
			return nil, p, nil, nil, err
		}
		if decided != nil {
			keys = append(keys, decided.keys...)
		}
	}
	if err == nil {
		lr := pagelock.Request{Keys: keys, Owner: s.holderName(ctx, t.def.Name, p), Agent: lockAgent(ctx)}
		if !req.GetBool("wait", false) && len(t.resources) > 0 {
			lr.FailIfHeld = ofChrome(p, t.resources)
		}
		if t.shares != nil {
			lr.Shared = ofChrome(p, t.shares(req))
		}
		r, err = s.locks.Reserve(ctx, lr)
		err = s.heldError(err)
	}
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return r, p, release, decided, nil
}

// target resolves the page a call acts on, when it acts on one, and the lock
// keys it needs. The page is fixed here, on arrival: a select_page that comes
// later does not move a call that already waits.
func (s *Server) target(ctx context.Context, t tool, id int) (*browser.Page, []pagelock.Key, error) {
	if t.scope == browserScope || t.scope == optionalPageScope && id == 0 {
		if s.locks.Mode() == pagelock.Global {
			return nil, []pagelock.Key{browserKey}, nil
		}
		return nil, nil, nil
	}
	var p *browser.Page
	var err error
	if id != 0 {
		p, err = s.browser.Page(id)
	} else {
		p, err = s.selectedPage(ctx) // agents.go
	}
	if err == nil {
		err = s.checkAccess(ctx, p)
	}
	if err != nil {
		return nil, nil, err
	}
	return p, append([]pagelock.Key{pagelock.PageKey(p.ID)}, ofChrome(p, t.resources)...), nil
}

// ofChrome gives keys, browser-wide resources, as those of the Chrome p is
// on (pagelock.Key.Of): in a pool each Chrome records its own trace and
// runs its own audits, so calls on different Chromes do not wait for each
// other there. p may be nil: keys are then the browser's.
func ofChrome(p *browser.Page, keys []pagelock.Key) []pagelock.Key {
	if p == nil || p.Chrome() == "" || len(keys) == 0 {
		return keys
	}
	out := make([]pagelock.Key, len(keys))
	for i, k := range keys {
		out[i] = k.Of(p.Chrome())
	}
	return out
}

// holderName is how a call is named to the calls waiting behind it, in
// "held by …", and in /locks: the tool, its page, and over HTTP its agent.
func (s *Server) holderName(ctx context.Context, tool string, p *browser.Page) string {
	name := tool
	if p != nil {
		name = fmt.Sprintf("%s on page %d", tool, p.ID)
	}
	if a, ok := s.agentOf(ctx); ok {
		name += holderMark + agentLabel(a) // forAgent redacts it for other agents
	}
	return name
}
