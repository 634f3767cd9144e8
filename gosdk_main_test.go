package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	bin := buildBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--lock-mode=page", "--log-level=warn")
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
