package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/snapshot"
)

// compact is a call's arguments on page with format compact.
func compact(page int, args map[string]any) map[string]any {
	a := map[string]any{"pageId": page, "format": snapshot.FormatCompact}
	for k, v := range args {
		a[k] = v
	}
	return a
}

// TestCompactFormatOption: --snapshot-format (Options.SnapshotFormat) is
// every call's format, unless the call names its own.
func TestCompactFormatOption(t *testing.T) {
	t.Parallel()
	b := browser.New(browser.Config{}) // never started: New starts no Chrome
	formats := []string{"", snapshot.FormatDefault, snapshot.FormatCompact}
	for _, server := range formats[1:] { // "" is as default, whose test is TestSnapshotsMatchNode
		s := New(b, pagelock.New(pagelock.Options{}), Options{SnapshotFormat: server})
		for _, own := range formats {
			want := own == snapshot.FormatCompact || own == "" && server == snapshot.FormatCompact
			if got := s.compact(&call{resp: &response{snapshotFormat: own}}); got != want {
				t.Errorf("server %q, call %q: compact %v", server, own, got)
			}
		}
		s.Close()
	}
}

// snapLine is a node line of a snapshot: its depth, uid and what follows.
type snapLine struct {
	depth int
	uid   string
	rest  string
}

// snapLines reads the node lines of a snapshot answer of either format:
// indent (two spaces a level in the default format, one in compact), then
// "uid=X" or "eN".
func snapLines(t *testing.T, answer string, compact bool) []snapLine {
	t.Helper()
	_, body, ok := strings.Cut(answer, "## Latest page snapshot\n")
	if !ok {
		t.Fatalf("no snapshot in:\n%s", answer)
	}
	re, per := regexp.MustCompile(`^( *)uid=(\S+)(.*)$`), 2
	if compact {
		re, per = regexp.MustCompile(`^( *)(e\d+)(.*)$`), 1
	}
	var lines []snapLine
	for l := range strings.Lines(strings.TrimSuffix(body, "\n")) {
		m := re.FindStringSubmatch(strings.TrimSuffix(l, "\n"))
		if m == nil {
			t.Fatalf("not a node line: %q in:\n%s", l, body)
		}
		lines = append(lines, snapLine{len(m[1]) / per, m[2], m[3]})
	}
	return lines
}

// isText says whether a line's rest is a text node's: a quoted string alone.
func (l snapLine) isText() bool {
	_, err := strconv.Unquote(strings.TrimPrefix(l.rest, " "))
	return strings.HasPrefix(l.rest, ` "`) && err == nil
}

// TestCompactSnapshot: on test pages and APG examples, a compact snapshot
// has a line of every node of the default one, at its depth, with its role
// and name, but text joined into the text line before it; the compact uids
// name the nodes the default ones name (one evaluate_script resolves every
// uid of both), the default ones still act, and compact ones act as
// arguments of every kind of tool.
func TestCompactSnapshot(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	const apg = "/aria-practices/patterns/"
	for _, path := range []string{"/form.html", "/widgets.html", "/controls.html",
		apg + "menu-button/examples/menu-button-actions.html", apg + "treeview/examples/treeview-1a.html"} {
		t.Run("page="+strings.TrimSuffix(filepath.Base(path), ".html"), func(t *testing.T) {
			t.Parallel()
			id := e.openPage(t, path)
			if strings.HasPrefix(path, apg) {
				// The examples show their CodePen buttons on a timer.
				e.ok(t, "wait_for", map[string]any{"pageId": id, "text": []string{"Open In CodePen"}})
			}
			def := snapLines(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id, "format": "default"}), false)
			comp := snapLines(t, e.ok(t, "take_snapshot", compact(id, nil)), true)
			p, err := e.b.Page(id)
			if err != nil {
				t.Fatal(err)
			}
			var want []snapLine // the default lines the compact text shows
			for i, l := range def {
				if i > 0 && l.isText() && def[i-1].isText() && def[i-1].depth == l.depth {
					continue
				}
				want = append(want, l)
			}
			if len(comp) != len(want) && testing.Verbose() {
				for _, l := range def {
					t.Logf("D %d %s %s", l.depth, l.uid, l.rest)
				}
				for _, l := range comp {
					t.Logf("C %d %s %s", l.depth, l.uid, l.rest)
				}
			}
			if len(comp) != len(want) {
				t.Fatalf("%d compact lines for %d default ones (%d after joining text)", len(comp), len(def), len(want))
			}
			// Every default uid still resolves after the compact snapshot.
			for _, l := range def {
				if _, _, err := p.UIDs.LookupFrame(l.uid); err != nil {
					t.Errorf("default uid after a compact snapshot: %v", err)
				}
			}
			var args []string
			frame := -1 // the depth of the Iframe the line is in, -1 for none
			for i, c := range comp {
				w := want[i]
				if got := p.UIDs.Canonical(c.uid); got != w.uid || c.depth != w.depth {
					t.Fatalf("compact line %d: %s (%s) at depth %d; want %s at %d", i, c.uid, got, c.depth, w.uid, w.depth)
				}
				if !w.isText() {
					cr, cn := snapshot.LineLabel(c.rest)
					wr, wn := snapshot.LineLabel(w.rest)
					if cr != wr || cn != wn {
						t.Errorf("%s: %s %q; default %s %q", c.uid, cr, cn, wr, wn)
					}
				}
				if frame >= 0 && c.depth <= frame {
					frame = -1
				}
				if frame < 0 && strings.HasPrefix(c.rest, " Iframe") {
					frame = c.depth
				}
				if frame < 0 { // evaluate_script takes elements of one frame
					args = append(args, c.uid, w.uid)
				}
			}
			// Each compact uid resolves to its default one's node in the page.
			const fn = `(...els) => { let same = 0;
				for (let i = 0; i < els.length; i += 2) if (els[i] && els[i] === els[i+1]) same++;
				return same }`
			if got, want := e.evalArgs(t, id, fn, args), fmt.Sprint(len(args)/2); got != want {
				t.Errorf("%s of %s compact uids resolve to their default one's node", got, want)
			}
		})
	}
	t.Run("acts", func(t *testing.T) {
		t.Parallel()
		compactActs(t, e)
	})
	t.Run("incremental", func(t *testing.T) {
		t.Parallel()
		compactIncremental(t, e)
	})
}

// compactLine matches a line of a compact snapshot: one space a level, a
// compact uid.
var compactLine = regexp.MustCompile(`(?m)^ *e\d+ `)

// compactUID is the compact uid of the first line of answer holding needle.
func compactUID(t *testing.T, answer, needle string) string {
	t.Helper()
	for l := range strings.Lines(answer) {
		if f := strings.Fields(l); strings.Contains(l, needle) && len(f) > 0 && compactLine.MatchString(l) {
			return f[0]
		}
	}
	t.Fatalf("no compact line with %q in:\n%s", needle, answer)
	return ""
}

// compactActs: compact uids act in the tools that take uids (click, fill,
// evaluate_script's args, take_snapshot's uid), wait_for answers in the
// call's format, a filePath gets it too, and a bad format, an unknown
// compact uid and one from before a navigation are refused saying what to
// do.
func compactActs(t *testing.T, e *testEnv) {
	id := e.openPage(t, "/form.html")
	snap := e.ok(t, "take_snapshot", compact(id, nil))
	if !strings.HasPrefix(snap, "## Latest page snapshot\ne0 RootWebArea \"Harness Form\"") {
		t.Fatalf("not compact:\n%s", snap)
	}
	e.ok(t, "click", map[string]any{"pageId": id, "uid": compactUID(t, snap, `button "Later"`)})
	waited := e.ok(t, "wait_for", map[string]any{"pageId": id, "text": []string{"Done loading"}, "format": "default"})
	mustContain(t, waited, "## Latest page snapshot\nuid=", `"Done loading"`)
	waitedCompact := e.ok(t, "wait_for", compact(id, map[string]any{"text": []string{"Done loading"}}))
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	if c, d := compactUID(t, waitedCompact, `"Done loading"`), uidIn(t, waited, `"Done loading"`); p.UIDs.Canonical(c) != d {
		t.Errorf("Done loading is %s in the compact answer, %s in the default one", c, d)
	}

	name := compactUID(t, snap, `textbox "Name"`)
	e.ok(t, "fill", map[string]any{"pageId": id, "uid": name, "value": "Ada"})
	if got := e.evalArgs(t, id, "(el) => el.value", []string{name}); got != `"Ada"` {
		t.Errorf("the textbox filled by %s holds %s", name, got)
	}
	color := compactUID(t, snap, `combobox "Color"`)
	scoped := e.ok(t, "take_snapshot", compact(id, map[string]any{"uid": color}))
	if !strings.HasPrefix(scoped, "## Latest page snapshot (uid="+color+" and below)\n"+color+" combobox \"Color\"") {
		t.Errorf("scoped by a compact uid:\n%s", scoped)
	}
	mustContain(t, scoped, ` option "red" selected`)
	file := filepath.Join(t.TempDir(), "snap.txt")
	e.ok(t, "take_snapshot", compact(id, map[string]any{"filePath": file}))
	if b, err := os.ReadFile(file); err != nil || !strings.HasPrefix(string(b), "e0 RootWebArea") {
		t.Errorf("filePath: %v\n%s", err, b)
	}

	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": id, "format": "yaml"}), `format "yaml": want default or compact`)
	mustContain(t, e.fails(t, "click", map[string]any{"pageId": id, "uid": "e99999"}), "no element with uid e99999 in the latest snapshot; take a new snapshot")
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "reload"})
	mustContain(t, e.fails(t, "click", map[string]any{"pageId": id, "uid": name}), "uid "+name+" is from before the page navigated; take a new snapshot")
}

// compactIncremental: an incremental answer's changes are written compact,
// marks and folds kept.
func compactIncremental(t *testing.T, e *testEnv) {
	id := e.openPage(t, "/form.html")
	first := e.ok(t, "take_snapshot", compact(id, map[string]any{"mode": "incremental"}))
	mustContain(t, first, "Full snapshot (your first snapshot of this page)", "\ne0 RootWebArea")
	e.eval(t, id, `() => { const b = document.createElement('button'); b.textContent = 'Added'; document.body.prepend(b); return 1 }`)
	changes := e.ok(t, "take_snapshot", compact(id, map[string]any{"mode": "incremental"}))
	mustContain(t, changes, "## Latest page snapshot (changes since your last one)\n")
	if !regexp.MustCompile(`(?m)^\+  e\d+ button "Added"$`).MatchString(changes) || !regexp.MustCompile(`(?m)^ {3}… \d+ lines unchanged \(uid=e\d+ to uid=e\d+\)$`).MatchString(changes) {
		t.Errorf("compact changes:\n%s", changes)
	}
}

// evalArgs runs fn on page with the elements of uids and returns the JSON
// it returned.
func (e *testEnv) evalArgs(t *testing.T, page int, fn string, uids []string) string {
	t.Helper()
	text := e.ok(t, "evaluate_script", map[string]any{"pageId": page, "function": fn, "args": uids})
	_, body, _ := strings.Cut(text, "```json\n")
	body, _, ok := strings.Cut(body, "\n```")
	if !ok {
		t.Fatalf("evaluate_script answer has no json block:\n%s", text)
	}
	return body
}

// TestCompactRules: the action rules take a compact uid as the uid it
// spells: a once-only click retried in the other spelling replays, and
// inLastSnapshot holds for the agent that was shown it, not for another
// agent that names it (two agents over HTTP, pages shared).
func TestCompactRules(t *testing.T) {
	t.Parallel()
	shop := newShopSite(t)
	env, _ := rulesEnv(t, `once:
  - name: place-order
    when: {tools: [click], element: "/^Place order/"}
require:
  - name: seen-first
    when: {tools: [click]}
    inLastSnapshot: true
`)
	a, b := env.session(t, "team-secret-1", ""), env.session(t, "lead-secret-1", "")
	page := openAs(t, a, shop.URL+"/checkout")
	def, _ := use(t, a, "take_snapshot", map[string]any{"pageId": page, "format": "default"})
	snap, _ := use(t, a, "take_snapshot", map[string]any{"pageId": page, "format": "compact"})
	order := compactUID(t, snap, `button "Place order"`)
	if text, failed := use(t, b, "click", map[string]any{"pageId": page, "uid": order}); !failed || !strings.Contains(text, "is not in your last snapshot") {
		t.Fatalf("another agent's compact uid: %s", text)
	}
	if text, failed := use(t, a, "click", map[string]any{"pageId": page, "uid": order}); failed || strings.Contains(text, "Replayed") {
		t.Fatalf("the click by a compact uid: %s", text)
	}
	for _, uid := range []string{uidIn(t, def, `button "Place order"`), order} {
		if text, _ := use(t, a, "click", map[string]any{"pageId": page, "uid": uid}); !strings.Contains(text, "Replayed") {
			t.Fatalf("a retry by %s: %s", uid, text)
		}
	}
	if got := env.eval(t, page, "() => count.textContent"); got != `"1"` {
		t.Fatalf("the page counted %s clicks on Place order, want 1", got)
	}
}
