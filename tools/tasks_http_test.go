package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// tasksHTTP is a server with two tokens over Streamable HTTP.
type tasksHTTP struct {
	*testEnv
	url string
}

// rpc is one JSON-RPC request sent by hand over its own TCP connection
// (closed after it), as an SDK would not send it: session "" sends none,
// and a stateless request carries the 2026-07-28 _meta and headers.
func (h *tasksHTTP) rpc(t *testing.T, secret, agent, session string, stateless bool, method string, params map[string]any) (result json.RawMessage, rerr *rpcError) {
	t.Helper()
	var last string
	for ev := range h.send(t, secret, agent, session, stateless, method, params) {
		last = ev // the answer is the last message; progress may come before it
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal([]byte(last), &m); err != nil || m.Result == nil && m.Error == nil {
		t.Fatalf("%s: answered %s", method, last)
	}
	return m.Result, m.Error
}

// send is rpc's request; it returns the messages of the answer as they
// come: the JSON body, or the data of each event of a stream.
func (h *tasksHTTP) send(t *testing.T, secret, agent, session string, stateless bool, method string, params map[string]any) <-chan string {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	protocol := mcp.ProtocolVersion20251125
	if stateless {
		protocol = "2026-07-28"
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": protocol,
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
		if token, ok := params["progressToken"]; ok {
			delete(params, "progressToken")
			params["_meta"].(map[string]any)["progressToken"] = token
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": taskSeq.Add(1), "method": method, "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, h.url+"/mcp", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", protocol)
	req.Header.Set("Authorization", "Bearer "+secret)
	if stateless {
		req.Header.Set("Mcp-Method", method)
		if n, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", n)
		}
	}
	if agent != "" {
		req.Header.Set(serve.AgentHeader, agent)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	tr := &http.Transport{}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan string, 100)
	go func() {
		defer close(msgs)
		defer tr.CloseIdleConnections() // the connection is dropped after each request
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			raw, _ := io.ReadAll(resp.Body)
			msgs <- string(raw)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs <- d
			}
		}
	}()
	return msgs
}

// Tasks are their agent's and session's: another token's session, another
// agent of the same token, and a stateless request of the same token get,
// for its id, the very answer an unknown id gets, on tasks/get,
// tasks/result and tasks/cancel, and tasks/list shows them none of it; the
// task is untouched. Its result survives the connection it was created on,
// and is read on a new one. The bound counts per token; and a stateless
// call with params.task is a plain call, its revision having no
// tasks/result.
func TestTasksHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{
		Locks:  pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64},
		Server: Options{Agents: agents.New(agents.Owned), MaxTasks: 1},
	})
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{Tokens: map[string]string{"alice": aliceSecret, "bob": bobSecret}, SeesTask: e.srv.SeesTask}))
	t.Cleanup(ts.Close)
	h := &tasksHTTP{testEnv: e, url: ts.URL}

	alice := mcptest.HTTPClient(t, ts.URL+"/mcp", map[string]string{"Authorization": "Bearer " + aliceSecret}, mcp.ProtocolVersion20251125)
	aliceSession := sessionOf(t, alice)
	bob := mcptest.HTTPClient(t, ts.URL+"/mcp", map[string]string{"Authorization": "Bearer " + bobSecret}, mcp.ProtocolVersion20251125)
	bobSession := sessionOf(t, bob)
	bobEvents := h.listen(t, bobSecret, bobSession)
	alicePage := selectedPage(t, (&testEnv{client: alice}).ok(t, "navigate_page", map[string]any{"url": testSite.URL + "/form.html"}))
	bobPage := selectedPage(t, (&testEnv{client: bob}).ok(t, "navigate_page", map[string]any{"url": testSite.URL + "/form.html"}))

	g := e.holdPage(t, alicePage)
	res, rerr := h.rpc(t, aliceSecret, "", aliceSession, false, "tools/call", map[string]any{"name": "take_heapsnapshot",
		"arguments": map[string]any{"pageId": alicePage, "filePath": "alice.heapsnapshot"}, "task": map[string]any{"ttl": 60000}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var created struct{ Task mcp.Task }
	if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskId == "" || *created.Task.TTL != 60000 {
		t.Fatalf("the create result: %s", res)
	}
	id := created.Task.TaskId
	e.waitQueued(t, pagelock.PageKey(alicePage), 1)

	// The connection it came on is closed; the task goes on.
	unknown := "0b3f2c9e-5d7a-4e1b-9c8d-2a6f4e0d1b7c"
	others := []struct {
		name          string
		secret, agent string
		session       string
		stateless     bool
		methods       []string
	}{
		{"another token's session", bobSecret, "", bobSession, false, []string{"tasks/get", "tasks/result", "tasks/cancel"}},
		{"another agent of the token", aliceSecret, "other", "", true, []string{"tasks/get", "tasks/cancel"}},
		{"the token, stateless", aliceSecret, "", "", true, []string{"tasks/get", "tasks/cancel"}},
		{"another token, stateless", bobSecret, "", "", true, []string{"tasks/get", "tasks/cancel"}},
	}
	for _, o := range others {
		for _, m := range o.methods {
			_, got := h.rpc(t, o.secret, o.agent, o.session, o.stateless, m, map[string]any{"taskId": id})
			_, want := h.rpc(t, o.secret, o.agent, o.session, o.stateless, m, map[string]any{"taskId": unknown})
			if got == nil || want == nil || *got != *want {
				t.Errorf("%s, %s of alice's task: %v; of an unknown id: %v", o.name, m, got, want)
			}
		}
	}
	list, rerr := h.rpc(t, bobSecret, "", bobSession, false, "tasks/list", nil)
	if rerr != nil || strings.Contains(string(list), id) {
		t.Errorf("bob's tasks/list: %s %v", list, rerr)
	}
	list, _ = h.rpc(t, aliceSecret, "", aliceSession, false, "tasks/list", nil)
	if !strings.Contains(string(list), id) {
		t.Errorf("alice's tasks/list lacks her task: %s", list)
	}
	if got := getTask(t, alice, id); got.Status != mcp.TaskStatusWorking {
		t.Fatalf("alice's task after the others tried it: %+v", got)
	}

	// The bound is alice's: a second task of hers is refused, bob's runs.
	_, rerr = h.rpc(t, aliceSecret, "", aliceSession, false, "tools/call", map[string]any{"name": "take_heapsnapshot",
		"arguments": map[string]any{"pageId": alicePage, "filePath": "alice2.heapsnapshot"}, "task": map[string]any{}})
	if rerr == nil || !strings.Contains(rerr.Message, "too many tasks") {
		t.Errorf("alice's second task: %v", rerr)
	}
	bobTask := mustCreate(t, bob, "take_heapsnapshot", map[string]any{"pageId": bobPage, "filePath": "bob.heapsnapshot"}, 0)
	if r := taskResult(t, bob, bobTask.TaskId); r.isError || !heapSaved.MatchString(r.text) {
		t.Errorf("bob's task: %+v", r)
	}

	// On a new connection, once the lock is free, alice reads her result.
	g.Release()
	res, rerr = h.rpc(t, aliceSecret, "", aliceSession, false, "tasks/result", map[string]any{"taskId": id})
	if rerr != nil || !heapSaved.MatchString(textOf(t, res)) {
		t.Fatalf("alice's tasks/result on a new connection: %s %v", res, rerr)
	}

	// Alice's task's status notifications reach no stream of bob's; his
	// own reach his GET stream. (Alice's ended before bob's next one began.)
	// The progress of bob's task, after its create, comes there too.
	gb := e.holdPage(t, bobPage)
	bob2, err := createTask(t.Context(), bob, "take_heapsnapshot", map[string]any{"pageId": bobPage, "filePath": "bob2.heapsnapshot"}, 0, "bob2")
	if err != nil {
		t.Fatal(err)
	}
	progressed, completed := false, false
	for ev := range bobEvents {
		if strings.Contains(ev, id) {
			t.Fatalf("bob's GET stream told of alice's task: %s", ev)
		}
		if strings.Contains(ev, `"notifications/progress"`) && strings.Contains(ev, `"bob2"`) && !progressed {
			progressed = true
			gb.Release() // it ends after its create POST, so its status goes to the GET stream
		}
		if completed = strings.Contains(ev, bob2.TaskId) && strings.Contains(ev, `"completed"`); completed {
			break
		}
	}
	if !progressed || !completed {
		t.Errorf("bob's GET stream: progress %v, completion %v", progressed, completed)
	}
	if r := taskResult(t, bob, bob2.TaskId); r.isError {
		t.Error(r.text)
	}

	// Stateless, params.task makes no task: the call answers as a plain
	// one, with its progress before the answer on its own stream.
	gb = e.holdPage(t, bobPage)
	msgs := h.send(t, bobSecret, "", "", true, "tools/call", map[string]any{"name": "take_heapsnapshot", "progressToken": "stateless",
		"arguments": map[string]any{"pageId": bobPage, "filePath": "stateless.heapsnapshot"}, "task": map[string]any{}})
	var last string
	progressed = false
	for m := range msgs {
		if strings.Contains(m, `"notifications/progress"`) && strings.Contains(m, `"stateless"`) && !progressed {
			progressed = true
			gb.Release() // it told that it waits for its lock
		}
		last = m
	}
	if !progressed {
		t.Error("a stateless call that waited over a second told no progress")
	}
	var answer struct{ Result json.RawMessage }
	if json.Unmarshal([]byte(last), &answer) != nil || !heapSaved.MatchString(textOf(t, answer.Result)) {
		t.Errorf("a stateless call with params.task: %s", last)
	}
	e.waitTasksEnded(t)

	// A session that ends (DELETE) takes its tasks with it: one waiting
	// for its lock stops waiting.
	leaver := mcptest.HTTPClient(t, ts.URL+"/mcp", map[string]string{"Authorization": "Bearer " + aliceSecret, serve.AgentHeader: "leaver"}, mcp.ProtocolVersion20251125)
	leaverPage := selectedPage(t, (&testEnv{client: leaver}).ok(t, "navigate_page", map[string]any{"url": testSite.URL + "/form.html"}))
	gl := e.holdPage(t, leaverPage)
	mustCreate(t, leaver, "take_heapsnapshot", map[string]any{"pageId": leaverPage, "filePath": "leaver.heapsnapshot"}, 0)
	e.waitQueued(t, pagelock.PageKey(leaverPage), 1)
	leaver.Close() // DELETE
	e.waitTasksEnded(t)
	e.waitQueued0(t, pagelock.PageKey(leaverPage))
	gl.Release()

	// Through --join, a stdio client of revision 2025-11-25 runs tasks too.
	in, toBridge := io.Pipe()
	fromBridge, out := io.Pipe()
	joined := make(chan error, 1)
	go func() {
		joined <- serve.Join(context.Background(), ts.URL+"/mcp", in, out, serve.JoinOptions{Token: bobSecret, Agent: "bridge"})
		out.Close()
	}()
	jc := client.NewClient(transport.NewIO(fromBridge, toBridge, io.NopCloser(strings.NewReader(""))))
	if err := jc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := jc.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125, ClientInfo: mcp.Implementation{Name: "bridged", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	bridgedPage := selectedPage(t, (&testEnv{client: jc}).ok(t, "navigate_page", map[string]any{"url": testSite.URL + "/form.html"}))
	bt := mustCreate(t, jc, "take_heapsnapshot", map[string]any{"pageId": bridgedPage, "filePath": "bridged.heapsnapshot"}, 0)
	if r := taskResult(t, jc, bt.TaskId); r.isError || !heapSaved.MatchString(r.text) {
		t.Errorf("a task through --join: %+v", r)
	}
	toBridge.Close() // stdin ends: the bridge ends its session and returns
	if err := <-joined; err != nil {
		t.Errorf("Join: %v", err)
	}
	jc.Close()
}

// listen opens a session's GET stream and returns its events' data, until
// the test ends.
func (h *tasksHTTP) listen(t *testing.T, secret, session string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Mcp-Session-Id", session)
	tr := &http.Transport{}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	events := make(chan string, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case events <- d:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
		tr.CloseIdleConnections()
	})
	return events
}

// textOf is the text of a tool result.
func textOf(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("%s: %v", res, err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

var selectedLine = regexp.MustCompile(`(?m)^(\d+): .*\[selected\]`)

// selectedPage is the page an answer's page list marks selected.
func selectedPage(t *testing.T, text string) int {
	t.Helper()
	m := selectedLine.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no selected page in:\n%s", text)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
