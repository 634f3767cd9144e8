package tools

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

// An Observer sees every tool call go by: when it has its place in the
// lock queues, when it holds its locks, and when it is answered. The live
// view (ui/) and the session records (record/) are observers. Its methods
// are called on the call's goroutine: they must return quickly (hand work
// to a goroutine of their own), and must not call tools.
type Observer interface {
	// Queued: the call is admitted and waits for its locks (Locks).
	Queued(CallInfo)
	// Started: the call holds its locks and its handler is about to run;
	// ctx is the call's, which ends when it is cancelled or its session
	// ends.
	Started(ctx context.Context, c CallInfo)
	// Ended: the call's answer, with every secret masked, while the call
	// still holds its locks: an observer may read the page as the call
	// left it (page, nil for a browser-wide tool or a call that never
	// reached its page) within ctx, the call's (it ends when the call is
	// cancelled or its session ends; bound what is done in it).
	// A call refused before it queued (bad arguments, a rule) ends
	// without Queued or Started.
	Ended(ctx context.Context, e CallEnd, page *browser.Page)
}

// CallInfo is one call as observers see it.
type CallInfo struct {
	// ID numbers the calls of this server from 1.
	ID uint64 `json:"id"`
	// Agent is who called: its identity (agents.Agent.ID: "token:…",
	// "session:…"), "" on stdio; Token its token's name.
	Agent string `json:"agent,omitempty"`
	Token string `json:"token,omitempty"`
	// Session is the MCP session, "" when the transport has none.
	Session string `json:"session,omitempty"`
	Tool    string `json:"tool"`
	// Page is the page the call acts on, 0 for none (a browser-wide tool)
	// or before it is known.
	Page int `json:"page,omitempty"`
	// Args are the arguments as the agent sent them: secrets by name.
	Args json.RawMessage `json:"args,omitempty"`
	// Locks are the locks the call waits for or holds (pagelock keys).
	Locks []string `json:"locks,omitempty"`
	// Arrived is when the call came; Started when it held its locks (zero
	// before); Waited how long it waited for them.
	Arrived time.Time     `json:"arrived"`
	Started time.Time     `json:"started,omitzero"`
	Waited  time.Duration `json:"waitedNs,omitempty"`
}

// CallEnd is a call's end: its outcome ("ok", "error", "cancelled"), how
// long it took from arrival, and its answer (secrets masked).
type CallEnd struct {
	CallInfo
	Outcome string              `json:"outcome"`
	Took    time.Duration       `json:"tookNs"`
	Result  *mcp.CallToolResult `json:"-"`
	// Mask hides every secret in a text: an observer that reads the page
	// (a snapshot, the page's URL) must pass what it keeps through it.
	Mask func(string) string `json:"-"`
}

// observed is what one call tells its observers, built as it goes.
type observed struct {
	s    *Server
	info CallInfo
	// ended is set once Ended was called, so that guard's catch-all end
	// does not call it twice.
	ended bool
}

// callIDs numbers the calls observers see.
var callIDs atomic.Uint64

// observe starts the observation of a call; nil without observers.
func (s *Server) observe(ctx context.Context, tool string, args json.RawMessage) *observed {
	if len(s.observers) == 0 {
		return nil
	}
	o := &observed{s: s, info: CallInfo{ID: callIDs.Add(1), Tool: tool, Args: args, Arrived: time.Now()}}
	if a, ok := agents.From(ctx); ok {
		o.info.Agent, o.info.Token, o.info.Session = a.ID, a.Token, a.Session
	}
	return o
}

// queued tells the observers the call waits for locks on page (nil: none).
func (o *observed) queued(page *browser.Page, locks []string) {
	if o == nil {
		return
	}
	if page != nil {
		o.info.Page = page.ID
	}
	o.info.Locks = locks
	o.each("Queued", func(ob Observer) { ob.Queued(o.info) })
}

// started tells the observers the call holds its locks.
func (o *observed) started(ctx context.Context, waited time.Duration) {
	if o == nil {
		return
	}
	o.info.Started, o.info.Waited = time.Now(), waited
	o.each("Started", func(ob Observer) { ob.Started(ctx, o.info) })
}

// end tells the observers the call's answer, masked by the caller.
func (o *observed) end(ctx context.Context, res *mcp.CallToolResult, page *browser.Page) {
	if o == nil || o.ended {
		return
	}
	o.ended = true
	e := CallEnd{CallInfo: o.info, Outcome: "ok", Took: time.Since(o.info.Arrived), Result: res,
		Mask: o.s.masker.Mask}
	switch {
	case ctx.Err() != nil:
		e.Outcome = "cancelled"
	case res == nil || res.IsError:
		e.Outcome = "error"
	}
	if page != nil && e.Page == 0 {
		e.Page = page.ID
	}
	o.each("Ended", func(ob Observer) { ob.Ended(ctx, e, page) })
}

// each tells every observer, one after another. An observer that panics
// is logged and passed over: the call goes on, and the reservation its
// locks have between Queued and Wait is never left behind.
func (o *observed) each(what string, tell func(Observer)) {
	for _, ob := range o.s.observers {
		func() {
			defer func() {
				if r := recover(); r != nil {
					o.s.log.Error("an observer panicked", "event", what, "tool", o.info.Tool, "panic", r, "stack", string(debug.Stack()))
				}
			}()
			tell(ob)
		}()
	}
}

// keyNames are keys as the lock table names them.
func keyNames(keys []pagelock.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}
