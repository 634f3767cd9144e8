package snapshot

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// bigPage is the text of a page of regions, each a heading and sections of
// links; the last region is small, as a footer is.
func bigPage(regions, sections, links int) string {
	var b strings.Builder
	n := 0
	uid := func() string { n++; return fmt.Sprintf("1_%d", n) }
	fmt.Fprintf(&b, "uid=%s RootWebArea \"Docs\" url=\"https://example.com/\"\n", uid())
	for r := range regions {
		fmt.Fprintf(&b, "  uid=%s region \"Region %d\"\n", uid(), r)
		for s := range sections {
			fmt.Fprintf(&b, "    uid=%s heading \"Section %d.%d\" level=\"2\"\n", uid(), r, s)
			fmt.Fprintf(&b, "    uid=%s list\n", uid())
			for l := range links {
				fmt.Fprintf(&b, "      uid=%s listitem\n        uid=%s link \"Link %d.%d.%d\" url=\"https://example.com/%d/%d/%d\"\n", uid(), uid(), r, s, l, r, s, l)
			}
		}
	}
	fmt.Fprintf(&b, "  uid=%s contentinfo\n    uid=%s link \"Privacy\"\n", uid(), uid())
	return b.String()
}

var foldRe = regexp.MustCompile(`^( *)… (\d+) nodes (below|from uid=(\S+) to uid=(\S+)) \((\d+) characters(?:; headings (.*))?\): take_snapshot uid=(\S+?)(?: to=(\S+))?$`)

// checkOutline checks an outline against its tree: within the budget, each
// line of it a line of the tree unchanged, in order, or a fold whose counts
// are those of what it stands for; together they cover every node once.
func checkOutline(t *testing.T, full, outline string, budget int) {
	t.Helper()
	if len(outline) > budget {
		t.Errorf("outline of %d bytes for a budget of %d", len(outline), budget)
	}
	tree := ParseTree(full)
	covered := 0
	next := 0 // the tree line the outline must show or fold next
	for line := range strings.Lines(outline) {
		line = strings.TrimSuffix(line, "\n")
		if m := foldRe.FindStringSubmatch(line); m != nil {
			count, _ := strconv.Atoi(m[2])
			size, _ := strconv.Atoi(m[6])
			open := tree.index[m[8]]
			for _, uid := range []string{m[8], m[9]} {
				if _, ok := tree.index[uid]; !ok && uid != "" {
					t.Errorf("fold names uid=%s, not in the tree: %s", uid, line)
				}
			}
			if m[3] != "below" {
				// The run opens with uid and to: exactly its nodes.
				text, err := tree.Run(m[8], cmp.Or(m[9], m[8]))
				if err != nil || strings.Count(text, "\n") != count {
					t.Errorf("take_snapshot uid=%s to=%s gives %d lines (%v), the fold says %d: %s", m[8], m[9], strings.Count(text, "\n"), err, count, line)
				}
			}
			want := 0
			for j := next; j < next+count; j++ {
				want += tree.lineCostForTest(j)
			}
			if size != want {
				t.Errorf("fold says %d characters, its %d nodes from line %d are %d: %s", size, count, next, want, line)
			}
			if m[3] == "below" && int(tree.lines[open].end) != next+count {
				t.Errorf("fold below uid=%s covers lines %d..%d, its subtree ends at %d", m[8], next, next+count, tree.lines[open].end)
			}
			covered += count
			next += count
			continue
		}
		if next >= tree.Len() {
			t.Fatalf("outline line past the tree: %q", line)
		}
		want := strings.Repeat("  ", int(tree.lines[next].depth)) + tree.lines[next].text
		if line != want {
			t.Fatalf("outline line %q where the tree has %q", line, want)
		}
		covered++
		next++
	}
	if covered != tree.Len() || next != tree.Len() {
		t.Errorf("the outline covers %d of %d nodes", covered, tree.Len())
	}
}

func (t *Tree) lineCostForTest(i int) int { return 2*int(t.lines[i].depth) + len(t.lines[i].text) + 1 }

func TestOutline(t *testing.T) {
	t.Parallel()
	full := bigPage(6, 4, 30)
	tree := ParseTree(full)
	for _, budget := range []int{600, 800, 2000, 8000, 40000} {
		out, ok := tree.Outline(budget)
		if !ok {
			t.Fatalf("budget %d: no outline", budget)
		}
		checkOutline(t, full, out, budget)
		if budget >= 2000 {
			// Every region shows, the last (the footer) too.
			for _, want := range []string{`region "Region 0"`, `region "Region 5"`, "contentinfo"} {
				if !strings.Contains(out, want) {
					t.Errorf("budget %d: the outline lacks %s:\n%s", budget, want, out)
				}
			}
		}
		if budget == 800 && !strings.Contains(out, "take_snapshot uid=1_500 to=1_998\n") {
			t.Errorf("a run of folded regions does not name its two ends:\n%s", out)
		}
		if budget == 600 && !regexp.MustCompile(`… \d+ nodes (below|from uid=\S+ to uid=\S+) \(\d+ characters; headings "Section \d\.0", "Section \d\.1", "Section \d\.2"\): take_snapshot uid=1_\d+`).MatchString(out) {
			t.Errorf("a folded region does not name its headings and its uid:\n%s", out)
		}
	}
	if out, ok := tree.Outline(len(full)); !ok || out != full {
		t.Errorf("a tree that fits its budget is not given whole")
	}
	if _, ok := tree.Outline(20); ok {
		t.Error("an outline within 20 bytes")
	}
}

// A node with more children than fit shows its first and last ones and
// folds the run between into one line naming both ends.
func TestOutlineLongRun(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("uid=1_1 RootWebArea \"Flat\"\n")
	for i := 2; i <= 20001; i++ {
		fmt.Fprintf(&b, "  uid=1_%d link \"Item %d\"\n", i, i)
	}
	full := b.String()
	out, ok := ParseTree(full).Outline(3000)
	if !ok {
		t.Fatal("no outline")
	}
	checkOutline(t, full, out, 3000)
	for _, want := range []string{`uid=1_2 link "Item 2"`, `uid=1_20001 link "Item 20001"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the outline lacks %s:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`… \d+ nodes from uid=(1_\d+) to uid=(1_\d+) \(\d+ characters\): take_snapshot uid=1_\d+ to=1_\d+\n`).MatchString(out) {
		t.Errorf("no fold of the run:\n%s", out)
	}
	// The run itself, as take_snapshot uid to gives it: many roots.
	run, err := ParseTree(full).Run("1_2", "1_20001")
	if err != nil {
		t.Fatal(err)
	}
	out, ok = ParseTree(run).Outline(3000)
	if !ok {
		t.Fatal("no outline of a run")
	}
	checkOutline(t, run, out, 3000)
	if !strings.HasPrefix(out, `uid=1_2 link "Item 2"`) || !strings.HasSuffix(out, "uid=1_20001 link \"Item 20001\"\n") {
		t.Errorf("the outline of a run does not show its ends:\n%s", out)
	}
}

// A flat page (a document of paragraphs, as a spec is) keeps its headings,
// the higher levels first: they are its table of contents.
func TestOutlineKeepsHeadings(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("uid=1_1 RootWebArea \"Spec\"\n")
	n := 1
	for s := range 20 {
		n++
		fmt.Fprintf(&b, "  uid=1_%d heading \"Chapter %d\" level=\"2\"\n", n, s)
		for p := range 5 {
			n++
			fmt.Fprintf(&b, "  uid=1_%d heading \"Part %d.%d\" level=\"3\"\n", n, s, p)
			for range 20 {
				n++
				fmt.Fprintf(&b, "  uid=1_%d \"%s\"\n", n, strings.Repeat("text ", 30))
			}
		}
	}
	full := b.String()
	out, ok := ParseTree(full).Outline(4000)
	if !ok {
		t.Fatal("no outline")
	}
	checkOutline(t, full, out, 4000)
	for s := range 20 {
		if !strings.Contains(out, fmt.Sprintf(`heading "Chapter %d" level="2"`, s)) {
			t.Errorf("the outline lacks chapter %d:\n%s", s, out)
		}
	}
	if strings.Count(out, `level="3"`) >= 100 {
		t.Error("every part fit in 4000 bytes: the test proves nothing")
	}
}

var changesFoldRe = regexp.MustCompile(`^  ( *)… (\d+) lines (below|from uid=(\S+) to uid=(\S+)|of removed nodes) \((\d+) characters, (no change|1 change|(\d+) changes)(?:; headings [^)]*)?\)(?:: take_snapshot uid=(\S+?)(?: to=(\S+))?)?$`)

// checkChangesOutline checks an outline of changes, the Changes.Text of
// cur against an earlier tree: within the budget, each of its lines a line
// of changes, mark and all, in order, or a fold that counts the lines and
// the changes it stands for and opens a run of cur's nodes; together they
// cover every line once. It returns how many changes show.
func checkChangesOutline(t *testing.T, changes, cur, outline string, budget int) (shown int) {
	t.Helper()
	if len(outline) > budget {
		t.Errorf("outline of %d bytes for a budget of %d", len(outline), budget)
	}
	dt, now := parseChanges(changes), ParseTree(cur)
	next := 0
	for line := range strings.Lines(outline) {
		line = strings.TrimSuffix(line, "\n")
		if m := changesFoldRe.FindStringSubmatch(line); m != nil {
			count, _ := strconv.Atoi(m[2])
			n := 0
			for _, l := range dt.lines[next : next+count] {
				if l.mark != ' ' {
					n++
				}
			}
			if want := map[int]string{0: "no change", 1: "1 change"}[n]; want != m[7] && m[8] != strconv.Itoa(n) {
				t.Errorf("fold says %s, its lines hold %d changes: %s", m[7], n, line)
			}
			if m[3] == "below" && int(dt.lines[next-1].end) != next+count {
				t.Errorf("fold below covers lines %d..%d, its node's subtree ends at %d: %s", next, next+count, dt.lines[next-1].end, line)
			}
			if m[9] != "" {
				if _, err := now.Run(m[9], cmp.Or(m[10], m[9])); err != nil {
					t.Errorf("fold opens no run of the page (%v): %s", err, line)
				}
			} else if m[3] != "of removed nodes" {
				t.Errorf("fold names nothing to open: %s", line)
			}
			next += count
			continue
		}
		if next >= dt.Len() {
			t.Fatalf("outline line past the changes: %q", line)
		}
		l := &dt.lines[next]
		if want := string(l.mark) + " " + strings.Repeat("  ", int(l.depth)) + l.text; line != want {
			t.Fatalf("outline line %q where the changes have %q", line, want)
		}
		if l.mark != ' ' {
			shown++
		}
		next++
	}
	if next != dt.Len() {
		t.Errorf("the outline covers %d of %d lines", next, dt.Len())
	}
	return shown
}

// TestOutlineChanges: changes too big for their budget are outlined as a
// tree is, marks kept, the changes shown before what did not change, and
// each fold says how many changes it holds and opens a run of the page.
func TestOutlineChanges(t *testing.T) {
	t.Parallel()
	prev := bigPage(6, 4, 30)
	// Every 9th link renamed, every 50th line gone with what is below it,
	// a paragraph added to each region.
	var b strings.Builder
	total := 0
	for i, line := range strings.Split(strings.TrimSuffix(prev, "\n"), "\n") {
		switch {
		case strings.Contains(line, " link \"Link") && i%9 == 0:
			line = strings.Replace(line, `"Link`, `"Renamed link`, 1)
		case strings.Contains(line, " listitem") && i%50 == 1:
			continue // its link follows, one level deeper: it goes up one
		case strings.Contains(line, " region "):
			line += "\n    uid=2_" + strconv.Itoa(i) + " paragraph \"New\""
		}
		b.WriteString(line + "\n")
	}
	cur := b.String()
	c, ok := Diff(ParseTree(prev), ParseTree(cur))
	if !ok || c.None() {
		t.Fatal("no changes")
	}
	total = c.Added + c.Removed + c.Changed + c.Moved
	for _, budget := range []int{1500, 4000, 12000} {
		out, ok := OutlineChanges(c.Text(), budget)
		if !ok {
			t.Fatalf("budget %d: no outline", budget)
		}
		shown := checkChangesOutline(t, c.Text(), cur, out, budget)
		if shown == 0 {
			t.Errorf("budget %d: no change shows:\n%s", budget, out)
		}
		if budget == 12000 && !regexp.MustCompile(`(?m)^~ +uid=\S+ link "Renamed`).MatchString(out) {
			t.Errorf("budget %d: no renamed link shows:\n%s", budget, out)
		}
		t.Logf("budget %d: %d of %d changes shown, %d bytes of %d", budget, shown, total, len(out), len(c.Text()))
	}
	if out, ok := OutlineChanges(c.Text(), len(c.Text())); !ok || out != c.Text() {
		t.Errorf("changes that fit their budget are not given whole")
	}
	if _, ok := OutlineChanges(c.Text(), 20); ok {
		t.Error("an outline within 20 bytes")
	}
}

// TestOutlineChangesFirst: where not all of a node's children fit, its
// changes show before the lines that did not change, first and last
// children though they are.
func TestOutlineChangesFirst(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("long ", 40)
	var cur strings.Builder
	cur.WriteString("uid=1_1 RootWebArea \"Flat\"\n")
	for i := 2; i <= 121; i++ {
		fmt.Fprintf(&cur, "  uid=1_%d link \"Item %d %s\"\n", i, i, long)
	}
	changes := fmt.Sprintf(`  uid=1_1 RootWebArea "Flat"
    uid=1_2 link "Item 2 %[1]s"
-   uid=2_1 link "Gone"
    … 58 lines unchanged (uid=1_3 to uid=1_60)
~   uid=1_61 link "Item 61, renamed"
    … 59 lines unchanged (uid=1_62 to uid=1_120)
-   uid=2_2 link "Gone too"
    uid=1_121 link "Item 121 %[1]s"
`, long)
	for _, budget := range []int{500, 600} {
		out, ok := OutlineChanges(changes, budget)
		if !ok {
			t.Fatalf("budget %d: no outline", budget)
		}
		if shown := checkChangesOutline(t, changes, cur.String(), out, budget); shown < 2 || shown < 3 && strings.Contains(out, "Item 2 ") {
			t.Errorf("budget %d: %d of 3 changes shown, the first child before them:\n%s", budget, shown, out)
		}
	}
}
