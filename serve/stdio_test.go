package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/pagelock"
	"go.uber.org/goleak"
)

// These tests drive the transport with raw lines against a real mcp-go
// server whose tools are small Go functions: what is under test is the wire,
// not Chrome (the tools tests cover the two together).

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testServer has a tool "echo" that answers its argument, "block" that
// waits until its call is cancelled, counting the cancellations, and
// "progress" that sends n progress notifications of its call's token.
type testServer struct {
	srv       *server.MCPServer
	started   chan string
	cancelled chan string
}

func newTestServer() *testServer {
	ts := &testServer{
		srv:       server.NewMCPServer("test", "1", server.WithToolCapabilities(false)),
		started:   make(chan string, 100),
		cancelled: make(chan string, 100),
	}
	ts.srv.AddTool(mcp.NewTool("echo", mcp.WithString("say")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("say", "")), nil
	})
	ts.srv.AddTool(mcp.NewTool("block", mcp.WithString("name")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := req.GetString("name", "")
		ts.started <- name
		<-ctx.Done()
		ts.cancelled <- name
		return mcp.NewToolResultError("cancelled: " + context.Cause(ctx).Error()), nil
	})
	ts.srv.AddTool(mcp.NewTool("progress", mcp.WithNumber("n")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta == nil {
			return mcp.NewToolResultError("no progress token"), nil
		}
		token := req.Params.Meta.ProgressToken
		for i := range req.GetInt("n", 0) {
			_ = ts.srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": token, "progress": i + 1})
		}
		return mcp.NewToolResultText("sent"), nil
	})
	ts.srv.AddTool(mcp.NewTool("ticket"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(fmt.Sprint(pagelock.TicketFrom(ctx) != nil)), nil
	})
	return ts
}

// pipeConn is a running ServeStdio with the client's ends of its pipes.
type pipeConn struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func start(t *testing.T, ts *testServer, ctx context.Context, opts StdioOptions) *pipeConn {
	t.Helper()
	serverIn, clientIn := io.Pipe()
	clientOut, serverOut := io.Pipe()
	c := &pipeConn{in: clientIn, out: bufio.NewReaderSize(clientOut, 1<<20), done: make(chan error, 1)}
	go func() {
		err := ServeStdio(ctx, ts.srv, serverIn, serverOut, opts)
		serverOut.Close()
		serverIn.Close()
		c.done <- err
	}()
	t.Cleanup(func() {
		clientIn.Close()
		go io.Copy(io.Discard, clientOut)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return")
		}
	})
	return c
}

func (c *pipeConn) send(t *testing.T, lines ...string) {
	t.Helper()
	if _, err := io.WriteString(c.in, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
}

// read returns the next n lines as raw JSON objects.
func (c *pipeConn) read(t *testing.T, n int) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	for len(out) < n {
		line, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d lines: %v", len(out), err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func call(id, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// TestIDsKeptExactly: ids that float64 cannot hold, 1e400, strings that look
// like numbers and odd spacing come back byte for byte.
func TestIDsKeptExactly(t *testing.T) {
	c := start(t, newTestServer(), t.Context(), StdioOptions{})
	ids := []string{"9007199254740993", "1e400", `"7"`, "7", `"ü-\u00e9"`, "-0", "1.5"}
	var lines []string
	for i, id := range ids {
		lines = append(lines, call(id, "echo", fmt.Sprintf(`{"say":"%d"}`, i)))
	}
	c.send(t, lines...)
	got := map[string]bool{}
	for _, m := range c.read(t, len(ids)) {
		got[string(m["id"])] = true
		if _, ok := m["result"]; !ok {
			t.Errorf("id %s: no result: %v", m["id"], m)
		}
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("no answer with id %s; got %v", id, got)
		}
	}
}

// TestCancelByExactID: cancelling "7" leaves the call with the number 7 alone.
func TestCancelByExactID(t *testing.T) {
	ts := newTestServer()
	c := start(t, ts, t.Context(), StdioOptions{})
	c.send(t, call("7", "block", `{"name":"number"}`), call(`"7"`, "block", `{"name":"string"}`))
	<-ts.started
	<-ts.started
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"7","reason":"changed my mind"}}`)
	select {
	case name := <-ts.cancelled:
		if name != "string" {
			t.Errorf("cancelled %s", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no cancellation reached the handler")
	}
	select {
	case name := <-ts.cancelled:
		t.Fatalf("the call %s was cancelled too", name)
	case <-time.After(100 * time.Millisecond):
	}
	// MCP: a cancelled request gets no answer. The next line is the ping's.
	c.send(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if a := c.read(t, 1)[0]; string(a["id"]) != `"after"` {
		t.Fatalf("the cancelled request was answered: %v", a)
	}
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	if a := c.read(t, 1)[0]; string(a["id"]) != `"last"` {
		t.Errorf("the cancelled request 7 was answered: %v", a)
	}
}

// TestBadMessages: every malformed line gets a clear error, never silence,
// and the connection goes on.
func TestBadMessages(t *testing.T) {
	c := start(t, newTestServer(), t.Context(), StdioOptions{})
	cases := []struct{ line, want string }{
		{`{not json`, "parse error"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "batches are not supported"},
		{`{"jsonrpc":"2.0","id":2,"method":"ping","result":{}}`, "either a method or a result"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "must be a string or a number"},
		{`{"jsonrpc":"2.0","id":3}`, "no method"},
		{`{"jsonrpc":"2.0","id":4,"method":"` + strings.Repeat("x", 100000) + `"}`, "more bytes"},
	}
	for _, tc := range cases {
		c.send(t, tc.line)
		a := c.read(t, 1)[0]
		if !strings.Contains(string(a["error"]), tc.want) {
			t.Errorf("%.60s: error %s, want %q", tc.line, a["error"], tc.want)
		}
		if len(a["error"]) > 2000 {
			t.Errorf("%.60s: the error quotes %d bytes of input", tc.line, len(a["error"]))
		}
	}
	c.send(t, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if a := c.read(t, 1)[0]; string(a["id"]) != "5" {
		t.Errorf("after the bad lines, ping answered %v", a)
	}
}

// TestLongLine: a line past MaxLine is refused as soon as the limit passes,
// without being held, and the next line is served.
func TestLongLine(t *testing.T) {
	c := start(t, newTestServer(), t.Context(), StdioOptions{MaxLine: 1 << 20})
	errc := make(chan error, 1)
	go func() {
		big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"say":"` + strings.Repeat("x", 8<<20) + `"}}}` + "\n"
		_, err := io.WriteString(c.in, big+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
		errc <- err
	}()
	as := c.read(t, 2)
	if !strings.Contains(string(as[0]["error"]), "longer than the 1 MiB limit") || string(as[0]["id"]) != "null" {
		t.Errorf("long line: %v", as[0])
	}
	if string(as[1]["id"]) != "2" {
		t.Errorf("after the long line: %v", as[1])
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestGraceAfterEOF: calls read before stdin closed are answered when they
// finish within the grace; one that never ends is cancelled after it, and
// answered, and ServeStdio returns.
func TestGraceAfterEOF(t *testing.T) {
	ts := newTestServer()
	c := start(t, ts, t.Context(), StdioOptions{Grace: 300 * time.Millisecond})
	c.send(t, call("1", "echo", `{"say":"hi"}`), call("2", "block", `{"name":"forever"}`))
	<-ts.started
	c.in.Close()
	as := c.read(t, 2)
	ids := map[string]string{}
	for _, a := range as {
		ids[string(a["id"])] = string(a["result"])
	}
	if !strings.Contains(ids["1"], "hi") {
		t.Errorf("the quick call: %v", ids)
	}
	if !strings.Contains(ids["2"], "closed stdin") {
		t.Errorf("the endless call was not cancelled for the closed stdin: %v", ids)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		c.done <- err
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after stdin closed")
	}
}

// brokenWriter fails every write, as a stdout whose reader died does.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestClientGone: a failed write ends ServeStdio with ErrClientGone and
// cancels the calls in flight.
func TestClientGone(t *testing.T) {
	ts := newTestServer()
	serverIn, clientIn := io.Pipe()
	defer clientIn.Close()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(t.Context(), ts.srv, serverIn, brokenWriter{}, StdioOptions{}) }()
	io.WriteString(clientIn, call("1", "block", `{"name":"held"}`)+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	select {
	case err := <-done:
		if !errors.Is(err, ErrClientGone) {
			t.Errorf("ServeStdio: %v, want ErrClientGone", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio went on after its writes failed")
	}
	select {
	case <-ts.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight was not cancelled")
	}
	serverIn.Close()
}

// TestContextEnds: when ctx ends (a signal), the calls are cancelled and
// ServeStdio returns at once.
func TestContextEnds(t *testing.T) {
	ts := newTestServer()
	ctx, cancel := context.WithCancel(t.Context())
	c := start(t, ts, ctx, StdioOptions{})
	c.send(t, call("1", "block", `{"name":"held"}`))
	<-ts.started
	cancel()
	select {
	case err := <-c.done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio: %v", err)
		}
		c.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return when ctx ended")
	}
	<-ts.cancelled
}

// TestTicketsOnlyForToolCalls: tool calls carry a ticket; other requests do
// not take one, so they cannot hold up the line.
func TestTicketsOnlyForToolCalls(t *testing.T) {
	c := start(t, newTestServer(), t.Context(), StdioOptions{})
	c.send(t, call("1", "ticket", `{}`))
	if a := c.read(t, 1)[0]; !strings.Contains(string(a["result"]), "true") {
		t.Errorf("a tools/call had no ticket: %s", a["result"])
	}
	// A call the server rejects before any handler runs still admits its
	// ticket, so the call behind it is served.
	c.send(t, call("2", "no_such_tool", `{}`), call("3", "echo", `{"say":"after"}`))
	var mu sync.Mutex
	seen := map[string]string{}
	for _, a := range c.read(t, 2) {
		mu.Lock()
		seen[string(a["id"])] = string(a["result"]) + string(a["error"])
		mu.Unlock()
	}
	if !strings.Contains(seen["3"], "after") {
		t.Errorf("the call behind a rejected one: %v", seen)
	}
}

// TestStatelessRevision: a 2026-07-28 request needs no initialize; its
// protocol version and client travel in _meta on every request.
func TestStatelessRevision(t *testing.T) {
	c := start(t, newTestServer(), t.Context(), StdioOptions{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"stateless","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	c.send(t, `{"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{"name":"echo","arguments":{"say":"no handshake"},`+meta+`}}`)
	a := c.read(t, 1)[0]
	if string(a["id"]) != `"s1"` || !strings.Contains(string(a["result"]), "no handshake") {
		t.Fatalf("stateless call: %v", a)
	}
}
