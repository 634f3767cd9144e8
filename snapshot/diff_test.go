package snapshot

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func applyChanges(t *testing.T, prevText, changes string) string {
	t.Helper()
	got, err := Apply(prevText, changes)
	if err != nil {
		t.Fatalf("%v; changes:\n%s", err, changes)
	}
	return got
}

// removedUIDs lists the uids that the marked lines say are gone: the "-"
// lines, whose "(and N lines below it)" the test checks by count.
func removedUIDs(changes string) []string {
	var uids []string
	for line := range strings.Lines(changes) {
		if strings.HasPrefix(line, "- ") {
			body := strings.TrimLeft(line[2:], " ")
			uid, _, _ := strings.Cut(body[4:], " ")
			uids = append(uids, strings.TrimSpace(uid))
		}
	}
	return uids
}

func checkDiff(t *testing.T, prevText, curText string) *Changes {
	t.Helper()
	c, ok := Diff(ParseTree(prevText), ParseTree(curText))
	if !ok {
		t.Fatalf("Diff refused trees of one document:\n%s---\n%s", prevText, curText)
	}
	if got := applyChanges(t, prevText, c.Text()); got != curText {
		t.Fatalf("applying the changes gives\n%s\nwant\n%s\nchanges:\n%s", got, curText, c.Text())
	}
	return c
}

func TestDiffRecorded(t *testing.T) {
	t.Parallel()
	u := NewUIDs()
	var texts []string
	for i := 1; i <= 4; i++ {
		texts = append(texts, u.Snapshot(loadAX(t, fmt.Sprintf("dyn.%d", i)), false).Text)
	}
	tests := []struct {
		from, to int
		want     string
		summary  string
	}{{
		from: 1, to: 2,
		want: `  uid=1_0 RootWebArea "Dyn" url="http://127.0.0.1:41507/dyn.html"
    uid=1_1 button "Alpha"
+   uid=2_0 button "Gamma"
+   uid=2_1 button "Delta"
-   uid=1_2 button "Beta"
    uid=1_3 textbox "Field"
`,
		summary: "2 added, 1 removed; 3 of 5 lines unchanged",
	}, {
		from: 2, to: 3,
		want: `  uid=1_0 RootWebArea "Dyn" url="http://127.0.0.1:41507/dyn.html"
    uid=1_1 button "Alpha"
-   uid=2_0 button "Gamma"
    … 2 lines unchanged (uid=2_1 to uid=1_3)
`,
		summary: "1 removed; 4 of 4 lines unchanged",
	}, {
		from: 3, to: 4, // Gamma, hidden in 3, is back with its uid
		want: `  uid=1_0 RootWebArea "Dyn" url="http://127.0.0.1:41507/dyn.html"
    uid=1_1 button "Alpha"
+   uid=2_0 button "Gamma"
    … 2 lines unchanged (uid=2_1 to uid=1_3)
`,
		summary: "1 added; 4 of 5 lines unchanged",
	}, {
		from: 2, to: 4,
		want:    "  … 5 lines unchanged (uid=1_0 to uid=1_3)\n",
		summary: "no change; 5 of 5 lines unchanged",
	}}
	for _, tt := range tests {
		c := checkDiff(t, texts[tt.from-1], texts[tt.to-1])
		if c.Text() != tt.want || c.Summary() != tt.summary {
			t.Errorf("dyn.%d to dyn.%d:\n%s(%s)\nwant\n%s(%s)", tt.from, tt.to, c.Text(), c.Summary(), tt.want, tt.summary)
		}
		if c.None() != (tt.summary[:2] == "no") {
			t.Errorf("dyn.%d to dyn.%d: None is %v", tt.from, tt.to, c.None())
		}
	}
}

func TestDiffCases(t *testing.T) {
	t.Parallel()
	const base = `uid=1_0 RootWebArea "T"
  uid=1_1 navigation "Main"
    uid=1_2 link "Home" url="/"
    uid=1_3 link "Docs" url="/docs"
    uid=1_4 link "Blog" url="/blog"
  uid=1_5 main
    uid=1_6 heading "Title" level="1"
    uid=1_7 button "Open" expandable
    uid=1_8 list
      uid=1_9 listitem
        uid=1_10 "one"
      uid=1_11 listitem
        uid=1_12 "two"
    uid=1_13 textbox "Name" value="Ada"
  uid=1_14 contentinfo
    uid=1_15 "Footer"
`
	tests := []struct {
		name, cur, want string
		added, removed  int
		changed, moved  int
	}{{
		name: "a button expands and a dialog opens after it",
		cur: strings.Replace(base, `    uid=1_7 button "Open" expandable
`, `    uid=1_7 button "Open" expandable expanded
    uid=2_0 dialog "Settings" modal
      uid=2_1 button "Close"
`, 1),
		want: `  uid=1_0 RootWebArea "T"
    … 4 lines unchanged (uid=1_1 to uid=1_4)
    uid=1_5 main
      uid=1_6 heading "Title" level="1"
~     uid=1_7 button "Open" expandable expanded
+     uid=2_0 dialog "Settings" modal
+       uid=2_1 button "Close"
      … 6 lines unchanged (uid=1_8 to uid=1_13)
    … 2 lines unchanged (uid=1_14 to uid=1_15)
`,
		added: 2, changed: 1,
	}, {
		name: "a list item goes, with its text",
		cur: strings.Replace(base, `      uid=1_9 listitem
        uid=1_10 "one"
`, "", 1),
		want: `  uid=1_0 RootWebArea "T"
    … 4 lines unchanged (uid=1_1 to uid=1_4)
    uid=1_5 main
      … 2 lines unchanged (uid=1_6 to uid=1_7)
      uid=1_8 list
-       uid=1_9 listitem (and 1 line below it)
        … 2 lines unchanged (uid=1_11 to uid=1_12)
      uid=1_13 textbox "Name" value="Ada"
    … 2 lines unchanged (uid=1_14 to uid=1_15)
`,
		removed: 2,
	}, {
		name: "the last link goes, then the list items swap",
		cur: strings.Replace(strings.Replace(base, `    uid=1_4 link "Blog" url="/blog"
`, "", 1), `      uid=1_9 listitem
        uid=1_10 "one"
      uid=1_11 listitem
        uid=1_12 "two"
`, `      uid=1_11 listitem
        uid=1_12 "two"
      uid=1_9 listitem
        uid=1_10 "one"
`, 1),
		want: `  uid=1_0 RootWebArea "T"
    uid=1_1 navigation "Main"
      … 2 lines unchanged (uid=1_2 to uid=1_3)
-     uid=1_4 link "Blog" url="/blog"
    uid=1_5 main
      … 2 lines unchanged (uid=1_6 to uid=1_7)
      uid=1_8 list
>       uid=1_11 listitem
          uid=1_12 "two"
        … 2 lines unchanged (uid=1_9 to uid=1_10)
      uid=1_13 textbox "Name" value="Ada"
    … 2 lines unchanged (uid=1_14 to uid=1_15)
`,
		removed: 1, moved: 1,
	}, {
		name: "the textbox moves into the footer",
		cur: strings.Replace(strings.Replace(base, `    uid=1_13 textbox "Name" value="Ada"
`, "", 1), `    uid=1_15 "Footer"
`, `    uid=1_15 "Footer"
    uid=1_13 textbox "Name" value="Grace"
`, 1),
		want: `  uid=1_0 RootWebArea "T"
    … 4 lines unchanged (uid=1_1 to uid=1_4)
    uid=1_5 main
      … 7 lines unchanged (uid=1_6 to uid=1_12)
    uid=1_14 contentinfo
      uid=1_15 "Footer"
>     uid=1_13 textbox "Name" value="Grace"
`,
		moved: 1,
	}}
	for _, tt := range tests {
		c := checkDiff(t, base, tt.cur)
		if c.Text() != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, c.Text(), tt.want)
		}
		if c.Added != tt.added || c.Removed != tt.removed || c.Changed != tt.changed || c.Moved != tt.moved {
			t.Errorf("%s: %s", tt.name, c.Summary())
		}
	}

	other := strings.Replace(base, "uid=1_0 ", "uid=2_0 ", 1)
	if _, ok := Diff(ParseTree(base), ParseTree(other)); ok {
		t.Errorf("Diff compared trees whose roots differ")
	}
}

// randomTree writes a tree of n nodes with uids from the given sequence,
// as snapshot text.
type node struct {
	uid, body string
	kids      []*node
}

func (n *node) write(b *strings.Builder, depth int) {
	b.WriteString(strings.Repeat("  ", depth) + "uid=" + n.uid + n.body + "\n")
	for _, k := range n.kids {
		k.write(b, depth+1)
	}
}

func (n *node) all(out []*node) []*node {
	out = append(out, n)
	for _, k := range n.kids {
		out = k.all(out)
	}
	return out
}

func (n *node) clone() *node {
	c := &node{uid: n.uid, body: n.body}
	for _, k := range n.kids {
		c.kids = append(c.kids, k.clone())
	}
	return c
}

func (n *node) contains(m *node) bool {
	return n == m || slices.ContainsFunc(n.kids, func(k *node) bool { return k.contains(m) })
}

func (n *node) parentOf(m *node) *node {
	for _, k := range n.kids {
		if k == m {
			return n
		}
		if p := k.parentOf(m); p != nil {
			return p
		}
	}
	return nil
}

// TestDiffApplies mutates random trees at random (adds, removes, changes,
// moves and reorders nodes) and checks that applying the changes to the
// earlier text gives the later one, and that the counts add up.
func TestDiffApplies(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	roles := []string{` button "Go"`, ` link "x" url="/x"`, ` generic`, ` "text"`, ` heading "H" level="2"`, ""}
	var totals [4]int
	defer func() { t.Logf("added, removed, changed, moved: %v", totals) }()
	for round := range 500 {
		seq := 0
		mint := func() string { seq++; return fmt.Sprintf("1_%d", seq) }
		root := &node{uid: "1_0", body: ` RootWebArea "R"`}
		nodes := []*node{root}
		for range 1 + r.IntN(60) {
			p := nodes[r.IntN(len(nodes))]
			k := &node{uid: mint(), body: roles[r.IntN(len(roles))]}
			p.kids = append(p.kids, k)
			nodes = append(nodes, k)
		}
		var pb strings.Builder
		root.write(&pb, 0)
		cur := root.clone()
		for range 1 + r.IntN(6) {
			all := cur.all(nil)
			n := all[r.IntN(len(all))]
			switch op := r.IntN(5); {
			case op == 0: // add
				at := r.IntN(len(n.kids) + 1)
				n.kids = slices.Insert(n.kids, at, &node{uid: "2_" + mint(), body: roles[r.IntN(len(roles))]})
			case op == 1 && n != cur: // remove
				p := cur.parentOf(n)
				p.kids = slices.DeleteFunc(p.kids, func(k *node) bool { return k == n })
			case op == 2: // change
				n.body += " focused"
			case op == 3 && n != cur: // move
				to := all[r.IntN(len(all))]
				if n.contains(to) {
					continue
				}
				p := cur.parentOf(n)
				p.kids = slices.DeleteFunc(p.kids, func(k *node) bool { return k == n })
				to.kids = slices.Insert(to.kids, r.IntN(len(to.kids)+1), n)
			case op == 4 && len(n.kids) > 1: // reorder
				r.Shuffle(len(n.kids), func(i, j int) { n.kids[i], n.kids[j] = n.kids[j], n.kids[i] })
			}
		}
		var cb strings.Builder
		cur.write(&cb, 0)
		prevText, curText := pb.String(), cb.String()
		c := checkDiff(t, prevText, curText)
		prev, now := ParseTree(prevText), ParseTree(curText)
		if c.Added+c.Changed+c.Moved+c.Unchanged != now.Len() {
			t.Fatalf("round %d: %s, but the tree has %d lines", round, c.Summary(), now.Len())
		}
		gone := 0
		for _, l := range prev.lines {
			if _, ok := now.index[l.uid()]; !ok {
				gone++
			}
		}
		if c.Removed != gone {
			t.Fatalf("round %d: %d removed, %d uids gone", round, c.Removed, gone)
		}
		for _, uid := range removedUIDs(c.Text()) {
			if _, ok := now.index[uid]; ok {
				t.Fatalf("round %d: %s is marked removed but is still there", round, uid)
			}
		}
		totals[0] += c.Added
		totals[1] += c.Removed
		totals[2] += c.Changed
		totals[3] += c.Moved
		if prevText == curText && !c.None() {
			t.Fatalf("round %d: changes in an unchanged tree:\n%s", round, c.Text())
		}
	}
}

func TestSubtree(t *testing.T) {
	t.Parallel()
	u := NewUIDs()
	tree := ParseTree(u.Snapshot(loadAX(t, "widgets"), false).Text)
	got, ok := tree.Subtree("1_13")
	want := `uid=1_13 tree orientation="vertical"
  uid=1_14 treeitem "Root" expandable expanded level="1" selectable
    uid=1_15 treeitem "Leaf" level="2" selectable
`
	if !ok || got != want {
		t.Errorf("Subtree(1_13) = %q, %v; want\n%s", got, ok, want)
	}
	if got, ok := tree.Subtree("1_8"); !ok || got != "uid=1_8 menuitem \"File\"\n" {
		t.Errorf("Subtree of a leaf = %q, %v", got, ok)
	}
	if _, ok := tree.Subtree("9_9"); ok {
		t.Errorf("Subtree of an unknown uid")
	}
}

// TestRunToBelow: a run's last uid may be a node below its last sibling,
// as a fold of Changes.Text names its last line, and the run is the one
// of the siblings; a uid before the first, or not below a later sibling,
// is no run.
func TestRunToBelow(t *testing.T) {
	t.Parallel()
	tree := ParseTree(bigPage(2, 2, 2))
	// 1_2 region "Region 0": 1_3 heading, 1_4 list (1_5 listitem 1_6 link, 1_7 1_8),
	// 1_9 heading, 1_10 list (1_11 1_12, 1_13 1_14); 1_15 region "Region 1".
	want, err := tree.Run("1_3", "1_10")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		first, last, want string // want "" for an error
	}{
		{"1_3", "1_14", want},  // the last line of the run
		{"1_3", "1_11", want},  // any node below its last sibling
		{"1_4", "1_6", "list"}, // below the first: the first alone
		{"1_6", "1_3", ""},     // before the first
		{"1_6", "1_9", ""},     // not below a later sibling: a cousin
		{"1_2", "1_14", "Region 0"},
	} {
		got, err := tree.Run(tt.first, tt.last)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("Run(%s, %s) = %q, want an error", tt.first, tt.last, got)
		case tt.want == "":
		case err != nil:
			t.Errorf("Run(%s, %s): %v", tt.first, tt.last, err)
		case tt.want == want && got != want, !strings.Contains(strings.SplitN(got, "\n", 2)[0], tt.want) && tt.want != want:
			t.Errorf("Run(%s, %s) =\n%s", tt.first, tt.last, got)
		}
	}
	if sub, _ := tree.Subtree("1_4"); sub != mustRun(t, tree, "1_4", "1_8") {
		t.Errorf("a run to the last line below one node is not its subtree")
	}
}

func mustRun(t *testing.T, tree *Tree, first, last string) string {
	t.Helper()
	text, err := tree.Run(first, last)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// BenchmarkDiffBig is the incremental mode's own cost on a page the size of
// cmd/bench's 200,000-node one (about 80,000 lines, 4 MB of text):
// both texts parsed and diffed, unchanged and with one line changed.
func BenchmarkDiffBig(b *testing.B) {
	prev := bigPage(100, 40, 10) // 84,102 lines
	for _, tt := range []struct{ name, cur string }{
		{"unchanged", prev},
		{"one-change", strings.Replace(prev, `link "Link 50.20.5"`, `link "Link 50.20.5, changed"`, 1)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(prev)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := Diff(ParseTree(prev), ParseTree(tt.cur)); !ok {
					b.Fatal("roots differ")
				}
			}
		})
	}
}
