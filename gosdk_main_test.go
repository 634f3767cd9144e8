package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/soak"
)

// These tests drive the real binary with the official Go MCP SDK, a client
// pagemux did not write, over each transport it found a bug on (issue 18).

// goSDK connects the Go SDK's Streamable HTTP client to base (…, without
// /mcp) in protocol ("" for its newest, the stateless 2026-07-28), through
// hc, and closes it when the test ends.
func goSDK(t *testing.T, base string, hc *http.Client, protocol string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: t.Name(), Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("the Go SDK could not connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sdkCall calls a tool through the Go SDK and returns its text, failing
// the test on an error.
func sdkCall(t *testing.T, ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s through the Go SDK: %v", tool, err)
	}
	text := sdkText(res)
	if res.IsError {
		t.Fatalf("%s through the Go SDK: %s", tool, text)
	}
	return text
}

func sdkText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// selectedPage is the id of the page new_page selected, from its answer.
func selectedPage(t *testing.T, newPage string) int {
	t.Helper()
	for _, line := range strings.Split(newPage, "\n") {
		var id int
		if strings.HasSuffix(line, "[selected]") {
			if _, err := fmt.Sscanf(line, "%d:", &id); err == nil {
				return id
			}
		}
	}
	t.Fatalf("new_page selected nothing:\n%s", newPage)
	return 0
}

// sleepScript is an evaluate_script function that awaits a promise for ms.
func sleepScript(ms int) string {
	return fmt.Sprintf("() => new Promise(r => setTimeout(() => r('slept'), %d))", ms)
}

// cancelLongCall starts a call of a two-minute script on page, waits until
// it holds the page's lock, cancels it through its context, and checks
// that the SDK gave up on it, and that the next call on the page runs at
// once (the cancelled call's locks are released) and the client goes on.
func cancelLongCall(t *testing.T, cs *sdk.ClientSession, base, secret string, page int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "evaluate_script", Arguments: map[string]any{"pageId": page, "function": sleepScript(120_000)}})
		done <- err
	}()
	waitHolder(t, base, secret, fmt.Sprintf("evaluate_script on page %d", page))
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled call: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call never returned")
	}
	next, stop := context.WithTimeout(t.Context(), 30*time.Second)
	defer stop()
	if got := sdkCall(t, next, cs, "evaluate_script", map[string]any{"pageId": page, "function": "() => 'next'"}); !strings.Contains(got, "next") || strings.Contains(got, "Waited ") {
		t.Errorf("the call after the cancelled one waited for its lock: %s", got)
	}
	if got := sdkCall(t, next, cs, "list_pages", nil); !strings.Contains(got, fmt.Sprintf("%d: ", page)) {
		t.Errorf("list_pages after the cancellation: %s", got)
	}
}

// TestGoSDKStatelessCancel: over stateless HTTP (2026-07-28) the Go SDK
// cancels a call by closing its request and POSTing notifications/cancelled
// without _meta; pagemux accepts the notification, so the client goes on,
// and the call ended with its request, so its page is free at once.
func TestGoSDKStatelessCancel(t *testing.T) {
	t.Parallel()
	bin := pagemuxBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--lock-mode=page", "--browser-url="+sharedChrome(t), "--log-level=warn")
	cs := goSDK(t, base, nil, "", nil)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the Go SDK speaks %s, want the stateless 2026-07-28", v)
	}
	page := selectedPage(t, sdkCall(t, t.Context(), cs, "new_page", map[string]any{"url": site.URL + "/form.html"}))
	cancelLongCall(t, cs, base, "", page)
	cancelLongCall(t, cs, base, "", page) // and once more: the client lives on
	if t.Failed() {
		t.Logf("server log:\n%s", stderr.String())
	}
}

// wireLog is an http.RoundTripper that records, for each request the Go
// SDK sends, the progress notifications that came back on that request's
// own response stream, in the order they came.
type wireLog struct {
	mu      sync.Mutex
	streams []*wireStream
}

// wireStream is one request: a GET stream, or a POST of a JSON-RPC method.
type wireStream struct {
	method   string // "GET", or the POST's JSON-RPC method
	status   int
	progress []wireProgress
}

type wireProgress struct {
	token string
	value float64
}

func (l *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	s := &wireStream{method: r.Method}
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		var env struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &env)
		s.method = env.Method
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	s.status = resp.StatusCode
	l.mu.Lock()
	l.streams = append(l.streams, s)
	l.mu.Unlock()
	pr, pw := io.Pipe()
	body := resp.Body
	go func() { // the SDK reads the pipe; every line is seen before it is
		sc := bufio.NewScanner(io.TeeReader(body, pw))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			l.see(s, sc.Bytes())
		}
		pw.CloseWithError(cmpErr(sc.Err(), io.EOF))
	}()
	resp.Body = readCloser{Reader: pr, close: func() error { pr.Close(); return body.Close() }}
	return resp, nil
}

func cmpErr(err, or error) error {
	if err != nil {
		return err
	}
	return or
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// see records a progress notification in an event's data line.
func (l *wireLog) see(s *wireStream, line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			Token    any     `json:"progressToken"`
			Progress float64 `json:"progress"`
		} `json:"params"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &n) != nil || n.Method != "notifications/progress" {
		return
	}
	l.mu.Lock()
	s.progress = append(s.progress, wireProgress{token: fmt.Sprint(n.Params.Token), value: n.Params.Progress})
	l.mu.Unlock()
}

// progressOf returns the progress values of token on each kind of stream.
func (l *wireLog) progressOf(token string) map[string][]float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := map[string][]float64{}
	for _, s := range l.streams {
		for _, p := range s.progress {
			if p.token == token {
				got[s.method] = append(got[s.method], p.value)
			}
		}
	}
	return got
}

// TestGoSDKSessionProgress: over session HTTP (2025-11-25), with the GET
// stream the Go SDK opens, every progress notification of a call comes on
// the call's own POST stream, in order, before its answer, and none on the
// GET stream. The call is a script that sleeps for progressCallMS: a call
// still running tells its progress every second (tools/progress.go), so it
// sends some ten notifications while Chrome and pagemux sit idle. The split
// this test caught took about half of a call's notifications to the GET
// stream, so a split fails it all but once in a thousand runs (a Lighthouse
// audit sent 87, for 7 CPU-s). One call, three with PAGEMUX_SOAK=1.
func TestGoSDKSessionProgress(t *testing.T) {
	t.Parallel()
	const progressCallMS = 10_000
	bin := pagemuxBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--lock-mode=page", "--browser-url="+sharedChrome(t), "--log-level=warn")
	wire := &wireLog{}
	var mu sync.Mutex
	handled := map[string][]float64{}
	came := make(chan struct{}, 1)
	cs := goSDK(t, base, &http.Client{Transport: wire}, "2025-11-25", &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			tok := fmt.Sprint(req.Params.ProgressToken)
			handled[tok] = append(handled[tok], req.Params.Progress)
			select {
			case came <- struct{}{}:
			default:
			}
		},
	})
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("the Go SDK speaks %s, want 2025-11-25", v)
	}
	wire.mu.Lock()
	get := slices.IndexFunc(wire.streams, func(s *wireStream) bool { return s.method == http.MethodGet && s.status == http.StatusOK })
	wire.mu.Unlock()
	if get < 0 {
		t.Fatal("the Go SDK opened no GET stream: this test needs one")
	}
	page := selectedPage(t, sdkCall(t, t.Context(), cs, "new_page", map[string]any{"url": site.URL + "/form.html"}))
	// Half the notifications a second brings at least, or the check of the
	// streams proves little.
	const least = progressCallMS / 1000 / 2
	for i := range soak.N(1, 3) {
		token := fmt.Sprintf("call-%d", i)
		params := &sdk.CallToolParams{Name: "evaluate_script", Arguments: map[string]any{"pageId": page, "function": sleepScript(progressCallMS)}}
		params.SetProgressToken(token)
		res, err := cs.CallTool(t.Context(), params)
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v\n%s", i, err, res, stderr.String())
		}
		if text := sdkText(res); !strings.Contains(text, "slept") {
			t.Fatalf("call %d answered %s", i, text)
		}
		got := wire.progressOf(token)
		onCall := got["tools/call"]
		if len(onCall) < least {
			t.Errorf("call %d: %d progress notifications on its POST stream, want %d at least; by stream: %v", i, len(onCall), least, got)
		}
		for j, v := range onCall {
			if v != float64(j+1) {
				t.Errorf("call %d: progress on its stream came as %v, want 1, 2, 3 … in order", i, onCall)
				break
			}
		}
		if len(got) != 1 {
			t.Errorf("call %d: progress on streams other than its POST: %v", i, got)
		}
		// The SDK got them all, as they came. Its handler runs on a
		// goroutine of its own while the answer is handed over at once
		// (jsonrpc2's handleAsync), so the last ones may still be on
		// their way to it: wait for as many as the wire had.
		var h []float64
		for wait := time.After(10 * time.Second); ; {
			mu.Lock()
			h = slices.Clone(handled[token])
			mu.Unlock()
			if len(h) >= len(onCall) {
				break
			}
			select {
			case <-came:
				continue
			case <-wait:
			}
			break
		}
		if !slices.Equal(h, onCall) {
			t.Errorf("call %d: the SDK's progress handler got %v, the wire had %v", i, h, onCall)
		}
	}
}

// TestGoSDKJoinStateless: a Go SDK client speaking 2026-07-28 over stdio
// to pagemux --join reaches the HTTP pagemux in that revision (server/discover
// through the bridge, no fallback to initialize), calls tools, and cancels a
// call, which the bridge carries by ending that call's HTTP request.
func TestGoSDKJoinStateless(t *testing.T) {
	t.Parallel()
	bin := pagemuxBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--auth-token", "joiner=joiner-secret-1", "--lock-mode=page", "--browser-url="+sharedChrome(t), "--log-level=warn")
	c := sdk.NewClient(&sdk.Implementation{Name: t.Name(), Version: "1"}, nil)
	bridge := exec.Command(bin, "--join", base+"/mcp", "--auth-token", "joiner-secret-1", "--log-level=warn")
	bridgeLog := new(mcptest.LockedBuffer)
	bridge.Stderr = bridgeLog
	cs, err := c.Connect(t.Context(), &sdk.CommandTransport{Command: bridge}, nil)
	if err != nil {
		t.Fatalf("the Go SDK through --join: %v\n%s", err, bridgeLog.String())
	}
	defer func() {
		cs.Close()
		if t.Failed() {
			t.Logf("bridge log:\n%s\nserver log:\n%s", bridgeLog.String(), stderr.String())
		}
	}()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("through --join the Go SDK speaks %s, want the stateless 2026-07-28", v)
	}
	page := selectedPage(t, sdkCall(t, t.Context(), cs, "new_page", map[string]any{"url": site.URL + "/form.html"}))
	if got := sdkCall(t, t.Context(), cs, "evaluate_script", map[string]any{"pageId": page, "function": "() => location.pathname"}); !strings.Contains(got, "/form.html") {
		t.Errorf("evaluate_script through --join: %s", got)
	}
	cancelLongCall(t, cs, base, "joiner-secret-1", page)
}
