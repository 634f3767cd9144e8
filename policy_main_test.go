package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// ATTACK: an agent over HTTP tries to read the host's files, Chrome's own
// pages and pagemux's own endpoints, by the tools and by pages it makes
// redirect, open popups, and frame them. Every one is refused with what to
// do, and no answer shows what it tried to read.
func TestURLPolicyAttacksHTTP(t *testing.T) {
	t.Parallel()
	bin := pagemuxBinary(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		to := r.URL.Query().Get("to")
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, to, http.StatusFound)
		case "/iframe":
			fmt.Fprintf(w, `<title>framer</title><iframe src="%s"></iframe>`, to)
		case "/blocked":
			fmt.Fprint(w, `<title>blocked page</title><p>BLOCKED-CONTENT`)
		default:
			fmt.Fprint(w, `<title>home</title><p>home page`)
		}
	}))
	defer site.Close()
	_, sitePort, _ := net.SplitHostPort(site.Listener.Addr().String())
	base, stderr := startHTTPServer(t, bin, "--auth-token", "alice=alice-secret-1", "--log-level=warn",
		"--blocked-url", "*://127.0.0.1:"+sitePort+"/blocked*", "--allowed-url", "http://127.0.0.1:*/*", "--allowed-url", "localhost")
	_, ownPort, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	c := mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer alice-secret-1"}, "")
	home := site.URL + "/home"
	if text, isErr := callTool(t, c, "new_page", map[string]any{"url": home}); isErr {
		t.Fatalf("new_page: %s", text)
	}
	secrets := []string{"root:", "Command Line", "Profile Path", `"chrome":`, "BLOCKED-CONTENT", "DevToolsActivePort"}
	checkNothingShown := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q:\n%s", what, s, text)
			}
		}
	}
	refusals := []struct{ url, want string }{
		{"file:///etc/shadow", "file: URLs are refused over HTTP"},
		{"file:///etc/passwd", "start pagemux with --allow-file-navigations"},
		{"FILE:///etc/passwd", "--allow-file-navigations"},
		{"view-source:file:///etc/passwd", "view-source: URLs"},
		{"chrome://version", "chrome: URLs are Chrome's own pages"},
		{"about:version", "always refused"},
		{"devtools://devtools/bundled/inspector.html", "devtools: URLs"},
		{"chrome-extension://aaaabbbbccccddddeeeeffffgggghhhh/manifest.json", "chrome-extension: URLs"},
		{"http://127.1:" + ownPort + "/healthz", "an endpoint of pagemux"},
		{"http://localhost:" + ownPort + "/metrics", "an endpoint of pagemux"},
		{"http://2130706433:" + ownPort + "/mcp", "an endpoint of pagemux"},
		{site.URL + "/blocked", "matches --blocked-url"},
		{"http://example.test/", "matches no --allowed-url pattern"},
	}
	for _, r := range refusals {
		for _, tool := range []string{"navigate_page", "new_page"} {
			text, isErr := callTool(t, c, tool, map[string]any{"url": r.url})
			if !isErr || !strings.Contains(text, r.want) || !strings.Contains(text, "refused") {
				t.Errorf("%s %s: error=%v %q, want a refusal with %q", tool, r.url, isErr, text, r.want)
			}
			checkNothingShown(tool+" "+r.url, text)
		}
		snap, isErr := callTool(t, c, "take_snapshot", nil)
		if isErr || !strings.Contains(snap, "home page") {
			t.Errorf("after refusing %s the page moved: error=%v\n%s", r.url, isErr, snap)
		}
		checkNothingShown("take_snapshot after "+r.url, snap)
	}
	// Pages that take a tab there themselves.
	for _, u := range []string{
		site.URL + "/redirect?to=http://0x7f000001:" + ownPort + "/healthz",
		site.URL + "/redirect?to=" + site.URL + "/blocked",
		site.URL + "/iframe?to=http://localhost:" + ownPort + "/healthz",
		site.URL + "/iframe?to=" + site.URL + "/blocked",
	} {
		text, _ := callTool(t, c, "navigate_page", map[string]any{"url": u})
		checkNothingShown("navigate_page "+u, text)
		snap, _ := callTool(t, c, "take_snapshot", nil)
		checkNothingShown("take_snapshot after "+u, snap)
	}
	text, isErr := callTool(t, c, "navigate_page", map[string]any{"url": home})
	text, isErr = callTool(t, c, "evaluate_script", map[string]any{"function": `() => { window.open("http://127.0.0.1:` + ownPort + `/healthz"); window.open("` + site.URL + `/blocked"); return "opened" }`})
	if isErr {
		t.Fatalf("evaluate_script: %s", text)
	}
	list, _ := callTool(t, c, "list_pages", nil)
	for _, line := range strings.Split(list, "\n") {
		var id int
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "%d:", &id); err != nil {
			continue
		}
		snap, _ := callTool(t, c, "take_snapshot", map[string]any{"pageId": id})
		checkNothingShown(fmt.Sprintf("take_snapshot of page %d", id), snap)
		body, _ := callTool(t, c, "list_network_requests", map[string]any{"pageId": id})
		checkNothingShown(fmt.Sprintf("list_network_requests of page %d", id), body)
	}
	if strings.Contains(stderr.String(), "alice-secret-1") {
		t.Error("a secret reached the logs")
	}
}

// The stdio drop-in loads file: pages as chrome-devtools-mcp does, and
// --no-file-navigations refuses them. Its other spellings (--noFileNavigations,
// --fileNavigations=false) parse to the same config (TestNodeURLFlags), so
// they need no pagemux of their own here. Both attach to one Chrome of this
// test's (a Chrome's start is a CPU-s); each acts on the tab it opened to
// attach with. Not the tests' shared Chrome: there an HTTP pagemux, which
// refuses file: URLs, had the navigation fail with ERR_BLOCKED_BY_CLIENT.
func TestURLPolicyStdioFiles(t *testing.T) {
	t.Parallel()
	bin := pagemuxBinary(t)
	chrome := debuggableChrome(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "local.html")
	os.WriteFile(page, []byte(`<!doctype html><title>local</title><p>LOCAL-FILE-CONTENT`), 0o644)
	for _, tt := range []struct {
		flags []string
		loads bool
	}{{nil, true}, {[]string{"--no-file-navigations"}, false}} {
		c, err := client.NewStdioMCPClient(bin, nil, append([]string{"--log-level=warn", "--browser-url=" + chrome}, tt.flags...)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"},
		}}); err != nil {
			t.Fatal(err)
		}
		text, isErr := callTool(t, c, "navigate_page", map[string]any{"url": "file://" + page})
		snap, _ := callTool(t, c, "take_snapshot", nil)
		if tt.loads {
			if isErr || !strings.Contains(snap, "LOCAL-FILE-CONTENT") {
				t.Errorf("%q: the file: page did not load: %s\n%s", tt.flags, text, snap)
			}
		} else {
			if !isErr || !strings.Contains(text, "--no-file-navigations") || strings.Contains(snap, "LOCAL-FILE-CONTENT") {
				t.Errorf("%q: file: not refused: error=%v %s\n%s", tt.flags, isErr, text, snap)
			}
		}
		c.Close()
	}
}
