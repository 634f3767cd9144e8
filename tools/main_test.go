package tools

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/testchrome"
	"github.com/pagemux/pagemux/internal/tmpcheck"
	"github.com/pagemux/pagemux/lighthouse"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
	"go.uber.org/goleak"
)

// The tests drive a real Chrome over real MCP: mcp-go's in-process transport,
// and its stdio transport over pipes where stdio itself is under test.
// Each lock mode has one shared server and browser, started on first use;
// each test opens its own pages and names them by pageId.

var (
	testSite  *httptest.Server
	sharedMu  sync.Mutex
	openCount atomic.Int64
	shared    = map[pagelock.Mode]*testEnv{}
)

func TestMain(m *testing.M) {
	if _, err := (browser.Config{}).ResolveExecPath(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the tools tests need Chrome:", err)
		os.Exit(1)
	}
	// Profiles go to a directory of this test binary's own, so that packages
	// tested in parallel do not see each other's.
	tmp, err := os.MkdirTemp("", "pagemux-tools-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("TMPDIR", tmp)
	before := goleak.IgnoreCurrent()
	testSite = httptest.NewServer(siteHandler())
	code := m.Run()
	for _, e := range shared {
		e.close()
	}
	if sharedFull != nil {
		sharedFull.close()
	}
	closeLeases() // lease_test.go
	lighthouse.CloseIdle()
	testSite.Close()
	if code == 0 {
		// Every server, browser and call of the tests is done: no goroutine
		// of theirs may be left, such as a call whose lock was never given back.
		// mcp-go keeps each task until its TTL on a goroutine of its own,
		// asleep (tasks.go): the tasks tests leave some behind.
		if err := goleak.Find(before, goleak.IgnoreAnyFunction("github.com/mark3labs/mcp-go/server.(*MCPServer).scheduleTaskCleanup")); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: goroutines left behind:", err)
			code = 1
		}
	}
	if leaked := tmpcheck.LeftBehind(tmp); len(leaked) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: temporary Chrome profiles or singleton directories left behind:", leaked)
		code = 1
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

// siteHandler serves testdata plus a JSON endpoint and a slow page.
func siteHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("../testdata")))
	// Chrome looks for a favicon when it likes, and a 404 for it would
	// be a console message arriving at any time (TestConsoleMessages
	// counted 9, then 10).
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/api/data", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		d, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(d) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>Slow</title><p>slow page after %d ms</p>", d)
	})
	mux.HandleFunc("/echo-headers", echoHeaders) // emulate_test.go
	mux.Handle("/net/", netHandler())            // network_test.go
	mux.HandleFunc("/slow.css", slowCSS)         // performance_test.go
	mux.HandleFunc("/cached", cachedNow)         // lighthouse_test.go
	return mux
}

// testEnv is one pagemux server, with its browser, and an MCP client on it.
type testEnv struct {
	srv    *Server
	b      *browser.Browser
	client *client.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// sharedEnv returns the server of a lock mode shared by the tests.
func sharedEnv(t *testing.T, mode pagelock.Mode) *testEnv {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if e, ok := shared[mode]; ok {
		return e
	}
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: mode, Timeout: time.Minute, MaxQueue: 64}, Kept: true})
	shared[mode] = e
	return e
}

// sharedFull is the server on the full Chrome (sharedFullEnv).
var sharedFull *testEnv

// sharedFullEnv returns a server in page mode on the full Chrome
// (testchrome.Full), shared by the tests of what the headless shell, which
// scripts/test gives the others, does not do: the --screen-info window,
// DevTools' own pages.
func sharedFullEnv(t *testing.T) *testEnv {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedFull == nil {
		sharedFull = newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64},
			Browser: browser.Config{ExecPath: testchrome.Full()}, Kept: true})
	}
	return sharedFull
}

// envOptions is what a test's server is made of. The zero value is a
// server of pagelock's and New's zero options on a headless Chrome of the
// zero browser.Config, reached in process and closed when the test ends.
type envOptions struct {
	Locks pagelock.Options
	// Server is the server's options; their Log is the suite's unless
	// set (testLogger).
	Server Options
	// Browser is the browser's config; its Logger (the server's Log) and
	// Headful (PAGEMUX_TEST_HEADFUL) are set here.
	Browser browser.Config
	// Kept leaves the server open when the test ends, for a caller that
	// closes it itself: the shared and leased servers, a test of closing.
	Kept bool
}

// newEnv starts a server and browser of o, with an MCP client on the
// server over the in-process transport. It is the one way these tests make
// a server; sharedEnv and leaseEnv hand out the ones tests share.
func newEnv(t *testing.T, o envOptions) *testEnv {
	t.Helper()
	log := o.Server.Log
	if log == nil {
		log = testLogger()
	}
	bc, sopts := o.Browser, o.Server
	bc.Logger, bc.Headful = log, os.Getenv("PAGEMUX_TEST_HEADFUL") != ""
	sopts.Log = log
	b := browser.New(bc)
	srv := New(b, pagelock.New(o.Locks), sopts)
	c, cancel, done := connect(t, srv, log, false)
	e := &testEnv{srv: srv, b: b, client: c, cancel: cancel, done: done}
	if !o.Kept {
		t.Cleanup(e.close)
	}
	return e
}

// connect starts an initialized MCP client of srv, over the stdio
// transport (pipes) or in process; cancel ends the stdio server, which
// closes done once it returned.
func connect(t *testing.T, srv *Server, log *slog.Logger, stdio bool) (c *client.Client, cancel context.CancelFunc, done chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan struct{})
	if stdio {
		clientRead, serverWrite := io.Pipe()
		serverRead, clientWrite := io.Pipe()
		go func() {
			defer close(done)
			_ = serve.ServeStdio(ctx, srv.MCP(), serverRead, serverWrite, serve.StdioOptions{Log: log})
			serverWrite.Close()
		}()
		c = client.NewClient(transport.NewIO(clientRead, clientWrite, io.NopCloser(strings.NewReader(""))))
	} else {
		close(done)
		c = client.NewClient(transport.NewInProcessTransport(srv.MCP()))
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "pagemux-test", Version: "1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c, cancel, done
}

// testLogger discards the log, unless PAGEMUX_TEST_LOG asks for it on
// stderr.
func testLogger() *slog.Logger {
	if os.Getenv("PAGEMUX_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (e *testEnv) close() {
	e.client.Close()
	e.cancel()
	<-e.done
	e.b.Close()
}

// result is a tool result as the tests read it.
type result struct {
	text    string
	isError bool
	images  []mcp.ImageContent
}

// callCtx calls a tool and returns its result; a protocol error fails the test.
func (e *testEnv) callCtx(ctx context.Context, t *testing.T, name string, args map[string]any) result {
	t.Helper()
	a := mcptest.Call(ctx, e.client, name, args)
	if a.Err != nil {
		t.Fatalf("%s %v: %v", name, args, a.Err)
	}
	// Tests share servers, so any call may have waited for another test's:
	// the wait notice is not part of what they check (guard_test.go does).
	return result{text: waitNotice.ReplaceAllString(a.Text, ""), isError: a.IsError, images: a.Images}
}

// waitNotice is the line a result gets when its call waited for a lock.
var waitNotice = regexp.MustCompile(`(?:^|\n)Waited \d+ ms for [^\n]+ \(held by [^\n]+\)$`)

func (e *testEnv) call(t *testing.T, name string, args map[string]any) result {
	t.Helper()
	return e.callCtx(t.Context(), t, name, args)
}

// ok calls a tool that must succeed and returns its text.
func (e *testEnv) ok(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	r := e.call(t, name, args)
	if r.isError {
		t.Fatalf("%s %v failed: %s", name, args, r.text)
	}
	return r.text
}

// fails calls a tool that must fail and returns its error text.
func (e *testEnv) fails(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	r := e.call(t, name, args)
	if !r.isError {
		t.Fatalf("%s %v succeeded, want an error: %s", name, args, r.text)
	}
	return r.text
}

// openPage opens path of the test site (or path, a whole http:// URL) in a
// new page, closed at the end of the test, and returns its id.
func (e *testEnv) openPage(t *testing.T, path string) int {
	t.Helper()
	// A URL no other page has, to find the new page in the list.
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	site := testSite.URL
	if strings.HasPrefix(path, "http://") { // a page of the test's own server
		site = ""
	}
	url := fmt.Sprintf("%s%s%sopen=%d", site, path, sep, openCount.Add(1))
	text := e.ok(t, "new_page", map[string]any{"url": url, "background": true})
	id := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "("+url+")") || strings.HasSuffix(line, " "+url) || strings.Contains(line, " "+url+" ") {
			n, _ := strconv.Atoi(line[:strings.Index(line, ":")])
			id = max(id, n)
		}
	}
	if id == 0 {
		t.Fatalf("new_page %s: no page with that URL in:\n%s", path, text)
	}
	t.Cleanup(func() {
		e.client.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "close_page", Arguments: map[string]any{"pageId": id}}})
	})
	return id
}

// uid finds the uid of the first snapshot line that contains needle.
func (e *testEnv) uid(t *testing.T, page int, needle string) string {
	t.Helper()
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": page})
	return uidIn(t, snap, needle)
}

func uidIn(t *testing.T, snap, needle string) string {
	t.Helper()
	for _, line := range strings.Split(snap, "\n") {
		if strings.Contains(line, needle) {
			f := strings.Fields(line)
			if len(f) > 0 && strings.HasPrefix(f[0], "uid=") {
				return strings.TrimPrefix(f[0], "uid=")
			}
		}
	}
	t.Fatalf("no line with %q in the snapshot:\n%s", needle, snap)
	return ""
}

// eval runs a script on a page and returns the JSON it returned.
func (e *testEnv) eval(t *testing.T, page int, fn string) string {
	t.Helper()
	args := map[string]any{"function": fn}
	if page != 0 {
		args["pageId"] = page // else the selected page
	}
	text := e.ok(t, "evaluate_script", args)
	_, body, ok := strings.Cut(text, "```json\n")
	if ok {
		// Lines may follow the block, such as "Waited N ms for page P (held by …)".
		body, _, ok = strings.Cut(body, "\n```")
	}
	if !ok {
		t.Fatalf("evaluate_script answer has no json block:\n%s", text)
	}
	return strings.TrimSpace(body)
}

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("want %q in:\n%s", w, got)
		}
	}
}
