package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/tmpcheck"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		err  string
		chk  func(*config) string
	}{
		{nil, "", func(c *config) string {
			if c.lockMode != "global" || c.lockWait != 2*time.Minute || c.maxQueue != 64 || c.browser.Headful || !c.isolated || c.browser.SnapshotSource != "auto" {
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
		{[]string{"--log-format=xml"}, `--log-format "xml": want text or json`, nil},
		{[]string{"--rules=testdata/rules-bad.yaml"}, `--rules: testdata/rules-bad.yaml:2: agents[0] (agent "reader", line 2): tools: "evaluate" is neither a tool nor a group`, nil},
		{[]string{"--rules=testdata/no-such-rules.yaml"}, "--rules: rules: open testdata/no-such-rules.yaml: no such file", nil},
		{[]string{"--rules=docs/rules/shop.yaml", "--log-format=json"}, "", func(c *config) string {
			if c.rules == nil || c.rules.Count() == 0 || c.logFormat != "json" {
				return fmt.Sprintf("rules %v, log format %q", c.rules.Summary(), c.logFormat)
			}
			return ""
		}},
		{[]string{"--secrets=testdata/secrets-short.env"}, "--secrets: testdata/secrets-short.env:1 (SITE_PASSWORD): a secret needs at least 4 characters", nil},
		{[]string{"--agent-secrets=bob=testdata/secrets.env"}, `"bob" names no --auth-token`, nil},
		{[]string{"--http=127.0.0.1:0", "--auth-token=bob=s3cret-token", "--agent-secrets=bob=testdata/secrets.env", "--secrets=testdata/secrets.env"}, "", func(c *config) string {
			if c.secrets.all.Len() != 1 || c.secrets.byToken["bob"].Len() != 1 {
				return fmt.Sprintf("secrets %v, by token %v", c.secrets.all.Names(), c.secrets.byToken)
			}
			return ""
		}},
		{[]string{"--snapshot-source=dom"}, `--snapshot-source "dom": want auto, page or chrome`, nil},
		{[]string{"--snapshot-source=chrome"}, "", func(c *config) string {
			if c.browser.SnapshotSource != "chrome" {
				return "snapshot source " + c.browser.SnapshotSource
			}
			return ""
		}},
		{[]string{"--browser-url=http://127.0.0.1:9222", "--ws-endpoint=ws://x"}, "not both", nil},
		{[]string{"--browser-url=http://127.0.0.1:9222", "--browser-url=http://127.0.0.1:9223"}, "", func(c *config) string {
			if c.browser.BrowserURL != "http://127.0.0.1:9222" || !slices.Equal(c.browser.Pool, []string{"http://127.0.0.1:9223"}) {
				return fmt.Sprintf("a pool of two: %q then %q", c.browser.BrowserURL, c.browser.Pool)
			}
			return ""
		}},
		{[]string{"--browser-url=http://127.0.0.1:9222", "--browser-url=http://127.0.0.1:9222"}, "given twice", nil},
		{[]string{"--own-context"}, "give --browser-url or --ws-endpoint", nil},
		{[]string{"--own-context", "--browser-url=http://127.0.0.1:9222", "--browser-url=http://127.0.0.1:9223"}, "not a pool", nil},
		{[]string{"--own-context", "--ws-endpoint=ws://127.0.0.1:9222/devtools/browser/x"}, "", func(c *config) string {
			if !c.browser.OwnContext || c.browser.WSEndpoint == "" {
				return fmt.Sprintf("browser config %+v, want its own context on the endpoint", c.browser)
			}
			return ""
		}},
		{[]string{"--lock-mod=page"}, "unknown flag --lock-mod: did you mean --lock-mode?", nil},
		{[]string{"--lock-timeout", "soon"}, `--lock-timeout: invalid value "soon"`, nil},
		{[]string{"--max-queue=-1"}, "--max-queue", nil},
		{[]string{"stray"}, "unexpected argument", nil},
		{[]string{"--join", "http://127.0.0.1:8931/mcp"}, "", func(c *config) string {
			if c.joinAgent != fmt.Sprintf("join-%d", os.Getpid()) {
				return "a bridge without --agent is named " + c.joinAgent
			}
			return ""
		}},
		{[]string{"--join", "http://127.0.0.1:8931/mcp", "--agent", "worker-1"}, "", func(c *config) string {
			if c.joinAgent != "worker-1" {
				return "--agent: " + c.joinAgent
			}
			return ""
		}},
		{[]string{"--join", "http://127.0.0.1:8931/mcp", "--agent", "two words"}, "--agent", nil},
		{[]string{"--agent", "worker-1"}, "give it with --join", nil},
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

// The real binary serves MCP over stdio, as an MCP client starts it. Both
// lock modes attach to the tests' shared Chrome (sharedChrome), which saves
// Chrome's starts (a CPU-s each); the exit tests below run pagemux with a
// Chrome of its own.
func TestStdioBinary(t *testing.T) {
	t.Parallel()
	bin := pagemuxBinary(t)
	chrome := sharedChrome(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Stdio</title><button onclick="this.textContent='clicked'">Press</button>`)
	}))
	defer site.Close()
	for _, mode := range []string{"global", "page"} {
		t.Run(mode, func(t *testing.T) {
			c, err := client.NewStdioMCPClient(bin, nil, "--lock-mode="+mode, "--browser-url="+chrome, "--log-level=warn")
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
				r := mcptest.Call(ctx, c, name, args)
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				if r.IsError {
					t.Fatalf("%s: %s", name, r.Text)
				}
				return r.Text
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
	t.Parallel()
	bin := pagemuxBinary(t)
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
		var m struct{ JSONRPC string }
		if json.Unmarshal([]byte(line), &m) != nil || m.JSONRPC != "2.0" {
			t.Fatalf("stdout has a line that is not JSON-RPC: %q", line)
		}
	}
	if !strings.Contains(stdout.String(), `1: about:blank [selected]`) {
		t.Fatalf("list_pages answer missing:\n%s", stdout.String())
	}
	if left := tmpcheck.LeftBehind(tmp); len(left) > 0 {
		t.Fatalf("left behind in TMPDIR: %v", left)
	}
}

// Started on a terminal, pagemux says what it is instead of sitting silent.
func TestTerminalHint(t *testing.T) {
	bin := pagemuxBinary(t)
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

// The hint is for a terminal on stdio alone: not for /dev/null as stdin (a
// character device, as a service manager or a script gives), and not for
// --http, which reads no MCP from stdin.
func TestNoTerminalHint(t *testing.T) {
	bin := pagemuxBinary(t)
	t.Run("dev-null", func(t *testing.T) {
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer devNull.Close()
		cmd := exec.CommandContext(t.Context(), bin, "--log-level=error")
		cmd.Stdin = devNull
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "speaks MCP on stdin/stdout") {
			t.Fatalf("stdin %s: %v, output:\n%s", os.DevNull, err, out)
		}
	})
	t.Run("http", func(t *testing.T) {
		script, err := exec.LookPath("script")
		if err != nil {
			t.Fatalf("this test needs script(1) from util-linux to get a terminal: %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, "-qec", bin+" --http 127.0.0.1:0", "/dev/null")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		// The hint would come before the server says it listens.
		var said []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			said = append(said, sc.Text())
			if strings.Contains(sc.Text(), "serving MCP over Streamable HTTP") {
				break
			}
		}
		text := strings.Join(said, "\n")
		if !strings.Contains(text, "serving MCP over Streamable HTTP") || strings.Contains(text, "speaks MCP on stdin/stdout") {
			t.Fatalf("--http on a terminal said:\n%s", text)
		}
	})
}

func TestMain(m *testing.M) {
	// Started as binName (pagemuxBinary), this binary is pagemux: its flags
	// are pagemux's, not the tests'.
	if filepath.Base(os.Args[0]) == binName {
		main()
		os.Exit(0)
	}
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	if pagemuxBin != "" {
		os.RemoveAll(filepath.Dir(pagemuxBin))
	}
	os.Exit(code)
}

// A never-ending script cannot hold up an exit.
const (
	busyScript    = `{"function":"() => { while (true) {} }"}`
	pendingScript = `{"function":"() => new Promise(() => {})"}`
)

// SIGTERM and SIGINT stop pagemux at once, with a call in flight: calls
// cancelled, Chrome closed (all its processes), the profile and Chrome's
// singleton directory removed, exit status 0.
func TestExitOnSignal(t *testing.T) {
	t.Parallel()
	// Run under nohup, this binary and so pagemux would start with SIGHUP
	// ignored, and started with & by a shell without job control, with
	// SIGINT ignored; pagemux rightly leaves an ignored signal alone. Caught
	// here, each is at its default again in the processes started from now on.
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
	for _, tt := range []struct {
		name   string
		sig    syscall.Signal
		script string
		tmp    func(*testing.T) string
	}{
		{"SIGTERM", syscall.SIGTERM, busyScript, shortTmp},
		{"SIGINT", syscall.SIGINT, pendingScript, (*testing.T).TempDir},
		{"SIGHUP", syscall.SIGHUP, busyScript, shortTmp},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := tt.tmp(t)
			s := startServer(t, tmp)
			chrome := s.startChrome()
			s.call(3, "evaluate_script", tt.script)
			s.waitLog(`msg="tool call runs" tool=evaluate_script`)
			sent := time.Now()
			s.cmd.Process.Signal(tt.sig)
			took := s.waitExit(sent, 10*time.Second)
			t.Logf("exit %s after %s, %d Chrome processes", took, tt.name, len(chrome))
			s.exitedCleanly()
			noChromeLeft(t, chrome)
			if left := tmpcheck.LeftBehind(tmp); len(left) > 0 {
				t.Fatalf("left behind in TMPDIR: %v", left)
			}
		})
	}
}

// stdin closed with a never-ending call in flight: the call runs to its
// --tool-timeout and is answered, then pagemux exits with nothing left.
// The script spins a CPU in Chrome until it is terminated: a 1 s bound
// (stdin closes within milliseconds of the call starting) keeps that short.
func TestExitOnStdinCloseWithCallInFlight(t *testing.T) {
	t.Parallel()
	tmp := shortTmp(t)
	// A call that never ends is answered at its --tool-timeout, then
	// pagemux exits.
	s := startServer(t, tmp, "--tool-timeout=1s")
	chrome := s.startChrome()
	s.call(3, "evaluate_script", busyScript)
	s.waitLog(`msg="tool call runs" tool=evaluate_script`)
	closed := time.Now()
	s.stdin.Close()
	took := s.waitExit(closed, 15*time.Second)
	t.Logf("exit %s after stdin closed, %d Chrome processes", took, len(chrome))
	s.exitedCleanly()
	if a := s.answer(3); !strings.Contains(a, "limit (--tool-timeout)") {
		t.Errorf("the call in flight when stdin closed was answered %s, want its --tool-timeout error", a)
	}
	noChromeLeft(t, chrome)
	if left := tmpcheck.LeftBehind(tmp); len(left) > 0 {
		t.Fatalf("left behind in TMPDIR: %v", left)
	}
}

// The client dies during a long call, so its end of stdout is closed and
// the answer cannot be written: pagemux ends cleanly (no SIGPIPE), with
// Chrome and its profile gone. With stdin left open, the broken stdout is
// the only sign the client left, seen when the answer is written; a killed
// client closes both.
func TestExitWhenClientGone(t *testing.T) {
	t.Parallel()
	for _, closeStdin := range []bool{false, true} {
		name := "stdout closed"
		if closeStdin {
			name = "stdin and stdout closed"
		}
		t.Run(name, func(t *testing.T) {
			tmp := shortTmp(t)
			s := startServer(t, tmp)
			chrome := s.startChrome()
			s.call(3, "evaluate_script", `{"function":"() => new Promise(r => setTimeout(() => r(1), 3000))"}`)
			s.stdout.Close()
			if closeStdin {
				s.stdin.Close()
			}
			gone := time.Now()
			took := s.waitExit(gone, 15*time.Second)
			t.Logf("exit %s after the client went (%s; the call ends after 3 s)", took, name)
			s.exitedCleanly()
			noChromeLeft(t, chrome)
			if left := tmpcheck.LeftBehind(tmp); len(left) > 0 {
				t.Fatalf("left behind in TMPDIR: %v", left)
			}
			if !closeStdin && !strings.Contains(s.stderr.String(), "client went away") {
				t.Errorf("stderr does not say the client went away:\n%s", s.stderr.String())
			}
		})
	}
}

// SIGKILL leaves pagemux no time to clean up: the kernel kills its Chrome
// (every process of it ends), and the next pagemux removes the profile.
func TestKilledServerLeavesNoChrome(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	s := startServer(t, tmp)
	chrome := s.startChrome()
	s.call(3, "evaluate_script", busyScript)
	s.waitLog(`msg="tool call runs" tool=evaluate_script`)
	s.cmd.Process.Kill()
	<-s.exited
	killed := time.Now()
	noChromeLeft(t, chrome)
	t.Logf("%d Chrome processes gone %s after pagemux was killed", len(chrome), time.Since(killed))
	left := tmpcheck.LeftBehind(tmp)
	profile := filepath.Join(tmp, fmt.Sprintf("pagemux-%d-", s.cmd.Process.Pid))
	if !slices.ContainsFunc(left, func(p string) bool { return strings.HasPrefix(p, profile) }) {
		t.Fatalf("no profile of the killed pagemux to sweep (%v): the test proves nothing", left)
	}

	// The sweep logs after it removed the directories, and the log reaches
	// the test through a pipe: wait for the line, then look.
	next := startServer(t, tmp)
	next.waitLog("removed the profile of a pagemux that is gone")
	if left := tmpcheck.LeftBehind(tmp); len(left) > 0 {
		t.Fatalf("the next pagemux logged its sweep but left %v", left)
	}
	next.stdin.Close()
	next.waitExit(time.Now(), 15*time.Second)
	next.exitedCleanly()
	if left := tmpcheck.LeftBehind(tmp); len(left) > 0 {
		t.Fatalf("left behind in TMPDIR: %v", left)
	}
}
