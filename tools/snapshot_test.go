package tools

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/agents"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/soak"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/snapshot"
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

// incrementalEnv is a server in --snapshot-mode=incremental, on lease
// (lease_test.go).
func incrementalEnv(t *testing.T) *testEnv {
	t.Helper()
	return leaseEnv(t, pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}, Options{SnapshotMode: SnapshotIncremental})
}

// changesOf splits an incremental snapshot section into its marked lines,
// after the heading and the summary line; ok is false for a full snapshot.
func changesOf(t *testing.T, answer string) (summary, lines string, ok bool) {
	t.Helper()
	_, section, found := strings.Cut(answer, "## Latest page snapshot (changes since your last one)\n")
	if !found {
		return "", "", false
	}
	summary, lines, _ = strings.Cut(section, "\n")
	return summary, lines, true
}

// fullOf is the tree of a full snapshot section, without its heading or
// note.
func fullOf(t *testing.T, answer string) string {
	t.Helper()
	_, tree, ok := strings.Cut(answer, "## Latest page snapshot\n")
	if !ok {
		t.Fatalf("no full snapshot in:\n%s", answer)
	}
	if strings.HasPrefix(tree, "Full snapshot (") {
		_, tree, _ = strings.Cut(tree, "\n")
	}
	return tree
}

// TestIncrementalSnapshot: in incremental mode the first snapshot of a
// page is full and says so; a click that changes one element answers with
// that element's line alone, marked, the rest folded, and the marked lines
// applied to the first snapshot give the page's full snapshot; a
// navigation gets a full snapshot again; mode "full" always does.
func TestIncrementalSnapshot(t *testing.T) {
	t.Parallel()
	e := incrementalEnv(t)
	id := e.openPage(t, "/form.html")
	first := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, first, "## Latest page snapshot\nFull snapshot (your first snapshot of this page); the next ones show what changed.\nuid=")
	prev := fullOf(t, first)
	agree := uidIn(t, first, `checkbox "Agree"`)

	clicked := e.ok(t, "click", map[string]any{"pageId": id, "uid": agree, "includeSnapshot": true})
	summary, lines, ok := changesOf(t, clicked)
	if !ok {
		t.Fatalf("the click's snapshot is not incremental:\n%s", clicked)
	}
	if summary != "1 changed; "+summary[len("1 changed; "):] || !strings.HasSuffix(summary, "lines unchanged. "+incrementalLegend) {
		t.Errorf("summary: %q", summary)
	}
	var marked []string
	for l := range strings.Lines(lines) {
		if l[0] != ' ' {
			marked = append(marked, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(marked) != 1 || !strings.HasPrefix(marked[0], "~ uid="+agree+` checkbox "Agree"`) || !strings.Contains(marked[0], " checked") {
		t.Errorf("marked lines after checking Agree: %q\n%s", marked, lines)
	}
	full := fullOf(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id, "mode": "full"}))
	if applied, err := snapshot.Apply(prev, lines); err != nil || applied != full {
		t.Errorf("applying the changes (err %v) gives\n%s\nwant\n%s", err, applied, full)
	}
	if len(lines) > len(full)/2 {
		t.Errorf("the incremental tree is %d characters, the full one %d", len(lines), len(full))
	}

	// Nothing changed since the full one.
	mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id}), "## Latest page snapshot (no change since your last one)\nno change; ")

	// A text that appears: an added line, under the paragraph it is in.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, first, `button "Later"`)})
	waited := e.ok(t, "wait_for", map[string]any{"pageId": id, "text": []string{"Done loading"}})
	_, lines, ok = changesOf(t, waited)
	if !ok || !strings.Contains(lines, "\n+   uid=") || !strings.Contains(lines, `"Done loading"`) {
		t.Errorf("wait_for's snapshot does not add Done loading:\n%s", waited)
	}

	// A new document: full again, and it says why.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html"})
	mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id}),
		"## Latest page snapshot\nFull snapshot (the page loaded a new document since your last snapshot, so every uid is new)")
	// mode "full" is the plain full snapshot.
	if got := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "mode": "full"}); strings.Contains(got, "Full snapshot (") || !strings.HasPrefix(got, "## Latest page snapshot\nuid=") {
		t.Errorf("mode full:\n%s", got)
	}
	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": id, "mode": "diff"}), `"mode"`)
}

// TestIncrementalModeIsPerCall: on a server in full mode (the default),
// mode "incremental" compares with the last snapshot the agent was shown,
// full ones included, and the default answers stay full.
func TestIncrementalModeIsPerCall(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	first := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	if strings.Contains(first, "Full snapshot (") {
		t.Fatalf("full mode says more than the snapshot:\n%s", first)
	}
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, first, `checkbox "Agree"`)})
	if _, _, ok := changesOf(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id, "mode": "incremental"})); !ok {
		t.Errorf("mode incremental after a full snapshot did not answer with changes")
	}
	if got := e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, first, `checkbox "Agree"`), "includeSnapshot": true}); !strings.Contains(got, "## Latest page snapshot\nuid=") {
		t.Errorf("an action's snapshot on a full-mode server is not full:\n%s", got)
	}
}

// TestScopedSnapshot: take_snapshot with uid answers with that element and
// everything below it, whole, in either mode; a uid not in the page fails.
func TestScopedSnapshot(t *testing.T) {
	t.Parallel()
	e := incrementalEnv(t)
	id := e.openPage(t, "/form.html")
	first := fullOf(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id}))
	color := uidIn(t, first, `combobox "Color"`)
	got := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "uid": color})
	want, _ := snapshot.ParseTree(first).Subtree(color)
	if got != "## Latest page snapshot (uid="+color+" and below)\n"+want {
		t.Errorf("scoped snapshot:\n%s\nwant the subtree\n%s", got, want)
	}
	mustContain(t, got, `option "red" selected`, `option "Blue sky"`)
	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": id, "uid": "99_1"}), "no element with uid 99_1")
	// The scoped one is not the agent's last snapshot of the page: the
	// next one compares with the full one.
	if _, _, ok := changesOf(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id})); ok {
		t.Errorf("expected no change after a scoped snapshot")
	}
}

// TestIncrementalPerAgent: over HTTP, with pages shared, each agent's
// incremental snapshot compares with its own last one: an agent that never
// snapshotted the page gets it full, and a change one agent made reaches
// the other as a change, however many snapshots the first took meanwhile.
func TestIncrementalPerAgent(t *testing.T) {
	t.Parallel()
	e := newAgentEnvWith(t, Options{Agents: agents.New(agents.Shared), SnapshotMode: SnapshotIncremental})
	lead, sub := e.agent(t), e.agent(t)
	id := newPageAs(t, lead, "/form.html")
	snap := func(c *client.Client) string {
		text, failed := use(t, c, "take_snapshot", map[string]any{"pageId": id})
		if failed {
			t.Fatal(text)
		}
		return text
	}
	first := snap(lead)
	mustContain(t, first, "Full snapshot (your first snapshot of this page)")
	mustContain(t, snap(sub), "Full snapshot (your first snapshot of this page)")

	agree := uidIn(t, first, `checkbox "Agree"`)
	if text, failed := use(t, lead, "click", map[string]any{"pageId": id, "uid": agree, "includeSnapshot": true}); failed || !strings.Contains(text, "~ ") {
		t.Fatalf("lead's click:\n%s", text)
	}
	mustContain(t, snap(lead), "(no change since your last one)")
	_, lines, ok := changesOf(t, snap(sub))
	if !ok || !strings.Contains(lines, "uid="+agree+` checkbox "Agree" checked`) {
		t.Errorf("sub was not told of lead's change:\n%s", lines)
	}
}

// TestIncrementalSizes measures what a click that changes one element
// costs an agent: the click's answer with includeSnapshot, full and
// incremental, on testdata pages and the real pages of testdata/real (a
// click on a same-document link focuses it: one line changes). The figures
// are logged (go test -v) and, with PAGEMUX_SNAPSHOT_SIZES=DIR, the
// answers are written there for a tokenizer (the README's figures).
func TestIncrementalSizes(t *testing.T) {
	t.Parallel()
	e := incrementalEnv(t)
	dir := os.Getenv("PAGEMUX_SNAPSHOT_SIZES")
	// go_mem.html has no control that stays on the page: a toggle button
	// goes after its first heading, as pages have them.
	const toggle = `() => { const b = document.createElement('button'); b.textContent = 'Toggle';
		b.setAttribute('aria-pressed', 'false'); b.onclick = () => b.setAttribute('aria-pressed', 'true');
		document.querySelector('h2').after(b); return 1 }`
	cases := []struct{ path, setup, target string }{
		{"/form.html", "", `checkbox "Agree"`},
		{"/real/go_mem.html", toggle, `button "Toggle"`},
	}
	if soak.Enabled() || dir != "" {
		// 380,000 characters snapshotted three times: 30 s under -race,
		// so at full size only (PAGEMUX_SOAK=1, and for the figures).
		cases = append(cases, struct{ path, setup, target string }{"/real/go_spec.html", "", `link "Go 1.xx"`})
	}
	for _, tt := range cases {
		id := e.openPage(t, tt.path)
		if tt.setup != "" {
			e.eval(t, id, tt.setup)
		}
		first := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
		clicked := e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, first, tt.target), "includeSnapshot": true})
		summary, lines, ok := changesOf(t, clicked)
		if !ok {
			t.Fatalf("%s: the click's answer is not incremental:\n%.2000s", tt.path, clicked)
		}
		full := "Successfully clicked on the element\n" + e.ok(t, "take_snapshot", map[string]any{"pageId": id, "mode": "full"})
		if applied, err := snapshot.Apply(fullOf(t, first), lines); err != nil || applied != fullOf(t, full) {
			t.Errorf("%s: applying the changes does not give the full snapshot (%v)", tt.path, err)
		}
		if !strings.HasPrefix(summary, "1 changed; ") {
			t.Errorf("%s: %s\n%s", tt.path, summary, lines)
		}
		if strings.HasPrefix(tt.path, "/real/") && len(clicked)*10 > len(full) {
			t.Errorf("%s: the incremental answer is %d characters, the full one %d", tt.path, len(clicked), len(full))
		}
		t.Logf("%s: full %d characters (%d lines), incremental %d characters (%.1f%%): %s", tt.path,
			utf8.RuneCountInString(full), strings.Count(full, "\n"), utf8.RuneCountInString(clicked),
			100*float64(utf8.RuneCountInString(clicked))/float64(utf8.RuneCountInString(full)), summary[:strings.Index(summary, ".")])
		if dir != "" {
			name := strings.TrimSuffix(path.Base(tt.path), ".html")
			for kind, text := range map[string]string{"full": full, "incremental": clicked} {
				if err := os.WriteFile(filepath.Join(dir, name+"."+kind+".txt"), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
