package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		err  string
		chk  func(*config) string
	}{
		{nil, "", func(c *config) string {
			if c.lockMode != "global" || c.lockWait != 2*time.Minute || c.maxQueue != 64 || c.browser.Headful || !c.isolated {
				return fmt.Sprintf("defaults: %+v", c)
			}
			return ""
		}},
		{[]string{"--lock-mode=page", "--viewport", "1280x720", "--chrome-arg=--lang=de", "--chrome-arg", "--mute-audio", "--headless=false"}, "", func(c *config) string {
			if c.lockMode != "page" || c.browser.ViewportWidth != 1280 || c.browser.ViewportHeight != 720 || len(c.browser.ChromeArgs) != 2 || !c.browser.Headful {
				return fmt.Sprintf("parsed: %+v", c)
			}
			return ""
		}},
		{[]string{"--viewport=wide"}, "want WIDTHxHEIGHT", nil},
		{[]string{"--browser-url=http://127.0.0.1:9222", "--ws-endpoint=ws://x"}, "not both", nil},
		{[]string{"--max-queue=-1"}, "--max-queue", nil},
		{[]string{"stray"}, "unexpected argument", nil},
	}
	for _, tt := range tests {
		c, err := parseFlags(tt.args, &bytes.Buffer{})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if msg := tt.chk(c); msg != "" {
			t.Errorf("%v: %s", tt.args, msg)
		}
	}
}

// The real binary serves MCP over stdio, as an MCP client starts it.
func TestStdioBinary(t *testing.T) {
	bin := buildBinary(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Stdio</title><button onclick="this.textContent='clicked'">Press</button>`)
	}))
	defer site.Close()
	for _, mode := range []string{"global", "page"} {
		t.Run(mode, func(t *testing.T) {
			c, err := client.NewStdioMCPClient(bin, nil, "--lock-mode="+mode, "--log-level=warn")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
				ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if init.ServerInfo.Name != "pagemux" {
				t.Fatalf("server name %q", init.ServerInfo.Name)
			}
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tools) < 15 {
				t.Fatalf("%d tools", len(list.Tools))
			}
			call := func(name string, args map[string]any) string {
				t.Helper()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
				if err != nil {
					t.Fatal(err)
				}
				text := res.Content[0].(mcp.TextContent).Text
				if res.IsError {
					t.Fatalf("%s: %s", name, text)
				}
				return text
			}
			call("navigate_page", map[string]any{"url": site.URL})
			snap := call("take_snapshot", nil)
			uid := strings.TrimPrefix(strings.Fields(lineWith(snap, `button "Press"`))[0], "uid=")
			call("click", map[string]any{"uid": uid})
			if got := call("evaluate_script", map[string]any{"function": "() => document.querySelector('button').textContent"}); !strings.Contains(got, `"clicked"`) {
				t.Fatalf("after click: %s", got)
			}
		})
	}
}

func lineWith(text, needle string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, needle) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// --help and --version answer on the right stream.
func TestHelpAndVersion(t *testing.T) {
	var stderr bytes.Buffer
	if _, err := parseFlags([]string{"--help"}, &stderr); err == nil {
		t.Fatal("--help gave no ErrHelp")
	}
	for _, want := range []string{"--lock-mode", "--lock-timeout", "--max-queue", "--executable-path", "--browser-url", "--renderer-process-limit", `"command"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("--help lacks %s", want)
		}
	}
}

// When the client goes away (stdin closes), pagemux closes Chrome and removes
// its temporary profile.
func TestExitOnStdinClose(t *testing.T) {
	bin := buildBinary(t)
	tmp := t.TempDir()
	cmd := exec.Command(bin, "--log-level=debug")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_pages","arguments":{}}}
`)
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("pagemux did not exit when stdin closed\n%s", stderr.String())
	}
	// stdout holds only JSON-RPC messages.
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(line, `{"jsonrpc":"2.0"`) {
			t.Fatalf("stdout has a line that is not JSON-RPC: %q", line)
		}
	}
	if !strings.Contains(stdout.String(), `1: about:blank [selected]`) {
		t.Fatalf("list_pages answer missing:\n%s", stdout.String())
	}
	if leaked, _ := filepath.Glob(filepath.Join(tmp, "chromedp-runner*")); len(leaked) > 0 {
		t.Fatalf("temporary profile left behind: %v", leaked)
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildBinary builds pagemux once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pagemux-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "pagemux")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// Started on a terminal, pagemux says what it is instead of sitting silent.
func TestTerminalHint(t *testing.T) {
	bin := buildBinary(t)
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("this test needs script(1) from util-linux to get a terminal: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// script gives pagemux a terminal as stdin; its end of input ends pagemux.
	out, _ := exec.CommandContext(ctx, script, "-qec", bin+" --log-level=error", "/dev/null").CombinedOutput()
	for _, want := range []string{"speaks MCP on stdin/stdout", `"mcpServers"`, "--help"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("terminal hint lacks %q:\n%s", want, out)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}
