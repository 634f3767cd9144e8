package smoke

import (
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// loginSite is a site behind a real login form: POST /login with the right
// user and password sets a session cookie and redirects to /account; every
// other page redirects to /login without it. /orders shows its orders a
// moment after its button is clicked.
type loginSite struct {
	*httptest.Server
	password string
	logins   atomic.Int32 // POSTs to /login
	mu       sync.Mutex
	sessions map[string]bool
}

func newLoginSite(t *testing.T, password string) *loginSite {
	s := &loginSite{password: password, sessions: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

const loginForm = `<!doctype html><html lang="en"><title>Log in</title><main><h1>Log in</h1>%s
<form method="post" action="/login"><label>User <input id="user" name="user"></label>
<label>Password <input id="password" name="password" type="password"></label><button type="submit">Log in</button></form></main></html>`

func (s *loginSite) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/favicon.ico":
		w.WriteHeader(http.StatusNoContent)
		return
	case r.URL.Path == "/login" && r.Method == http.MethodPost:
		s.logins.Add(1)
		if r.PostFormValue("user") != "ci" || r.PostFormValue("password") != s.password {
			fmt.Fprintf(w, loginForm, `<p role="alert">Wrong user or password</p>`)
			return
		}
		token := rand.Text()
		s.mu.Lock()
		s.sessions[token] = true
		s.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: token, Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/account", http.StatusSeeOther)
		return
	case r.URL.Path == "/login":
		fmt.Fprintf(w, loginForm, "")
		return
	}
	c, err := r.Cookie("session")
	s.mu.Lock()
	ok := err == nil && s.sessions[c.Value]
	s.mu.Unlock()
	if !ok {
		http.Redirect(w, r, "/login", http.StatusFound)
		return
	}
	switch r.URL.Path {
	case "/account":
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Account</title><main><h1>Welcome, ci</h1><label>Plan <select id="plan"><option>free</option></select></label>
<form method="get"><label>Search <input id="q" name="q"></label></form></main></html>`)
	case "/orders":
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Orders</title><main><h1>Welcome, ci</h1><button id="more">Show orders</button><ul id="list"></ul></main>
<script>document.querySelector("#more").onclick = () => setTimeout(() => { document.querySelector("#list").innerHTML = "<li>Order 42</li>"; }, 100);</script></html>`)
	default:
		http.NotFound(w, r)
	}
}

// setEnv sets a variable for the test; its name is the test's own, so that
// tests that set different ones still run in parallel.
func setEnv(t *testing.T, name, value string) {
	os.Setenv(name, value)
	t.Cleanup(func() { os.Unsetenv(name) })
}

// TestSmokeLoginAndSteps: --login fills a real login form once (its
// password from the environment) and every page, in the same browser
// context, has its session cookie; --steps (YAML) runs steps for all pages
// and for one by its path; a step that fails fails its page naming the
// step; no output shows the password. One run, one Chrome.
func TestSmokeLoginAndSteps(t *testing.T) {
	t.Parallel()
	site := newLoginSite(t, "c0rrect-h0rse")
	setEnv(t, "PAGEMUX_TEST_STEPS_PASSWORD", "c0rrect-h0rse")
	dir := t.TempDir()
	login := filepath.Join(dir, "login.json")
	os.WriteFile(login, []byte(`[
  {"navigate": "/login"},
  {"fill": "#user", "value": "ci"},
  {"fill": "#password", "value": "$PAGEMUX_TEST_STEPS_PASSWORD"},
  {"click": "button[type=submit]"},
  {"waitForURL": "*/account"}
]`), 0o600)
	steps := filepath.Join(dir, "steps.yaml")
	os.WriteFile(steps, []byte(`all:
  - waitForSelector: main h1
pages:
  /orders:
    - click: "#more"
    - waitForText: Order 42
  /account?broken:
    - click: "#nope"
      timeout: 1s
  /account?select:
    - fill: "#plan"
      value: $PAGEMUX_TEST_STEPS_PASSWORD
  /account?search:
    - fill: "#q"
      value: $PAGEMUX_TEST_STEPS_PASSWORD
    - press: Enter
    - waitForURL: /elsewhere
      timeout: 500ms
`), 0o600)
	jsonPath, junitPath, logPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "pagemux.log")
	o := options(t, "--login", login, "--steps", steps, "--expect-text", "Welcome, ci", "--json", jsonPath, "--junit", junitPath, "--log-file", logPath,
		site.URL+"/account", site.URL+"/orders", site.URL+"/account?broken", site.URL+"/account?select", site.URL+"/account?search")
	code, stdout, stderr := run(t, o, browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	if !strings.Contains(stderr, "Logged in (--login): 5 steps in ") {
		t.Errorf("stderr does not say the login went well:\n%s", stderr)
	}
	if n := site.logins.Load(); n != 1 {
		t.Errorf("%d logins, want 1 before all pages", n)
	}
	r := readReport(t, jsonPath)
	for i, want := range []string{"", "", `^steps: error: step 2 \(click #nope\): #nope: no element matches it after 1s$`,
		// The page's own error names the value, which is a secret.
		`^steps: error: step 2 \(fill #plan\): the select has no option "\*\*\*"; its options are: "free"$`,
		// The GET form put the secret in the URL the step names.
		`^steps: error: step 4 \(wait for URL /elsewhere\): the page is still at http://127\.0\.0\.1:\d+/account\?q=\*\*\* after 500ms$`} {
		p := r.Pages[i]
		got := problems(p)
		if want == "" {
			if !p.Passed || len(got) != 0 {
				t.Errorf("%s: passed %v, problems %q", p.URL, p.Passed, got)
			}
		} else if p.Passed || len(got) != 1 || !regexpMatch(want, got[0]) {
			t.Errorf("%s: passed %v, problems %q, want one matching %s", p.URL, p.Passed, got, want)
		}
		if c := p.check(checkLogin); c.Result != Pass {
			t.Errorf("%s: login check %s", p.URL, c.Result)
		}
		if c := p.check(checkSteps); c.Result != map[bool]string{true: Pass, false: Fail}[want == ""] {
			t.Errorf("%s: steps check %s", p.URL, c.Result)
		}
	}
	if !strings.Contains(stdout, "error    steps: step 2 (click #nope)") || !strings.Contains(stdout, "A step that failed stopped its page's steps") {
		t.Errorf("summary lacks the failed step:\n%s", stdout)
	}
	report, _ := os.ReadFile(jsonPath)
	junit, _ := os.ReadFile(junitPath)
	logged, _ := os.ReadFile(logPath)
	if len(logged) == 0 {
		t.Error("--log-file: nothing logged")
	}
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr, "the JSON report": string(report), "JUnit": string(junit), "the log": string(logged)} {
		if strings.Contains(out, "c0rrect-h0rse") {
			t.Errorf("%s shows the password", name)
		}
	}
}

// A bad steps or login file is a usage error that says where and what to
// give; a page key that no page has is one too, before Chrome starts.
func TestSmokeStepsErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		flag, name, file, want string
	}{
		{"--steps", "unknown key.json", `[{"clik": "#a"}]`, `step 1: unknown key "clik"`},
		{"--steps", "two actions.json", `[{"click": "#a", "press": "Enter"}]`, `give one action a step`},
		{"--steps", "fill without value.json", `{"all": [{"fill": "#q"}]}`, `step 1: fill needs "value"`},
		{"--steps", "unset var.json", `{"pages": {"/a": [{"fill": "#pw", "value": "$PAGEMUX_NO_SUCH_VAR"}]}}`, `pages["/a"] step 1: fill #pw: $PAGEMUX_NO_SUCH_VAR is not set`},
		{"--steps", "bad timeout.json", `[{"click": "#a", "timeout": "soon"}]`, `"timeout" wants a positive duration`},
		{"--steps", "bad key.json", `[{"press": "Hyper+Q"}]`, `step 1: `},
		{"--steps", "not yaml.yaml", "all:\n  - click: [\n", "is not YAML"},
		{"--steps", "not json.json", "[\n{\"click\": \"#a\"},\n]", "is not JSON at line 3"},
		{"--steps", "empty.json", `{"all": []}`, "no steps in it"},
		{"--login", "not navigate.json", `[{"click": "#a"}]`, "the first step is a navigate, to the login page"},
		{"--login", "pages.json", `{"pages": {"/a": [{"click": "#a"}]}}`, `"pages" is for --steps`},
	} {
		path := filepath.Join(dir, tt.name)
		os.WriteFile(path, []byte(tt.file), 0o600)
		fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := AddFlags(fs)
		if err := fs.Parse([]string{tt.flag, path, "https://example.com/"}); err != nil {
			t.Fatal(err)
		}
		_, err := f.Finish(fs.Args())
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%s %s: %v\nwant %q", tt.flag, tt.name, err, tt.want)
		}
	}

	path := filepath.Join(dir, "other page.json")
	os.WriteFile(path, []byte(`{"pages": {"/checkout": [{"click": "#buy"}]}}`), 0o600)
	code, _, stderr := run(t, options(t, "--steps", path, "https://example.com/cart"), browser.Config{ExecPath: "/nonexistent/chrome"})
	if code != ExitUsage || !strings.Contains(stderr, `--steps: the pages ["/checkout"] are none of the pages checked`) {
		t.Errorf("a key no page has: exit %d\n%s", code, stderr)
	}
}

// TestSmokeToolMillis: a step's timeout goes to the tools in whole
// milliseconds, never 0 (their default) for a positive one.
func TestSmokeToolMillis(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]int64{time.Microsecond: 1, 500 * time.Millisecond: 500, 1500*time.Millisecond + 1: 1501, 2 * time.Second: 2000} {
		if got := toolMillis(d); got != want {
			t.Errorf("toolMillis(%v) = %d, want %d", d, got, want)
		}
	}
}

func regexpMatch(expr, s string) bool { return regexp.MustCompile(expr).MatchString(s) }
