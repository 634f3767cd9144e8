package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/pagelock"
)

// recorder is an MCP server whose tool "record" keeps the order in which
// calls took their turns, as the Guard does with its locks.
type recorder struct {
	srv   *server.MCPServer
	mu    sync.Mutex
	order []int
}

func newRecorder() *recorder {
	rec := &recorder{srv: server.NewMCPServer("rec", "1", server.WithToolCapabilities(false))}
	rec.srv.AddTool(mcp.NewTool("record", mcp.WithNumber("n")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ticket := pagelock.TicketFrom(ctx)
		if err := ticket.Turn(ctx); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		rec.mu.Lock()
		rec.order = append(rec.order, req.GetInt("n", -1))
		rec.mu.Unlock()
		ticket.Admit()
		return mcp.NewToolResultText(fmt.Sprint(req.GetInt("n", -1))), nil
	})
	rec.srv.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, _ := agents.From(ctx)
		return mcp.NewToolResultText(a.ID), nil
	})
	return rec
}

// TestJoinKeepsOrder: a stdio client writes bursts of calls through the
// bridge; each goes on its own HTTP request, and the server still takes
// them in the order written.
func TestJoinKeepsOrder(t *testing.T) {
	rec := newRecorder()
	ts := httptest.NewServer(NewHTTP(rec.srv, HTTPOptions{Tokens: map[string]string{"sub": "sub-secret-1"}}))
	defer ts.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Join(t.Context(), ts.URL+"/mcp", inR, outW, JoinOptions{Token: "sub-secret-1"})
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	read := func(n int) []map[string]json.RawMessage {
		t.Helper()
		var got []map[string]json.RawMessage
		for len(got) < n {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("after %d answers: %v", len(got), err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("not JSON: %q", line)
			}
			if _, ok := m["id"]; ok {
				got = append(got, m)
			}
		}
		return got
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"join","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	if a := read(1)[0]; !strings.Contains(string(a["result"]), "protocolVersion") {
		t.Fatalf("initialize through the bridge: %v", a)
	}
	for burst := range 20 {
		var lines []string
		for i := range 10 {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d-%d","method":"tools/call","params":{"name":"record","arguments":{"n":%d}}}`, burst, i, burst*10+i))
		}
		io.WriteString(inW, strings.Join(lines, "\n")+"\n")
		for _, a := range read(10) {
			if _, ok := a["result"]; !ok {
				t.Fatalf("burst %d: %v", burst, a)
			}
		}
	}
	rec.mu.Lock()
	order := slices.Clone(rec.order)
	rec.mu.Unlock()
	if len(order) != 200 || !slices.IsSorted(order) {
		t.Fatalf("the server took the calls in the order %v", order)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Join did not end after stdin closed")
	}
}

// TestJoinNothingListens: a bridge to a port where nothing listens says so
// and how to start a server.
func TestJoinNothingListens(t *testing.T) {
	ts := httptest.NewServer(nil)
	url := ts.URL + "/mcp"
	ts.Close()
	err := Join(t.Context(), url, strings.NewReader(""), io.Discard, JoinOptions{})
	if err == nil || !strings.Contains(err.Error(), "nothing answers") || !strings.Contains(err.Error(), "pagemux --http") {
		t.Errorf("Join to nothing: %v", err)
	}
}

// TestJoinAgentName: a bridge's --agent reaches the server as its agent
// name, beside its token's, and a bad name is refused with what to send.
func TestJoinAgentName(t *testing.T) {
	rec := newRecorder()
	ts := httptest.NewServer(NewHTTP(rec.srv, HTTPOptions{Tokens: map[string]string{"sub": "sub-secret-1"}}))
	defer ts.Close()
	for agent, want := range map[string]string{"worker-2": "token:sub/agent:worker-2", "": "token:sub"} {
		in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"join","version":"1"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}` + "\n"
		var out strings.Builder
		if err := Join(t.Context(), ts.URL+"/mcp", strings.NewReader(in), &out, JoinOptions{Token: "sub-secret-1", Agent: agent}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), `"text":"`+want+`"`) {
			t.Errorf("--agent %q: the server saw\n%s", agent, out.String())
		}
	}
	for _, bad := range []string{"has space", strings.Repeat("x", 65), "naïve"} {
		if err := CheckAgentName(bad); err == nil {
			t.Errorf("CheckAgentName(%q) passed", bad)
		}
	}
}

// TestJoinEndsItsSession: when its input ends, the bridge ends its MCP
// session on the server, so that its agent leaves at once.
func TestJoinEndsItsSession(t *testing.T) {
	ended := make(chan string, 1)
	hooks := &server.Hooks{}
	hooks.AddOnUnregisterSession(func(ctx context.Context, sess server.ClientSession) { ended <- sess.SessionID() })
	srv := server.NewMCPServer("t", "1", server.WithHooks(hooks))
	ts := httptest.NewServer(NewHTTP(srv, HTTPOptions{Tokens: map[string]string{"sub": "sub-secret-1"}}))
	defer ts.Close()
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"join","version":"1"}}}` + "\n"
	if err := Join(t.Context(), ts.URL+"/mcp", strings.NewReader(in), io.Discard, JoinOptions{Token: "sub-secret-1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-ended:
		if id == "" {
			t.Error("an empty session ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bridge ended without ending its session")
	}
}

// TestNumberedRefusal: a numbered call refused before MCP (its body too
// big) still takes its number, so the next number does not wait for it.
func TestNumberedRefusal(t *testing.T) {
	rec := newRecorder()
	ts := httptest.NewServer(NewHTTP(rec.srv, HTTPOptions{MaxBody: 1 << 10}))
	defer ts.Close()
	_, _, hdr := post(t, ts.URL, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	session := hdr.Get("Mcp-Session-Id")
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"record","arguments":{"n":1,"pad":"` + strings.Repeat("x", 2<<10) + `"}}}`
	if status, body, _ := post(t, ts.URL, big, map[string]string{CallNumberHeader: "1", "Mcp-Session-Id": session}); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a big body: %d %s", status, body)
	}
	start := time.Now()
	status, body, _ := post(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"record","arguments":{"n":2}}}`, map[string]string{CallNumberHeader: "2", "Mcp-Session-Id": session})
	if status != http.StatusOK || !strings.Contains(body, `"2"`) {
		t.Fatalf("call 2: %d %s", status, body)
	}
	if took := time.Since(start); took > 2500*time.Millisecond { // half of the 5 s a lost number is waited for
		t.Errorf("call 2 waited %v for the refused call 1", took)
	}
}

// TestJoinStateless: the bridge carries the stateless revision: a
// server/discover and calls naming 2026-07-28 in their _meta reach the
// server with the headers it asks (no -32020 for want of them), and a
// notifications/cancelled from the stdio client ends the call it names by
// ending that call's HTTP request, as the revision cancels over HTTP.
func TestJoinStateless(t *testing.T) {
	tsrv := newTestServer()
	ts := httptest.NewServer(NewHTTP(tsrv.srv, HTTPOptions{Tokens: map[string]string{"sub": "sub-secret-1"}}))
	defer ts.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Join(t.Context(), ts.URL+"/mcp", inR, outW, JoinOptions{Token: "sub-secret-1"})
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	answer := func() map[string]json.RawMessage {
		t.Helper()
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		return m
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + statelessMeta + `}}`)
	if a := answer(); !strings.Contains(string(a["result"]), "2026-07-28") {
		t.Fatalf("server/discover through the bridge: %s %s", a["result"], a["error"])
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"say":"stateless"},` + statelessMeta + `}}`)
	if a := answer(); !strings.Contains(string(a["result"]), "stateless") {
		t.Fatalf("a stateless call through the bridge: %s %s", a["result"], a["error"])
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"block","arguments":{"name":"long"},` + statelessMeta + `}}`)
	select {
	case <-tsrv.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the stateless call never started")
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	select {
	case <-tsrv.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the stdio client's notifications/cancelled did not cancel its stateless call")
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"say":"after"},` + statelessMeta + `}}`)
	if a := answer(); string(a["id"]) != "4" || !strings.Contains(string(a["result"]), "after") {
		t.Fatalf("after the cancellation, want the answer of call 4 (none for 3): %v", a)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Join did not end after stdin closed")
	}
}
