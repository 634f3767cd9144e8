package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

func TestSnapshotUIDsStable(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	first := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, first, "## Latest page snapshot\nuid=", `RootWebArea "Harness Form"`, `textbox "Name"`, `combobox "Color"`, `option "red" selected`)
	submit := uidIn(t, first, `button "Submit"`)

	// A node added later gets the new snapshot's prefix; the old keep theirs.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, first, `button "Later"`)})
	e.ok(t, "wait_for", map[string]any{"pageId": id, "text": []string{"Done loading"}})
	second := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	if got := uidIn(t, second, `button "Submit"`); got != submit {
		t.Fatalf("Submit's uid moved from %s to %s", submit, got)
	}
	done := uidIn(t, second, "Done loading")
	if strings.HasPrefix(done, strings.Split(submit, "_")[0]+"_") {
		t.Fatalf("new node got an old snapshot's uid %s", done)
	}
	// The uid of the first snapshot still works.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": submit})

	verbose := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "verbose": true})
	if len(verbose) <= len(second) {
		t.Fatalf("verbose snapshot is not longer than the plain one")
	}
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.Global)
	id := e.openPage(t, "/form.html")
	e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Later"`)})
	text := e.ok(t, "wait_for", map[string]any{"pageId": id, "text": []string{"Never here", "Done loading"}, "timeout": 5000})
	mustContain(t, text, `Element matching one of ["Never here","Done loading"] found.`, "## Latest page snapshot", "Done loading")

	start := time.Now()
	mustContain(t, e.fails(t, "wait_for", map[string]any{"pageId": id, "text": []string{"Never here"}, "timeout": 300}), "Timed out after waiting 300ms")
	if time.Since(start) > 20*time.Second {
		t.Fatalf("a 300 ms wait_for took %s", time.Since(start))
	}
	mustContain(t, e.fails(t, "wait_for", map[string]any{"pageId": id, "text": []string{}}), `invalid argument "text" for wait_for: want at least 1 item(s), got 0`)
	mustContain(t, e.fails(t, "wait_for", map[string]any{"pageId": id, "text": "Done"}), `invalid argument "text" for wait_for: want an array, got string`)
}

func TestWaitForAcrossNavigation(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	// The text appears only on the next document.
	e.eval(t, id, "() => { setTimeout(() => { location.href = '/slow?ms=300' }, 100); return 1 }")
	mustContain(t, e.ok(t, "wait_for", map[string]any{"pageId": id, "text": []string{"slow page after"}, "timeout": 10000}), "found")
}
