package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

// framesSite serves a page on 127.0.0.1 whose iframe holds a form of
// another site (the same server reached as localhost), which Chrome runs
// in a process of its own; rows adds as many buttons to the form, to make
// its snapshot big. It returns the page's URL.
func framesSite(t *testing.T, rows int) string {
	t.Helper()
	var cross string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/top.html":
			fmt.Fprintf(w, `<!doctype html><title>Top</title><h1>Top</h1><iframe title="Pay" src="%s/form.html" style="width: 600px; height: 400px"></iframe>`, cross)
		case "/form.html":
			fmt.Fprint(w, `<!doctype html><title>Form</title><button onclick="out.textContent='paid'">Pay now</button><p id=out>unpaid</p>`)
			for i := range rows {
				fmt.Fprintf(w, "<p><button>Row %d</button></p>", i)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cross = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	return srv.URL + "/top.html"
}

// snapshotWith takes snapshots of page id until one holds want: the frame
// loads after its page.
func snapshotWith(t *testing.T, e *testEnv, id int, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "mode": "full"})
		if strings.Contains(snap, want) {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, snap)
		}
		time.Sleep(20 * time.Millisecond) // polling the frame's load, bounded
	}
}

// A cross-site frame's document is in full, scoped and incremental
// snapshots, and its uids act.
func TestSnapshotFrames(t *testing.T) {
	t.Parallel()
	e := incrementalEnv(t)
	id := e.openPage(t, framesSite(t, 20)) // a click changes a small part of it
	full := snapshotWith(t, e, id, `button "Pay now"`)
	mustContain(t, full, "Iframe \"Pay\"\n    uid=", `RootWebArea "Form" url="http://localhost:`)

	iframe := uidIn(t, full, `Iframe "Pay"`)
	scoped := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "uid": iframe})
	mustContain(t, scoped, "## Latest page snapshot (uid="+iframe+" and below)\n", `button "Pay now"`, `"unpaid"`)

	e.ok(t, "take_snapshot", map[string]any{"pageId": id}) // the agent's last one
	clicked := e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, full, `button "Pay now"`), "includeSnapshot": true})
	_, lines, ok := changesOf(t, clicked)
	if !ok || !strings.Contains(lines, `"paid"`) {
		t.Errorf("the click in the frame: no change with its text in the incremental snapshot:\n%s", clicked)
	}
}

// A page past --max-output is outlined with its frame's document, whose
// folds open with take_snapshot uid=….
func TestSnapshotFramesOutlined(t *testing.T) {
	t.Parallel()
	const limit = 3000
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64}, Server: Options{MaxOutput: limit}})
	id := e.openPage(t, framesSite(t, 200))
	out := snapshotWith(t, e, id, `RootWebArea "Form"`)
	mustContain(t, out, "Outlined: the snapshot is ", `Iframe "Pay"`)
	if strings.Contains(out, `button "Row 150"`) {
		t.Fatalf("row 150 is not folded: the test proves nothing\n%s", out)
	}
	fold := foldUnder(t, out, `RootWebArea "Form"`)
	opened := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "uid": fold})
	mustContain(t, opened, `button "Row `)
}

// foldUnder is the uid a fold line below the line holding needle names.
func foldUnder(t *testing.T, out, needle string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, needle)
	if !ok {
		t.Fatalf("no %q in:\n%s", needle, out)
	}
	for line := range strings.Lines(rest) {
		if _, after, ok := strings.Cut(line, "take_snapshot uid="); ok && strings.Contains(line, "…") {
			return strings.FieldsFunc(after, func(r rune) bool { return r == ' ' || r == ')' || r == ',' || r == '\n' })[0]
		}
	}
	t.Fatalf("no fold below %q in:\n%s", needle, out)
	return ""
}
