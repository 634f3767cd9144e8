package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagemux/pagemux/internal/soak"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/snapshot"
)

// sectionsPage serves, on a loopback server of the test's own, a page of
// sections, each a heading and rows of a text and a button, and returns
// its URL.
func sectionsPage(t *testing.T, sections, rows int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("<!doctype html><title>Shop</title><main>")
	for s := range sections {
		fmt.Fprintf(&b, "<section><h2>Section %d</h2>", s)
		for r := range rows {
			i := s*rows + r
			fmt.Fprintf(&b, "<p>Row %d <button id=b%d>Buy %d</button></p>", i, i, i)
		}
		b.WriteString("</section>")
	}
	page := b.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/shop"
}

// wholeTree is the page's snapshot text as the server computes it, before
// any --max-output: what an incremental answer compares with.
func wholeTree(t *testing.T, e *testEnv, id int) string {
	t.Helper()
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := p.Snapshot(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Text
}

// markedLines are the lines of changes that mark a change (+, -, ~, >).
func markedLines(changes string) []string {
	var marked []string
	for l := range strings.Lines(changes) {
		if l[0] != ' ' {
			marked = append(marked, strings.TrimSuffix(l, "\n"))
		}
	}
	return marked
}

var unchangedFold = regexp.MustCompile(`(?m)^ +… (\d+) lines unchanged \(uid=(\S+) to uid=(\S+)\)$`)

// TestIncrementalBigPage: on a page past --max-output, the first
// incremental snapshot is the whole tree outlined; after a one-node change
// the next is a diff against the whole tree the server computed, not the
// outline: a small part of the first answer, the change marked, the rest
// still folded, and the folds say they may hold lines the agent never saw
// and open with the take_snapshot they name. A second change is a diff
// again; changes too big for the answer are outlined, changes first; a
// navigation drops the old document's text and gets the whole tree again.
func TestIncrementalBigPage(t *testing.T) {
	t.Parallel()
	const limit = 20_000
	e := newEnv(t, envOptions{
		Locks:  pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64},
		Server: Options{MaxOutput: limit, SnapshotMode: SnapshotIncremental},
	})
	url := sectionsPage(t, 20, 60) // 1,200 rows: a tree of about 90,000 characters
	e.ok(t, "new_page", map[string]any{"url": url})
	id := e.b.SelectedID()

	first := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, first, "## Latest page snapshot\nFull snapshot (your first snapshot of this page); the next ones show what changed.\nOutlined: the snapshot is ")
	prev := wholeTree(t, e, id)
	if n := utf8.RuneCountInString(prev); n < 3*limit {
		t.Fatalf("the page's tree is %d characters: not big enough past --max-output %d", n, limit)
	}
	if strings.Contains(first, `button "Buy 700"`) {
		t.Fatalf("row 700 is not in a fold of the outline: the test proves nothing\n%s", first)
	}

	// One node changes, in a part the outline folded.
	e.eval(t, id, "() => { document.getElementById('b700').textContent = 'Sold 700'; return 1 }")
	inc := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	summary, lines, ok := changesOf(t, inc)
	if !ok {
		t.Fatalf("not incremental after a one-node change:\n%.3000s", inc)
	}
	if n, m := utf8.RuneCountInString(inc), utf8.RuneCountInString(first); n*20 >= m {
		t.Errorf("the incremental answer is %d characters, the first %d: not under 5%%\n%s", n, m, inc)
	}
	t.Logf("first answer %d characters (tree %d), after one change %d", utf8.RuneCountInString(first), utf8.RuneCountInString(prev), utf8.RuneCountInString(inc))
	if !strings.HasPrefix(summary, "1 changed; ") || !strings.Contains(summary, incrementalLegendUnseen) {
		t.Errorf("summary: %q", summary)
	}
	if marked := markedLines(lines); len(marked) != 1 || !strings.HasPrefix(marked[0], "~ ") || !strings.Contains(marked[0], `button "Sold 700"`) {
		t.Errorf("marked lines after one change: %q\n%s", marked, lines)
	}
	// Folds stay folds: no row but the changed one shows.
	if strings.Contains(lines, `"Buy `) || !unchangedFold.MatchString(lines) {
		t.Errorf("unchanged rows unfolded:\n%s", lines)
	}
	cur := wholeTree(t, e, id)
	if applied, err := snapshot.Apply(prev, lines); err != nil || applied != cur {
		t.Errorf("the changes applied to the whole first tree (err %v) are not the whole tree now", err)
	}
	// A fold opens as the legend says, with the lines it counts.
	m := unchangedFold.FindAllStringSubmatch(lines, -1)
	fold := m[len(m)/2]
	run := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "uid": fold[2], "to": fold[3]})
	if want, _ := strconv.Atoi(fold[1]); strings.Count(run, "\n  uid=")+strings.Count(run, "\nuid=") < min(want, 2) || !strings.HasPrefix(run, "## Latest page snapshot (uid="+fold[2]+" to uid="+fold[3]+", and below)\n") {
		t.Errorf("take_snapshot uid=%s to=%s of the fold %q:\n%.2000s", fold[2], fold[3], fold[0], run)
	}

	// A second change: a node added, told against the tree after the first.
	e.eval(t, id, "() => { const b = document.createElement('button'); b.textContent = 'Gift 900'; document.getElementById('b900').after(b); return 1 }")
	inc2 := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	summary, lines, ok = changesOf(t, inc2)
	if !ok || !strings.HasPrefix(summary, "1 added; ") || !strings.Contains(summary, incrementalLegendUnseen) {
		t.Fatalf("second change:\n%.3000s", inc2)
	}
	if marked := markedLines(lines); len(marked) != 1 || !strings.HasPrefix(marked[0], "+ ") || !strings.Contains(marked[0], `button "Gift 900"`) || strings.Contains(lines, "Sold 700") {
		t.Errorf("marked lines after the second change: %q\n%s", marked, lines)
	}
	if n := utf8.RuneCountInString(inc2); n*20 >= utf8.RuneCountInString(first) {
		t.Errorf("the second incremental answer is %d characters", n)
	}

	// Changes bigger than --max-output: outlined, changes first.
	e.eval(t, id, "() => { for (let i = 0; i < 1200; i += 3) document.getElementById('b' + i).textContent = 'Sold ' + i; return 1 }")
	big := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, big, "## Latest page snapshot (changes since your last one)\n400 changed; ", "\nOutlined: the changes are ", "take_snapshot uid=")
	if n := utf8.RuneCountInString(big); n > limit {
		t.Errorf("outlined changes of %d characters past --max-output %d", n, limit)
	}
	if _, lines, _ := changesOf(t, big); len(markedLines(lines)) < 100 {
		t.Errorf("%d changes show in the outline of 400:\n%.3000s", len(markedLines(lines)), big)
	}

	// A new document: the old one's text is dropped, and the answer is
	// whole again, outlined.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": url + "?again"})
	e.srv.seen.mu.Lock()
	kept := e.srv.seen.m[seenKey{"", id}].text
	e.srv.seen.mu.Unlock()
	if kept != "" {
		t.Errorf("the text of the document the page left is kept: %d characters", len(kept))
	}
	mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id}),
		"## Latest page snapshot\nFull snapshot (the page loaded a new document since your last snapshot, so every uid is new); the next ones show what changed.\nOutlined: ")
}

// TestIncrementalBigRealPage measures incremental snapshots on real pages
// past --max-output (its default, 100,000): the first answer, the whole
// tree outlined, then the answer after one heading's text changed, which
// must be under 5 % of the first. Its pages: testdata/real/go_spec.html
// (380,000 characters of tree) and any HTML files PAGEMUX_BIG_PAGES lists
// (comma-separated paths, such as Node's docs of fs at
// /usr/share/doc/nodejs/api/fs.html, served from their directory). Under
// -race a snapshot of such a page takes seconds: it runs with PAGEMUX_SOAK=1
// or PAGEMUX_BIG_PAGES set. go test -v logs the figures.
func TestIncrementalBigRealPage(t *testing.T) {
	extra := os.Getenv("PAGEMUX_BIG_PAGES")
	if !soak.Enabled() && extra == "" {
		t.Skip("a page of 380,000 characters: PAGEMUX_SOAK=1 or PAGEMUX_BIG_PAGES=file.html,… runs it")
	}
	t.Parallel()
	e := newEnv(t, envOptions{
		Locks:  pagelock.Options{Mode: pagelock.PerPage, Timeout: 5 * time.Minute, MaxQueue: 64},
		Server: Options{MaxOutput: DefaultMaxOutput, SnapshotMode: SnapshotIncremental, ToolTimeout: 5 * time.Minute},
	})
	urls := []string{testSite.URL + "/real/go_spec.html"}
	for _, file := range strings.Split(extra, ",") {
		if file == "" {
			continue
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(abs))))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+"/"+filepath.Base(abs))
	}
	// The middle heading of the page gets a new text: one node changes.
	const change = `() => { const hs = document.querySelectorAll('h2, h3'); const h = hs[hs.length >> 1];
		h.textContent = 'Changed heading'; return hs.length }`
	for _, url := range urls {
		e.ok(t, "new_page", map[string]any{"url": url})
		id := e.b.SelectedID()
		first := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
		mustContain(t, first, "Full snapshot (your first snapshot of this page)", "\nOutlined: the snapshot is ")
		tree := utf8.RuneCountInString(wholeTree(t, e, id))
		e.eval(t, id, change)
		inc := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
		summary, lines, ok := changesOf(t, inc)
		if !ok {
			t.Fatalf("%s: not incremental after one change:\n%.3000s", url, inc)
		}
		if !strings.Contains(lines, `heading "Changed heading"`) {
			t.Errorf("%s: the change does not show:\n%s", url, lines)
		}
		n, m := utf8.RuneCountInString(inc), utf8.RuneCountInString(first)
		if n*20 >= m {
			t.Errorf("%s: the incremental answer is %d characters, the first %d: not under 5%%\n%s", url, n, m, inc)
		}
		t.Logf("%s: tree %d characters; first answer (outlined) %d; after one heading changed %d (%.2f%%), %d marked lines: %s\n%s",
			path.Base(url), tree, m, n, 100*float64(n)/float64(m), len(markedLines(lines)), summary[:strings.Index(summary, ".")], lines)
	}
}
