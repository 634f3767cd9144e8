package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/record"
)

// recordSite is a sign-in form whose code must be codeValue (typed as the
// secret ${SITE_PASSWORD} of testdata/secrets.env): the right one goes on
// to /done, a wrong one back to the form.
func recordSite(t *testing.T, codeValue string) *httptest.Server {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch {
		case r.URL.Path == "/login" && r.Method == http.MethodPost:
			if r.PostFormValue("code") == codeValue && r.PostFormValue("name") == "Ada" {
				http.Redirect(w, r, "/done", http.StatusSeeOther)
				return
			}
			http.Redirect(w, r, "/login?wrong", http.StatusSeeOther)
		case r.URL.Path == "/login":
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Sign in</title><main><h1>Sign in</h1>
<form method="post" action="/login"><label>Name <input id="name" name="name"></label>
<label>Code <input name="code"></label><div><button>Sign in</button></div></form></main></html>`)
		case r.URL.Path == "/alert":
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Alert</title><main><button onclick="alert('hi')">Alert</button></main></html>`)
		case r.URL.Path == "/done":
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Welcome</title><main><h1>Welcome, Ada</h1></main></html>`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(site.Close)
	return site
}

// TestRecordBinary: the binary with --record and --secrets, over HTTP.
// Alice's scripted session (navigate, snapshot, two fills, one of them a
// secret, a click that signs in) is recorded step by step with its
// snapshots and screenshots, none while the page shows the secret; no
// file of the record holds the secret's value, and all are private. The
// record exported with `pagemux record export --steps` passes `pagemux
// smoke --steps` on the same site. The records page lists it for an
// admin, 401 without a token, 403 for alice; in Chromium it steps through
// every step. Bob, whose rules entry says record: false, has no record.
func TestRecordBinary(t *testing.T) {
	t.Parallel()
	const secret = "hunter2 & more" // testdata/secrets.env's SITE_PASSWORD
	site := recordSite(t, secret)
	dir := filepath.Join(t.TempDir(), "records")
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	os.WriteFile(rulesFile, []byte("agents:\n  - agent: bob\n    record: false\n"), 0o600)
	base, stderr := startHTTPServer(t, pagemuxBinary(t), "--browser-url="+sharedChrome(t), "--record", dir, "--rules", rulesFile,
		"--secrets=testdata/secrets.env", "--auth-token", "alice=rec-alice-secret", "--auth-token", "bob=rec-bob-secret",
		"--auth-token", "boss=rec-boss-secret", "--admin-token", "boss", "--log-level=warn")
	// Bob's rules entry says record: false: his calls leave no record.
	bob := mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer rec-bob-secret"}, "")
	mustCall(t, bob, "new_page", map[string]any{"url": site.URL + "/done"})
	alice := mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer rec-alice-secret"}, "")
	mustCall(t, alice, "new_page", map[string]any{"url": site.URL + "/login"})
	snap := mustCall(t, alice, "take_snapshot", nil)
	uid := func(role, name string) string {
		t.Helper()
		m := regexp.MustCompile(`uid=(\S+) ` + role + ` "` + name + `"`).FindStringSubmatch(snap)
		if m == nil {
			t.Fatalf("no %s %q in the snapshot:\n%s", role, name, snap)
		}
		return m[1]
	}
	mustCall(t, alice, "fill", map[string]any{"uid": uid("textbox", "Name"), "value": "Ada"})
	mustCall(t, alice, "fill", map[string]any{"uid": uid("textbox", "Code"), "value": "${SITE_PASSWORD}"})
	if got := mustCall(t, alice, "click", map[string]any{"uid": uid("button", "Sign in")}); !strings.Contains(got, "/done") {
		t.Fatalf("the click did not sign in: %s", got)
	}

	// A click that leaves a dialog open is recorded at once, without the
	// page (whose scripts wait for the dialog), and the step that answers
	// it with the page.
	boss := mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer rec-boss-secret"}, "")
	mustCall(t, boss, "new_page", map[string]any{"url": site.URL + "/alert"})
	snap = mustCall(t, boss, "take_snapshot", nil)
	start := time.Now()
	if got := mustCall(t, boss, "click", map[string]any{"uid": uid("button", "Alert")}); !strings.Contains(got, "hi") || time.Since(start) > 5*time.Second {
		t.Errorf("a click that opens an alert took %v: %s", time.Since(start), got)
	}
	mustCall(t, boss, "handle_dialog", map[string]any{"action": "accept"})

	rec := recordOf(t, dir, "alice")
	checkRecordSteps(t, rec)
	if bs := recordOf(t, dir, "boss").Steps; len(bs) != 4 || !strings.Contains(bs[2].Note, "a alert dialog is open") || bs[3].Snapshot == "" {
		t.Errorf("boss's steps: %+v", bs)
	}
	checkRecordFiles(t, filepath.Join(dir, rec.Meta.ID), secret)

	t.Run("export", func(t *testing.T) {
		steps := filepath.Join(t.TempDir(), "steps.json")
		var out, errb bytes.Buffer
		if code := runRecord([]string{"export", filepath.Join(dir, rec.Meta.ID), "--steps", "-o", steps}, &out, &errb); code != recordOK {
			t.Fatalf("export: exit %d\n%s", code, errb.String())
		}
		b, _ := os.ReadFile(steps)
		for _, want := range []string{`"navigate": "` + site.URL + `/login"`, `"fill": "#name"`, `"value": "${SITE_PASSWORD}"`, `"click": `, `"waitForURL": "` + site.URL + `/done"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("the steps lack %s:\n%s", want, b)
			}
		}
		// The child takes the secret from its environment, as CI would.
		os.Setenv("SITE_PASSWORD", secret)
		t.Cleanup(func() { os.Unsetenv("SITE_PASSWORD") })
		code, stdout, stderr := smokeBinary(t, "--browser-url", sharedChrome(t), "--steps", steps, site.URL+"/login")
		if code != 0 || strings.Contains(stdout+stderr, secret) {
			t.Errorf("pagemux smoke --steps on the exported steps: exit %d\n%s\n%s\nsteps:\n%s", code, stdout, stderr, b)
		}
	})

	t.Run("viewer", func(t *testing.T) {
		path := base + record.MountPath + "/api/records"
		for who, want := range map[string]int{"": http.StatusUnauthorized, "rec-alice-secret": http.StatusForbidden, "rec-boss-secret": http.StatusOK} {
			code, body := getWith(t, path, who)
			if code != want || (code != http.StatusOK) == strings.Contains(body, rec.Meta.ID) {
				t.Errorf("GET %s with %q: %d %.200s; want %d", path, who, code, body, want)
			}
		}
		// The live view links to them.
		if code, body := getWith(t, base+"/ui/state", "rec-boss-secret"); code != http.StatusOK || !strings.Contains(body, `"records":true`) {
			t.Errorf("the live view's state does not link the records: %d %.300s", code, body)
		}
		replayInChromium(t, dir, rec)
	})
	if t.Failed() {
		t.Logf("pagemux stderr:\n%s", stderr)
	}
}

// recordOf is the record of token's agent in dir, which has one each of
// alice's and boss's (none of bob's).
func recordOf(t *testing.T, dir, token string) *record.Record {
	t.Helper()
	metas, err := record.List(dir)
	if err != nil || len(metas) != 2 {
		t.Fatalf("records: %v %+v", err, metas)
	}
	for _, m := range metas {
		if m.Token == token {
			rec, err := record.Open(dir, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
	}
	t.Fatalf("no record of %s: %+v", token, metas)
	return nil
}

// checkRecordSteps checks the record of the scripted session: each call
// a step, the actions with their snapshot and screenshot but the one
// after the secret was typed, the fills and the click with the selectors
// export needs.
func checkRecordSteps(t *testing.T, rec *record.Record) {
	t.Helper()
	var tools []string
	for _, s := range rec.Steps {
		tools = append(tools, s.Tool)
	}
	if got := strings.Join(tools, " "); got != "new_page take_snapshot fill fill click" {
		t.Fatalf("steps: %s", got)
	}
	st := rec.Steps
	for i, s := range st {
		if s.N != i+1 || s.Outcome != "ok" || (s.Page == 0) != (s.Tool == "new_page") || len(s.Locks) == 0 || s.Answer == "" {
			t.Errorf("step %d: %+v", i+1, s)
		}
		// new_page holds no lock on the page it opens: nothing of it.
		if action := s.Tool != "take_snapshot" && s.Tool != "new_page"; action != (s.Snapshot != "") {
			t.Errorf("step %d (%s): snapshot %q", s.N, s.Tool, s.Snapshot)
		}
	}
	if st[2].Screenshot == "" || st[4].Screenshot == "" {
		t.Errorf("no screenshot after the first fill or the click: %+v", st)
	}
	if st[3].Screenshot != "" || !strings.Contains(st[3].Note, "shows the value of a secret") {
		t.Errorf("the step that typed the secret: screenshot %q, note %q", st[3].Screenshot, st[3].Note)
	}
	if string(st[3].Args) != `{"uid":"`+uidOf(st[3].Args)+`","value":"${SITE_PASSWORD}"}` {
		t.Errorf("the secret's fill has arguments %s", st[3].Args)
	}
	if len(st[2].Selectors) != 1 || st[2].Selectors[0] != "#name" || len(st[3].Selectors) != 1 || st[3].Selectors[0] == "" || len(st[4].Selectors) != 1 || st[4].Selectors[0] == "" {
		t.Errorf("selectors: %q %q %q", st[2].Selectors, st[3].Selectors, st[4].Selectors)
	}
	if !strings.HasSuffix(st[4].URL, "/done") || st[4].Title != "Welcome" || !strings.Contains(st[3].Title, "Sign in") {
		t.Errorf("after the click: %s %q", st[4].URL, st[4].Title)
	}
}

// uidOf is the uid of a call's arguments.
func uidOf(args json.RawMessage) string {
	var a struct{ UID string }
	json.Unmarshal(args, &a)
	return a.UID
}

// checkRecordFiles checks that no file of the record at path holds the
// secret's value, and that each is private.
func checkRecordFiles(t *testing.T, path, secret string) {
	t.Helper()
	entries, err := os.ReadDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v", path, info.Mode().Perm())
	}
	for _, e := range entries {
		info, _ := e.Info()
		b, _ := os.ReadFile(filepath.Join(path, e.Name()))
		if info.Mode().Perm() != 0o600 || bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("hunter2")) {
			t.Errorf("%s: mode %v, holds the secret: %v", e.Name(), info.Mode().Perm(), bytes.Contains(b, []byte("hunter2")))
		}
	}
}

// replayInChromium opens the records page in Chromium, opens rec and
// steps through it with the next button: each step shows its call, and
// the click's its screenshot. The page is served here, as /ui/records
// serves it to an admin: pagemux keeps the tabs of its Chrome off its own
// address, and the shared Chrome is one such.
func replayInChromium(t *testing.T, dir string, rec *record.Record) {
	t.Helper()
	viewer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record.Handler(dir).ServeHTTP(w, r.WithContext(agents.With(r.Context(), agents.Agent{ID: "token:boss", Token: "boss", Admin: true})))
	}))
	defer viewer.Close()
	ctx, cancel := remote.NewAllocator(t.Context(), sharedChrome(t))
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()
	err := chromedp.Do(ctx,
		chromedp.Navigate(viewer.URL+record.MountPath+"/#"+rec.Meta.ID),
		chromedp.WaitVisible(chromedp.CSS(`body[data-step="1"]`)),
	)
	if err != nil {
		t.Fatalf("the records page in Chromium: %v", err)
	}
	for i, s := range rec.Steps {
		if i > 0 {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#next`)),
				chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`body[data-step="%d"]`, i+1)))); err != nil {
				t.Fatalf("step %d: %v", i+1, err)
			}
		}
		call, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#call`)))
		if err != nil || !strings.Contains(call, fmt.Sprintf("Step %d: %s (ok)", s.N, s.Tool)) {
			t.Errorf("step %d shows %q (%v)", s.N, call, err)
		}
	}
	const shown = `(() => { const img = document.getElementById('screenshot');
  return !document.getElementById('shot').hidden && img.complete && img.naturalWidth > 0; })()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](shown, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("the click's screenshot is not shown: %v", err)
	}
	diff, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#diff`)))
	if err != nil || !strings.Contains(diff, "another document") {
		t.Errorf("the click's diff: %q (%v)", diff, err)
	}
}
