package snapshot

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
)

// compactOf takes a snapshot of root in a new registry and returns it and
// its compact text.
func compactOf(t *testing.T, root axt) (*UIDs, *Snapshot, string) {
	t.Helper()
	u := NewUIDs()
	snap := u.Snapshot(flatten(t, root), false)
	return u, snap, u.Compact(snap.Text, false, "")
}

func TestCompactFormat(t *testing.T) {
	t.Parallel()
	link := func(id int, name, href string, props ...any) axt {
		return axt{id: id, role: "link", name: name, props: append([]any{"focusable", true, "url", href}, props...)}
	}
	text := func(id int, s string) axt { return axt{id: id, role: "StaticText", name: s} }
	tests := []struct {
		name string
		root axt
		want string
	}{{
		name: "uids by ordinal, one space a level, the root's url whole",
		root: axt{id: 1, role: "RootWebArea", name: "T", props: []any{"url", "https://x.test/a/b.html"}, kids: []axt{
			{id: 2, role: "navigation", kids: []axt{{id: 3, role: "button", name: "Go"}}},
		}},
		want: "e0 RootWebArea \"T\" url=\"https://x.test/a/b.html\"\n e1 navigation\n  e2 button \"Go\"\n",
	}, {
		name: "sibling text lines join under the first uid; a node between them parts them",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "paragraph", kids: []axt{text(3, "if "), text(4, "x"), text(5, "(1)")}},
			{id: 6, role: "paragraph", kids: []axt{text(7, "One.")}},
			{id: 8, role: "paragraph", kids: []axt{text(9, "Two")}},
			{id: 10, role: "button", name: "B"},
			{id: 11, role: "paragraph", kids: []axt{text(12, "word")}},
			{id: 13, role: "paragraph", kids: []axt{text(14, "word \"q\"\n")}},
		}},
		want: "e0 RootWebArea\n e1 \"if x(1)One. Two\"\n e6 button \"B\"\n e7 \"word word \\\"q\\\"\\n\"\n",
	}, {
		name: "text under another parent is not joined",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "navigation", kids: []axt{text(3, "in")}},
			text(4, "out"),
		}},
		want: "e0 RootWebArea\n e1 navigation\n  e2 \"in\"\n e3 \"out\"\n",
	}, {
		name: "a description that is the name, capability words before their state",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "button", name: "Menu", desc: "Menu", props: []any{"expanded", true, "haspopup", "menu"}},
			{id: 3, role: "button", name: "More", desc: "Shows more", props: []any{"expanded", false}},
			{id: 4, role: "checkbox", name: "C", props: []any{"checked", true, "disabled", true, "focusable", true}},
			{id: 5, role: "heading", name: "H", props: []any{"level", 2}},
			{id: 6, role: "slider", name: "S", props: []any{"valuemin", 0, "valuemax", 10, "valuetext", "5"}},
		}},
		want: "e0 RootWebArea\n" +
			" e1 button \"Menu\" expanded haspopup=\"menu\"\n" +
			" e2 button \"More\" description=\"Shows more\" expandable\n" +
			" e3 checkbox \"C\" checked disabled\n" +
			" e4 heading \"H\" level=2\n" +
			" e5 slider \"S\" valuemax=10 valuemin=0 valuetext=\"5\"\n",
	}, {
		name: "URLs relative to the document",
		root: axt{id: 1, role: "RootWebArea", props: []any{"url", "https://x.test/docs/page.html?v=1"}, kids: []axt{
			link(2, "Self", "https://x.test/docs/page.html?v=1#top"),
			link(3, "Sibling", "https://x.test/docs/other.html"),
			link(4, "Deeper", "https://x.test/docs/sub/c.html?q=2"),
			link(5, "Root", "https://x.test/index.html"),
			link(6, "Elsewhere", "https://y.test/docs/page.html"),
			link(7, "Plain", "http://x.test/docs/other.html"),
			link(8, "Mail", "mailto:a@x.test"),
			link(9, "Query", "https://x.test/docs/page.html?v=2"),
		}},
		want: "e0 RootWebArea url=\"https://x.test/docs/page.html?v=1\"\n" +
			" e1 link \"Self\" url=\"#top\"\n" +
			" e2 link \"Sibling\" url=\"other.html\"\n" +
			" e3 link \"Deeper\" url=\"sub/c.html?q=2\"\n" +
			" e4 link \"Root\" url=\"/index.html\"\n" +
			" e5 link \"Elsewhere\" url=\"//y.test/docs/page.html\"\n" +
			" e6 link \"Plain\" url=\"http://x.test/docs/other.html\"\n" +
			" e7 link \"Mail\" url=\"mailto:a@x.test\"\n" +
			" e8 link \"Query\" url=\"?v=2\"\n",
	}, {
		name: "uid= in a name is text, not a uid",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "button", name: "uid=1_0 to=1_0"},
		}},
		want: "e0 RootWebArea\n e1 button \"uid=1_0 to=1_0\"\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, snap, got := compactOf(t, tt.root)
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s\ndefault:\n%s", got, tt.want, snap.Text)
			}
		})
	}
}

// TestCompactFrameURLs: a frame's URLs are relative to the frame's
// document, and the page's again after it.
func TestCompactFrameURLs(t *testing.T) {
	t.Parallel()
	link := func(id int, name, href string) axt {
		return axt{id: id, role: "link", name: name, props: []any{"focusable", true, "url", href}}
	}
	root := axt{id: 1, role: "RootWebArea", props: []any{"url", "https://x.test/a/page.html"}, kids: []axt{
		{id: 2, role: "Iframe", name: "F"},
		link(5, "Out", "https://x.test/a/x.html"),
	}}
	frame := axt{id: 3, role: "RootWebArea", props: []any{"url", "https://y.test/f/frame.html"}, frame: "F2", kids: []axt{
		link(4, "In", "https://y.test/f/x.html"),
	}}
	u := NewUIDs()
	snap := u.SnapshotFrames(&Frame{Nodes: flatten(t, root), Frames: map[cdp.BackendNodeID]*Frame{2: {Nodes: flatten(t, frame)}}}, false)
	want := "e0 RootWebArea url=\"https://x.test/a/page.html\"\n" +
		" e1 Iframe \"F\"\n" +
		"  e2 RootWebArea url=\"https://y.test/f/frame.html\"\n" +
		"   e3 link \"In\" url=\"x.html\"\n" +
		" e4 link \"Out\" url=\"x.html\"\n"
	if got := u.Compact(snap.Text, false, "https://z.test/"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s\ndefault:\n%s", got, want, snap.Text)
	}
	// A part of the page without its RootWebArea: the page's URL is the base.
	sub, err := ParseTree(snap.Text).Run(u.Canonical("e4"), u.Canonical("e4"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.Compact(sub, false, "https://x.test/a/b.html"), "e4 link \"Out\" url=\"x.html\"\n"; got != want {
		t.Errorf("part: %q; want %q", got, want)
	}
}

// TestCompactUIDs: a compact uid names the node its default spelling
// names, through later snapshots that hand out more, and is stale after a
// navigation as the default one is.
func TestCompactUIDs(t *testing.T) {
	t.Parallel()
	page := func(ids ...int) axt {
		root := axt{id: 1, role: "RootWebArea", name: "P"}
		for _, id := range ids {
			root.kids = append(root.kids, axt{id: id, role: "button", name: "b"})
		}
		return root
	}
	u := NewUIDs()
	u.Snapshot(flatten(t, page(10, 11)), false)      // 1_0 1_1 1_2: e0 e1 e2
	u.Snapshot(flatten(t, page(10, 11)), false)      // none new
	s := u.Snapshot(flatten(t, page(12, 10)), false) // 3_0: e3
	if got, want := u.Compact(s.Text, false, ""), "e0 RootWebArea \"P\"\n e3 button \"b\"\n e1 button \"b\"\n"; got != want {
		t.Fatalf("compact:\n%s\nwant:\n%s", got, want)
	}
	for compact, want := range map[string]struct {
		uid     string
		backend cdp.BackendNodeID
	}{"e0": {"1_0", 1}, "e1": {"1_1", 10}, "e2": {"1_2", 11}, "e3": {"3_0", 12}} {
		if got := u.Canonical(compact); got != want.uid {
			t.Errorf("Canonical(%s) = %s; want %s", compact, got, want.uid)
		}
		if id, err := u.Lookup(compact); err != nil || id != want.backend {
			t.Errorf("Lookup(%s) = %d, %v; want %d", compact, id, err, want.backend)
		}
	}
	if role, name, ok := u.Element("e3"); !ok || role != "button" || name != "b" {
		t.Errorf("Element(e3) = %q %q %v", role, name, ok)
	}
	for _, bad := range []string{"e4", "e", "e-1", "E1", "e1 ", "e01x", "e1234567890"} {
		if _, err := u.Lookup(bad); !errors.Is(err, ErrUnknownUID) {
			t.Errorf("Lookup(%q) = %v; want ErrUnknownUID", bad, err)
		}
		if got := u.Canonical(bad); got != bad {
			t.Errorf("Canonical(%q) = %q", bad, got)
		}
	}
	if _, err := u.Lookup("e4"); err == nil || err.Error() != "no element with uid e4 in the latest snapshot; take a new snapshot to get current uids" {
		t.Errorf("Lookup(e4): %v", err)
	}
	u.Reset()
	if _, err := u.Lookup("e3"); !errors.Is(err, ErrStaleUID) {
		t.Errorf("Lookup(e3) after Reset = %v; want ErrStaleUID", err)
	}
	s = u.Snapshot(flatten(t, page(10)), false) // the new document's uids go on from e4
	if got, want := u.Compact(s.Text, false, ""), "e4 RootWebArea \"P\"\n e5 button \"b\"\n"; got != want {
		t.Fatalf("after Reset:\n%s\nwant:\n%s", got, want)
	}
	if id, err := u.Lookup("e5"); err != nil || id != 10 {
		t.Errorf("Lookup(e5) = %d, %v", id, err)
	}
}

// TestCompactChanges: an incremental answer's changes keep their marks and
// folds, with the folds' uids spelled compact; lines merge only with lines
// of the same mark.
func TestCompactChanges(t *testing.T) {
	t.Parallel()
	text := func(id int, s string) axt { return axt{id: id, role: "StaticText", name: s} }
	page := func(extra ...axt) axt {
		kids := []axt{{id: 2, role: "button", name: "A"}, {id: 3, role: "button", name: "B"}, {id: 4, role: "button", name: "C"}}
		return axt{id: 1, role: "RootWebArea", kids: append(kids, extra...)}
	}
	u := NewUIDs()
	a := u.Snapshot(flatten(t, page()), false)
	b := u.Snapshot(flatten(t, page(text(5, "new "), text(6, "text"))), false)
	ch, ok := Diff(ParseTree(a.Text), ParseTree(b.Text))
	if !ok {
		t.Fatal("no diff")
	}
	got := u.Compact(ch.Text(), true, "")
	want := "  e0 RootWebArea\n   … 3 lines unchanged (uid=e1 to uid=e3)\n+  e4 \"new text\"\n"
	if got != want {
		t.Errorf("changes:\n%s\ncompact:\n%s\nwant:\n%s", ch.Text(), got, want)
	}
}

// TestCompactKeepsNodes: on recorded pages, the compact text has a line of
// every node line of the default text but text joined into the text line
// before it, in order and at its depth, and every uid it shows resolves to
// the node its default spelling names.
func TestCompactKeepsNodes(t *testing.T) {
	t.Parallel()
	line := regexp.MustCompile(`^( *)uid=(\S+)( "(?:[^"\\]|\\.)*")?( |$)`)
	cline := regexp.MustCompile(`^( *)(e\d+) `)
	for _, name := range []string{"form", "widgets", "dyn.1"} {
		t.Run(name, func(t *testing.T) {
			u := NewUIDs()
			snap := u.SnapshotFrames(fixture(t, name), false)
			got := strings.Split(strings.TrimSuffix(u.Compact(snap.Text, false, "http://127.0.0.1/"), "\n"), "\n")
			var want []string // the compact uid and depth of each line that must stay
			prevText := ""    // the depth of a text line just before, "" for none
			for l := range strings.Lines(snap.Text) {
				m := line.FindStringSubmatch(strings.TrimSuffix(l, "\n"))
				if m == nil {
					t.Fatalf("not a node line: %q", l)
				}
				isText := m[3] != "" && m[4] == ""
				if isText && prevText == m[1] {
					continue // joined
				}
				prevText = ""
				if isText {
					prevText = m[1]
				}
				want = append(want, strings.Repeat(" ", len(m[1])/2)+u.compactSpelling(t, m[2]))
			}
			if len(got) != len(want) {
				t.Fatalf("%d compact lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
			for i, l := range got {
				m := cline.FindStringSubmatch(l)
				if m == nil || m[1]+m[2] != want[i] {
					t.Fatalf("line %d: %q; want %q first", i, l, want[i])
				}
				f1, id1, err1 := u.LookupFrame(m[2])
				f2, id2, err2 := u.LookupFrame(u.Canonical(m[2]))
				if err1 != nil || err2 != nil || f1 != f2 || id1 != id2 {
					t.Errorf("%s: %s %d %v; default spelling %s %d %v", m[2], f1, id1, err1, f2, id2, err2)
				}
			}
		})
	}
}

// compactSpelling is uid's compact spelling, failing t if it has none.
func (u *UIDs) compactSpelling(t *testing.T, uid string) string {
	t.Helper()
	s, ok := u.speller().spell(uid)
	if !ok {
		t.Fatalf("no compact spelling of %s", uid)
	}
	return s
}

func TestRelativeURL(t *testing.T) {
	t.Parallel()
	base, _ := url.Parse("https://x.test/a/b/page.html?q=1")
	for _, tt := range []struct{ in, want string }{
		{"https://x.test/a/b/page.html?q=1#f", "#f"},
		{"https://x.test/a/b/page.html?q=2", "?q=2"},
		{"https://x.test/a/b/page.html", "page.html"},
		{"https://x.test/a/b/c/d.html#x", "c/d.html#x"},
		{"https://x.test/a/c.html", "/a/c.html"},
		{"https://x.test/", "/"},
		{"https://y.test/a", "//y.test/a"},
		{"http://x.test/a/b/c.html", "http://x.test/a/b/c.html"},
		{"https://x.test/a/b/a:b.html", "/a/b/a:b.html"}, // "a:b.html" would be a scheme
		{"https://x.test/a/b//c", "/a/b//c"},
		{"https://u@x.test/a/b/c", "https://u@x.test/a/b/c"},
		{"https://x.test/a/b/c d", "https://x.test/a/b/c d"}, // not as it is written back
		{"data:text/plain,hi", "data:text/plain,hi"},
		{"not a url at all", "not a url at all"},
	} {
		if got := relativeURL(base, tt.in); got != tt.want {
			t.Errorf("relativeURL(%s) = %s; want %s", tt.in, got, tt.want)
		}
	}
	if got := relativeURL(nil, "https://x.test/"); got != "https://x.test/" {
		t.Errorf("without a base: %s", got)
	}
}

// TestCompactVerboseText: a text line with lines below it (a verbose
// snapshot's InlineTextBox) keeps its own line, so that they stay below it.
func TestCompactVerboseText(t *testing.T) {
	t.Parallel()
	u := NewUIDs()
	root := axt{id: 1, role: "RootWebArea", kids: []axt{
		{id: 2, role: "StaticText", name: "A"},
		{id: 3, role: "StaticText", name: "B"},
		{id: 4, role: "StaticText", name: "C", kids: []axt{{id: 5, role: "InlineTextBox", name: "C", noDOM: true}}},
		{id: 6, role: "StaticText", name: "D"},
	}}
	snap := u.Snapshot(flatten(t, root), true)
	want := "e0 RootWebArea\n e1 \"A B\"\n e3 \"C\"\n  e4 InlineTextBox \"C\"\n e5 \"D\"\n"
	if got := u.Compact(snap.Text, false, ""); got != want {
		t.Errorf("got:\n%s\nwant:\n%s\ndefault:\n%s", got, want, snap.Text)
	}
}

// TestCompactOutline: an outline's folds name their uids compact, and say
// how to open them with those.
func TestCompactOutline(t *testing.T) {
	t.Parallel()
	root := axt{id: 1, role: "RootWebArea", name: "Big"}
	for i := range 200 {
		root.kids = append(root.kids, axt{id: 10 + i, role: "button", name: fmt.Sprint("Buy ", i)})
	}
	u := NewUIDs()
	snap := u.Snapshot(flatten(t, root), false)
	outline, ok := ParseTree(snap.Text).Outline(600)
	if !ok {
		t.Fatal("no outline")
	}
	got := u.Compact(outline, false, "")
	if strings.Contains(got, "uid=1_") || !regexp.MustCompile(`(?m)^ … \d+ nodes from uid=e\d+ to uid=e\d+ \(\d+ characters\): take_snapshot uid=e\d+ to=e\d+$`).MatchString(got) {
		t.Errorf("outline:\n%s\ncompact:\n%s", outline, got)
	}
}

// BenchmarkCompact50000 compacts the text of a 50,000-node tree.
func BenchmarkCompact50000(b *testing.B) {
	u := NewUIDs()
	snap := u.Snapshot(bigTree(b, 50000), false)
	b.SetBytes(int64(len(snap.Text)))
	b.ReportAllocs()
	for b.Loop() {
		u.Compact(snap.Text, false, "http://127.0.0.1/big")
	}
}
