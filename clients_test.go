package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/soak"
)

// These tests drive the real binary with MCP clients pagemux did not write:
// the official TypeScript SDK (clients/order.mjs) and the MCP Inspector CLI,
// both installed from npm by ./scripts/setup into clients/node_modules.

// clientsDir returns clients/ once its packages are installed, and fails
// the test, saying what to run, when they are not.
func clientsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("clients")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("these tests need Node.js: run ./scripts/setup")
	}
	for _, p := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
			t.Fatalf("%s is not installed in clients/node_modules: run ./scripts/setup", p)
		}
	}
	return dir
}

// clientCommand runs name (node, or a script of clients/node_modules/.bin)
// in clients/ with the Node setup installed them with: clients/runtime's,
// where the machine's is too old for the Inspector (scripts/setup), first
// on PATH, so that scripts starting with "#!/usr/bin/env node" get it too.
func clientCommand(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	runtime := filepath.Join(dir, "runtime", "node_modules", ".bin")
	_, err := os.Stat(filepath.Join(runtime, "node"))
	hasRuntime := err == nil
	switch {
	case name != "node":
		name = filepath.Join(dir, "node_modules", ".bin", name)
	case hasRuntime:
		name = filepath.Join(runtime, "node")
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if hasRuntime {
		cmd.Env = append(os.Environ(), "PATH="+runtime+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return cmd
}

// TestTypeScriptSDK: the SDK sends ten tool calls at once; pagemux runs them
// in the order sent, in both lock modes, and an aborted call frees its page.
// It sends 8 such bursts in each mode, 30 with PAGEMUX_SOAK=1: each is 11
// calls through a -race pagemux (TestBurstOrder checks the order in
// process). Both modes attach to the tests' shared Chrome (sharedChrome).
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	dir, bin := clientsDir(t), pagemuxBinary(t)
	chrome := sharedChrome(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	for _, mode := range []string{"global", "page"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := clientCommand(ctx, dir, "node", "order.mjs", site.URL, bin, "--lock-mode="+mode, "--browser-url="+chrome, "--log-level=error")
			cmd.Env = append(cmd.Environ(), fmt.Sprintf("ORDER_BURSTS=%d", soak.N(8, 30)))
			out, err := cmd.Output()
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			if err != nil {
				t.Fatalf("order.mjs: %v\n%s%s", err, out, stderr)
			}
			var got struct {
				OK     bool `json:"ok"`
				Bursts int  `json:"bursts"`
			}
			if err := json.Unmarshal(out, &got); err != nil || !got.OK || got.Bursts == 0 {
				t.Fatalf("order.mjs said %q (%v)", out, err)
			}
		})
	}
}

// TestInspectorCLI lists the tools and calls one through the Inspector CLI,
// on the tests' shared Chrome (sharedChrome).
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	dir, bin := clientsDir(t), pagemuxBinary(t)
	inspect := func(t *testing.T, args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := clientCommand(ctx, dir, "mcp-inspector", append([]string{"--cli", bin, "--log-level=error", "--lock-mode=page", "--browser-url=" + sharedChrome(t)}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("inspector %v: %v\n%s%s", args, err, out, stderr)
		}
		return out
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(inspect(t, "--method", "tools/list"), &list); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = len(tool.InputSchema) > 0
	}
	for _, want := range []string{"new_page", "take_snapshot", "click", "evaluate_script", "lighthouse_audit"} {
		if !names[want] {
			t.Errorf("the Inspector sees no tool %s with a schema (it sees %d tools)", want, len(list.Tools))
		}
	}
	out := inspect(t, "--method", "tools/call", "--tool-name", "evaluate_script", "--tool-arg", "function=() => 6 * 7")
	if !strings.Contains(string(out), "42") {
		t.Errorf("evaluate_script through the Inspector: %s", out)
	}

	// --slim lists chrome-devtools-mcp's three slim tools alone.
	var slim struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(inspect(t, "--slim", "--method", "tools/list"), &slim); err != nil {
		t.Fatal(err)
	}
	if len(slim.Tools) != 3 {
		t.Errorf("--slim lists %d tools: %+v", len(slim.Tools), slim.Tools)
	}

	// A secret set as a cookie by name, in one process, is the value in
	// Chrome and shows as its name when another process lists it.
	const name = "pagemux_inspector_secret"
	env, err := filepath.Abs("testdata/secrets.env")
	if err != nil {
		t.Fatal(err)
	}
	secret := []string{"--secrets", env, "--method", "tools/call"}
	inspect(t, append(secret, "--tool-name", "cookie_set", "--tool-arg", "name="+name, "--tool-arg", "value=${SITE_PASSWORD}", "--tool-arg", "url=http://127.0.0.1/")...)
	listed := string(inspect(t, append(secret, "--tool-name", "cookie_list", "--tool-arg", "name="+name)...))
	if !strings.Contains(listed, "${SITE_PASSWORD}") || strings.Contains(listed, "hunter2") {
		t.Errorf("cookie_list with --secrets: %s", listed)
	}
	plain := string(inspect(t, "--method", "tools/call", "--tool-name", "cookie_list", "--tool-arg", "name="+name))
	if !strings.Contains(plain, "hunter2") {
		t.Errorf("without --secrets the cookie's value should show, as Chrome has it: %s", plain)
	}
	inspect(t, "--method", "tools/call", "--tool-name", "cookie_delete", "--tool-arg", "name="+name, "--tool-arg", "url=http://127.0.0.1/")
}

// TestTeam: a lead agent over Streamable HTTP and three subagents through
// --join bridges (all three on one token), all with the TypeScript SDK,
// share one browser: each sees only its own tab and document, one's long
// call holds up no other, and /locks and /metrics show what happened. The
// four navigate and read their documents at once for 4 rounds, 10 with
// PAGEMUX_SOAK=1.
func TestTeam(t *testing.T) {
	t.Parallel()
	dir, bin := clientsDir(t), pagemuxBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer site.Close()
	base, stderr := startHTTPServer(t, bin, "--auth-token", "lead=lead-secret-1", "--auth-token", "team=team-secret-1", "--admin-token", "lead", "--lock-mode=page", "--browser-url="+sharedChrome(t), "--log-level=warn")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := clientCommand(ctx, dir, "node", "team.mjs", site.URL, base+"/mcp", "lead-secret-1", bin, "team-secret-1")
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("TEAM_ROUNDS=%d", soak.N(4, 10)))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("team.mjs: %v\n%s\nserver:\n%s", err, out, stderr.String())
	}
}

// TestClientsNode: the Node the clients run on is one every package in
// clients/ says it supports (the Inspector asks for >= 22.7.5, newer than
// Debian's), so that setup's npm ci printed no EBADENGINE warning.
func TestClientsNode(t *testing.T) {
	dir := clientsDir(t)
	out, err := clientCommand(t.Context(), dir, "node", "-e", `
const lock = require("./package-lock.json"), have = process.versions.node.split(".").map(Number);
const bad = [];
for (const [name, p] of Object.entries(lock.packages)) {
	const m = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(p.engines?.node ?? "");
	if (!m) continue;
	const want = m.slice(1).map(Number);
	const i = [0, 1, 2].find(i => have[i] !== want[i]);
	if (i !== undefined && have[i] < want[i]) bad.push(name + " wants node " + p.engines.node);
}
console.log(JSON.stringify({node: process.versions.node, bad}));
`).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Node string   `json:"node"`
		Bad  []string `json:"bad"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(got.Bad) > 0 {
		t.Errorf("clients/ runs on node %s, which these packages do not support (run ./scripts/setup): %v", got.Node, got.Bad)
	}
}
