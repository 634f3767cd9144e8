package browser

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is the differential test of issue 38: the snapshot computed in
// the page (SourcePage, the default) must be Chrome's accessibility tree
// as chrome-devtools-mcp shows it (SourceChrome), node for node, on pages
// nobody on the project wrote (the W3C's ARIA Authoring Practices examples,
// testdata/aria-practices) and on a page of every native form control
// (testdata/controls.html), before and after the interactions that change
// a widget's tree.
//
// PAGEMUX_FIDELITY_DUMP=dir writes both texts of every page that differs
// into dir (NAME.page.txt, NAME.chrome.txt), to diff them whole.

// fidelityTabs is how many tabs of the test's one Chrome open pages at
// once: the pages' own work (layout, scripts, two trees) keeps a CPU busy
// each, and the suite runs on two.
const fidelityTabs = 3

// offlineRules keeps Chrome from resolving any host but loopback: some
// APG examples load https://www.w3.org style sheets and aria-at.w3.org frames.
const offlineRules = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"

// fidelityCase is one comparison: a page of testdata, and optionally what an
// agent does on it first.
type fidelityCase struct {
	name, path string
	// act, when set, acts on the page by the uids of snap, its snapshot
	// text (the default source's, as an agent reads it).
	act func(ctx context.Context, t *testing.T, p *Page, snap string)
	// shows is a line of Chrome's text after act, proof that act changed
	// the widget as meant.
	shows *regexp.Regexp
	// keep, when set, is a selector list: the page is cut down to these
	// elements before act and the comparison (keepJS), so that a
	// difference is found in a part of the page as well as in the whole
	// (past snapshot/page.js's maxHoles the script leaves the whole page
	// to Chrome, and the comparison sets Chrome's tree against itself).
	keep string
}

// The parts of controls.html: the form's first four fieldsets, the rest of
// the form, and what is outside the form.
const (
	controlsFields  = "#profile > fieldset:nth-of-type(-n+4)"
	controlsPickers = "#profile > fieldset:nth-of-type(n+5), #profile > .actions"
	controlsWidgets = "header, main > :not(form), footer"
)

// TestSnapshotFidelity: on every APG example and on controls.html (whole,
// and cut into three parts that the page's tree does not leave to Chrome
// whole), and after a menu is opened, a tree item expanded, a combobox
// typed into, a grid cell focused and dialogs opened, the page's tree gives
// Chrome's text node for node (uids aside). A difference fails with the
// node's path and both lines.
func TestSnapshotFidelity(t *testing.T) {
	t.Parallel()
	start := time.Now()
	run := &fidelityRun{site: formsSite(t), fallbacks: newFallbackLog()}
	b := startBrowser(t, Config{ChromeArgs: []string{offlineRules}, Logger: slog.New(run.fallbacks)})
	cases := append(apgCases(t),
		fidelityCase{name: "controls", path: "/controls.html"},
		fidelityCase{name: "controls/fields", path: "/controls.html", keep: controlsFields},
		fidelityCase{name: "controls/pickers", path: "/controls.html", keep: controlsPickers},
		fidelityCase{name: "controls/widgets", path: "/controls.html", keep: controlsWidgets})
	cases = append(cases, interactionCases()...)

	tabs := make([]*Page, fidelityTabs)
	for i := range tabs {
		p, err := b.NewPage(t.Context(), true)
		if err != nil {
			t.Fatal(err)
		}
		closeAtEnd(t, b, p)
		tabs[i] = p
	}
	todo := make(chan fidelityCase)
	var wg sync.WaitGroup
	for _, p := range tabs {
		// t.Run may be called from several goroutines: each tab takes the
		// next case, so a slow page holds up only its own tab.
		wg.Go(func() {
			for c := range todo {
				t.Run(c.name, func(t *testing.T) { run.check(t, p, c) })
			}
		})
	}
	for _, c := range cases {
		todo <- c
	}
	close(todo)
	wg.Wait()
	t.Logf("%d comparisons on %d tabs in %v", len(cases), fidelityTabs, time.Since(start).Round(time.Millisecond))
	if n := len(run.chromeOnly); n > 0 {
		t.Logf("%d of them set Chrome's tree against itself, the page's script leaving the page to Chrome: %s", n, strings.Join(run.chromeOnly, ", "))
	}
	if len(run.chromeOnly) == len(cases) {
		t.Errorf("no comparison had a tree computed in the page: the test compared nothing")
	}
}

// fidelityRun is what the comparisons of TestSnapshotFidelity share.
type fidelityRun struct {
	site      string       // serves testdata
	fallbacks *fallbackLog // the test browser's log

	mu         sync.Mutex
	chromeOnly []string // the cases whose page source was Chrome's tree
}

// apgCases are the 76 APG example pages vendored in testdata.
func apgCases(t *testing.T) []fidelityCase {
	t.Helper()
	files, err := filepath.Glob("../testdata/aria-practices/patterns/*/examples/*.html")
	if err != nil || len(files) != 76 {
		t.Fatalf("want the 76 APG examples in testdata/aria-practices, found %d (%v)", len(files), err)
	}
	cases := make([]fidelityCase, len(files))
	for i, f := range files {
		path := strings.TrimPrefix(filepath.ToSlash(f), "../testdata")
		cases[i] = fidelityCase{name: strings.TrimSuffix(filepath.Base(f), ".html"), path: path}
	}
	return cases
}

// interactionCases act on a widget and compare the tree it leaves.
func interactionCases() []fidelityCase {
	const apg = "/aria-practices/patterns/"
	return []fidelityCase{{
		name: "menu-button-actions/opened", path: apg + "menu-button/examples/menu-button-actions.html",
		act:   clickOn(`button "Actions`),
		shows: regexp.MustCompile(`menuitem "Action 1"`),
	}, {
		name: "treeview-1a/expanded", path: apg + "treeview/examples/treeview-1a.html",
		act:   clickOn(`Projects" expandable`),
		shows: regexp.MustCompile(`treeitem "[^"]*project-1\.docx"`),
	}, {
		name: "combobox-autocomplete-list/typed", path: apg + "combobox/examples/combobox-autocomplete-list.html",
		act: func(ctx context.Context, t *testing.T, p *Page, snap string) {
			clickOn(`combobox "State"`)(ctx, t, p, snap)
			if _, err := p.Input().TypeText(ctx, "Ma", nil); err != nil {
				t.Fatal(err)
			}
		},
		// The script re-appends the matching options to the list box, and
		// Chrome's tree then shows the list box without them (the DOM has
		// Maine, Maryland, Massachusetts); the combobox shows the typing.
		shows: regexp.MustCompile(`combobox "State" .*expanded .*value="Ma"`),
	}, {
		name: "data-grids/cell-focused", path: apg + "grid/examples/data-grids.html",
		act: func(ctx context.Context, t *testing.T, p *Page, snap string) {
			clickOn(`"01-Jan-16"`)(ctx, t, p, snap)
			if err := p.Input().PressKey(ctx, Key{Name: "ArrowRight"}); err != nil {
				t.Fatal(err)
			}
		},
		shows: regexp.MustCompile(`"Deposit".* focused`),
	}, {
		name: "dialog/opened", path: apg + "dialog-modal/examples/dialog.html",
		act:   clickOn(`button "Add Delivery Address"`),
		shows: regexp.MustCompile(`dialog "Add Delivery Address" modal`),
	}, {
		name: "controls/modal-opened", path: "/controls.html", keep: controlsWidgets,
		act:   clickOn(`button "Sign out everywhere"`),
		shows: regexp.MustCompile(`dialog "Sign out everywhere\?" modal`),
	}, {
		name: "controls/details-opened", path: "/controls.html", keep: controlsWidgets,
		act:   clickOn(`"Advanced options"`),
		shows: regexp.MustCompile(`checkbox "Developer mode"`),
	}, {
		name: "controls/typed", path: "/controls.html", keep: controlsPickers,
		act: func(ctx context.Context, t *testing.T, p *Page, snap string) {
			if err := p.Input().Fill(ctx, uidOf(t, snap, `spinbutton "Seats"`), "4"); err != nil {
				t.Fatal(err)
			}
		},
		shows: regexp.MustCompile(`"48"`),
	}}
}

// clickOn clicks the first node of the snapshot whose line holds needle.
func clickOn(needle string) func(ctx context.Context, t *testing.T, p *Page, snap string) {
	return func(ctx context.Context, t *testing.T, p *Page, snap string) {
		t.Helper()
		if err := p.Input().Click(ctx, uidOf(t, snap, needle), false); err != nil {
			t.Fatal(err)
		}
	}
}

// check opens c's page on p, acts on it, and compares the two sources'
// texts.
func (run *fidelityRun) check(t *testing.T, p *Page, c fidelityCase) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := p.Navigate(ctx, run.site+c.path, 0); err != nil {
		t.Fatal(err)
	}
	settleCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := p.Evaluate(settleCtx, settledJS, nil); err != nil {
		t.Fatalf("waiting for the page's own scripts to finish: %v", err)
	}
	if c.keep != "" {
		if n, err := p.Evaluate(ctx, fmt.Sprintf(keepJS, c.keep), nil); err != nil || string(n) == "0" {
			t.Fatalf("cutting the page down to %s: %s elements kept, %v", c.keep, n, err)
		}
	}
	if c.act != nil {
		snap, err := p.SnapshotFrom(ctx, false, SourcePage)
		if err != nil {
			t.Fatal(err)
		}
		c.act(ctx, t, p, snap.Text)
	}
	run.fallbacks.take(p.ID)
	page, chrome := bothSources(ctx, t, p)
	run.noteFallbacks(t, p, c)
	if len(chrome) < 5 {
		t.Fatalf("Chrome's snapshot is too short to compare:\n%s", joinLines(chrome))
	}
	if c.shows != nil && !c.shows.MatchString(joinLines(chrome)) {
		t.Errorf("after the interaction Chrome's text has no %q: it did not act as meant\n%s", c.shows, joinLines(chrome))
	}
	if slices.Equal(page, chrome) {
		return
	}
	if dir := os.Getenv("PAGEMUX_FIDELITY_DUMP"); dir != "" {
		dumpSources(t, dir, c.name, joinLines(page), joinLines(chrome))
	}
	t.Errorf("the page's tree differs from Chrome's:\n%s", describeDiff(page, chrome))
}

// keepJS, its %q filled in with a selector list, removes from the page
// every element that is neither one of the list's nor holds one nor is in
// one, and says how many it kept.
const keepJS = `() => {
  const keep = [...document.querySelectorAll(%q)];
  const prune = (e) => {
    for (const c of [...e.children]) {
      if (keep.includes(c)) continue;
      if (keep.some(k => c.contains(k))) prune(c);
      else c.remove();
    }
  };
  prune(document.body);
  return keep.length;
}`

// noteFallbacks looks at what p's snapshots from the page's tree did since
// the last look: where the page's script failed, the snapshot took
// Chrome's tree, and the test fails; where the script leaves the document
// to Chrome (as snapshot_hybrid.go does when Chrome has no subtree for an
// element it left to Chrome), the comparison sets Chrome's tree against
// itself, which the test says.
func (run *fidelityRun) noteFallbacks(t *testing.T, p *Page, c fidelityCase) {
	t.Helper()
	why := run.fallbacks.take(p.ID)
	for _, w := range why {
		if strings.HasPrefix(w, slog.LevelWarn.String()) {
			t.Errorf("the page's tree failed and the snapshot took Chrome's: %s", w)
		}
	}
	if len(why) > 0 {
		t.Logf("the page source was Chrome's tree: %s", why[0])
		run.mu.Lock()
		run.chromeOnly = append(run.chromeOnly, c.name)
		run.mu.Unlock()
	}
}

// fallbackLog is a slog.Handler for the test's browser that keeps, for each
// page, why its snapshots from the page's tree took Chrome's: the records
// of Page.tree (snapshot.go) whose message says it is "taking Chrome's"
// tree, Warn when the page's script failed, Debug when it does not walk
// the document. It drops every other record.
type fallbackLog struct {
	shared *fallbacks

	attrs []slog.Attr // of WithAttrs
}

// newFallbackLog returns an empty fallbackLog.
func newFallbackLog() *fallbackLog {
	return &fallbackLog{shared: &fallbacks{why: map[int64][]string{}}}
}

// fallbacks are a fallbackLog's records, shared by its WithAttrs copies.
type fallbacks struct {
	mu  sync.Mutex
	why map[int64][]string // by page ID: each fallback's level and why
}

func (l *fallbackLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *fallbackLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "taking Chrome's") {
		return nil
	}
	page, why := int64(-1), r.Level.String()
	note := func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch {
		case a.Key == "page" && v.Kind() == slog.KindInt64:
			page = v.Int64()
		case a.Key == "why" || a.Key == "error":
			why += ": " + v.String()
		}
		return true
	}
	for _, a := range l.attrs {
		note(a)
	}
	r.Attrs(note)
	f := l.shared
	f.mu.Lock()
	defer f.mu.Unlock()
	f.why[page] = append(f.why[page], why)
	return nil
}

func (l *fallbackLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &fallbackLog{shared: l.shared, attrs: append(slices.Clip(l.attrs), attrs...)}
}

func (l *fallbackLog) WithGroup(string) slog.Handler { return l }

// take returns and forgets the fallbacks of the page with id.
func (l *fallbackLog) take(id int) []string {
	f := l.shared
	f.mu.Lock()
	defer f.mu.Unlock()
	why := f.why[int64(id)]
	delete(f.why, int64(id))
	return why
}

// settledJS resolves once the page's own scripts are done with what they
// do after load, in its document and its same-origin frames': an APG
// example with a heading gets a support notice that app.js fetches and
// inserts; its "Open In CodePen" buttons show once their XHRs are done;
// a feed loads its articles with a delay, busy meanwhile; controls.html
// shows its audio's length once the metadata loaded. It polls, every 50
// ms, as a frame's changes reach no observer of the page's. What else a
// page changes late, bothSources sees happen.
const settledJS = `() => new Promise(resolve => {
  const docs = () => [document, ...[...document.querySelectorAll('iframe')].map(f => {
    try { return f.contentDocument; } catch (e) { return null; }
  }).filter(Boolean)];
  const settled = d => {
    const notice = d.querySelector('script[src$="shared/js/app.js"]') && d.querySelector('h1');
    const media = d.getElementById('media-status');
    return (!notice || d.getElementById('support-notice')) &&
      [...d.querySelectorAll('button[id$="-codepenbutton"]')].every(b => b.style.display !== 'none') &&
      !d.querySelector('[role=feed][aria-busy=true]') &&
      (!media || media.value.endsWith(' s'));
  };
  const check = () => { if (docs().every(settled)) { clearInterval(timer); resolve(true); } };
  const timer = setInterval(check, 50);
  check();
})`

// bothSources snapshots p from the page's tree and from Chrome's, as
// lines without uids. When they differ it asks Chrome again: a page that
// changed meanwhile (a carousel turning, a script finishing late) is
// compared afresh, so that what is left is the sources' difference.
func bothSources(ctx context.Context, t *testing.T, p *Page) (page, chrome []snapLine) {
	t.Helper()
	lines := func(source string) []snapLine {
		snap, err := p.SnapshotFrom(ctx, false, source)
		if err != nil {
			t.Fatalf("snapshot from %s: %v", source, err)
		}
		return snapLines(snap.Text)
	}
	chrome = lines(SourceChrome)
	for range 5 {
		page = lines(SourcePage)
		if slices.Equal(page, chrome) {
			return page, chrome
		}
		again := lines(SourceChrome)
		if slices.Equal(again, chrome) {
			return page, chrome
		}
		chrome = again
	}
	t.Fatalf("Chrome's tree changed between each of 5 pairs of snapshots: the page does not hold still to be compared")
	return nil, nil
}

// dumpSources writes both texts of a page that differs into dir.
func dumpSources(t *testing.T, dir, name, page, chrome string) {
	t.Helper()
	base := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for ext, text := range map[string]string{".page.txt": page, ".chrome.txt": chrome} {
		if err := os.WriteFile(base+ext, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapLine is one node of a snapshot's text: its depth in the tree and its
// line without the indentation.
type snapLine struct {
	depth int
	text  string
}

// snapLines splits a snapshot's text into its nodes, their uids left out:
// two sources' uids name different nodes. (Cutting "uid=… " off the front
// of each line is uidRE's work, here done without a regexp, which took a
// second of the test's CPU under -race.)
func snapLines(text string) []snapLine {
	lines := make([]snapLine, 0, strings.Count(text, "\n"))
	for l := range strings.Lines(text) {
		l = strings.TrimSuffix(l, "\n")
		s := strings.TrimLeft(l, " ")
		depth := (len(l) - len(s)) / 2
		if strings.HasPrefix(s, "uid=") {
			_, s, _ = strings.Cut(s, " ")
		}
		lines = append(lines, snapLine{depth: depth, text: s})
	}
	return lines
}

// joinLines is the text of lines, uids left out.
func joinLines(lines []snapLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.Repeat("  ", l.depth))
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// Limits of describeDiff: the places shown, and the lines of each side
// shown at one place.
const (
	maxPlaces     = 8
	maxPlaceLines = 4
)

// describeDiff says where page's nodes differ from chrome's: how many
// nodes in how many places, then at each place (up to maxPlaces) the
// node's path in Chrome's tree and the lines of both.
func describeDiff(page, chrome []snapLine) string {
	hunks := diffLines(page, chrome)
	nodes := 0
	for _, h := range hunks {
		nodes += max(h.p1-h.p0, h.c1-h.c0)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of Chrome's %d nodes differ, in %d places\n", nodes, len(chrome), len(hunks))
	for i, h := range hunks {
		if i == maxPlaces {
			fmt.Fprintf(&b, "… and %d more places\n", len(hunks)-i)
			break
		}
		// The path is Chrome's: the tree the page's must equal. Where Chrome
		// has no line, the page's extra line's path.
		if h.c1 > h.c0 {
			fmt.Fprintf(&b, "at %s\n", nodePath(chrome, h.c0))
		} else {
			fmt.Fprintf(&b, "at %s\n", nodePath(page, h.p0))
		}
		for k := 0; k < max(h.p1-h.p0, h.c1-h.c0); k++ {
			if k == maxPlaceLines {
				fmt.Fprintf(&b, "    … %d page lines and %d Chrome lines in all here\n", h.p1-h.p0, h.c1-h.c0)
				break
			}
			pl, cl := lineAt(page, h.p0+k, h.p1), lineAt(chrome, h.c0+k, h.c1)
			fmt.Fprintf(&b, "    page:   %s\n    chrome: %s\n", pl, cl)
		}
	}
	return b.String()
}

// lineAt is lines[i] for the report, with its depth, or "(none)" past end.
func lineAt(lines []snapLine, i, end int) string {
	if i >= end {
		return "(none)"
	}
	return fmt.Sprintf("[%d] %s", lines[i].depth, lines[i].text)
}

// pathPart matches what a line says of its node in a path: role and name,
// or a text's quoted text.
var pathPart = regexp.MustCompile(`^(?:"(?:[^"\\]|\\.)*"|\S+(?: "(?:[^"\\]|\\.)*")?)`)

// nodePath is the chain of lines[i]'s ancestors and itself, by role and
// name: main > grid "Transactions" > row > gridcell "01-Jan-16".
func nodePath(lines []snapLine, i int) string {
	parts := []string{pathPart.FindString(lines[i].text)}
	for d, j := lines[i].depth, i-1; j >= 0 && d > 0; j-- {
		if lines[j].depth < d {
			parts = append(parts, pathPart.FindString(lines[j].text))
			d = lines[j].depth
		}
	}
	// The root (the document's RootWebArea) is every path's start.
	parts = parts[:max(len(parts)-1, 1)]
	var b strings.Builder
	for k := len(parts) - 1; k >= 0; k-- {
		b.WriteString(parts[k])
		if k > 0 {
			b.WriteString(" > ")
		}
	}
	return b.String()
}

// hunk is one place where the texts differ: page's lines [p0, p1) stand
// where chrome has [c0, c1).
type hunk struct{ p0, p1, c0, c1 int }

// maxDiffCells bounds the longest-common-subsequence table of diffLines;
// past it the differing middle is one hunk.
const maxDiffCells = 4 << 20

// diffLines finds the places where a and b differ: the lines outside a
// longest common subsequence of the two, in runs.
func diffLines(a, b []snapLine) []hunk {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	a, b = a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	n, m := len(a), len(b)
	if (n+1)*(m+1) > maxDiffCells {
		return []hunk{{pre, pre + n, pre, pre + m}}
	}
	// lcs[i*(m+1)+j] is the length of a longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([]int32, (n+1)*(m+1))
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				lcs[i*(m+1)+j] = lcs[(i+1)*(m+1)+j+1] + 1
			default:
				lcs[i*(m+1)+j] = max(lcs[(i+1)*(m+1)+j], lcs[i*(m+1)+j+1])
			}
		}
	}
	var hunks []hunk
	open := false
	i, j := 0, 0
	for i < n || j < m {
		if i < n && j < m && a[i] == b[j] {
			open = false
			i, j = i+1, j+1
			continue
		}
		if !open {
			hunks = append(hunks, hunk{p0: pre + i, p1: pre + i, c0: pre + j, c1: pre + j})
			open = true
		}
		h := &hunks[len(hunks)-1]
		if j == m || (i < n && lcs[(i+1)*(m+1)+j] >= lcs[i*(m+1)+j+1]) {
			i++
			h.p1++
		} else {
			j++
			h.c1++
		}
	}
	return hunks
}

// TestDescribeDiff: the comparison finds each place the texts differ, and
// names it by the node's path and both lines.
func TestDescribeDiff(t *testing.T) {
	t.Parallel()
	const chrome = `RootWebArea "Bank"
  main
    grid "Transactions"
      row
        gridcell "01-Jan-16"
        gridcell "Deposit"
    slider "Volume" value="3"
  contentinfo
`
	for _, tc := range []struct {
		name, page string
		places     int
		want       []string
	}{
		{"same", chrome, 0, nil},
		{"changed", strings.Replace(chrome, `gridcell "01`, `cell "01`, 1), 1, []string{
			`1 of Chrome's 8 nodes differ, in 1 places`,
			`at main > grid "Transactions" > row > gridcell "01-Jan-16"`,
			`page:   [4] cell "01-Jan-16"`, `chrome: [4] gridcell "01-Jan-16"`,
		}},
		{"extra and missing", strings.Replace(strings.Replace(chrome, "  main\n", "  main\n    heading \"Today\"\n", 1), "  contentinfo\n", "", 1), 2, []string{
			`2 of Chrome's 8 nodes differ, in 2 places`,
			`at main > heading "Today"`, `page:   [2] heading "Today"`, `chrome: (none)`,
			`at contentinfo`, `page:   (none)`, `chrome: [1] contentinfo`,
		}},
		{"moved", strings.Replace(chrome, `        gridcell "Deposit"`, `      gridcell "Deposit"`, 1), 1, []string{
			`at main > grid "Transactions" > row > gridcell "Deposit"`,
			`page:   [3] gridcell "Deposit"`, `chrome: [4] gridcell "Deposit"`,
		}},
	} {
		page, want := snapLines(tc.page), snapLines(chrome)
		if got := len(diffLines(page, want)); got != tc.places {
			t.Errorf("%s: %d places differ; want %d", tc.name, got, tc.places)
		}
		if tc.places == 0 {
			continue
		}
		report := describeDiff(page, want)
		for _, w := range tc.want {
			if !strings.Contains(report, w) {
				t.Errorf("%s: the report has no %q:\n%s", tc.name, w, report)
			}
		}
	}
}
