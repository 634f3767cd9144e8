package record

import (
	"context"
	"encoding/json"
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

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/tools"
)

// end is a call's end as tools gives it to its observers, with no page.
func end(id uint64, agent, token, tool, args, answer string) tools.CallEnd {
	return tools.CallEnd{
		CallInfo: tools.CallInfo{ID: id, Agent: agent, Token: token, Session: "s-" + agent, Tool: tool,
			Args: json.RawMessage(args), Arrived: time.Now(), Waited: 3 * time.Millisecond},
		Outcome: "ok", Took: 10 * time.Millisecond, Result: mcp.NewToolResultText(answer),
		Mask: func(s string) string { return strings.ReplaceAll(s, "hunter2", "${PW}") },
	}
}

// The cap stops a record cleanly: the steps that fit, then one line that
// says it stopped, then nothing, however many calls follow; another
// session's record is apart and goes on. Records are private and named
// safely whatever the agent's name.
func TestRecorderCap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "records")
	r, err := New(Options{Dir: dir, MaxBytes: 4000})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 900)
	for i := range 10 {
		r.Ended(t.Context(), end(uint64(i+1), "token:alice/agent:../../etc", "alice", "list_pages", `{}`, big+" hunter2"), nil)
	}
	r.Ended(t.Context(), end(99, "token:bob", "bob", "list_pages", `{}`, "one"), nil)
	metas, err := List(dir)
	if err != nil || len(metas) != 2 {
		t.Fatalf("List: %v %+v", err, metas)
	}
	var alice *Record
	for _, m := range metas {
		if !validID.MatchString(m.ID) || strings.Contains(m.ID, "..") {
			t.Errorf("record named %q", m.ID)
		}
		rec, err := Open(dir, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Token == "alice" {
			alice = rec
		} else if len(rec.Steps) != 1 || rec.Steps[0].Answer != "one" {
			t.Errorf("bob's record: %+v", rec.Steps)
		}
	}
	if alice == nil {
		t.Fatal("no record of alice")
	}
	n := len(alice.Steps)
	if n < 2 || n > 5 {
		t.Fatalf("alice's record has %d lines with a cap of 4000 bytes and steps of ~1000", n)
	}
	last := alice.Steps[n-1]
	if !strings.Contains(last.Stopped, "cap of 4000 bytes") || last.Tool != "" {
		t.Errorf("the last line does not say the record stopped: %+v", last)
	}
	for _, s := range alice.Steps[:n-1] {
		if s.Stopped != "" || s.Outcome != "ok" || !strings.HasSuffix(s.Answer, "${PW}") || s.WaitedMs != 3 {
			t.Errorf("step %+v", s)
		}
	}
	var total int64
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), "hunter2") {
			t.Errorf("%s holds the secret's value", path)
		}
		if !info.IsDir() && strings.Contains(path, "alice") {
			total += info.Size()
		}
		return nil
	})
	if total > 4000+300 {
		t.Errorf("alice's record takes %d bytes, past its cap of 4000 and its last line", total)
	}
}

// Export turns navigations, clicks, fills, fill_form and key presses into
// smoke steps, a click that changed the URL followed by a wait for it, a
// secret kept by name; it says what it left out and why.
func TestExport(t *testing.T) {
	rec := &Record{Steps: []Step{
		{N: 1, Tool: "navigate_page", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"url":"http://s/login"}`), URL: "http://s/login"},
		{N: 2, Tool: "take_snapshot", Outcome: "ok", Page: 1, URL: "http://s/login"},
		{N: 3, Tool: "fill", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"uid":"1_2","value":"${SITE_PASSWORD}"}`), Selectors: []string{"#pw"}, URL: "http://s/login"},
		{N: 4, Tool: "fill_form", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"elements":[{"uid":"1_3","value":"Ada"},{"uid":"1_4","value":"x"}]}`), Selectors: []string{"#name", "input[name=\"n\"]"}, URL: "http://s/login"},
		{N: 5, Tool: "click", Outcome: "error", Page: 1, Args: json.RawMessage(`{"uid":"1_9"}`), Selectors: []string{"#nope"}},
		{N: 6, Tool: "click", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"uid":"1_5"}`), Selectors: []string{"form > button:nth-of-type(1)"}, URL: "http://s/done"},
		{N: 7, Tool: "hover", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"uid":"2_1"}`), URL: "http://s/done"},
		{N: 8, Tool: "click", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"uid":"2_2"}`), Selectors: []string{""}, URL: "http://s/done"},
		{N: 9, Tool: "fill", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"uid":"2_3","value":"$5"}`), Selectors: []string{"#price"}, URL: "http://s/done"},
		{N: 10, Tool: "press_key", Outcome: "ok", Page: 1, Args: json.RawMessage(`{"key":"Enter"}`), URL: "http://s/done"},
		{N: 11, Stopped: "the record reached its cap"},
	}}
	steps, skipped := Export(rec)
	got, _ := json.Marshal(steps)
	want := `[{"navigate":"http://s/login"},{"fill":"#pw","value":"${SITE_PASSWORD}"},{"fill":"#name","value":"Ada"},{"fill":"input[name=\"n\"]","value":"x"},{"click":"form \u003e button:nth-of-type(1)"},{"waitForURL":"http://s/done"},{"press":"Enter"}]`
	if string(got) != want {
		t.Errorf("steps:\n%s\nwant\n%s", got, want)
	}
	wantSkipped := []string{"step 7 (hover): a steps file has no step for hover", "step 8 (click): no CSS selector", "step 9 (fill): its value has a $"}
	if len(skipped) != len(wantSkipped) {
		t.Fatalf("skipped: %q", skipped)
	}
	for i, w := range wantSkipped {
		if !strings.HasPrefix(skipped[i], w) {
			t.Errorf("skipped[%d] = %q, want %q…", i, skipped[i], w)
		}
	}
}

// The viewer shows an admin every record, another agent its own token's
// alone (another's is answered as none, its files too), reads no path
// outside the records, and diffs a step's snapshot with the page's last.
func TestViewer(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r.Ended(t.Context(), end(1, "token:alice", "alice", "list_pages", `{}`, "a"), nil)
	r.Ended(t.Context(), end(2, "token:bob", "bob", "list_pages", `{}`, "b"), nil)
	metas, _ := List(dir)
	ids := map[string]string{}
	for _, m := range metas {
		ids[m.Token] = m.ID
	}
	// Two snapshots of one document, by hand, for the diff.
	aliceDir := filepath.Join(dir, ids["alice"])
	os.WriteFile(filepath.Join(aliceDir, "00002.txt"), []byte("uid=1_0 RootWebArea \"A\"\n  uid=1_1 button \"Buy\"\n"), 0o600)
	os.WriteFile(filepath.Join(aliceDir, "00003.txt"), []byte("uid=1_0 RootWebArea \"A\"\n  uid=1_1 button \"Buy\"\n  uid=1_2 StaticText \"Thanks\"\n"), 0o600)
	for _, s := range []Step{{N: 2, Tool: "click", Page: 1, Snapshot: "00002.txt"}, {N: 3, Tool: "click", Page: 1, Snapshot: "00003.txt"}} {
		line, _ := json.Marshal(s)
		appendLine(filepath.Join(aliceDir, stepsFile), line)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a := agents.Agent{ID: "token:" + req.Header.Get("Who"), Token: req.Header.Get("Who"), Admin: req.Header.Get("Who") == "admin"}
		Handler(dir).ServeHTTP(w, req.WithContext(agents.With(req.Context(), a)))
	}))
	defer srv.Close()
	get := func(who, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Who", who)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		who, path string
		code      int
		has       string
	}{
		{"admin", "/ui/records/api/records", 200, ids["bob"]},
		{"admin", "/ui/records/api/records", 200, ids["alice"]},
		{"bob", "/ui/records/api/records", 200, ids["bob"]},
		{"bob", "/ui/records/api/records/" + ids["bob"], 200, `"answer":"b"`},
		{"bob", "/ui/records/api/records/" + ids["alice"], 404, "no such record"},
		{"bob", "/ui/records/files/" + ids["alice"] + "/00002.txt", 404, "no such record"},
		{"bob", "/ui/records/api/records/" + ids["alice"] + "/diff/3", 404, "no such record"},
		{"alice", "/ui/records/files/" + ids["alice"] + "/00002.txt", 200, `button "Buy"`},
		{"alice", "/ui/records/files/" + ids["alice"] + "/meta.json", 404, ""},
		{"alice", "/ui/records/files/" + ids["alice"] + "/..%2f..%2fetc%2fpasswd", 404, ""},
		{"alice", "/ui/records/api/records/..", 404, ""},
		{"alice", "/ui/records/api/records/" + ids["alice"] + "/diff/3", 200, `1 added; 2 of 3 lines unchanged`},
		{"alice", "/ui/records/api/records/" + ids["alice"] + "/diff/2", 200, "the first snapshot of this page"},
		{"alice", "/ui/records/", 200, "<title>pagemux records</title>"},
		{"alice", "/ui/records/app.js", 200, "showStep"},
	} {
		code, body := get(tc.who, tc.path)
		if code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("%s GET %s: %d %.300s; want %d with %q", tc.who, tc.path, code, body, tc.code, tc.has)
		}
		if tc.who == "bob" && strings.Contains(body, ids["alice"]) {
			t.Errorf("bob GET %s shows alice's record", tc.path)
		}
	}
	if _, err := Open(dir, "../x"); err == nil {
		t.Error("Open took a path outside the records")
	}
	if !Sees(context.Background(), Meta{Token: "x"}) {
		t.Error("a request its mount admitted without an agent sees nothing")
	}
}

// A fill's value that is a bare secret's name is kept as ${NAME}, in
// fill_form's elements too, so that Export writes it for smoke to take
// from the environment; a value that only looks like one stays.
func TestBareSecrets(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Options{Dir: dir, SecretNames: func(token string) []string {
		if token == "alice" {
			return []string{"PW"}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.Ended(t.Context(), end(1, "token:alice", "alice", "fill", `{"uid":"1_1","value":"PW"}`, "ok"), nil)
	r.Ended(t.Context(), end(2, "token:alice", "alice", "fill_form", `{"elements":[{"uid":"1_1","value":"PW"},{"uid":"1_2","value":"PWX"}]}`, "ok"), nil)
	r.Ended(t.Context(), end(3, "token:alice", "alice", "type_text", `{"text":"PW"}`, "ok"), nil)
	r.Ended(t.Context(), end(4, "token:bob", "bob", "fill", `{"uid":"1_1","value":"PW"}`, "ok"), nil)
	metas, _ := List(dir)
	var got []string
	for _, m := range metas {
		rec, _ := Open(dir, m.ID)
		for _, s := range rec.Steps {
			got = append(got, m.Token+" "+string(s.Args))
		}
	}
	slices.Sort(got)
	want := []string{
		`alice {"elements":[{"uid":"1_1","value":"${PW}"},{"uid":"1_2","value":"PWX"}]}`,
		`alice {"text":"PW"}`,
		`alice {"uid":"1_1","value":"${PW}"}`,
		`bob {"uid":"1_1","value":"PW"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("args:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// On stdio (no agent, no session) the one client's calls are one record,
// named for it.
func TestStdioRecord(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e := end(uint64(i+1), "", "", "list_pages", `{}`, "ok")
		e.Session = ""
		r.Ended(t.Context(), e, nil)
	}
	metas, _ := List(dir)
	if len(metas) != 1 || !strings.Contains(metas[0].ID, "-stdio-") {
		t.Fatalf("records: %+v", metas)
	}
	if rec, err := Open(dir, metas[0].ID); err != nil || len(rec.Steps) != 3 {
		t.Errorf("the record: %v %+v", err, rec)
	}
}

// Calls of one session that end at once (on several pages) are steps of
// one record, each numbered once, each line whole.
func TestRecorderConcurrent(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				r.Ended(t.Context(), end(uint64(g*100+i), "token:alice", "alice", "list_pages", `{}`, strings.Repeat("y", 5000)), nil)
			}
		})
	}
	wg.Wait()
	metas, _ := List(dir)
	if len(metas) != 1 {
		t.Fatalf("records: %+v", metas)
	}
	rec, err := Open(dir, metas[0].ID)
	if err != nil || len(rec.Steps) != 160 {
		t.Fatalf("%v: %d steps", err, len(rec.Steps))
	}
	for i, s := range rec.Steps {
		if s.N != i+1 || len(s.Answer) != 5000 {
			t.Fatalf("line %d is step %d with an answer of %d bytes", i+1, s.N, len(s.Answer))
		}
	}
}
