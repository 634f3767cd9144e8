package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/proc"
)

// bridgeClient is a DevTools client on the bridge, as puppeteer is: no
// Origin header.
type bridgeClient struct {
	t      *testing.T
	c      *websocket.Conn
	nextID int
	msgs   chan map[string]json.RawMessage
}

func dialBridge(t *testing.T, u string) *bridgeClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	c.SetReadLimit(-1)
	bc := &bridgeClient{t: t, c: c, msgs: make(chan map[string]json.RawMessage, 10000)}
	go func() {
		defer close(bc.msgs)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(data, &m) == nil {
				bc.msgs <- m
			}
		}
	}()
	t.Cleanup(func() { c.CloseNow() })
	return bc
}

// send sends a command with the next id and returns the id.
func (bc *bridgeClient) send(sessionID, method string, params any) int {
	bc.t.Helper()
	bc.nextID++
	msg := map[string]any{"id": bc.nextID, "method": method, "params": params}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	b, _ := json.Marshal(msg)
	if err := bc.c.Write(bc.t.Context(), websocket.MessageText, b); err != nil {
		bc.t.Fatalf("send %s: %v", method, err)
	}
	return bc.nextID
}

// call sends a command and waits for its answer, keeping the events seen
// on the way in events.
func (bc *bridgeClient) call(method string, params any, events *[]map[string]json.RawMessage) json.RawMessage {
	bc.t.Helper()
	id := bc.send("", method, params)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-bc.msgs:
			if !ok {
				bc.t.Fatalf("%s: the bridge closed the connection", method)
			}
			if _, isEvent := m["method"]; isEvent {
				if events != nil {
					*events = append(*events, m)
				}
				continue
			}
			if string(m["id"]) != strconv.Itoa(id) {
				bc.t.Fatalf("%s (id %d): an answer to id %s, which this client did not send now: %v", method, id, m["id"], m)
			}
			if e, ok := m["error"]; ok {
				bc.t.Fatalf("%s: %s", method, e)
			}
			if _, ok := m["sessionId"]; ok {
				bc.t.Errorf("%s: the answer names the client's browser session: %v", method, m)
			}
			return m["result"]
		case <-timeout:
			bc.t.Fatalf("%s: no answer", method)
		}
	}
}

// A launched Chrome's DevToolsURL is pagemux's bridge: a new unguessable
// path per launch, nothing but that path (no /json), and what is served
// there is the browser; pagemux itself still talks over the pipe.
func TestDevToolsURL(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	u, err := b.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^ws://127\.0\.0\.1:[0-9]+/devtools/browser/[0-9a-f]{32}$`).MatchString(u) {
		t.Fatalf("DevToolsURL = %q, want ws://127.0.0.1:PORT/devtools/browser/<128-bit hex>", u)
	}
	parsed, _ := url.Parse(u)
	if own := b.OwnEndpoints(); !slices.Equal(own, []string{parsed.Host}) {
		t.Errorf("OwnEndpoints = %v, want [%s]", own, parsed.Host)
	}
	for _, path := range []string{"/json/version", "/json/list", "/json", "/devtools/browser/0123", "/"} {
		res, err := http.Get("http://" + parsed.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", path, res.Status)
		}
	}
	bc := dialBridge(t, u)
	var version struct {
		Product string `json:"product"`
	}
	if err := json.Unmarshal(bc.call("Browser.getVersion", struct{}{}, nil), &version); err != nil || !strings.Contains(version.Product, "Chrome") {
		t.Fatalf("Browser.getVersion on the bridge: %+v %v", version, err)
	}
	args, err := b.CommandLine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--remote-debugging-pipe=cbor") {
		t.Fatalf("command line lacks --remote-debugging-pipe=cbor: %v", args)
	}

	b.mu.Lock()
	chrome := chromedp.FromContext(b.members[0].launch.rootCtx).Browser.Process()
	b.mu.Unlock()
	chrome.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		again, err := b.DevToolsURL(t.Context())
		if err == nil && again != u {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a relaunch DevToolsURL = %q, %v; want a new endpoint", again, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res, err := http.Get("http://" + parsed.Host + "/"); err == nil {
		res.Body.Close()
		t.Errorf("the old bridge still answers after the relaunch: %s", res.Status)
	}
}

// An attached browser's endpoint is the address it was attached at, and
// that is one of pagemux's own endpoints.
func TestDevToolsURLAttached(t *testing.T) {
	t.Parallel()
	browserURL, _ := runningChrome(t)
	b := New(Config{BrowserURL: browserURL})
	defer b.Close()
	if u, err := b.DevToolsURL(t.Context()); err != nil || u != browserURL {
		t.Fatalf("DevToolsURL = %q, %v; want %q", u, err, browserURL)
	}
	if own, want := b.OwnEndpoints(), strings.TrimPrefix(browserURL, "http://"); !slices.Equal(own, []string{want}) {
		t.Fatalf("OwnEndpoints = %v, want [%s]", own, want)
	}
}

// Attack: the launched Chrome has no DevTools port. Its command line names
// none, no process of it listens on any TCP port, and it writes no
// DevToolsActivePort to its profile (the file a file:// listing would show).
func TestNoDevToolsPort(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	newPageAnswers(t.Context(), t, b, "before")
	if _, err := b.DevToolsURL(t.Context()); err != nil { // the bridge is pagemux's, not Chrome's
		t.Fatal(err)
	}
	args, err := b.CommandLine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--remote-debugging-port") || strings.HasPrefix(a, "--remote-debugging-address") {
			t.Errorf("Chrome's command line has %s", a)
		}
	}
	listening := listeningInodes(t)
	root := b.ChromePID()
	pids := []int{root}
	for _, q := range proc.Descendants(root) {
		pids = append(pids, q.PID)
	}
	for _, pid := range pids {
		for _, inode := range socketInodes(pid) {
			if addr, ok := listening[inode]; ok {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				t.Errorf("Chrome process %d listens on %s: %q", pid, addr, strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	}
	b.mu.Lock()
	dir := b.members[0].launch.profileDir
	b.mu.Unlock()
	if dir == "" {
		t.Fatal("no profile directory")
	}
	if _, err := os.Stat(filepath.Join(dir, devToolsPortFile)); !os.IsNotExist(err) {
		t.Errorf("the profile has a %s: %v", devToolsPortFile, err)
	}
	t.Logf("checked %d Chrome processes against %d listening sockets", len(pids), len(listening))
}

// listeningInodes maps the inodes of the TCP sockets that listen, on any
// address, to their local address as /proc/net/tcp writes it.
func listeningInodes(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			t.Fatalf("no %s: %v", f, err)
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) >= 10 && fields[3] == "0A" { // 0A: LISTEN
				out[fields[9]] = fields[1]
			}
		}
		file.Close()
	}
	return out
}

// socketInodes returns the inodes of the sockets that process pid holds.
func socketInodes(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			out = append(out, strings.TrimSuffix(inode, "]"))
		}
	}
	return out
}

// Attack: a page told the bridge's exact URL cannot use it. A tab on the
// bridge's origin (the way the attack reached Chrome's port) gets
// 404 for /json/list and /json/version, and its websocket to the bridge
// fails: the bridge saw the page's Origin and refused it.
func TestBridgeRefusesPages(t *testing.T) {
	t.Parallel()
	var logs mcptest.LockedBuffer
	b := startBrowser(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	u, err := b.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := url.Parse(u)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>evil</title>")
	}))
	t.Cleanup(site.Close)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	attackFn := func(u string) string {
		return `async () => { const u = ` + strconv.Quote(u) + `;
		const out = {};
		for (const path of ['/json/list', '/json/version']) {
			try { out[path] = (await fetch(path)).status; } catch (e) { out[path] = 'error ' + e; }
		}
		out.ws = await new Promise((resolve) => {
			const ws = new WebSocket(u);
			ws.onopen = () => { resolve('open'); ws.close(); };
			ws.onerror = () => resolve('error');
		});
		return out;
	}`
	}
	for _, origin := range []string{"http://" + parsed.Host + "/json/list", site.URL} {
		if err := p.Navigate(t.Context(), origin, 0); err != nil {
			t.Fatal(err)
		}
		v, err := p.Evaluate(t.Context(), attackFn(u), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		json.Unmarshal(v, &got)
		if got["ws"] != "error" {
			t.Errorf("a page on %s opened the bridge's websocket: %s", origin, v)
		}
		if strings.HasPrefix(origin, "http://"+parsed.Host) && (got["/json/list"] != 404.0 || got["/json/version"] != 404.0) {
			t.Errorf("a page on the bridge's origin fetched /json: %s", v)
		}
		t.Logf("a page on %s: %s", origin, v)
	}
	if n := strings.Count(logs.String(), "refused a connection from a web page"); n != 2 {
		t.Errorf("the bridge logged %d refusals of a web page's Origin, want 2:\n%s", n, logs.String())
	}
}

// Attack: a bridge client that turned on browser-wide auto-attach with
// waitForDebuggerOnStart (every new tab would wait for it) and then went
// away leaves nothing behind: new tabs load and answer, and chromedp's own
// discovery still works.
func TestBridgeClientLeavesNoAutoAttach(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	u, err := b.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bc := dialBridge(t, u)
	bc.call("Target.setDiscoverTargets", map[string]any{"discover": true}, nil)
	bc.call("Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}, nil)
	// While it is there, a new tab waits for it: the state is real.
	var events []map[string]json.RawMessage
	bc.call("Target.createTarget", map[string]any{"url": "about:blank"}, &events)
	bc.c.Close(websocket.StatusNormalClosure, "")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>after</title><p>loaded")
	}))
	t.Cleanup(site.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The client's close reaches the bridge in its own time: the bridge
	// must have detached its session once a new tab opens after it.
	deadline := time.Now().Add(10 * time.Second)
	for b.members[0].launch.mux.ClientCount() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p, err := b.NewPage(ctx, true)
	if err != nil {
		t.Fatalf("new page after the client left: %v", err)
	}
	if err := p.Navigate(ctx, site.URL, 0); err != nil {
		t.Fatalf("navigate after the client left: %v", err)
	}
	if v, err := p.Evaluate(ctx, "() => document.title", nil); err != nil || string(v) != `"after"` {
		t.Fatalf("the new tab: %s %v", v, err)
	}
}

// Two bridge clients at once each get their own answers, for the same
// ids, and only the events of what they turned on themselves.
func TestBridgeTwoClients(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	u, err := b.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	one, two := dialBridge(t, u), dialBridge(t, u)
	var wg sync.WaitGroup
	for _, bc := range []*bridgeClient{one, two} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				bc.call("Target.getTargets", struct{}{}, nil)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var seen []map[string]json.RawMessage
	one.call("Target.setDiscoverTargets", map[string]any{"discover": true}, &seen)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	created := func(events []map[string]json.RawMessage) bool {
		return slices.ContainsFunc(events, func(m map[string]json.RawMessage) bool {
			return string(m["method"]) == `"Target.targetCreated"` && strings.Contains(string(m["params"]), string(p.TargetID))
		})
	}
	for deadline := time.Now().Add(10 * time.Second); !created(seen) && time.Now().Before(deadline); {
		one.call("Browser.getVersion", struct{}{}, &seen)
	}
	if !created(seen) {
		t.Fatal("the client that turned discovery on saw no targetCreated of the new tab")
	}
	var other []map[string]json.RawMessage
	two.call("Browser.getVersion", struct{}{}, &other)
	if len(other) > 0 {
		t.Errorf("the other client got events it never asked for: %v", other)
	}
}

// The stale port file of a kept profile goes, no debugging flag is added,
// and the profile directory is found.
func TestPrepareCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale := filepath.Join(dir, devToolsPortFile)
	os.WriteFile(stale, []byte("1\n/devtools/browser/old\n"), 0o644)
	cmd := exec.Command("chrome", "--headless", "--user-data-dir="+dir, "--remote-debugging-pipe", "about:blank")
	want := slices.Clone(cmd.Args)
	got, mux := prepareCommand(cmd, slog.New(slog.DiscardHandler), 0, true)
	if got != dir {
		t.Errorf("profile dir %q, want %q", got, dir)
	}
	if mux != nil {
		t.Errorf("a mux without chromedp's pipe")
	}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args %q, want %q", cmd.Args, want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s still there: %v", devToolsPortFile, err)
	}
}
