package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/mcptest"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHTTPServer starts the binary with --http and the given flags, waits
// for /healthz, and stops it with SIGTERM when the test ends. It returns the
// base URL and the server's stderr.
func startHTTPServer(t *testing.T, bin string, flags ...string) (string, *lockedBuffer) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"--http", addr}, flags...)...)
	stderr := new(lockedBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("pagemux --http did not exit on SIGTERM")
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return base, stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("pagemux --http never answered /healthz: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPBinary serves the real binary over Streamable HTTP with a token:
// two clients share its browser, /healthz reports Chrome, a request without
// the token gets 401, and SIGTERM ends it.
func TestHTTPBinary(t *testing.T) {
	bin := buildBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--auth-token", "lead=lead-secret-1", "--auth-token", "sub=sub-secret-2", "--lock-mode=page", "--log-level=warn")
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d", resp.StatusCode)
	}

	connect := func(secret string) *client.Client {
		return mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + secret}, "")
	}
	call := func(c *client.Client, tool string, args map[string]any) string {
		t.Helper()
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		text := res.Content[0].(mcp.TextContent).Text
		if res.IsError {
			t.Fatalf("%s: %s", tool, text)
		}
		return text
	}
	lead, sub := connect("lead-secret-1"), connect("sub-secret-2")
	call(lead, "new_page", map[string]any{"url": site.URL + "/form.html"})
	call(sub, "new_page", map[string]any{"url": site.URL + "/page2.html"})
	// --pages owned (the default over HTTP): each agent sees its own pages.
	if got := call(sub, "list_pages", nil); strings.Contains(got, "/form.html") || !strings.Contains(got, "/page2.html") {
		t.Errorf("sub's pages:\n%s", got)
	}
	if got := call(lead, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(got, "/form.html") {
		t.Errorf("lead's selected page over HTTP: %s", got)
	}

	resp, err = http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var health struct {
		Chrome bool `json:"chrome"`
	}
	if json.Unmarshal(body, &health) != nil || !health.Chrome {
		t.Errorf("/healthz after calls: %s", body)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %v %v", err, resp.Status)
	} else {
		resp.Body.Close()
	}
	req.Header.Set("Authorization", "Bearer lead-secret-1")
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`pagemux_tool_call_seconds_count{outcome="ok",tool="evaluate_script"} 1`,
		`pagemux_tool_call_seconds_count{outcome="ok",tool="new_page"} 2`,
		`pagemux_lock_wait_seconds_count{lock="page",mode="page"}`, "pagemux_pages_open", "pagemux_chrome_launches_total 1", "pagemux_agents 2"} {
		if !strings.Contains(string(scraped), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(stderr.String(), "secret-") {
		t.Errorf("a secret reached the logs:\n%s", stderr.String())
	}
}

// TestHTTPFlags: --http refuses what would expose the browser, and tokens
// are checked without echoing their secrets.
func TestHTTPFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:8931"}, "without authentication"},
		{[]string{"--http", "8931"}, "want HOST:PORT"},
		{[]string{"--http", "127.0.0.1:8931", "--auth-token", "lead=short"}, "shorter than 8"},
		{[]string{"--http", "127.0.0.1:8931", "--auth-token", "justasecretvalue"}, "NAME=SECRET"},
		{[]string{"--auth-token", "lead=long-enough-secret"}, "need --http"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "justasecretvalue") {
			t.Errorf("%v: the error echoes the secret: %v", tt.args, err)
		}
	}
	c, err := parseFlags([]string{"--http", "0.0.0.0:8931", "--auth-token", "lead=long-enough-secret"}, io.Discard)
	if err != nil || c.http.Tokens["lead"] != "long-enough-secret" {
		t.Errorf("a token allows any address: %v %+v", err, c)
	}
}

// TestJoinBinary: stdio clients share one server's browser through --join,
// and the TypeScript SDK's parallel calls keep their order across the
// bridge's HTTP requests.
func TestJoinBinary(t *testing.T) {
	dir, bin := clientsDir(t), buildBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, _ := startHTTPServer(t, bin, "--auth-token", "agents=agents-secret", "--lock-mode=page", "--log-level=warn")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "order.mjs", site.URL, bin, "--join", base+"/mcp", "--auth-token", "agents-secret", "--log-level=error")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("order.mjs through --join: %v\n%s", err, out)
	}
}
