package smoke

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/tools"
)

// TestSmokeStorageState: a Playwright storage state logs the run in. Its
// cookies reach the server as the file scopes them (a path-scoped one only
// under its path, an httpOnly one out of the page's sight), its
// localStorage is there before the page's first script reads it, and no
// output shows a value. One run, one Chrome.
func TestSmokeStorageState(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string][]string{} // path: cookie names received
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, c := range r.Cookies() {
			seen[r.URL.Path] = append(seen[r.URL.Path], c.Name)
		}
		mu.Unlock()
		switch r.URL.Path {
		case "/login":
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Log in</title><h1>Please log in</h1></html>`)
			return
		case "/favicon.ico":
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if c, err := r.Cookie("session"); err != nil || c.Value != "s3ss10n-value" {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		// The first script of the page reads what the storage state set.
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><title>App</title><script>
const token = localStorage.getItem("token");
const visible = document.cookie;
document.addEventListener("DOMContentLoaded", () => {
  document.querySelector("#token").textContent = token === "t0k3n-value" ? "token ok" : "no token";
  document.querySelector("#cookie").textContent = visible.includes("session=") ? "session visible" : "session hidden";
});
</script></head><body><main><h1>Signed in</h1><p id="token"></p><p id="cookie"></p></main></body></html>`)
	}))
	defer app.Close()

	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	writeJSON(t, state, map[string]any{
		"cookies": []map[string]any{
			{"name": "session", "value": "s3ss10n-value", "domain": "127.0.0.1", "path": "/", "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"},
			{"name": "scoped", "value": "sc0p3d-value", "domain": "127.0.0.1", "path": "/private", "expires": 4102444800, "httpOnly": false, "secure": false, "sameSite": "Strict"},
		},
		"origins": []map[string]any{
			{"origin": app.URL, "localStorage": []map[string]string{{"name": "token", "value": "t0k3n-value"}}},
			{"origin": "https://elsewhere.test", "localStorage": []map[string]string{{"name": "token", "value": "other-v4lue"}}},
		},
	})
	jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	o := options(t, "--storage-state", state, "--expect-text", "Signed in", "--expect-text", "token ok", "--expect-text", "session hidden",
		"--json", jsonPath, "--junit", junitPath, app.URL+"/app", app.URL+"/private/page")
	code, stdout, stderr := run(t, o, browser.Config{})
	if code != ExitPass {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPass, stdout, stderr)
	}
	mu.Lock()
	if got := seen["/app"]; slices.Contains(got, "scoped") || !slices.Contains(got, "session") {
		t.Errorf("/app got the cookies %q: want session, not scoped (its path is /private)", got)
	}
	if got := seen["/private/page"]; !slices.Contains(got, "scoped") || !slices.Contains(got, "session") {
		t.Errorf("/private/page got the cookies %q: want session and scoped", got)
	}
	mu.Unlock()
	report, _ := os.ReadFile(jsonPath)
	junit, _ := os.ReadFile(junitPath)
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr, "the JSON report": string(report), "JUnit": string(junit)} {
		for _, secret := range []string{"s3ss10n-value", "sc0p3d-value", "t0k3n-value", "other-v4lue"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s shows a secret of the storage state", name)
			}
		}
	}
}

// writeJSON writes v as JSON to path.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A bad --storage-state file is a usage error that names the file, where
// it is wrong and what it should be, and never a value.
func TestSmokeStorageStateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		name, file, want string
	}{
		{"not JSON", "{\n  \"cookies\": [\n    {\"name\": \"a\" \"value\": \"hunter2\"}\n  ]\n}", "not JSON at line 3"},
		{"wrong type", `{"cookies": {"name": "a"}}`, "cookies at line 1 is a JSON object, want an array"},
		{"empty", `{}`, "no cookies and no origins in it"},
		{"no domain", `{"cookies": [{"name": "sid", "value": "hunter2", "path": "/"}]}`, "cookies[0] (sid) has no domain"},
		{"no name", `{"cookies": [{"value": "hunter2", "domain": "example.com"}]}`, "cookies[0] has no name"},
		{"sameSite", `{"cookies": [{"name": "sid", "value": "hunter2", "domain": "example.com", "sameSite": "lax"}]}`, `sameSite "lax", want Strict, Lax or None`},
		{"sameSite None", `{"cookies": [{"name": "sid", "value": "hunter2", "domain": "example.com", "sameSite": "None"}]}`, "sameSite None needs secure: true"},
		{"origin", `{"origins": [{"origin": "example.com/app", "localStorage": []}]}`, `origins[0]: "example.com/app" is not an origin: want scheme://host[:port]`},
		{"item", `{"origins": [{"origin": "https://a.test", "localStorage": [{"value": "hunter2"}]}]}`, "localStorage[0] has no name"},
		{"missing file", "", "--storage-state: open"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
		if tt.file != "" {
			os.WriteFile(path, []byte(tt.file), 0o600)
		}
		fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := AddFlags(fs)
		if err := fs.Parse([]string{"--storage-state", path, "https://example.com/"}); err != nil {
			t.Fatal(err)
		}
		_, err := f.Finish(fs.Args())
		switch {
		case err == nil:
			t.Errorf("%s: no error", tt.name)
		case !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s: %v\nwant %q", tt.name, err, tt.want)
		case strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error shows a value: %v", tt.name, err)
		case tt.file != "" && (!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "storageState({path})")):
			t.Errorf("%s: the error does not name the file and what to give: %v", tt.name, err)
		}
	}
}

// TestSmokeStorageStateFromTools: a storage state the storage_state tool
// saved after a login through a form (an httpOnly session cookie from the
// server, a token the page keeps in localStorage) is one smoke
// --storage-state reads, and the run starts logged in.
func TestSmokeStorageStateFromTools(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/favicon.ico":
			w.WriteHeader(http.StatusNoContent)
		case "/login":
			if r.Method == http.MethodPost {
				http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3ss10n-value", Path: "/", HttpOnly: true})
				http.Redirect(w, r, "/app?fresh=1", http.StatusSeeOther)
				return
			}
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Log in</title><form method="post"><input name="user" aria-label="User"><button>Log in</button></form></html>`)
		default:
			if c, err := r.Cookie("session"); err != nil || c.Value != "s3ss10n-value" {
				http.Redirect(w, r, "/login", http.StatusFound)
				return
			}
			fmt.Fprint(w, `<!doctype html><html lang="en"><head><title>App</title><script>
if (location.search.includes("fresh")) localStorage.setItem("token", "t0k3n-value");
const token = localStorage.getItem("token");
document.addEventListener("DOMContentLoaded", () => { document.querySelector("#token").textContent = token === "t0k3n-value" ? "token ok" : "no token"; });
</script></head><body><main><h1>Signed in</h1><p id="token"></p></main></body></html>`)
		}
	}))
	defer app.Close()

	dir := t.TempDir()
	b := browser.New(browser.Config{})
	defer b.Close()
	srv := tools.New(b, pagelock.New(pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}), tools.Options{Workspaces: []string{dir}})
	c := client.NewClient(transport.NewInProcessTransport(srv.MCP()))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION}}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		tool string
		args map[string]any
	}{
		{"navigate_page", map[string]any{"url": app.URL + "/login"}},
		{"evaluate_script", map[string]any{"function": `() => { document.querySelector("input").value = "alice"; document.querySelector("form").submit(); return "sent" }`}},
		{"wait_for", map[string]any{"text": []string{"token ok"}}},
		{"storage_state", map[string]any{"filename": "state.json"}},
	} {
		if a := mcptest.Call(t.Context(), c, step.tool, step.args); a.Err != nil || a.IsError {
			t.Fatalf("%s: %v %s", step.tool, a.Err, a.Text)
		}
	}
	b.Close()

	o := options(t, "--storage-state", filepath.Join(dir, "state.json"), "--expect-text", "Signed in", "--expect-text", "token ok", app.URL+"/app")
	if code, stdout, stderr := run(t, o, browser.Config{}); code != ExitPass {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPass, stdout, stderr)
	}
}
