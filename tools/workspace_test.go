package tools

import (
	"context"
	"fmt"
	"github.com/pagemux/pagemux/internal/tmpcheck"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// The attacks of issue 15 on the workspace, as a partly trusted agent (or a
// page steering it) would try them, over real MCP and a real Chrome.

// TestWorkspaceRelativePathNotInWorkingDir: responseFilePath=.git/config
// wrote page bytes into the server's checkout. Now a relative path lands in
// the workspace's first root (the temp dir), and an absolute path into the
// working directory is refused.
func TestWorkspaceRelativePathNotInWorkingDir(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	wd, _ := os.Getwd()
	id := e.openPage(t, "/page2.html")
	rel := filepath.Join(".git", fmt.Sprintf("config-%d", openCount.Add(1)))
	text := e.ok(t, "get_network_request", map[string]any{"pageId": id, "reqid": 1, "responseFilePath": rel})
	want := filepath.Join(resolved(os.TempDir()), rel)
	mustContain(t, text, "Saved to "+want)
	t.Cleanup(func() { os.Remove(want) })
	if _, err := os.Stat(filepath.Join(wd, rel)); err == nil {
		t.Fatalf("a relative path was written in the working directory %s", wd)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("not saved in the workspace: %v", err)
	}

	in := filepath.Join(wd, "pwned.txt")
	msg := e.fails(t, "get_network_request", map[string]any{"pageId": id, "reqid": 1, "responseFilePath": in})
	mustContain(t, msg, "outside the allowed roots", resolved(os.TempDir()), "a relative path lands in")
	if _, err := os.Stat(in); err == nil {
		os.Remove(in)
		t.Fatal("an absolute path into the working directory was written")
	}
	mustContain(t, e.fails(t, "upload_file", map[string]any{"pageId": id, "uid": "1_1", "filePaths": []string{"workspace_test.go"}}),
		"cannot read", filepath.Join(resolved(os.TempDir()), "workspace_test.go"))
}

// TestWorkspaceRefusesChromeProfile: upload_file of the profile's
// Default/Cookies handed Chrome's cookie database to a page. The profile is
// in the temp dir, an allowed root; it is refused anyway, also when the temp
// dir is given with --workspace, and through a symlink.
func TestWorkspaceRefusesChromeProfile(t *testing.T) {
	t.Parallel()
	for _, given := range []bool{false, true} {
		t.Run(fmt.Sprintf("workspace given %v", given), func(t *testing.T) {
			var opts Options
			if given {
				opts.Workspaces = []string{os.TempDir()}
			}
			e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Server: opts})
			id := e.openPage(t, "/upload.html")
			e.eval(t, id, "() => { document.cookie = 'secret=1; max-age=600'; return 1 }")
			profiles := e.b.ProfileDirs()
			if len(profiles) != 1 || !strings.HasPrefix(filepath.Base(profiles[0]), "pagemux-") {
				t.Fatalf("profile dirs: %v", profiles)
			}
			cookies := filepath.Join(profiles[0], "Default", "Cookies")
			waitFile(t, cookies)
			single := e.uid(t, id, "Single file")
			link := filepath.Join(t.TempDir(), "innocent.db")
			if err := os.Symlink(cookies, link); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{cookies, link, filepath.Join(profiles[0], "Local State"),
				filepath.Join(os.TempDir(), filepath.Base(profiles[0]), "Default", "Cookies")} {
				msg := e.fails(t, "upload_file", map[string]any{"pageId": id, "uid": single, "filePaths": []string{p}})
				mustContain(t, msg, "lies in Chrome's profile", "no tool may read or write")
			}
			// Writing into it is refused too (a screenshot over Preferences).
			msg := e.fails(t, "take_screenshot", map[string]any{"pageId": id, "filePath": filepath.Join(profiles[0], "Default", "Preferences")})
			mustContain(t, msg, "lies in Chrome's profile")
			// Another pagemux's profile, Chrome's singleton directory and
			// the agents' directories of a pagemux over HTTP.
			for _, name := range []string{"pagemux-1-0123abcd", "org.chromium.Chromium.a1B2c3", filesPrefix + "1"} {
				dir := filepath.Join(os.TempDir(), name)
				os.MkdirAll(dir, 0o700)
				os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600)
				t.Cleanup(func() { os.RemoveAll(dir) })
				msg := e.fails(t, "upload_file", map[string]any{"pageId": id, "uid": single, "filePaths": []string{filepath.Join(dir, "f")}})
				mustContain(t, msg, name, "which no")
			}
		})
	}
}

// waitFile waits until Chrome wrote path.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(50 * time.Millisecond) // bounded above; Chrome tells no one it wrote a file
	}
}

// TestWorkspaceAgentsOwnDirs: over HTTP each agent reads and writes only in
// a directory of its own. Alice's relative path lands in hers; Bob cannot
// read it, write next to it, reach it by a relative path or by its name
// guessed, nor reach the temp dir or the working directory.
func TestWorkspaceAgentsOwnDirs(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agents.Owned)
	alice, bob := e.session(t, "team-secret-1", "alice"), e.session(t, "team-secret-1", "bob")
	aPage := newPageAs(t, alice, "/upload.html")
	bPage := newPageAs(t, bob, "/upload.html")

	text, failed := use(t, alice, "take_snapshot", map[string]any{"filePath": "notes/snap.txt"})
	if failed {
		t.Fatal(text)
	}
	aliceDir := filepath.Join(e.filesBase(t), agentKey("token:team/agent:alice"))
	aliceFile := filepath.Join(aliceDir, "notes", "snap.txt")
	mustContain(t, text, aliceFile)
	for _, dir := range []string{aliceDir, filepath.Dir(aliceDir)} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want mode 0700", dir, fi, err)
		}
	}

	snap, _ := use(t, bob, "take_snapshot", map[string]any{"pageId": bPage})
	single := uidIn(t, snap, "Single file")
	for _, p := range []string{aliceFile, "../" + agentKey("token:team/agent:alice") + "/notes/snap.txt", filepath.Join(os.TempDir(), "x.txt"), "/etc/hostname"} {
		text, failed := use(t, bob, "upload_file", map[string]any{"pageId": bPage, "uid": single, "filePaths": []string{p}})
		if !failed {
			t.Fatalf("bob read %s: %s", p, text)
		}
		mustContain(t, text, "outside the allowed roots", "over HTTP each agent may read and write files only in a directory of its own")
		if !strings.Contains(p, aliceDir) && strings.Contains(text, aliceDir) {
			t.Errorf("bob is told alice's directory: %s", text)
		}
	}
	for _, p := range []string{filepath.Join(aliceDir, "evil.txt"), "../" + agentKey("token:team/agent:alice") + "/evil.txt"} {
		if text, failed := use(t, bob, "take_snapshot", map[string]any{"pageId": bPage, "filePath": p}); !failed {
			t.Fatalf("bob wrote %s: %s", p, text)
		}
	}
	if _, err := os.Stat(filepath.Join(aliceDir, "evil.txt")); err == nil {
		t.Fatal("bob's file is in alice's directory")
	}
	// Bob's own relative path lands in his directory, and he can upload it.
	text, _ = use(t, bob, "take_snapshot", map[string]any{"pageId": bPage, "filePath": "mine.txt"})
	bobFile := filepath.Join(filepath.Dir(aliceDir), agentKey("token:team/agent:bob"), "mine.txt")
	mustContain(t, text, bobFile)
	if text, failed := use(t, bob, "upload_file", map[string]any{"pageId": bPage, "uid": single, "filePaths": []string{"mine.txt"}}); failed {
		t.Fatalf("bob cannot upload his own file: %s", text)
	}
	// Alice cannot read Bob's file either, however she names it.
	snap, _ = use(t, alice, "take_snapshot", map[string]any{"pageId": aPage})
	if text, failed := use(t, alice, "upload_file", map[string]any{"pageId": aPage, "uid": uidIn(t, snap, "Single file"), "filePaths": []string{bobFile}}); !failed {
		t.Fatalf("alice read bob's file: %s", text)
	}
	// On exit the directories made in the temp dir go.
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(aliceDir)); !os.IsNotExist(err) {
		t.Errorf("the agents' directories outlived the server: %v", err)
	}
}

// TestWorkspaceAgentsUnderGivenDir: with --workspace DIR over HTTP, each
// agent gets DIR/<agent-key>/ and nothing else of DIR.
func TestWorkspaceAgentsUnderGivenDir(t *testing.T) {
	t.Parallel()
	dir := resolved(t.TempDir())
	os.WriteFile(filepath.Join(dir, "shared.txt"), []byte("x"), 0o644)
	e := newAgentEnvWith(t, Options{Agents: agents.New(agents.Owned), Workspaces: []string{dir}})
	alice := e.session(t, "team-secret-1", "alice")
	newPageAs(t, alice, "/upload.html")
	text, failed := use(t, alice, "take_snapshot", map[string]any{"filePath": "a.txt"})
	if failed {
		t.Fatal(text)
	}
	mustContain(t, text, filepath.Join(dir, agentKey("token:team/agent:alice"), "a.txt"))
	text, _ = use(t, alice, "take_snapshot", map[string]any{"filePath": filepath.Join(dir, "shared.txt")})
	mustContain(t, text, "outside the allowed roots")
	e.srv.Close()
	if _, err := os.Stat(filepath.Join(dir, agentKey("token:team/agent:alice"), "a.txt")); err != nil {
		t.Errorf("an agent's result under --workspace was removed: %v", err)
	}
}

// rootsHandler is an MCP client's list of roots, which it may change.
type rootsHandler struct {
	mu    sync.Mutex
	roots []string
	asked int
}

func (h *rootsHandler) set(dirs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roots = dirs
}

func (h *rootsHandler) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked++
	res := &mcp.ListRootsResult{}
	for _, d := range h.roots {
		res.Roots = append(res.Roots, mcp.Root{URI: (&url.URL{Scheme: "file", Path: d}).String(), Name: filepath.Base(d)})
	}
	return res, nil
}

// TestWorkspaceClientRoots: a client that offers roots gets them (and the
// temp dir, as chrome-devtools-mcp does); a relative path lands in its first
// root; paths outside them are refused; after roots/list_changed the new
// roots hold.
func TestWorkspaceClientRoots(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	wd, _ := os.Getwd()
	// Roots outside the temp dir, so that only the client's word allows them.
	mk := func(name string) string {
		d, err := os.MkdirTemp(wd, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return resolved(d)
	}
	first, second, other := mk("roots-a-"), mk("roots-b-"), mk("roots-c-")
	h := &rootsHandler{}
	h.set(first, second)
	c, err := client.NewInProcessClientWithOptions(e.srv.MCP(), client.WithRootsHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "roots-client", Version: "1"},
		Capabilities: mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}},
	}}); err != nil {
		t.Fatal(err)
	}
	id := e.openPage(t, "/page2.html")
	call := func(args map[string]any) (string, bool) {
		t.Helper()
		args["pageId"] = id
		return use(t, c, "take_snapshot", args)
	}
	text, failed := call(map[string]any{"filePath": "snap.txt"})
	if failed {
		t.Fatal(text)
	}
	mustContain(t, text, filepath.Join(first, "snap.txt"))
	if text, failed := call(map[string]any{"filePath": filepath.Join(second, "s.txt")}); failed {
		t.Fatal(text)
	}
	if text, failed := call(map[string]any{"filePath": filepath.Join(os.TempDir(), fmt.Sprintf("roots-%d.txt", openCount.Add(1)))}); failed {
		t.Fatalf("the temp dir is a root too: %s", text)
	}
	text, failed = call(map[string]any{"filePath": filepath.Join(other, "s.txt")})
	if !failed {
		t.Fatalf("a path outside the client's roots was written: %s", text)
	}
	mustContain(t, text, "outside the allowed roots", first, second, "a relative path lands in "+first)

	// The roots change: the server asks again.
	h.set(other)
	if err := c.RootListChanges(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, failed = call(map[string]any{"filePath": filepath.Join(other, "s.txt")})
		if !failed || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the notification is handled on a goroutine of its own
	}
	if failed {
		t.Fatalf("the new root is not used: %s", text)
	}
	if text, failed := call(map[string]any{"filePath": filepath.Join(first, "s2.txt")}); !failed {
		t.Fatalf("a root the client took back still holds: %s", text)
	}

	// A client without roots gets the temp dir only.
	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": id, "filePath": filepath.Join(first, "s3.txt")}), "outside the allowed roots")
}

// TestWorkspaceCheckAtStart: a --workspace inside Chrome's profile is
// refused at start; a profile inside a workspace is not (its paths are).
func TestWorkspaceCheckAtStart(t *testing.T) {
	profile := t.TempDir()
	if err := CheckWorkspaces([]string{filepath.Join(profile, "Default")}, profile); err == nil || !strings.Contains(err.Error(), "lies inside Chrome's profile") {
		t.Errorf("a workspace inside the profile: %v", err)
	}
	if err := CheckWorkspaces([]string{profile}, profile); err == nil {
		t.Error("the profile itself as a workspace was accepted")
	}
	if err := CheckWorkspaces([]string{filepath.Dir(profile)}, profile); err != nil {
		t.Errorf("a workspace holding the profile: %v", err)
	}
	if err := CheckWorkspaces([]string{filepath.Join(os.TempDir(), "pagemux-42-0123abcd")}, ""); err == nil || !strings.Contains(err.Error(), "pagemux-42-0123abcd") {
		t.Errorf("a workspace in a pagemux profile: %v", err)
	}
}

// downloadSite serves a page whose link downloads a file, by <a download>
// and by Content-Disposition: attachment.
func downloadSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/dl.html", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>dl</title><a id=a href="/a.txt" download="by-attr.txt">attr</a> <a id=b href="/attach">attachment</a>`)
	})
	mux.HandleFunc("/a.txt", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "attr body") })
	mux.HandleFunc("/attach", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="../../by-header.txt"`)
		fmt.Fprint(w, "header body")
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// TestWorkspaceDownloads: a page's downloads land in the workspace, never
// elsewhere; over HTTP in the downloads/ of the agent that owns the page.
func TestWorkspaceDownloads(t *testing.T) {
	t.Parallel()
	site := downloadSite(t)
	t.Run("stdio", func(t *testing.T) {
		given := resolved(t.TempDir())
		e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Server: Options{Workspaces: []string{given}}})
		text := e.ok(t, "new_page", map[string]any{"url": site.URL + "/dl.html"})
		id := selectedIn(t, text)
		e.eval(t, id, "() => { document.getElementById('a').click(); document.getElementById('b').click(); return 1 }")
		waitFile(t, filepath.Join(given, "downloads", "by-attr.txt"))
		// The name a header suggests cannot lead out.
		tmpcheck.WaitFile(t, filepath.Join(given, "downloads", "*by-header.txt"))
	})
	t.Run("http", func(t *testing.T) {
		e := newAgentEnvWith(t, Options{Agents: agents.New(agents.Owned), IsolateAgents: true})
		alice := e.session(t, "team-secret-1", "alice")
		text, failed := use(t, alice, "new_page", map[string]any{"url": site.URL + "/dl.html"})
		if failed {
			t.Fatal(text)
		}
		use(t, alice, "evaluate_script", map[string]any{"function": "() => { document.getElementById('a').click(); return 1 }"})
		dir := filepath.Join(e.filesBase(t), agentKey("token:team/agent:alice"), "downloads")
		waitFile(t, filepath.Join(dir, "by-attr.txt"))
		// Alice can hand her download to a page: it is in her directory.
		text, failed = use(t, alice, "new_page", map[string]any{"url": testSite.URL + "/upload.html"})
		if failed {
			t.Fatal(text)
		}
		snap, _ := use(t, alice, "take_snapshot", map[string]any{})
		if text, failed := use(t, alice, "upload_file", map[string]any{"uid": uidIn(t, snap, "Single file"), "filePaths": []string{"downloads/by-attr.txt"}}); failed {
			t.Fatalf("alice cannot upload her download: %s", text)
		}
	})
}

// TestWorkspaceClientRootsOverStdio: the same over pagemux's own stdio
// transport, which sends roots/list to the client and reads its answer on
// stdin, and hears notifications/roots/list_changed.
func TestWorkspaceClientRootsOverStdio(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := browser.New(browser.Config{Logger: log})
	srv := New(b, pagelock.New(pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}), Options{Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	clientRead, serverWrite := io.Pipe()
	serverRead, clientWrite := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serve.ServeStdio(ctx, srv.MCP(), serverRead, serverWrite, serve.StdioOptions{Log: log})
		serverWrite.Close()
	}()
	wd, _ := os.Getwd()
	first, err := os.MkdirTemp(wd, "roots-stdio-")
	if err != nil {
		t.Fatal(err)
	}
	first = resolved(first)
	second := resolved(t.TempDir()) // in the temp dir: allowed anyway
	h := &rootsHandler{}
	h.set(first)
	c := client.NewClient(transport.NewIO(clientRead, clientWrite, io.NopCloser(strings.NewReader(""))), client.WithRootsHandler(h))
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
		b.Close()
		os.RemoveAll(first)
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "roots-stdio", Version: "1"},
		Capabilities: mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}},
	}}); err != nil {
		t.Fatal(err)
	}
	text, failed := use(t, c, "new_page", map[string]any{"url": testSite.URL + "/page2.html"})
	if failed {
		t.Fatal(text)
	}
	text, failed = use(t, c, "take_snapshot", map[string]any{"filePath": "snap.txt"})
	if failed {
		t.Fatal(text)
	}
	mustContain(t, text, filepath.Join(first, "snap.txt"))

	h.set(second)
	if err := c.RootListChanges(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, failed = use(t, c, "take_snapshot", map[string]any{"filePath": "snap.txt"})
		if strings.Contains(text, filepath.Join(second, "snap.txt")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the notification may be read after the call
	}
	mustContain(t, text, filepath.Join(second, "snap.txt"))
	text, failed = use(t, c, "take_snapshot", map[string]any{"filePath": filepath.Join(first, "old.txt")})
	if !failed {
		t.Fatalf("a root the client took back still holds: %s", text)
	}
	h.mu.Lock()
	asked := h.asked
	h.mu.Unlock()
	if asked != 2 {
		t.Errorf("the client was asked for its roots %d times, want 2 (once, then after the change)", asked)
	}
}

// filesBase is the directory of the server's agents over HTTP without
// --workspace, resolved as the answers name it.
func (e *testEnv) filesBase(t *testing.T) string {
	t.Helper()
	dir, err := e.srv.files.filesBase()
	if err != nil {
		t.Fatal(err)
	}
	return resolved(dir)
}
