package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/pagelock"
)

// Long calls as MCP tasks (revision 2025-11-25). The tools of taskTools
// accept task augmentation: a tools/call with params.task is answered at
// once with the task, and its work goes on as a plain call's would, in the
// same Guard (locks, --tool-timeout, fencing); the client polls tasks/get,
// reads the answer with tasks/result (the text a plain call would have
// answered) and may tasks/cancel.
//
// mcp-go keeps the tasks (ids, statuses, results, TTLs) and runs the
// handler; pagemux adds, through mcp-go's hooks, what mcp-go does not do:
//
//   - The work is detached from its request. mcp-go runs it on the
//     request's context, which ends as soon as the create result is sent,
//     and tasks/cancel or the TTL only cancel a context already ended. The
//     Guard runs a task's call on a context that keeps the request's values
//     (agent, session; not its ticket: see taskContext) but not its
//     cancellation, and that pagemux ends itself on tasks/cancel, at the
//     TTL, and when the session ends.
//   - Tasks are their agent's. mcp-go keeps a task from other sessions,
//     but not from a caller without one (a stateless request), and it tells
//     every session of every task's status. pagemux answers a task id of
//     another agent or session exactly as an unknown id.
//   - An agent runs at most Options.MaxTasks tasks at once, and keeps at
//     most keptPerRunning times as many until their TTLs.
//   - Every task has a TTL: a client that gives none gets DefaultTaskTTL,
//     and none gets more than MaxTaskTTL, so that results do not pile up.
//
// The stateless revision (2026-07-28) has no tasks/result, so there a call
// with params.task runs as a plain call, and answers on its own stream.
//
// How a task is followed from hook to hook: the hook before the call
// swaps in a *mcp.TaskParams of its own, which mcp-go hands on to the
// handler, and keys the run by the request's context, which mcp-go hands on
// to the hook that names the task. No other value reaches both.

// taskTools are the tools whose calls may run as tasks: those that can run
// for minutes (see ownBounds).
var taskTools = []string{"lighthouse_audit", "performance_start_trace", "performance_stop_trace", "take_heapsnapshot", "screencast_stop", "har_save", "pdf_save"}

// The TTLs of tasks: what a client that asks none gets, and the most any
// gets. A result is kept until its TTL passes, read or not.
const (
	DefaultTaskTTL = 10 * time.Minute
	MaxTaskTTL     = time.Hour
)

// DefaultMaxTasks bounds the tasks one agent runs at once unless
// Options.MaxTasks says otherwise.
const DefaultMaxTasks = 4

// keptPerRunning bounds the tasks one agent has until their TTLs pass,
// ended or not, as a multiple of the tasks it may run: each is kept by
// mcp-go, with a goroutine of its own, until its TTL, and a client can
// make tasks that end at once faster than any TTL passes.
const keptPerRunning = 16

// Why a task's work was stopped, as its call's context's cause.
var (
	errTaskCancelled = errors.New("the task was cancelled (tasks/cancel)")
	errTaskExpired   = errors.New("the task's TTL passed before its work ended")
	errTaskSession   = errors.New("the task's session ended")
)

// taskRun is one task-augmented call, from the hook before the call to the
// end of its work.
type taskRun struct {
	owner   taskOwner
	limiter string // whose bound it counts against (lockAgent)
	params  *mcp.TaskParams
	ttl     time.Duration
	over    bool // it came past its agent's bound: its work refuses to start

	// Set when mcp-go made the task, under taskTable.mu.
	id string

	mu     sync.Mutex
	stop   error                   // why it was stopped; nil while it may run
	cancel context.CancelCauseFunc // its work's context, once the work began
	ended  bool
}

// taskOwner is who may see a task: the agent and the MCP session that made
// it ("" for either when the call had none).
type taskOwner struct{ agent, session string }

// ownerOf is who the request of ctx is, as taskOwner.
func ownerOf(ctx context.Context) taskOwner {
	var o taskOwner
	if a, ok := agents.From(ctx); ok {
		o.agent = a.ID
	}
	if sess := server.ClientSessionFromContext(ctx); sess != nil {
		o.session = sess.SessionID()
	}
	return o
}

// taskTable is the server's task runs. Its zero value is ready for use
// once max is set.
type taskTable struct {
	max int // runs per agent at once; set by New

	mu       sync.Mutex
	byCtx    map[context.Context]*taskRun // made, before mcp-go names the task
	byParams map[*mcp.TaskParams]*taskRun // until the handler claims it
	byID     map[string]*taskRun          // named, until their tombstone goes
	running  map[string]int               // by limiter: runs not ended
	kept     map[string]int               // by limiter: tasks made whose TTL has not passed
}

// taskTombstone is how long after its TTL a task's owner is remembered,
// as long as mcp-go says "task has expired" for it rather than "task not
// found": to anyone else, it is not found either way.
const taskTombstone = 5*time.Minute + time.Second

// taskOptions are the server options of tasks.
func (s *Server) taskOptions() []server.ServerOption {
	th := &server.TaskHooks{}
	th.AddOnTaskCreated(s.taskCreated)
	th.AddOnTaskCancelled(func(ctx context.Context, m server.TaskMetrics) {
		if run := s.tasks.named(m.TaskID); run != nil && run.halt(errTaskCancelled) {
			s.log.Info("task cancelled", "task", m.TaskID, "tool", m.ToolName)
		}
	})
	return []server.ServerOption{
		server.WithTaskCapabilities(true, true, true),
		server.WithTaskHooks(th),
	}
}

// addTaskHooks puts the request hooks of tasks on h.
func (s *Server) addTaskHooks(h *server.Hooks) {
	h.AddOnRequestInitialization(s.refuseOverTasks)
	h.AddBeforeCallTool(s.beforeTaskCall)
	h.AddAfterCallTool(func(ctx context.Context, _ any, _ *mcp.CallToolRequest, _ any) { s.tasks.unnamed(ctx) })
	h.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ error) {
		if method == mcp.MethodToolsCall {
			s.tasks.unnamed(ctx)
		}
	})
	// Another agent's task is no task: the hooks before each task method
	// give its id as one that is not, and mcp-go answers as it does for
	// any unknown id.
	h.AddBeforeGetTask(func(ctx context.Context, _ any, r *mcp.GetTaskRequest) { s.tasks.vet(ctx, &r.Params.TaskId) })
	h.AddBeforeTaskResult(func(ctx context.Context, _ any, r *mcp.TaskResultRequest) { s.tasks.vet(ctx, &r.Params.TaskId) })
	h.AddBeforeCancelTask(func(ctx context.Context, _ any, r *mcp.CancelTaskRequest) { s.tasks.vet(ctx, &r.Params.TaskId) })
	h.AddAfterListTasks(func(ctx context.Context, _ any, _ *mcp.ListTasksRequest, res *mcp.ListTasksResult) {
		res.Tasks = slices.DeleteFunc(res.Tasks, func(t mcp.Task) bool { return !s.tasks.mine(ctx, t.TaskId) })
	})
	h.AddOnUnregisterSession(func(ctx context.Context, sess server.ClientSession) { s.tasks.sessionEnded(sess.SessionID()) })
	// The stateless revision has no tasks/result: its clients are told of
	// no tasks (mcp-go would offer them), and run every call as a plain one.
	h.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Capabilities.Tasks = nil
	})
	h.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if server.IsModernRequest(ctx) {
			res.Tools = slices.Clone(res.Tools)
			for i := range res.Tools {
				res.Tools[i].Execution = nil
			}
		}
	})
}

// refuseOverTasks fails a task-augmented call at once, with a JSON-RPC
// error that says why, when its agent runs as many tasks as it may. The
// count is checked again when the call is counted (beforeTaskCall), which
// a burst of calls may reach together: one that comes in over the bound
// there is refused by its work, in its task's result.
func (s *Server) refuseOverTasks(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"task"`)) {
		return nil // every request passes here: most need no decoding
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string          `json:"name"`
			Task json.RawMessage `json:"task"`
			Meta map[string]any  `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Method != string(mcp.MethodToolsCall) || len(m.Params.Task) == 0 || string(m.Params.Task) == "null" {
		return nil
	}
	if v, _ := m.Params.Meta[mcp.MetaKeyProtocolVersion].(string); mcp.IsModernProtocol(v) || !slices.Contains(taskTools, m.Params.Name) {
		return nil // it runs as a plain call
	}
	return s.tasks.full(lockAgent(ctx))
}

// full is the error of a new task of limiter's when it runs as many as it
// may, else nil.
func (t *taskTable) full(limiter string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.max * keptPerRunning; t.kept[limiter] >= n {
		return fmt.Errorf("too many tasks: you have %d whose TTL has not passed, the most one agent may keep (%d × --max-tasks); read their results, and give the next ones a shorter ttl, or call without params.task until some expire", t.kept[limiter], keptPerRunning)
	}
	if t.running[limiter] < t.max {
		return nil
	}
	return fmt.Errorf("too many tasks: you run as many as one agent may at once (%d, --max-tasks); wait for one to end (tasks/get), cancel one (tasks/cancel), or make this call without params.task", t.max)
}

// beforeTaskCall makes the run of a task-augmented call of a task tool:
// it counts it against its agent's bound, gives it its TTL, and swaps in
// the TaskParams that the handler will find it by. A call with params.task
// of the stateless revision, or of another tool, becomes a plain call.
func (s *Server) beforeTaskCall(ctx context.Context, _ any, req *mcp.CallToolRequest) {
	if req.Params.Task == nil {
		return
	}
	if server.IsModernRequest(ctx) || !slices.Contains(taskTools, req.Params.Name) {
		req.Params.Task = nil
		return
	}
	ttl := DefaultTaskTTL
	if p := req.Params.Task.TTL; p != nil && *p > 0 {
		ttl = time.Duration(min(*p, MaxTaskTTL.Milliseconds())) * time.Millisecond // no overflow
	}
	ms := ttl.Milliseconds()
	run := &taskRun{owner: ownerOf(ctx), limiter: lockAgent(ctx), params: &mcp.TaskParams{TTL: &ms}, ttl: ttl}
	req.Params.Task = run.params
	s.tasks.add(ctx, run)
}

// add counts run and keys it by its request's context and its params.
func (t *taskTable) add(ctx context.Context, run *taskRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byCtx == nil {
		t.byCtx, t.byParams, t.byID, t.running, t.kept = map[context.Context]*taskRun{}, map[*mcp.TaskParams]*taskRun{}, map[string]*taskRun{}, map[string]int{}, map[string]int{}
	}
	run.over = t.running[run.limiter] >= t.max || t.kept[run.limiter] >= t.max*keptPerRunning
	if !run.over {
		t.running[run.limiter]++
	}
	t.byCtx[ctx], t.byParams[run.params] = run, run
}

// taskCreated names the run of the call whose task mcp-go just made, and
// ends its work when its TTL passes.
func (s *Server) taskCreated(ctx context.Context, m server.TaskMetrics) {
	t := &s.tasks
	t.mu.Lock()
	run := t.byCtx[ctx]
	delete(t.byCtx, ctx)
	if run != nil {
		run.id = m.TaskID
		t.byID[m.TaskID] = run
		t.kept[run.limiter]++
	}
	t.mu.Unlock()
	if run == nil {
		s.log.Warn("a task of a call pagemux did not see", "task", m.TaskID, "tool", m.ToolName)
		return
	}
	time.AfterFunc(run.ttl, func() {
		if run.halt(errTaskExpired) {
			s.log.Info("task stopped: its TTL passed", "task", run.id, "tool", m.ToolName, "ttl", run.ttl)
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.kept[run.limiter]--; t.kept[run.limiter] <= 0 {
			delete(t.kept, run.limiter)
		}
	})
	time.AfterFunc(run.ttl+taskTombstone, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.byID, run.id)
	})
	s.log.Debug("task created", "task", m.TaskID, "tool", m.ToolName, "ttl", run.ttl)
}

// unnamed drops the run of a call that ended without a task (an error
// before it was made, or a plain call after all), and its count.
func (t *taskTable) unnamed(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	run := t.byCtx[ctx]
	if run == nil {
		return
	}
	delete(t.byCtx, ctx)
	delete(t.byParams, run.params)
	t.endLocked(run)
}

// claim returns the run of a task's call, nil for a plain call. Only the
// handler claims, once.
func (t *taskTable) claim(req mcp.CallToolRequest) *taskRun {
	if req.Params.Task == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	run := t.byParams[req.Params.Task]
	delete(t.byParams, req.Params.Task)
	if run != nil && run.id == "" {
		// mcp-go runs it as a plain call after all: it stays one, and the
		// hook after the call forgets it.
		t.byParams[req.Params.Task] = run
		return nil
	}
	return run
}

// named returns the run of a task id, nil if none.
func (t *taskTable) named(id string) *taskRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// mine reports whether the task id is one the request of ctx may see.
func (t *taskTable) mine(ctx context.Context, id string) bool { return t.ownedBy(id, ownerOf(ctx)) }

// ownedBy reports whether o made the task id.
func (t *taskTable) ownedBy(id string, o taskOwner) bool {
	run := t.named(id)
	return run != nil && run.owner == o
}

// SeesTask reports whether the agent of ctx (agents.From), on the MCP
// session, may see the task: whether it is the one that made it. The HTTP
// transport asks it of each task status notification (serve.HTTPOptions),
// where ctx is the stream's request, which names no MCP session.
func (s *Server) SeesTask(ctx context.Context, session, taskID string) bool {
	o := taskOwner{session: session}
	if a, ok := agents.From(ctx); ok {
		o.agent = a.ID
	}
	return s.tasks.ownedBy(taskID, o)
}

// vet turns *id into one that names no task unless the task is the
// caller's.
func (t *taskTable) vet(ctx context.Context, id *string) {
	if !t.mine(ctx, *id) {
		*id = ""
	}
}

// sessionEnded stops the work of the session's tasks: no one may read
// their results any more.
func (t *taskTable) sessionEnded(session string) {
	t.mu.Lock()
	var runs []*taskRun
	for _, run := range t.byID {
		if run.owner.session == session {
			runs = append(runs, run)
		}
	}
	t.mu.Unlock()
	for _, run := range runs {
		run.halt(errTaskSession) // its session's end is logged
	}
}

// endLocked gives back run's place under its agent's bound, once.
func (t *taskTable) endLocked(run *taskRun) {
	run.mu.Lock()
	ended := run.ended
	run.ended = true
	run.mu.Unlock()
	if ended || run.over {
		return
	}
	if t.running[run.limiter]--; t.running[run.limiter] <= 0 {
		delete(t.running, run.limiter)
	}
}

// halt stops run's work with cause, at once if it began, else as it begins.
// It reports whether the work was still to stop.
func (run *taskRun) halt(cause error) bool {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.stop != nil || run.ended {
		return false
	}
	run.stop = cause
	if run.cancel != nil {
		run.cancel(cause)
	}
	return true
}

// detach returns the context a task's work runs on: ctx's values, not its
// cancellation (mcp-go ends it when the create result is sent), ended by
// halt instead. end must be called when the work is over.
func (t *taskTable) detach(ctx context.Context, run *taskRun) (_ context.Context, end func()) {
	dctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	run.mu.Lock()
	run.cancel = cancel
	if run.stop != nil {
		cancel(run.stop)
	}
	run.mu.Unlock()
	return dctx, func() {
		cancel(nil)
		t.mu.Lock()
		defer t.mu.Unlock()
		t.endLocked(run)
	}
}

// taskRunKey keys the run of a task's work in its context.
type taskRunKey struct{}

// runningTasks says whether the call of ctx is a task's work, and how many
// tasks its agent runs now besides it.
func (s *Server) runningTasks(ctx context.Context) (task bool, others int) {
	run, ok := ctx.Value(taskRunKey{}).(*taskRun)
	if !ok {
		return false, 0
	}
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	return true, max(s.tasks.running[run.limiter]-1, 0)
}

// taskContext is the context a call runs on: ctx for a plain call; for a
// task's, ctx detached from its request (see detach), with end to call when
// the work is over. A task that came in past its agent's bound fails.
func (s *Server) taskContext(ctx context.Context, req mcp.CallToolRequest) (_ context.Context, end func(), err error) {
	run := s.tasks.claim(req)
	if run == nil {
		return ctx, func() {}, nil
	}
	if run.over {
		s.tasks.mu.Lock()
		s.tasks.endLocked(run)
		s.tasks.mu.Unlock()
		return ctx, func() {}, fmt.Errorf("too many tasks: you ran as many as one agent may at once (%d, --max-tasks) when this one came; call again once one ended", s.tasks.max)
	}
	ctx, end = s.tasks.detach(ctx, run)
	ctx = context.WithValue(ctx, taskRunKey{}, run)
	// The request's ticket is its transport's, which admits it when the
	// create result is sent, as the work may just begin: the work takes no
	// turn in its client's line (it queues for its locks as it starts, and a
	// call sent after the create result may queue before it).
	ctx = pagelock.WithTicket(ctx, nil)
	s.log.Debug("task runs", "task", run.id, "tool", req.Params.Name)
	return ctx, end, nil
}

// markTasks lets the task tools be called as tasks.
func markTasks(ts []tool) []tool {
	for i := range ts {
		if slices.Contains(taskTools, ts[i].def.Name) {
			ts[i].def.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
		}
	}
	return ts
}
