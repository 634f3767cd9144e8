package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// `pagemux smoke --login` from the binary, with the wrong password: the
// login fails once, and every page fails naming the step that failed and
// what the page showed, not the password; a storage state that is not
// Playwright's is a usage error naming the entry; --help lists the flags.
func TestSmokeBinaryLogin(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/login" && r.Method == http.MethodPost:
			posts.Add(1)
			if r.PostFormValue("password") == "the-right-one" {
				http.SetCookie(w, &http.Cookie{Name: "session", Value: "ok", Path: "/"})
				http.Redirect(w, r, "/account", http.StatusSeeOther)
				return
			}
			fallthrough
		case r.URL.Path == "/login":
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Log in</title><main><h1>Log in</h1>
<form method="post" action="/login"><label>Password <input id="pw" name="password" type="password"></label><button>Log in</button></form></main></html>`)
		case r.URL.Path == "/favicon.ico":
			w.WriteHeader(http.StatusNoContent)
		default:
			if c, err := r.Cookie("session"); err != nil || c.Value != "ok" {
				http.Redirect(w, r, "/login", http.StatusFound)
				return
			}
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Account</title><main><h1>Account</h1></main></html>`)
		}
	}))
	defer site.Close()
	// The child inherits it; the name is this test's own.
	os.Setenv("PAGEMUX_TEST_BINARY_LOGIN_PW", "wr0ng-passw0rd")
	t.Cleanup(func() { os.Unsetenv("PAGEMUX_TEST_BINARY_LOGIN_PW") })
	dir := t.TempDir()
	login := filepath.Join(dir, "login.yaml")
	os.WriteFile(login, []byte(`- navigate: /login
- fill: "#pw"
  value: $PAGEMUX_TEST_BINARY_LOGIN_PW
- press: Enter
- waitForURL: /account
  timeout: 2s
`), 0o600)
	junit := filepath.Join(dir, "r.xml")
	code, stdout, stderr := smokeBinary(t, "--login", login, "--junit", junit, site.URL+"/account", site.URL+"/settings")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d login posts, want 1", n)
	}
	want := fmt.Sprintf("error    login: step 4 (wait for URL /account): the page is still at %s/login after 2s", site.URL)
	if strings.Count(stdout, want) != 2 {
		t.Errorf("summary: want %q for each page:\n%s", want, stdout)
	}
	if !strings.Contains(stdout, "FAIL: the login (--login) failed, so no page was checked") {
		t.Errorf("the advice does not say the login failed:\n%s", stdout)
	}
	b, _ := os.ReadFile(junit)
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr, "JUnit": string(b)} {
		if strings.Contains(out, "wr0ng-passw0rd") {
			t.Errorf("%s shows the password", name)
		}
	}
	if !strings.Contains(string(b), `<failure message="step 4 (wait for URL /account)`) {
		t.Errorf("JUnit has no login failure naming the step:\n%s", b)
	}

	state := filepath.Join(dir, "state.json")
	os.WriteFile(state, []byte(`{"cookies": [{"name": "sid", "value": "s3cret", "path": "/"}]}`), 0o600)
	code, stdout, stderr = smokeArgs(t, "--storage-state", state, site.URL+"/account")
	if code != 2 || !strings.Contains(stderr, "--storage-state: "+state+": cookies[0] (sid) has no domain; give the JSON Playwright's") || strings.Contains(stderr, "s3cret") {
		t.Errorf("a bad storage state: exit %d\n%s\n%s", code, stdout, stderr)
	}

	code, _, stderr = smokeArgs(t, "--help")
	for _, w := range []string{"--steps FILE", "--login FILE", "--storage-state FILE", "waitForSelector"} {
		if code != 0 || !strings.Contains(stderr, w) {
			t.Errorf("--help: exit %d, lacks %q", code, w)
		}
	}
}
