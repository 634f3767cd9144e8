package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/cluster"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/rules"
	"github.com/pagemux/pagemux/snapshot"
)

// This file is the action rules' stage of a call (package rules decides):
// made in the call's turn, once its page is known and before it queues
// for its locks, so that a refused call reaches neither the locks nor
// Chrome. It takes what the decision gives: a rate's wait, the exclusive
// resources (as lock keys for the call, or as the agent's lease across
// calls), and the record of a once-only action, whose second call answers
// the first's result and does nothing.

// idempotencyKeyArg is the argument of every tool that makes a call
// once-only under a key of the caller's; "idempotencyKey" in the request's
// _meta does the same.
const idempotencyKeyArg = "idempotencyKey"

// withIdempotencyKey adds the idempotencyKey argument to every tool.
func withIdempotencyKey(ts []tool) []tool {
	prop := map[string]map[string]any{idempotencyKeyArg: {
		"type":      "string",
		"maxLength": 200,
		"description": "A key of your own that makes this call once-only: a second call with the same key (a retry after a timeout) waits for the first and returns its result, marked as a replay, " +
			"without acting again. Keys last 10 minutes. Leave it out for calls that may repeat.",
	}}
	for i := range ts {
		patchSchema(&ts[i], prop) // emulate.go
	}
	return ts
}

// ruled is what the rules' stage of a call took, for its end.
type ruled struct {
	d       rules.Decision
	call    *rules.Call
	agent   string // agents' identity, for leases; "" on stdio
	once    *rules.Record
	shared  *cluster.OnceRecord // with --etcd: the record in etcd
	onceTTL time.Duration
	keys    []pagelock.Key // exclusive resources held for the call
	started bool           // the handler ran: a once-only action may have happened
	waited  time.Duration
}

// holder is who keeps the call's leases: its agent's identity, or on
// stdio (no agents) the name the rules know the client by.
func (rc *ruled) holder() string {
	if rc.agent != "" {
		return rc.agent
	}
	return rc.call.Agent
}

// replay is the stage's answer to the second call of a once-only action:
// the first's result, from this process (rec) or from etcd (shared).
type replay struct {
	rec    *rules.Record
	shared *cluster.OnceRecord
	key    string
}

func (r *replay) Error() string { return "replayed " + r.key }

// ruleError is a call the rules refused.
type ruleError struct {
	d   rules.Decision
	set string
}

func (e *ruleError) Error() string {
	what := "refused"
	if e.d.Outcome == rules.RateLimited {
		what = "rate-limited"
	}
	return fmt.Sprintf("%s by the action rules: %s (%s in %s). Ask the operator if you need more", what, e.d.Reason, e.d.Rule, e.set)
}

// ruleStage decides the call by the rules in force and takes what the
// decision gives. It returns nil when the server has no rules. A refused
// call fails with a *ruleError; the second call of a once-only action
// fails with a *replay once the first ended, whose result serveCall
// answers instead.
func (s *Server) ruleStage(ctx context.Context, t tool, req mcp.CallToolRequest, args []byte, p *browser.Page) (*ruled, error) {
	var set *rules.Set
	if s.rules != nil {
		set = s.rules.Set() // one set for the facts and the decision
	}
	if set == nil {
		return s.keyedOnce(ctx, req, args)
	}
	c := s.ruleCall(ctx, set, t, req, args, p)
	d := s.rules.DecideBy(set, c)
	rc := &ruled{d: d, call: c}
	if a, ok := s.agentOf(ctx); ok {
		rc.agent = a.ID
	}
	if d.Outcome != rules.Allowed {
		s.logDecision(rc, d.Outcome, p)
		return nil, &ruleError{d, set.Name}
	}
	start := time.Now()
	if d.Delay > 0 { // the rate's token comes within its wait
		timer := time.NewTimer(d.Delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
	for _, r := range d.Resources {
		if r.Lease == 0 {
			rc.keys = append(rc.keys, pagelock.Key(r.Key))
			continue
		}
		if err := s.leases.take(ctx, r, rc, s.locks.Timeout()); err != nil {
			s.logDecision(rc, rules.Refused, p)
			return nil, err
		}
	}
	if d.Once != nil {
		rp, err := s.beginOnce(ctx, rc)
		if err != nil {
			return nil, err
		}
		if rp != nil {
			rc.waited = time.Since(start)
			s.logDecision(rc, rules.Replayed, p)
			return nil, rp
		}
	}
	rc.waited = time.Since(start)
	outcome := rules.Allowed
	if rc.waited > time.Millisecond {
		outcome = rules.Waited
	}
	s.logDecision(rc, outcome, p)
	return rc, nil
}

// keyedOnce is the rules' stage without rules: a call with an
// idempotencyKey is once-only under it, as the rules would make it
// (rules.Engine.Decide), and any other call passes.
func (s *Server) keyedOnce(ctx context.Context, req mcp.CallToolRequest, args []byte) (*ruled, error) {
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	key := idempotencyKeyOf(req, a)
	if key == "" {
		return nil, nil
	}
	c := &rules.Call{Agent: s.ruleAgent(ctx), IdempotencyKey: key}
	rc := &ruled{call: c, d: rules.Decision{Outcome: rules.Allowed,
		Once: &rules.OnceKey{Key: "key:" + c.Agent + ":" + key, Rule: idempotencyKeyArg, TTL: rules.DefaultOnceTTL}}}
	rp, err := s.beginOnce(ctx, rc)
	if err != nil {
		return nil, err
	}
	if rp != nil {
		return nil, rp
	}
	return rc, nil
}

// idempotencyKeyOf is the key a call gave as its idempotencyKey argument,
// else in its request's _meta; "" for none.
func idempotencyKeyOf(req mcp.CallToolRequest, args map[string]any) string {
	if k, _ := args[idempotencyKeyArg].(string); k != "" {
		return k
	}
	if m := req.Params.Meta; m != nil {
		k, _ := m.AdditionalFields[idempotencyKeyArg].(string)
		return k
	}
	return ""
}

// beginOnce begins the call's once-only action: in etcd with --etcd, else
// in this process. The first call of its key gets its record in rc and a
// nil replay; a later one waits for the first and gets its replay.
func (s *Server) beginOnce(ctx context.Context, rc *ruled) (*replay, error) {
	o := rc.d.Once
	if s.cluster != nil {
		rec, first, err := s.cluster.Locks.OnceBegin(ctx, o.Key, rc.call.Agent)
		if err != nil || !first {
			return &replay{shared: rec, key: o.Key}, err
		}
		rc.shared, rc.onceTTL = rec, o.TTL
		return nil, nil
	}
	rec, first, err := s.once.Begin(ctx, o.Key, rc.call.Agent, o.TTL)
	if err != nil || !first {
		return &replay{rec: rec, key: o.Key}, err
	}
	rc.once = rec
	return nil, nil
}

// ruleHolds is the holds' limits of the rules in force (the seam
// Server.holdLimits): 0 where they set none.
func (s *Server) ruleHolds(_ context.Context, kind string) time.Duration {
	set := s.rules.Set()
	if set == nil {
		return 0
	}
	switch kind {
	case holdTrace:
		return time.Duration(set.Holds.Trace)
	case holdScreencast:
		return time.Duration(set.Holds.Screencast)
	}
	return 0
}

// ruleCall gathers what the rules decide a call by.
func (s *Server) ruleCall(ctx context.Context, set *rules.Set, t tool, req mcp.CallToolRequest, args []byte, p *browser.Page) *rules.Call {
	c := &rules.Call{Agent: s.ruleAgent(ctx), Tool: t.def.Name}
	c.Task, c.Tasks = s.runningTasks(ctx)
	_ = json.Unmarshal(args, &c.Args)
	c.IdempotencyKey = idempotencyKeyOf(req, c.Args)
	switch t.def.Name {
	case "new_page":
		c.URL, _ = c.Args["url"].(string)
		c.Navigates, c.Opens = c.URL != "", true
		c.Pages = s.agentPageCount(ctx)
	case "navigate_page":
		if u, _ := c.Args["url"].(string); u != "" {
			c.URL, c.Navigates = u, true
		}
	}
	if p == nil {
		return c
	}
	c.Page, c.Document = p.ID, p.UIDs.Document()
	if c.URL == "" {
		c.URL = p.URL()
	}
	names, inSeen := set.Needs(c.Tool)
	var seen seenSnapshot
	if inSeen {
		s.seen.mu.Lock()
		seen = s.seen.m[seenKey{s.viewer(ctx), p.ID}]
		s.seen.mu.Unlock()
	}
	for _, uid := range callUIDs(c.Args) {
		// A compact uid (snapshot/compact.go) is matched as the default
		// spelling of the same uid, which rules and snapshot texts use.
		uid = p.UIDs.Canonical(uid)
		el := rules.Element{UID: uid}
		if names {
			el.Role, el.Name, _ = p.UIDs.Element(uid)
		}
		if inSeen && seen.document == c.Document {
			_, el.InLastSnapshot = snapshot.UIDLine(seen.text, uid)
		}
		c.Elements = append(c.Elements, el)
	}
	return c
}

// callUIDs are the uids a call's arguments name.
func callUIDs(args map[string]any) []string {
	var uids []string
	for _, k := range []string{"uid", "from_uid", "to_uid"} {
		if u, _ := args[k].(string); u != "" {
			uids = append(uids, u)
		}
	}
	if els, ok := args["elements"].([]any); ok {
		for _, e := range els {
			if m, ok := e.(map[string]any); ok {
				if u, _ := m["uid"].(string); u != "" {
					uids = append(uids, u)
				}
			}
		}
	}
	return uids
}

// ruleAgent is the name rules know a caller by: its token's name over
// HTTP, else the agent name it gave, else "anonymous"; on stdio its MCP
// client's name.
func (s *Server) ruleAgent(ctx context.Context) string {
	if a, ok := agents.From(ctx); ok {
		if a.Token != "" {
			return a.Token
		}
		if name, ok := strings.CutPrefix(a.ID, "agent:"); ok {
			return name
		}
		return agents.Anonymous
	}
	if sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		if n := sess.GetClientInfo().Name; n != "" {
			return n
		}
	}
	return agents.Anonymous
}

// agentPageCount is how many pages the calling agent has open: its own
// with agents, every page without.
func (s *Server) agentPageCount(ctx context.Context) int {
	if a, ok := s.agentOf(ctx); ok {
		return len(s.agents.Pages(a))
	}
	return len(s.browser.Pages())
}

// ruleEnd ends the rules' part of a call with its result: a once-only
// action's record keeps the result for the calls that repeat it, unless
// the call failed before it could act; the agent's leases are kept fresh,
// and given up where its page left what they name.
func (s *Server) ruleEnd(ctx context.Context, rc *ruled, res *mcp.CallToolResult, p *browser.Page) {
	if rc == nil {
		return
	}
	acted := res != nil && (!res.IsError || rc.started && ctx.Err() != nil)
	if rc.once != nil {
		s.once.Finish(rc.once, keptAnswer(res, maxKeptAnswer), acted)
	}
	if rc.shared != nil {
		s.finishShared(ctx, rc.shared, res, acted, rc.onceTTL)
	}
	if rc.agent != "" || len(rc.d.Resources) > 0 {
		s.leases.after(s, rc, p)
	}
}

// maxKeptAnswer bounds the answer a once-only record keeps in memory.
const maxKeptAnswer = 256 << 10

// keptAnswer is res as a once-only record keeps it: whole when its text
// and images are within limit bytes, else its text alone, cut to it.
func keptAnswer(res *mcp.CallToolResult, limit int) *mcp.CallToolResult {
	if res == nil {
		return nil
	}
	size := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			size += len(c.Text)
		case mcp.ImageContent:
			size += len(c.Data)
		default:
			size += limit // other kinds are not kept
		}
	}
	if size <= limit {
		return res
	}
	text := capText(answerText(res), limit) + "\n(The first answer's images are not kept for replays.)"
	return &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{mcp.NewTextContent(text)}}
}

// finishShared ends a once-only record in etcd with the call's answer (its
// text alone when the whole is past cluster.MaxOnceAnswer).
func (s *Server) finishShared(ctx context.Context, rec *cluster.OnceRecord, res *mcp.CallToolResult, acted bool, ttl time.Duration) {
	var answer json.RawMessage
	if res != nil {
		answer, _ = json.Marshal(keptAnswer(res, cluster.MaxOnceAnswer/2))
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.cluster.Locks.OnceFinish(fctx, rec, answer, acted, ttl); err != nil {
		s.log.Warn("a once-only record in etcd was not ended; it goes with this process's lease", "error", err)
	}
}

// answerText is the text of a result.
func answerText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// replayed is the answer of a once-only action's second call: the first
// call's result, said to be a replay.
func (s *Server) replayed(r *replay) *mcp.CallToolResult {
	var first *mcp.CallToolResult
	agent, at := "", time.Time{}
	if r.rec != nil {
		first, _ = r.rec.Answer.(*mcp.CallToolResult)
		agent, at = r.rec.Agent, r.rec.At
	} else {
		agent, at = r.shared.Agent, r.shared.At
		if len(r.shared.Answer) > 0 {
			first, _ = mcp.ParseCallToolResult(&r.shared.Answer)
		}
	}
	note := fmt.Sprintf("Replayed: this action already ran (once-only key %q, by %s at %s UTC); this call did nothing. The first call's answer follows.",
		r.key, agent, at.UTC().Format(time.TimeOnly))
	if first == nil {
		return mcp.NewToolResultError(note + "\n(The first call ended without an answer; take a snapshot to see the page's state.)")
	}
	out := &mcp.CallToolResult{IsError: first.IsError}
	out.Content = append([]mcp.Content{mcp.NewTextContent(note)}, first.Content...)
	return out
}

// logDecision writes the decision's one record, and counts it.
func (s *Server) logDecision(rc *ruled, outcome rules.Outcome, p *browser.Page) {
	d := rc.d
	attrs := []any{"agent", rc.call.Agent, "tool", rc.call.Tool, "outcome", string(outcome), "cost_us", d.Cost.Microseconds()}
	if p != nil {
		attrs = append(attrs, "page", p.ID)
	}
	if d.Rule != "" {
		attrs = append(attrs, "rule", d.Rule, "reason", d.Reason)
	}
	if len(d.Applied) > 0 {
		attrs = append(attrs, "rules", d.Applied)
	}
	if len(d.Resources) > 0 {
		keys := make([]string, len(d.Resources))
		for i, r := range d.Resources {
			keys[i] = r.Key
		}
		attrs = append(attrs, "resources", keys)
	}
	if d.Once != nil {
		attrs = append(attrs, "once", d.Once.Key)
	}
	if rc.waited > 0 {
		attrs = append(attrs, "waited_ms", rc.waited.Milliseconds())
	}
	s.log.Info("rule decision", attrs...)
	if s.onDecision != nil {
		rule := d.Rule
		if rule == "" && len(d.Applied) > 0 {
			rule = d.Applied[len(d.Applied)-1]
		}
		s.onDecision(rule, string(outcome), d.Cost)
	}
}

// leaseTable holds the exclusive resources agents keep across their calls
// (rules.Resource.Lease): one agent each, handed to the next waiter in the
// order they came when it ends.
type leaseTable struct {
	mu sync.Mutex
	m  map[string]*ruleLease
	// shared, with --etcd, keeps the leases in etcd, one agent's across
	// every replica (cluster.TakeRuleLease); m then mirrors this process's
	// agents' leases, for their renewal and release.
	shared *cluster.Locks
	// sharedWaits counts the calls in etcd's part of a take.
	sharedWaits atomic.Int64
}

// ruleLease is one resource an agent keeps.
type ruleLease struct {
	key, rule, agent string
	page             int
	idle             time.Duration
	gen              int // counts holders and touches: a stale timer does nothing
	timer            *time.Timer
	waiters          []*leaseWaiter
	held             *cluster.RuleLease // with --etcd: the lease in etcd
}

type leaseWaiter struct {
	agent string
	page  int
	idle  time.Duration
	got   chan struct{}
}

// take gives the call's agent the lease of r, waiting in line for
// another agent's to end, at most wait (or r.Timeout; neither: until ctx
// ends, as a lock's wait without --lock-timeout).
func (l *leaseTable) take(ctx context.Context, r rules.Resource, rc *ruled, wait time.Duration) error {
	if r.Timeout > 0 {
		wait = r.Timeout
	}
	agent := rc.holder()
	if l.shared != nil {
		return l.takeShared(ctx, r, rc, agent, wait)
	}
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*ruleLease{}
	}
	ls := l.m[r.Key]
	switch {
	case ls == nil:
		ls = &ruleLease{key: r.Key, rule: r.Rule, agent: agent, page: rc.call.Page, idle: r.Lease}
		l.m[r.Key] = ls
		l.armLocked(ls)
		l.mu.Unlock()
		return nil
	case ls.agent == agent:
		ls.page = rc.call.Page
		l.armLocked(ls)
		l.mu.Unlock()
		return nil
	}
	w := &leaseWaiter{agent: agent, page: rc.call.Page, idle: r.Lease, got: make(chan struct{})}
	ls.waiters = append(ls.waiters, w)
	holder := ls.agent
	l.mu.Unlock()
	wctx, cancel := waitContext(ctx, wait)
	defer cancel()
	select {
	case <-w.got:
		return nil
	case <-wctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w.got:
		return nil // given it as it gave up: it is the agent's now
	default:
	}
	if cur := l.m[r.Key]; cur != nil {
		for i, x := range cur.waiters {
			if x == w {
				cur.waiters = append(cur.waiters[:i], cur.waiters[i+1:]...)
				break
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return leaseBusy(r, holder, wait)
}

// leaseBusy is the refusal of a call that waited wait for r, which
// holder keeps as a lease.
func leaseBusy(r rules.Resource, holder string, wait time.Duration) error {
	return &ruleError{rules.Decision{Outcome: rules.Refused, Rule: r.Rule,
		Reason: fmt.Sprintf("%s is held by agent %s, who keeps it until it leaves or is idle %v; waited %v for it. Try again later", r.Key, holder, r.Lease, wait)}, "the rules"}
}

// waitContext bounds ctx by wait, when there is one.
func waitContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	if wait > 0 {
		return context.WithTimeout(ctx, wait)
	}
	return context.WithCancel(ctx)
}

// takeShared is take with --etcd: the lease is etcd's, this process keeps
// a mirror of it.
func (l *leaseTable) takeShared(ctx context.Context, r rules.Resource, rc *ruled, agent string, wait time.Duration) error {
	wctx, cancel := waitContext(ctx, wait)
	defer cancel()
	l.sharedWaits.Add(1)
	held, holder, err := l.shared.TakeRuleLease(wctx, r.Key, agent, r.Lease)
	l.sharedWaits.Add(-1)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return leaseBusy(r, holder, wait)
		}
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*ruleLease{}
	}
	ls := l.m[r.Key]
	if ls == nil {
		ls = &ruleLease{key: r.Key, rule: r.Rule}
		l.m[r.Key] = ls
	}
	ls.agent, ls.page, ls.idle, ls.held = agent, rc.call.Page, r.Lease, held
	l.armLocked(ls)
	return nil
}

// armLocked starts the lease's idle time afresh. l.mu is held.
func (l *leaseTable) armLocked(ls *ruleLease) {
	ls.gen++
	gen := ls.gen
	if ls.timer != nil {
		ls.timer.Stop()
	}
	ls.timer = time.AfterFunc(ls.idle, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.m[ls.key] == ls && ls.gen == gen {
			l.endLocked(ls)
		}
	})
}

// endLocked ends the holder's lease: the next waiter gets it, or it goes.
// l.mu is held.
func (l *leaseTable) endLocked(ls *ruleLease) {
	if ls.held != nil {
		// etcd's lease idles out by itself; a release ends it at once.
		held := ls.held
		ls.timer.Stop()
		delete(l.m, ls.key)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = held.Release(ctx, l.shared)
		}()
		return
	}
	if len(ls.waiters) == 0 {
		ls.timer.Stop()
		delete(l.m, ls.key)
		return
	}
	w := ls.waiters[0]
	ls.waiters = ls.waiters[1:]
	ls.agent, ls.page, ls.idle = w.agent, w.page, w.idle
	l.armLocked(ls)
	close(w.got)
}

// after keeps the call's agent's leases fresh, and ends those whose page
// has left what they name: the page went to another site, or away from
// the rule's URLs.
func (l *leaseTable) after(s *Server, rc *ruled, p *browser.Page) {
	agent := rc.holder()
	set := s.rules.Set()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ls := range l.m {
		if ls.agent != agent || p == nil || ls.page != p.ID {
			continue
		}
		c := *rc.call
		c.URL, c.Navigates = "", false
		if !p.Closed() {
			c.URL = p.URL()
		}
		if key, ok := set.LeaseKey(ls.rule, &c); !ok || key != ls.key {
			l.endLocked(ls)
			continue
		}
		l.armLocked(ls)
		if held := ls.held; held != nil {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = held.Renew(ctx, l.shared)
			}()
		}
	}
}

// RuleLeasesWaiting is how many calls wait now for an exclusive resource
// another agent keeps as a lease (with --etcd, those in etcd's part of
// taking one).
func (s *Server) RuleLeasesWaiting() int { return s.leases.waiting() }

// waiting is how many calls wait for a lease now.
func (l *leaseTable) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := int(l.sharedWaits.Load())
	for _, ls := range l.m {
		n += len(ls.waiters)
	}
	return n
}

// agentLeft ends the leases of an agent that left.
func (l *leaseTable) agentLeft(agent string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ls := range l.m {
		if ls.agent == agent {
			l.endLocked(ls)
		}
	}
}

// errRules says whether err is the rules' refusal.
func errRules(err error) bool {
	var re *ruleError
	return errors.As(err, &re)
}
