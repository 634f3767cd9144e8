package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// TestStorageStateFlag: pagemux --storage-state FILE starts logged in: the
// first page it loads sends the file's httpOnly cookie, and its first
// script reads the file's localStorage. A bad file stops pagemux at start,
// saying where it is wrong. The real binary on a Chrome of its own, as the
// cookies go browser-wide.
func TestStorageStateFlag(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := "none"
		if c, err := r.Cookie("session"); err == nil {
			session = c.Value
		}
		fmt.Fprintf(w, `<!doctype html><title>%s</title><script>window.token = localStorage.getItem("token");</script>`, session)
	}))
	defer site.Close()
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	host := strings.TrimPrefix(site.URL, "http://")
	host = host[:strings.Index(host, ":")]
	if err := os.WriteFile(state, []byte(`{"cookies": [{"name": "session", "value": "s3ss10n", "domain": "`+host+`", "path": "/", "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"}],
 "origins": [{"origin": "`+site.URL+`", "localStorage": [{"name": "token", "value": "t0k3n"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"cookies": [{"name": "sid", "value": "hunter2"}]}`), 0o600)
	if _, err := parseFlags([]string{"--storage-state", bad}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "cookies[0] (sid) has no domain") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("--storage-state with a cookie without a domain: %v", err)
	}

	c, err := client.NewStdioMCPClient(pagemuxBinary(t), []string{"TMPDIR=" + shortTmp(t)}, "--storage-state", state, "--log-level=warn")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION}}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"navigate_page", map[string]any{"url": site.URL + "/"}, ""},
		{"evaluate_script", map[string]any{"function": "() => document.title + ' ' + window.token"}, `"s3ss10n t0k3n"`},
	} {
		a := mcptest.Call(ctx, c, step.tool, step.args)
		if a.Err != nil || a.IsError || !strings.Contains(a.Text, step.want) {
			t.Fatalf("%s: %v %s\nwant %s", step.tool, a.Err, a.Text, step.want)
		}
	}
}
