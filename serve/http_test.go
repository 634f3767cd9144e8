package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"

	"github.com/mark3labs/mcp-go/client"
)

func startHTTP(t *testing.T, opts HTTPOptions) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(NewHTTP(newTestServer().srv, opts))
	t.Cleanup(ts.Close)
	return ts
}

// mcpClient is mcp-go's own Streamable HTTP client, initialized.
func mcpClient(t *testing.T, url string, headers map[string]string) *client.Client {
	t.Helper()
	return mcptest.HTTPClient(t, url+"/mcp", headers, "")
}

// callText calls a tool and returns its text, error result or not; a
// protocol error fails the test.
func callText(t *testing.T, c *client.Client, tool string, args map[string]any) string {
	t.Helper()
	r := mcptest.Call(t.Context(), c, tool, args)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return r.Text
}

// TestHTTPServesMCP: mcp-go's client calls tools over Streamable HTTP, and
// tool calls carry their agent's ticket.
func TestHTTPServesMCP(t *testing.T) {
	ts := startHTTP(t, HTTPOptions{})
	c := mcpClient(t, ts.URL, nil)
	if got := callText(t, c, "echo", map[string]any{"say": "over http"}); got != "over http" {
		t.Errorf("echo: %q", got)
	}
	if got := callText(t, c, "ticket", nil); got != "true" {
		t.Errorf("a tools/call over HTTP had no ticket: %q", got)
	}
}

// post sends one raw JSON-RPC body and returns the status, body and headers.
func post(t *testing.T, url, body string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// TestHTTPAuth: without the right bearer token a request gets 401 with
// WWW-Authenticate; with it, it is served; /healthz needs none.
func TestHTTPAuth(t *testing.T) {
	ts := startHTTP(t, HTTPOptions{Tokens: map[string]string{"lead": "s3cret-lead", "sub": "s3cret-sub"},
		Health: func() (bool, string) { return true, "chrome 156" }})
	for _, auth := range []string{"", "Bearer wrong", "Basic s3cret-lead", "Bearer s3cret-lea"} {
		status, body, h := post(t, ts.URL, ping, map[string]string{"Authorization": auth})
		if status != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d %s", auth, status, body)
		}
		if strings.Contains(body, "s3cret") {
			t.Errorf("the 401 quotes a secret: %s", body)
		}
	}
	c := mcpClient(t, ts.URL, map[string]string{"Authorization": "Bearer s3cret-sub"})
	if got := callText(t, c, "echo", map[string]any{"say": "authorized"}); got != "authorized" {
		t.Errorf("echo with a token: %q", got)
	}
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var health struct {
		OK     bool   `json:"ok"`
		Chrome bool   `json:"chrome"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil || !health.OK || !health.Chrome || health.Detail != "chrome 156" {
		t.Errorf("/healthz: %d %+v %v", resp.StatusCode, health, err)
	}
}

// TestHTTPOriginAndBody: a browser-borne request from an origin not allowed
// is 403; a bad agent name 400; a body past the limit is 413.
func TestHTTPOriginAndBody(t *testing.T) {
	ts := startHTTP(t, HTTPOptions{AllowedOrigins: []string{"http://localhost:6274"}, MaxBody: 1 << 20})
	if status, body, _ := post(t, ts.URL, ping, map[string]string{"Origin": "https://evil.example"}); status != http.StatusForbidden || !strings.Contains(body, "--allowed-origin") {
		t.Errorf("bad origin: %d %s", status, body)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if status, body, _ := post(t, ts.URL, initialize, map[string]string{"Origin": "http://localhost:6274"}); status != http.StatusOK {
		t.Errorf("allowed origin: %d %s", status, body)
	}
	if status, body, _ := post(t, ts.URL, ping, map[string]string{AgentHeader: "two words"}); status != http.StatusBadRequest || !strings.Contains(body, AgentHeader) {
		t.Errorf("bad agent name: %d %s", status, body)
	}
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"say":"` + strings.Repeat("x", 2<<20) + `"}}}`
	if status, body, _ := post(t, ts.URL, big, nil); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "1 MiB") {
		t.Errorf("big body: %d %.200s", status, body)
	}
}

// TestHTTPStateless: a 2026-07-28 request needs no session and no initialize.
func TestHTTPStateless(t *testing.T) {
	ts := startHTTP(t, HTTPOptions{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"stateless","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	status, body, _ := post(t, ts.URL, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"echo","arguments":{"say":"stateless"},`+meta+`}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
	if status != http.StatusOK || !strings.Contains(body, "stateless") {
		t.Errorf("stateless call: %d %s", status, body)
	}
}

// TestListenHTTPRefusesOpenAddress: without tokens only loopback may be bound.
func TestListenHTTPRefusesOpenAddress(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := ListenHTTP(ctx, "0.0.0.0:0", newTestServer().srv, HTTPOptions{})
	if err == nil || !strings.Contains(err.Error(), "--auth-token") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("ListenHTTP on 0.0.0.0 without tokens: %v", err)
	}
	if err := ListenHTTP(ctx, "127.0.0.1:0", newTestServer().srv, HTTPOptions{}); err != context.Canceled {
		t.Errorf("ListenHTTP on loopback: %v", err)
	}
}

// TestHTTPExactIDs: every id comes back byte for byte, also those mcp-go
// would read as a float64 and write otherwise; a batch is refused with why.
func TestHTTPExactIDs(t *testing.T) {
	ts := startHTTP(t, HTTPOptions{})
	status, _, hdr := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	session := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id")}
	if status != http.StatusOK || session["Mcp-Session-Id"] == "" {
		t.Fatalf("initialize: %d %v", status, hdr)
	}
	for _, id := range []string{"9007199254740993", "1e400", "1.0", "-0", "12345678901234567890", `"7"`, "7", `"pagemux-id-x"`} {
		for _, req := range []string{
			`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"say":"hi"}}}`,
		} {
			status, body, _ := post(t, ts.URL, req, session)
			if status != http.StatusOK || !strings.Contains(body, `"id":`+id+`,`) || strings.Contains(body, "pagemux-id-") && !strings.Contains(id, "pagemux-id-") {
				t.Errorf("%s: %d %s", req, status, body)
			}
		}
	}
	status, body, _ := post(t, ts.URL, "["+ping+","+ping+"]", session)
	if status != http.StatusBadRequest || !strings.Contains(body, "batch") {
		t.Errorf("a batch: %d %s", status, body)
	}
}

// TestHTTPCancelOddID: a notifications/cancelled naming an id pagemux had
// to swap on the way in still reaches its request.
func TestHTTPCancelOddID(t *testing.T) {
	tsrv := newTestServer()
	ts := httptest.NewServer(NewHTTP(tsrv.srv, HTTPOptions{}))
	defer ts.Close()
	_, _, hdr := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	session := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id")}
	var calls sync.WaitGroup
	defer calls.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before the Wait: ends calls a failed test left blocked
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"block","arguments":{"name":"odd"}}}`,
		`{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/call","params":{"name":"block","arguments":{"name":"near"}}}`,
	} {
		calls.Go(func() { // answered once cancelled; no t here, as it may outlive a failed test
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", session["Mcp-Session-Id"])
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	for range 2 {
		select {
		case <-tsrv.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the calls never started")
		}
	}
	for _, c := range []struct{ id, call string }{{"9007199254740993", "odd"}, {"9007199254740992", "near"}} {
		post(t, ts.URL, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+c.id+`}}`, session)
		select {
		case name := <-tsrv.cancelled:
			if name != c.call {
				t.Errorf("cancelling id %s cancelled %s, want %s", c.id, name, c.call)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the cancellation of id %s never reached call %s", c.id, c.call)
		}
	}
}

// TestHTTPSessionBoundToToken: a session answers only to the token that
// opened it: another token, or a made-up id, gets 404 as an unknown
// session; a DELETE needs the token (401 without, 404 with another), and
// after the owner's DELETE the session is gone for it too. /locks is asked
// as the caller's agent, Admin set for an admin token.
func TestHTTPSessionBoundToToken(t *testing.T) {
	var asked []agents.Agent
	ts := startHTTP(t, HTTPOptions{Tokens: map[string]string{"lead": "s3cret-lead", "sub": "s3cret-sub"}, AdminTokens: []string{"sub"},
		Locks: func(ctx context.Context) any { a, _ := agents.From(ctx); asked = append(asked, a); return []string{} }})
	lead := map[string]string{"Authorization": "Bearer s3cret-lead", "MCP-Protocol-Version": "2025-06-18"}
	sub := map[string]string{"Authorization": "Bearer s3cret-sub", "MCP-Protocol-Version": "2025-06-18"}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	status, body, h := post(t, ts.URL, init, lead)
	sid := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	with := func(hs map[string]string, session string) map[string]string {
		out := map[string]string{"Mcp-Session-Id": session}
		for k, v := range hs {
			out[k] = v
		}
		return out
	}
	if status, body, _ := post(t, ts.URL, ping, with(lead, sid)); status != http.StatusOK {
		t.Errorf("the owner's ping: %d %s", status, body)
	}
	if status, body, _ := post(t, ts.URL, ping, with(sub, sid)); status != http.StatusNotFound || !strings.Contains(body, "unknown session") {
		t.Errorf("another token's ping: %d %s", status, body)
	}
	if status, body, _ := post(t, ts.URL, ping, with(lead, "mcp-session-00000000-0000-0000-0000-000000000000")); status != http.StatusNotFound {
		t.Errorf("a made-up session: %d %s", status, body)
	}
	del := func(hs map[string]string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, ts.URL+"/mcp", nil)
		for k, v := range hs {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := del(map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}); got != http.StatusUnauthorized {
		t.Errorf("a DELETE without a token: %d", got)
	}
	if got := del(with(sub, sid)); got != http.StatusNotFound {
		t.Errorf("a DELETE with another token: %d", got)
	}
	if status, _, _ := post(t, ts.URL, ping, with(lead, sid)); status != http.StatusOK {
		t.Errorf("the session after the refused DELETEs: %d", status)
	}
	if got := del(with(lead, sid)); got != http.StatusOK {
		t.Errorf("the owner's DELETE: %d", got)
	}
	if status, _, _ := post(t, ts.URL, ping, with(lead, sid)); status != http.StatusNotFound {
		t.Errorf("the owner's ping after its DELETE: %d", status)
	}
	for _, secret := range []string{"s3cret-lead", "s3cret-sub"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/locks", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(asked) != 2 || asked[0].ID != "token:lead" || asked[0].Admin || asked[1].ID != "token:sub" || !asked[1].Admin {
		t.Errorf("/locks was asked as %+v", asked)
	}
}

// statelessMeta is the _meta of a 2026-07-28 request.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"stateless","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// TestHTTPStatelessNotifications: a 2026-07-28 notification is accepted
// (202) whatever its _meta: none, as the Go SDK sends notifications/cancelled,
// or one the header does not match; and it cancels nothing, as a bare
// request id names no one's call without a session, while the stateless
// call whose own request ends is cancelled.
func TestHTTPStatelessNotifications(t *testing.T) {
	tsrv := newTestServer()
	ts := httptest.NewServer(NewHTTP(tsrv.srv, HTTPOptions{}))
	defer ts.Close()
	stateless := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "notifications/cancelled"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	call := make(chan struct{})
	go func() {
		defer close(call)
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{"name":"one"},` + statelessMeta + `}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "block"} {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-tsrv.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the stateless call never started")
	}
	for _, tt := range []struct {
		body    string
		headers map[string]string
	}{
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, stateless},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, stateless},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,` + statelessMeta + `}}`, nil},
		{`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, stateless},
	} {
		if status, body, _ := post(t, ts.URL, tt.body, tt.headers); status != http.StatusAccepted {
			t.Errorf("%s: %d %s, want 202", tt.body, status, body)
		}
	}
	select {
	case name := <-tsrv.cancelled:
		t.Fatalf("a notifications/cancelled without a session cancelled call %s", name)
	default:
	}
	cancel() // the client closes the call's request: that cancels it
	select {
	case <-tsrv.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the stateless call's request did not cancel it")
	}
	<-call
	if status, body, _ := post(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"say":"after"},`+statelessMeta+`}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}); status != http.StatusOK || !strings.Contains(body, "after") {
		t.Errorf("a call after the notifications: %d %s", status, body)
	}
}
