package main

// The helpers the tests of this package share, one of each, in one file:
// the pagemux binary they run (pagemuxBinary), the Chrome they attach to
// (sharedChrome, debuggableChrome, chromeTabs), the servers they start
// (startHTTPServer over HTTP, startServer over raw stdio lines), the sites
// they serve, the calls they make (callTool, mustCall over mcptest.Call;
// server.call and answer for raw JSON-RPC), and smoke's runners
// (smokeBinary, smokeArgs). A helper one test file alone needs stays in
// that file.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/proc"
	"github.com/pagemux/pagemux/internal/testchrome"
	"github.com/pagemux/pagemux/internal/tmpcheck"
	"github.com/pagemux/pagemux/smoke"
)

var (
	pagemuxOnce sync.Once
	pagemuxBin  string
	pagemuxErr  error
)

// binName is the name the test binary answers to as pagemux (TestMain).
const binName = "pagemux"

// pagemuxBinary returns the pagemux the tests run: this test binary,
// linked as binName, whose TestMain then runs pagemux's main, the code go
// build would link into bin/pagemux. It was built with the tests' flags
// (-race when they run with it: a data race in pagemux fails its test
// too), and linking pagemux once more cost every run of these tests 3.5
// CPU-s (the link of a -race binary), seconds before the first test could
// start. A hard link, where the filesystem allows one, so that pagemux
// sees itself as binName (os.Executable); else a symlink.
func pagemuxBinary(t testing.TB) string {
	t.Helper()
	pagemuxOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			pagemuxErr = err
			return
		}
		dir, err := os.MkdirTemp("", "pagemux-bin")
		if err != nil {
			pagemuxErr = err
			return
		}
		pagemuxBin = filepath.Join(dir, binName)
		if os.Link(self, pagemuxBin) != nil {
			if err := os.Symlink(self, pagemuxBin); err != nil {
				pagemuxErr = fmt.Errorf("link the test binary as %s: %v", pagemuxBin, err)
			}
		}
	})
	if pagemuxErr != nil {
		t.Fatal(pagemuxErr)
	}
	return pagemuxBin
}

// shortTmp returns a temp dir short enough for Chrome's singleton socket to
// fit in the profile; t.TempDir is too long for it, which tests the other
// way, where the singleton directory lies beside the profile.
func shortTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t testing.TB) string {
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
func startHTTPServer(t testing.TB, bin string, flags ...string) (string, *mcptest.LockedBuffer) {
	t.Helper()
	addr := freeAddr(t)
	return startHTTPCommand(t, exec.Command(bin, append([]string{"--http", addr}, flags...)...), addr)
}

// startHTTPCommand is startHTTPServer for a command made ready to start
// (flags, environment, user), which serves on addr.
func startHTTPCommand(t testing.TB, cmd *exec.Cmd, addr string) (string, *mcptest.LockedBuffer) {
	t.Helper()
	stderr := new(mcptest.LockedBuffer)
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

// callTool calls a tool and returns its text and whether it is an error; a
// protocol error, or no answer within two minutes, fails the test.
func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r := mcptest.Call(ctx, c, tool, args)
	if r.Err != nil {
		t.Fatalf("%s: %v", tool, r.Err)
	}
	return r.Text, r.IsError
}

// mustCall calls a tool that must succeed and returns its text: a protocol
// error or an error result fails the test.
func mustCall(t *testing.T, c *client.Client, tool string, args map[string]any) string {
	t.Helper()
	r := mcptest.Call(t.Context(), c, tool, args)
	if r.Err != nil {
		t.Fatalf("%s: %v", tool, r.Err)
	}
	if r.IsError {
		t.Fatalf("%s: %s", tool, r.Text)
	}
	return r.Text
}

// debuggableChrome starts a headless Chrome with a DevTools port on
// loopback, as a user starts the one several pagemux processes share, and
// returns its --browser-url. It is killed when the test ends.
func debuggableChrome(t testing.TB) string {
	t.Helper()
	url, stop, err := startDebuggableChrome()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

var shared struct {
	once sync.Once
	url  string
	stop func()
	err  error
}

// sharedChrome is one debuggableChrome for the tests of this binary whose
// pagemux processes act only on pages of their own: HTTP agents, each in a
// browser context of its own that sees only its own pages (--pages owned),
// and stdio processes that act on the tab they open to attach with or on the
// pages they open, and read no list of all tabs. A Chrome's start costs a
// CPU-s, and what these tests prove (transports, bridges, SDKs, their order
// and cancellation, flags) is not how pagemux launches Chrome, which the
// exit tests and TestHTTPBinary prove. Tests that need a Chrome to
// themselves (etcd's shared page ids, counts of all tabs) start their own.
// TestMain kills it.
func sharedChrome(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.url, shared.stop, shared.err = startDebuggableChrome() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.url
}

// startDebuggableChrome starts a headless Chrome with a DevTools port on
// loopback and returns its URL and a stop that kills it and its helpers and
// removes its profile: $CHROME_PATH (the suite's headless shell), else
// chromium.
func startDebuggableChrome() (string, func(), error) {
	path, err := exec.LookPath("chromium")
	if p := os.Getenv("CHROME_PATH"); p != "" {
		path, err = p, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("these tests need Chrome: %v", err)
	}
	url, _, stop, err := startChromeAt(path)
	return url, stop, err
}

// fullDebuggableChrome is debuggableChrome of the full Chrome
// (testchrome.Full, else chromium), for what the headless shell does not
// do, such as holding its profile with a SingletonLock; it returns the
// Chrome's profile too.
func fullDebuggableChrome(t testing.TB) (url, profile string) {
	t.Helper()
	path := testchrome.Full()
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			t.Fatalf("this test needs the full Chrome: %v", err)
		}
	}
	url, profile, stop, err := startChromeAt(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url, profile
}

// startChromeAt starts the Chrome at path as startDebuggableChrome does,
// and returns its profile too.
func startChromeAt(path string) (string, string, func(), error) {
	// Not t.TempDir: Chrome's helpers may still write there as it goes.
	dir, err := os.MkdirTemp("", "pagemux-shared-chrome")
	if err != nil {
		return "", "", nil, err
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=0", "--user-data-dir="+dir,
		// As in a Chrome pagemux launches headless: no address bar popup
		// for Chrome's WebUI renderer to draw in every window.
		"--disable-features=Translate,WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers go with it
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		// A helper may still be on its way out: try a few times.
		for i := 0; i < 50 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Chrome writes the port it took into the profile once it listens;
	// nothing tells of it, so look until it is there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if port, _, ok := strings.Cut(string(b), "\n"); err == nil && ok && port != "" {
			return "http://127.0.0.1:" + port, dir, stop, nil
		}
		select {
		case <-exited:
			stop()
			return "", "", nil, errors.New("chrome exited before it opened its DevTools port")
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", "", nil, errors.New("chrome wrote no DevToolsActivePort in 30 s")
		}
	}
}

// pathSite serves pages titled with their path.
func pathSite(t *testing.T) *httptest.Server {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title><p>%s", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(site.Close)
	return site
}

// logSite serves a page whose calls log their enter and leave in it.
func logSite(t testing.TB) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>shared</title><script>window.calls = []</script><p>shared tab`)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// server is the real pagemux binary, driven over raw stdio as an MCP client
// drives it.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	tmp    string
	stdin  io.WriteCloser
	stdout *os.File // the read end of its stdout
	lines  chan string
	stderr *mcptest.LockedBuffer
	exited chan struct{}
}

// startServer starts pagemux with TMPDIR=tmp and initializes the session.
func startServer(t *testing.T, tmp string, flags ...string) *server {
	t.Helper()
	bin := pagemuxBinary(t)
	s := &server{t: t, tmp: tmp, lines: make(chan string, 100), stderr: &mcptest.LockedBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{"--log-level=debug"}, flags...)...)
	s.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	s.cmd.Stderr = s.stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout = w
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s.stdout = r
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("pagemux stderr:\n%s", s.stderr.String())
		}
	})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.answer(1)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *server) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("write to pagemux: %v", err)
	}
}

// call sends a tools/call request; answer reads its answer.
func (s *server) call(id int, tool, args string) {
	s.t.Helper()
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
}

// answer waits up to a minute for the answer with the id and returns it.
func (s *server) answer(id int) string {
	s.t.Helper()
	want := fmt.Sprintf(`"id":%d,`, id)
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("stdout closed before the answer to %d", id)
			}
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout:
			s.t.Fatalf("no answer to %d in a minute", id)
		}
	}
}

// waitExit waits up to limit for pagemux to exit and returns how long that
// took from since.
// waitLog waits up to a minute for pagemux to log a line containing text.
func (s *server) waitLog(text string) {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(s.stderr.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("pagemux did not log %s in a minute", text)
		}
	}
}

func (s *server) waitExit(since time.Time, limit time.Duration) time.Duration {
	s.t.Helper()
	select {
	case <-s.exited:
		return time.Since(since)
	case <-time.After(limit - time.Since(since)):
		s.t.Fatalf("pagemux still runs %s after it was told to stop", limit)
		return 0
	}
}

// exitedCleanly fails the test unless pagemux exited with status 0, and not
// by a signal (such as SIGPIPE: status 141 from a shell).
func (s *server) exitedCleanly() {
	s.t.Helper()
	st := s.cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		s.t.Fatalf("pagemux was killed by %v", ws.Signal())
	}
	if st.ExitCode() != 0 {
		s.t.Fatalf("pagemux exited with %d", st.ExitCode())
	}
}

// startChrome makes pagemux start Chrome and returns the processes it then
// runs: Chrome and its helpers, found as pagemux's descendants (never by
// name, so that no other Chrome on the machine counts).
func (s *server) startChrome() []proc.Proc {
	s.t.Helper()
	s.call(2, "list_pages", `{}`)
	if a := s.answer(2); !strings.Contains(a, "about:blank") {
		s.t.Fatalf("list_pages: %s", a)
	}
	chrome := proc.Descendants(s.cmd.Process.Pid)
	if len(chrome) == 0 {
		s.t.Fatal("pagemux runs no Chrome after list_pages")
	}
	return chrome
}

// noChromeLeft fails the test unless every process of chrome is gone within
// 15 s.
func noChromeLeft(t *testing.T, chrome []proc.Proc) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(proc.Running(chrome)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Chrome processes pagemux started still run 15 s after it exited: %v of %d", proc.Running(chrome), len(chrome))
		}
		time.Sleep(50 * time.Millisecond)
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

// smokeBinary runs `pagemux smoke ARGS` with a TMPDIR of its own, and
// returns its exit code and output; it fails the test if Chrome's profile
// is left behind.
func smokeBinary(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	bin := pagemuxBinary(t)
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"smoke"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if left := tmpcheck.LeftBehind(tmp); len(left) > 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "pagemux-smoke-*")); len(m) > 0 {
		t.Errorf("left behind in TMPDIR: %v", m)
	}
	return code, stdout.String(), stderr.String()
}

// smokeArgs runs `pagemux smoke ARGS` in this process, as main does (its
// exit code is the one main exits with), for the runs that end at the
// flags: each would cost a -race pagemux's start, and they start no Chrome.
// TestSmokeBinary runs the binary for every exit code.
func smokeArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := smoke.Main(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// chromeTabs lists the tabs of the Chrome at url, from its own DevTools
// endpoint: which Chrome of a pool a page is on, as Chrome says.
func chromeTabs(t *testing.T, url string) []devToolsTab {
	t.Helper()
	resp, err := http.Get(url + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tabs []devToolsTab
	if err := json.NewDecoder(resp.Body).Decode(&tabs); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(tabs, func(tab devToolsTab) bool { return tab.Type != "page" })
}

// onChrome says which of the Chromes at urls has a tab whose URL ends in
// path, -1 when none has.
func onChrome(t *testing.T, urls []string, path string) int {
	t.Helper()
	for i, u := range urls {
		for _, tab := range chromeTabs(t, u) {
			if strings.HasSuffix(tab.URL, path) {
				return i
			}
		}
	}
	return -1
}

// idOf is the id list_pages shows for the page whose URL ends in path.
func idOf(t *testing.T, list, path string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(\d+): .*` + regexp.QuoteMeta(path) + `\b`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no page %s in\n%s", path, list)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// pageIDs are the ids list_pages shows, in its order.
func pageIDs(t *testing.T, list string) []int {
	t.Helper()
	var ids []int
	for _, m := range regexp.MustCompile(`(?m)^(\d+): `).FindAllStringSubmatch(list, -1) {
		n, _ := strconv.Atoi(m[1])
		ids = append(ids, n)
	}
	return ids
}

// waitHolder polls /locks until a lock is held by holder (such as
// "evaluate_script on page 3"), whichever lock that is in the lock mode.
func waitHolder(t *testing.T, base, secret, holder string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, base+"/locks", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(body)
		var locks []struct {
			Holder string `json:"holder"`
		}
		if err := json.Unmarshal(body, &locks); err != nil {
			t.Fatalf("/locks: %v: %s", err, body)
		}
		for _, l := range locks {
			if strings.HasPrefix(l.Holder, holder) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no lock held by %s; /locks: %s", holder, last)
}

// pageOf returns the page id a process gives the tab at url, from its
// list_pages (id is the request id to use).
func (s *server) pageOf(id int, url string) string {
	s.t.Helper()
	s.call(id, "list_pages", `{}`)
	a := s.answer(id)
	m := regexp.MustCompile(`(?m)^(\d+): .*` + regexp.QuoteMeta(url)).FindStringSubmatch(strings.ReplaceAll(a, `\n`, "\n"))
	if m == nil {
		s.t.Fatalf("no page on %s in list_pages: %s", url, a)
	}
	return m[1]
}

// devToolsTab is a tab as Chrome's /json/list shows it.
type devToolsTab struct {
	ID, Type, URL, Title string
}

// getWith GETs url with the bearer secret ("" for none).
func getWith(t *testing.T, url, secret string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
