package smoke

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pagemux/pagemux/browser"
)

// TestSmokeProtectedPreview: a preview behind basic auth, a token header
// and a session cookie passes with --basic-auth, --header and --cookie,
// their secrets read from the environment; a third-party origin the page loads from gets neither; no
// output shows a secret; without them the page fails with its 401; a $VAR
// that is not set is a usage error naming it. Not parallel: it sets
// environment variables.
func TestSmokeProtectedPreview(t *testing.T) {
	var mu sync.Mutex
	leaked := []string{}
	third := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Preview-Token") != "" {
			leaked = append(leaked, r.URL.Path)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, "window.thirdParty = true")
	}))
	t.Cleanup(third.Close)
	preview := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		c, _ := r.Cookie("session")
		if !ok || user != "ci" || pass != "pa55-word" || r.Header.Get("X-Preview-Token") != "t0ken-value" || c == nil || c.Value != "c00kie" {
			w.Header().Set("WWW-Authenticate", `Basic realm="preview"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/favicon.ico" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Preview</title><script src="%s/lib.js"></script><h1>Preview</h1>`, third.URL)
	}))
	t.Cleanup(preview.Close)
	t.Setenv("PREVIEW_PASSWORD", "pa55-word")
	t.Setenv("PREVIEW_TOKEN", "t0ken-value")
	t.Setenv("PREVIEW_SESSION", "c00kie")

	code, stdout, _ := run(t, options(t, preview.URL+"/"), browser.Config{})
	if code != ExitFail || !strings.Contains(stdout, "asks for HTTP authentication (401)") || !strings.Contains(stdout, "--basic-auth") {
		t.Fatalf("without credentials: exit %d, want a failure that names the 401 and --basic-auth\n%s", code, stdout)
	}

	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	o := options(t, "--basic-auth", "ci:$PREVIEW_PASSWORD", "--header", "X-Preview-Token: ${PREVIEW_TOKEN}",
		"--cookie", "session=$PREVIEW_SESSION", "--expect-text", "Preview", "--json", jsonPath, "--junit", junitPath, preview.URL+"/")
	code, stdout, stderr := run(t, o, browser.Config{})
	if code != ExitPass {
		t.Fatalf("with --basic-auth and --header: exit %d\n%s\n%s", code, stdout, stderr)
	}
	mu.Lock()
	if len(leaked) > 0 {
		t.Errorf("the third-party origin got the credentials with %v", leaked)
	}
	mu.Unlock()
	report, _ := os.ReadFile(jsonPath)
	junit, _ := os.ReadFile(junitPath)
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr, "the JSON report": string(report), "JUnit": string(junit)} {
		for _, secret := range []string{"pa55-word", "t0ken-value", "Y2k6cGE1NS13b3Jk", "c00kie"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s shows a secret", name)
			}
		}
	}

	fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
	f := AddFlags(fs)
	if err := fs.Parse([]string{"--header", "X-Preview-Token: $PAGEMUX_NO_SUCH_VAR", preview.URL}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Finish(fs.Args()); err == nil || !strings.Contains(err.Error(), "$PAGEMUX_NO_SUCH_VAR is not set") {
		t.Errorf("an unset $VAR: %v", err)
	}
}

// A run whose every page could not be reached says so, and what to check,
// rather than to ignore console noise.
func TestSmokeUnreachable(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close() // nothing listens there now
	code, stdout, _ := run(t, options(t, url+"/", url+"/pricing"), browser.Config{})
	if code != ExitFail || !strings.Contains(stdout, "FAIL: no page could be reached (net::ERR_CONNECTION_REFUSED): is the site up") || strings.Contains(stdout, "--ignore-console") {
		t.Errorf("exit %d, want a failure that says no page could be reached\n%s", code, stdout)
	}
}
