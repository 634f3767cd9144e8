package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// The task tests drive real Chrome over mcp-go's client: in process here,
// over HTTP in tasks_http_test.go. A task is created by hand (the client
// has no call that returns a CreateTaskResult), then read with the client's
// tasks/get, tasks/result and tasks/cancel.

var taskSeq atomic.Int64

// rpcError is a JSON-RPC error answer, as the tests compare them.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// createTask sends a task-augmented tools/call; ttl 0 asks for none, and a
// progress token "" for no progress.
func createTask(ctx context.Context, c *client.Client, name string, args map[string]any, ttl int64, token string) (mcp.Task, error) {
	task := map[string]any{}
	if ttl > 0 {
		task["ttl"] = ttl
	}
	params := map[string]any{"name": name, "arguments": args, "task": task}
	if token != "" {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0",
		ID: mcp.NewRequestId(fmt.Sprintf("task-%d", taskSeq.Add(1))), Method: "tools/call", Params: params})
	if err != nil {
		return mcp.Task{}, err
	}
	if resp.Error != nil {
		return mcp.Task{}, &rpcError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	var r struct {
		Task *mcp.Task `json:"task"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || r.Task == nil {
		return mcp.Task{}, fmt.Errorf("tools/call with params.task answered no task: %s", resp.Result)
	}
	return *r.Task, nil
}

func mustCreate(t *testing.T, c *client.Client, name string, args map[string]any, ttl int64) mcp.Task {
	t.Helper()
	task, err := createTask(t.Context(), c, name, args, ttl, "")
	if err != nil {
		t.Fatalf("%s as a task: %v", name, err)
	}
	if task.Status != mcp.TaskStatusWorking || task.TaskId == "" {
		t.Fatalf("%s as a task: created %+v", name, task)
	}
	return task
}

// taskResult reads a task's answer, waiting for it.
func taskResult(t *testing.T, c *client.Client, id string) result {
	t.Helper()
	res, err := c.TaskResult(t.Context(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil {
		t.Fatalf("tasks/result %s: %v", id, err)
	}
	if rel, _ := res.Meta.AdditionalFields[mcp.RelatedTaskMetaKey].(map[string]any); rel["taskId"] != id {
		t.Errorf("tasks/result %s: related task %v", id, res.Meta.AdditionalFields)
	}
	text := mcptest.Text(&mcp.CallToolResult{Content: res.Content})
	return result{text: waitNotice.ReplaceAllString(text, ""), isError: res.IsError}
}

func getTask(t *testing.T, c *client.Client, id string) mcp.Task {
	t.Helper()
	res, err := c.GetTask(t.Context(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	if err != nil {
		t.Fatalf("tasks/get %s: %v", id, err)
	}
	return res.Task
}

// holdPage takes a page's lock as a call would, for the test to release.
func (e *testEnv) holdPage(t *testing.T, id int) *pagelock.Guard {
	t.Helper()
	g, err := e.srv.locks.Acquire(t.Context(), pagelock.Request{Keys: []pagelock.Key{pagelock.PageKey(id)}, Owner: "the test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Release) // idempotent: after a failure too
	return g
}

var heapSaved = regexp.MustCompile(`^Heap snapshot saved to (.+\.heapsnapshot) \([0-9.]+ [kM]?B\)\.`)

// The work of a task goes on after its request ended: a task that waits
// for its page's lock well past the create result (which ends the request
// and, in mcp-go, the context the task runs on) still takes its snapshot,
// and answers as the plain call does. Then the other orders of
// cancellation, TTL, lock and completion, and the bound on tasks.
func TestTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64}, Server: Options{MaxTasks: 2}})
	tc := sessionClient(t, e) // the tasks revision's; e.client speaks the stateless one
	id := e.openPage(t, "/form.html")
	key := pagelock.PageKey(id)
	dir := t.TempDir()

	t.Run("detached from its request", func(t *testing.T) {
		g := e.holdPage(t, id)
		path := filepath.Join(dir, "detached.heapsnapshot")
		task := mustCreate(t, tc, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": path}, 0)
		if task.TTL == nil || *task.TTL != DefaultTaskTTL.Milliseconds() {
			t.Errorf("a task without a ttl got ttl %v, want %v", task.TTL, DefaultTaskTTL.Milliseconds())
		}
		// The create result is in: mcp-go has ended the request's context.
		e.waitQueued(t, key, 1)
		if got := getTask(t, tc, task.TaskId); got.Status != mcp.TaskStatusWorking {
			t.Fatalf("a task waiting for its lock: %+v", got)
		}
		g.Release()
		r := taskResult(t, tc, task.TaskId)
		if r.isError || !heapSaved.MatchString(r.text) {
			t.Fatalf("the task's answer: %+v", r)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		if got := getTask(t, tc, task.TaskId); got.Status != mcp.TaskStatusCompleted {
			t.Errorf("after its answer: %+v", got)
		}
		// A plain call's answer has the same form.
		plain := e.ok(t, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": filepath.Join(dir, "plain.heapsnapshot")})
		if strings.Replace(heapSaved.ReplaceAllString(plain, ""), "plain", "detached", 1) != heapSaved.ReplaceAllString(r.text, "") {
			t.Errorf("a task answers\n%s\nwhere a plain call answers\n%s", r.text, plain)
		}
		// Cancelling a task that is done changes nothing.
		_, err := tc.CancelTask(t.Context(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}})
		if err == nil || !strings.Contains(err.Error(), "terminal status") {
			t.Errorf("tasks/cancel of a completed task: %v", err)
		}
		if r2 := taskResult(t, tc, task.TaskId); r2.text != r.text {
			t.Errorf("the answer changed after tasks/cancel: %q", r2.text)
		}
	})

	t.Run("har_save and pdf_save", func(t *testing.T) {
		for tool, file := range map[string]string{"har_save": "task.har", "pdf_save": "task.pdf"} {
			path := filepath.Join(dir, file)
			r := taskResult(t, tc, mustCreate(t, tc, tool, map[string]any{"pageId": id, "filename": path}, 0).TaskId)
			if r.isError || !strings.Contains(r.text, file) {
				t.Errorf("%s as a task: %+v", tool, r)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
				t.Errorf("%s as a task wrote no %s: %v", tool, path, err)
			}
		}
	})

	t.Run("cancelled while waiting for its lock", func(t *testing.T) {
		g := e.holdPage(t, id)
		path := filepath.Join(dir, "never.heapsnapshot")
		task := mustCreate(t, tc, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": path}, 0)
		e.waitQueued(t, key, 1)
		res, err := tc.CancelTask(t.Context(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}})
		if err != nil || res.Status != mcp.TaskStatusCancelled {
			t.Fatalf("tasks/cancel: %+v, %v", res, err)
		}
		e.waitQueued0(t, key) // its wait was withdrawn while the lock is still held
		g.Release()
		e.ok(t, "take_snapshot", map[string]any{"pageId": id})
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("a task cancelled before it ran wrote its file: %v", err)
		}
		if got := getTask(t, tc, task.TaskId); got.Status != mcp.TaskStatusCancelled {
			t.Errorf("after tasks/cancel: %+v", got)
		}
		e.waitTasksEnded(t)
	})

	t.Run("cancelled while running", func(t *testing.T) {
		// A reload that cannot end: the trace's start waits for the page to
		// load, holding the page's lock and Chrome's tracing.
		slow := e.openPage(t, "/form.html")
		e.call(t, "navigate_page", map[string]any{"pageId": slow, "url": testSite.URL + "/neverloads.html", "timeout": 300}) // fails: it never loads
		task := mustCreate(t, tc, "performance_start_trace", map[string]any{"pageId": slow}, 0)
		mcptest.WaitFor(t, "the trace to record", func() bool { return e.srv.perf.recording() })
		if _, err := tc.CancelTask(t.Context(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}}); err != nil {
			t.Fatal(err)
		}
		e.waitTasksEnded(t)
		mcptest.WaitFor(t, "the trace to end", func() bool { return !e.srv.perf.recording() })
		// Its locks are free: the page, and tracing for a trace of another page.
		e.ok(t, "list_console_messages", map[string]any{"pageId": slow})
		e.ok(t, "performance_start_trace", map[string]any{"pageId": id, "reload": false, "autoStop": false})
		mustContain(t, e.ok(t, "performance_stop_trace", map[string]any{"pageId": id}), "The performance trace has been stopped.")
		if got := getTask(t, tc, task.TaskId); got.Status != mcp.TaskStatusCancelled {
			t.Errorf("after tasks/cancel: %+v", got)
		}

		// The TTL passing while it runs stops it as tasks/cancel does.
		task = mustCreate(t, tc, "performance_start_trace", map[string]any{"pageId": slow}, 3000)
		recorded := false
		mcptest.WaitFor(t, "the trace to record", func() bool {
			recorded = recorded || e.srv.perf.recording()
			return recorded || !e.tasksRun()
		})
		if !recorded {
			t.Log("the TTL passed before the trace began, on a machine this slow: the end is checked all the same")
		}
		e.waitTasksEnded(t)
		mcptest.WaitFor(t, "the trace to end", func() bool { return !e.srv.perf.recording() })
		e.ok(t, "list_console_messages", map[string]any{"pageId": slow})
		if _, err := tc.GetTask(t.Context(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.TaskId}}); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Errorf("tasks/get past the TTL: %v", err)
		}
	})

	t.Run("TTL passes while waiting", func(t *testing.T) {
		g := e.holdPage(t, id)
		task := mustCreate(t, tc, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": filepath.Join(dir, "ttl.heapsnapshot")}, 300)
		if task.TTL == nil || *task.TTL != 300 {
			t.Errorf("ttl %v, want the 300 ms asked", task.TTL)
		}
		e.waitQueued(t, key, 1)
		e.waitTasksEnded(t) // stopped at its TTL, the lock still held
		e.waitQueued0(t, key)
		g.Release()
		e.ok(t, "take_snapshot", map[string]any{"pageId": id})
		// mcp-go forgets the task on a timer of its own, started as it
		// made the task, not on the one that stopped the work: wait for it.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		for {
			_, err := tc.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.TaskId}})
			if err != nil && strings.Contains(err.Error(), "expired") {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("tasks/get 30 s past the TTL: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	})

	t.Run("bound per agent", func(t *testing.T) {
		g := e.holdPage(t, id)
		var tasks []mcp.Task
		for i := range 2 {
			tasks = append(tasks, mustCreate(t, tc, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": filepath.Join(dir, fmt.Sprintf("bound%d.heapsnapshot", i))}, 0))
		}
		_, err := createTask(t.Context(), tc, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": filepath.Join(dir, "over.heapsnapshot")}, 0, "")
		if err == nil || !strings.Contains(err.Error(), "too many tasks: you run as many as one agent may at once (2, --max-tasks)") || !strings.Contains(err.Error(), "--max-tasks") {
			t.Fatalf("a third task: %v", err)
		}
		// Plain calls are not bounded.
		e.ok(t, "list_pages", nil)
		g.Release()
		for _, task := range tasks {
			if r := taskResult(t, tc, task.TaskId); r.isError {
				t.Fatal(r.text)
			}
		}
		e.waitTasksEnded(t)
		mustCreate(t, tc, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": filepath.Join(dir, "after.heapsnapshot")}, 0)
		e.waitTasksEnded(t)
	})

	t.Run("progress of a navigation", func(t *testing.T) {
		progress := e.watchProgress("navigation")
		o := must(t, <-e.callWithProgress(t.Context(), "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/slow?ms=1500"}, "navigation"))
		if o.isError {
			t.Fatal(o.text)
		}
		progress.mu.Lock()
		defer progress.mu.Unlock()
		if len(progress.messages) == 0 || !strings.HasPrefix(progress.messages[0], "navigate_page: waiting for the page to load (") {
			t.Errorf("a navigation of 1.5 s told %q", progress.messages)
		}
	})

	t.Run("progress", func(t *testing.T) {
		// A call that waits over a second for its lock hears that it waits,
		// and then that it runs; a task the same, after its create result.
		for _, asTask := range []bool{false, true} {
			token := fmt.Sprintf("progress-%v", asTask)
			on := e
			if asTask {
				on = &testEnv{client: tc} // for its notifications
			}
			progress := on.watchProgress(token)
			g := e.holdPage(t, id)
			args := map[string]any{"pageId": id, "filePath": filepath.Join(dir, token+".heapsnapshot")}
			var answer func() result
			if asTask {
				task, err := createTask(t.Context(), tc, "take_heapsnapshot", args, 0, token)
				if err != nil {
					t.Fatal(err)
				}
				answer = func() result { return taskResult(t, tc, task.TaskId) }
			} else {
				o := e.callWithProgress(t.Context(), "take_heapsnapshot", args, token)
				answer = func() result { return must(t, <-o) }
			}
			<-progress.got
			g.Release()
			if r := answer(); r.isError {
				t.Fatal(r.text)
			}
			progress.mu.Lock()
			msgs, vals := progress.messages, progress.values
			progress.mu.Unlock()
			if len(msgs) == 0 || !strings.HasPrefix(msgs[0], "take_heapsnapshot: waiting for its locks (") {
				t.Errorf("task %v: progress %q", asTask, msgs)
			}
			for i := 1; i < len(vals); i++ {
				if vals[i] <= vals[i-1] {
					t.Errorf("task %v: progress does not grow: %v", asTask, vals)
				}
			}
		}
	})
}

// sessionClient connects another in-process client to e's server, of
// revision 2025-11-25: the last with tasks/result, which 2026-07-28 removed.
func sessionClient(t *testing.T, e *testEnv) *client.Client {
	t.Helper()
	c := client.NewClient(transport.NewInProcessTransport(e.srv.MCP()))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo:      mcp.Implementation{Name: "pagemux-test", Version: "1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The one Lighthouse audit of the task tests: as a task, it answers the
// create at once, tells its steps to the task's progress token, and its
// result is the plain call's report.
func TestTaskLighthouse(t *testing.T) {
	needLighthouse(t)
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	tc := sessionClient(t, e)
	id := e.openPage(t, "/lighthouse.html")
	progress := (&testEnv{client: tc}).watchProgress("lh-task")
	start := time.Now()
	task, err := createTask(t.Context(), tc, "lighthouse_audit", audit(id, "outputDirPath", filepath.Join(t.TempDir(), "reports")), 0, "lh-task")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	r := taskResult(t, tc, task.TaskId)
	t.Logf("lighthouse_audit as a task: created in %v, answered in %v", created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if r.isError {
		t.Fatal(r.text)
	}
	mustContain(t, r.text, "## Lighthouse audit results", "Mode: navigation", "### Category scores", "### Reports")
	if !accessibilityScore.MatchString(r.text) {
		t.Errorf("no accessibility score in:\n%s", r.text)
	}
	progress.mu.Lock()
	defer progress.mu.Unlock()
	if !slices.Contains(progress.messages, "Starting Lighthouse") || len(progress.messages) < 3 {
		t.Errorf("the task's progress: %q", progress.messages)
	}
}

// waitTasksEnded waits until no task of the server runs, nor waits.
func (e *testEnv) waitTasksEnded(t *testing.T) {
	t.Helper()
	mcptest.WaitFor(t, "the tasks to end", func() bool { return !e.tasksRun() })
}

// tasksRun reports whether a task of the server runs or waits.
func (e *testEnv) tasksRun() bool {
	e.srv.tasks.mu.Lock()
	defer e.srv.tasks.mu.Unlock()
	return len(e.srv.tasks.running) > 0
}

// Over stdio a task runs as over any transport, and ends with its
// connection: once stdin closes, no one can read its result, so a task
// still waiting for its lock stops waiting.
func TestTasksStdio(t *testing.T) {
	t.Parallel()
	log := testLogger()
	b := browser.New(browser.Config{Logger: log})
	// A lock wait longer than waitFor's: only the end of the session ends it.
	srv := New(b, pagelock.New(pagelock.Options{Mode: pagelock.PerPage, Timeout: 10 * time.Minute}), Options{Log: log})
	clientRead, serverWrite := io.Pipe()
	serverRead, clientWrite := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- serve.ServeStdio(t.Context(), srv.MCP(), serverRead, serverWrite, serve.StdioOptions{Log: log})
		serverWrite.Close()
	}()
	c := client.NewClient(transport.NewIO(clientRead, clientWrite, io.NopCloser(strings.NewReader(""))))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125, ClientInfo: mcp.Implementation{Name: "pagemux-test", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	e := &testEnv{srv: srv, b: b, client: c}
	t.Cleanup(func() { b.Close() })
	id := e.openPage(t, "/form.html")
	key := pagelock.PageKey(id)
	dir := t.TempDir()

	g := e.holdPage(t, id)
	task := mustCreate(t, c, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": filepath.Join(dir, "stdio.heapsnapshot")}, 0)
	e.waitQueued(t, key, 1)
	g.Release()
	if r := taskResult(t, c, task.TaskId); r.isError || !heapSaved.MatchString(r.text) {
		t.Fatalf("a task over stdio: %+v", r)
	}

	g = e.holdPage(t, id)
	mustCreate(t, c, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": filepath.Join(dir, "orphan.heapsnapshot")}, 0)
	e.waitQueued(t, key, 1)
	clientWrite.Close() // stdin ends
	if err := <-served; err != nil && !errors.Is(err, serve.ErrClientGone) {
		t.Errorf("ServeStdio: %v", err)
	}
	e.waitTasksEnded(t)
	e.waitQueued0(t, key)
	g.Release()
	c.Close()
}

func serverTaskMetrics(id string) server.TaskMetrics {
	return server.TaskMetrics{TaskID: id, ToolName: "take_heapsnapshot"}
}

// Tasks are offered where the revision has them: to 2025-11-25 (initialize
// and tools/list), not to 2026-07-28 (server/discover and tools/list).
func TestTasksAdvertised(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	tc := sessionClient(t, e)
	for _, c := range []struct {
		name  string
		c     *client.Client
		tasks bool
	}{{"2025-11-25", tc, true}, {"2026-07-28", e.client, false}} {
		list, err := c.c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, def := range list.Tools {
			if def.Execution != nil && def.Execution.TaskSupport == mcp.TaskSupportOptional {
				n++
			}
		}
		if want := map[bool]int{true: len(taskTools), false: 0}[c.tasks]; n != want {
			t.Errorf("%s: %d tools take tasks, want %d", c.name, n, want)
		}
	}
	answer := func(msg string) string {
		b, _ := json.Marshal(e.srv.MCP().HandleMessage(t.Context(), json.RawMessage(msg)))
		return string(b)
	}
	init := answer(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if !strings.Contains(init, `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Errorf("initialize (2025-11-25) offers no tasks: %s", init)
	}
	disc := answer(`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if !strings.Contains(disc, `"capabilities"`) || strings.Contains(disc, `"tasks"`) {
		t.Errorf("server/discover (2026-07-28) offers tasks, or answered no capabilities: %s", disc)
	}
}

// Exactly the long tools may run as tasks, and none must.
func TestTaskSupport(t *testing.T) {
	t.Parallel()
	for _, def := range definitions(t) {
		want := slices.Contains(taskTools, def.Name)
		got := def.Execution != nil && def.Execution.TaskSupport == mcp.TaskSupportOptional
		if got != want || def.Execution != nil && !got {
			t.Errorf("%s: execution %+v, want task support %v", def.Name, def.Execution, want)
		}
	}
}

// The orders no Chrome is needed for: a task stopped before its work
// began (tasks/cancel just after the create) starts on an ended context;
// a halt after the work ended changes nothing; a run past the bound in a
// burst fails, and gives back no place it did not take.
func TestTaskRunOrders(t *testing.T) {
	t.Parallel()
	s := &Server{log: testLogger()}
	s.tasks.max = 1
	newRun := func(ctx context.Context) (*taskRun, mcp.CallToolRequest) {
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "take_heapsnapshot", Task: &mcp.TaskParams{}}}
		s.beforeTaskCall(ctx, 1, &req)
		id := fmt.Sprintf("t%d", taskSeq.Add(1))
		s.taskCreated(ctx, serverTaskMetrics(id))
		return s.tasks.named(id), req
	}
	ctx1, ctx2 := context.WithValue(t.Context(), progressKey{}, 1), context.WithValue(t.Context(), progressKey{}, 2)
	first, req1 := newRun(ctx1)
	second, req2 := newRun(ctx2)
	if first == nil || second == nil || first.over || !second.over {
		t.Fatalf("runs %+v, %+v: want the second over the bound of 1", first, second)
	}

	first.halt(errTaskCancelled) // before its work began
	ctx, end, err := s.taskContext(ctx1, req1)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil || context.Cause(ctx) != errTaskCancelled {
		t.Errorf("a task cancelled before its work: context %v, cause %v", ctx.Err(), context.Cause(ctx))
	}
	if pagelock.TicketFrom(ctx) != nil {
		t.Error("a task's work kept its request's ticket")
	}
	end()
	first.halt(errTaskExpired) // after it ended: nothing
	if context.Cause(ctx) != errTaskCancelled {
		t.Errorf("cause after a late halt: %v", context.Cause(ctx))
	}

	if _, _, err := s.taskContext(ctx2, req2); err == nil || !strings.Contains(err.Error(), "too many tasks") {
		t.Errorf("a run past the bound: %v", err)
	}
	if n := len(s.tasks.running); n != 0 {
		t.Errorf("places taken after both ended: %v", s.tasks.running)
	}
	// A TTL past MaxTaskTTL, however far, gets MaxTaskTTL.
	huge := int64(math.MaxInt64)
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "take_heapsnapshot", Task: &mcp.TaskParams{TTL: &huge}}}
	s.beforeTaskCall(t.Context(), 3, &req)
	if got := *req.Params.Task.TTL; got != MaxTaskTTL.Milliseconds() {
		t.Errorf("ttl %d asked: got %d ms, want %d", huge, got, MaxTaskTTL.Milliseconds())
	}
	s.tasks.unnamed(t.Context())

	// A plain call is not a task, nor a task's params it did not see.
	if run := s.tasks.claim(mcp.CallToolRequest{Params: mcp.CallToolParams{Task: &mcp.TaskParams{}}}); run != nil {
		t.Errorf("claimed a run for params pagemux never gave: %+v", run)
	}
}

// Tasks kept until their TTL count too: an agent whose tasks end at once
// cannot pile them up faster than their TTLs pass.
func TestTasksKept(t *testing.T) {
	t.Parallel()
	s := &Server{log: testLogger()}
	s.tasks.max = 1
	ctx := t.Context()
	for i := range keptPerRunning {
		c := context.WithValue(ctx, progressKey{}, i) // a request context of its own
		if err := s.refuseOverTasks(c, i, json.RawMessage(`{"method":"tools/call","params":{"name":"take_heapsnapshot","task":{}}}`)); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "take_heapsnapshot", Task: &mcp.TaskParams{}}}
		s.beforeTaskCall(c, i, &req)
		s.taskCreated(c, serverTaskMetrics(fmt.Sprintf("kept-%d", taskSeq.Add(1))))
		_, end, err := s.taskContext(c, req)
		if err != nil {
			t.Fatal(err)
		}
		end() // it ended at once; its result is kept
	}
	err := s.refuseOverTasks(ctx, 0, json.RawMessage(`{"method":"tools/call","params":{"name":"take_heapsnapshot","task":{}}}`))
	if err == nil || !strings.Contains(err.Error(), "whose TTL has not passed") {
		t.Errorf("a task past the kept bound: %v", err)
	}
	// A stateless call with params.task is a plain call: not refused.
	if err := s.refuseOverTasks(ctx, 0, json.RawMessage(`{"method":"tools/call","params":{"name":"take_heapsnapshot","task":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)); err != nil {
		t.Errorf("a stateless call: %v", err)
	}
}

// A task obeys --tool-timeout as a call does, and answers what the call
// would. The long tools keep bounds of minutes of their own (ownBounds), so
// the test takes the trace's away for its run; it is not parallel, so that
// no other test reads ownBounds meanwhile (parallel tests wait for it).
func TestTaskToolTimeout(t *testing.T) {
	const tool = "performance_start_trace"
	saved := ownBounds[tool]
	delete(ownBounds, tool)
	t.Cleanup(func() { ownBounds[tool] = saved })
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Server: Options{ToolTimeout: 2 * time.Second}})
	tc := sessionClient(t, e)
	page := e.openPageUnbounded(t, "/form.html")
	e.call(t, "navigate_page", map[string]any{"pageId": page, "url": testSite.URL + "/neverloads.html", "timeout": 300}) // fails: it never loads
	task := mustCreate(t, tc, tool, map[string]any{"pageId": page}, 0)
	r := taskResult(t, tc, task.TaskId)
	if !r.isError {
		t.Fatalf("a trace whose reload never ends, past --tool-timeout: %s", r.text)
	}
	mustContain(t, r.text, tool+" ran past its 2s limit (--tool-timeout)", "released")
	mcptest.WaitFor(t, "the trace to end", func() bool { return !e.srv.perf.recording() })
	e.ok(t, "list_console_messages", map[string]any{"pageId": page})
	e.waitTasksEnded(t)
}
