package snapshot

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// This file compares two snapshots of one document for incremental
// snapshots: which lines were added, removed, changed or moved, told apart
// by uid, and writes the new tree with what did not change folded. It reads
// the text the snapshots gave (ParseTree), so it needs nothing else of them
// and works on any snapshot text, chrome-devtools-mcp's included.

// Tree is the text of a snapshot parsed back into its lines: one node a
// line, two spaces of indent a level, "uid=<uid>" first. It is only an index
// over the text: it holds no uids of a page and resolves nothing.
type Tree struct {
	lines []treeLine
	index map[string]int32 // line by uid
	// marked: the tree is a Changes.Text (parseChanges), each line with
	// its mark, for OutlineChanges; its index is empty.
	marked bool
}

type treeLine struct {
	text   string // the line without its indent: "uid=1_4 button \"Go\""
	depth  int32
	parent int32 // -1 for a root
	end    int32 // index after the last line of its subtree
	uidLen int16 // of the uid in text, after "uid="; -1 for a line without one (a fold of Changes.Text)
	mark   byte  // of a marked tree's line: '+', '-', '~', '>' or ' '
}

func (l *treeLine) uid() string {
	if l.uidLen < 0 {
		return ""
	}
	return l.text[4 : 4+l.uidLen]
}

func (l *treeLine) body() string {
	if l.uidLen < 0 {
		return l.text
	}
	return l.text[4+l.uidLen:]
}

// ParseTree reads the text of a snapshot (Snapshot.Text). Lines that are not
// a node ("uid=" after the indent), such as the note of a cut answer, are
// left out; a line indented deeper than one level below the line before it
// counts one level below it.
func ParseTree(text string) *Tree { return parse(text, false) }

// parseChanges reads a Changes.Text as a tree: each line's mark kept, the
// indent after it read as ParseTree reads it, and its folded runs ("… N
// lines unchanged (uid=A to uid=B)") lines without a uid. Lines without a
// mark are left out.
func parseChanges(text string) *Tree { return parse(text, true) }

func parse(text string, marked bool) *Tree {
	n := strings.Count(text, "\n") + 1
	t := &Tree{lines: make([]treeLine, 0, n), marked: marked}
	if !marked {
		t.index = make(map[string]int32, n)
	}
	var stack []int32 // the open ancestors of the next line
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		var mark byte
		if marked {
			if len(line) < 2 || line[1] != ' ' || !strings.ContainsRune(marks, rune(line[0])) {
				continue
			}
			mark, line = line[0], line[2:]
		}
		body := strings.TrimLeft(line, " ")
		uidLen := -1
		switch {
		case strings.HasPrefix(body, "uid="):
			if uidLen = strings.IndexByte(body[4:], ' '); uidLen < 0 {
				uidLen = len(body) - 4
			}
			if uidLen > math.MaxInt16 {
				continue // no uid is this long: not a node
			}
		case !marked || !strings.HasPrefix(body, "… "):
			continue
		}
		depth := int32(len(line)-len(body)) / 2
		i := int32(len(t.lines))
		for len(stack) > 0 && t.lines[stack[len(stack)-1]].depth >= depth {
			t.lines[stack[len(stack)-1]].end = i
			stack = stack[:len(stack)-1]
		}
		parent := int32(-1)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
			depth = t.lines[parent].depth + 1
		} else {
			depth = 0
		}
		t.lines = append(t.lines, treeLine{text: body, uidLen: int16(uidLen), depth: depth, parent: parent, mark: mark})
		if !marked {
			if _, dup := t.index[body[4:4+uidLen]]; !dup {
				t.index[body[4:4+uidLen]] = i
			}
		}
		stack = append(stack, i)
	}
	for _, i := range stack {
		t.lines[i].end = int32(len(t.lines))
	}
	return t
}

// marks are the marks that begin the lines of Changes.Text.
const marks = "+-~> "

// Len is the number of lines (nodes) of the tree.
func (t *Tree) Len() int { return len(t.lines) }

// Subtree is the text of the node with uid and of every node below it, whole,
// indented from the node's own line at no indent, as a snapshot of that part
// of the page would be; ok is false when no line of the tree has uid.
func (t *Tree) Subtree(uid string) (text string, ok bool) {
	text, err := t.Run(uid, uid)
	return text, err == nil
}

// Run is Subtree for the siblings from uid first to uid last, each with
// everything below it, as an outline's fold line names a run of them. last
// may also be a node below the last sibling of the run, as the fold lines
// of Changes.Text name their last line. It fails when a uid is not in the
// tree, or last is not first, a later sibling of it, or below one.
func (t *Tree) Run(first, last string) (string, error) {
	for _, uid := range []string{first, last} {
		if _, ok := t.index[uid]; !ok {
			return "", fmt.Errorf("uid %s is not in the page's accessibility tree now (hidden, or no longer shown); take a new snapshot", uid)
		}
	}
	i, j := t.index[first], t.index[last]
	for j > i && t.lines[j].depth > t.lines[i].depth {
		j = t.lines[j].parent
	}
	if j < i || t.lines[j].parent != t.lines[i].parent {
		return "", fmt.Errorf("uid %s is not uid %s or a later sibling of it (or a node below one); give the two ends of a run of siblings, as an outline's fold line names them", last, first)
	}
	var b strings.Builder
	base := t.lines[i].depth
	for _, l := range t.lines[i:t.lines[j].end] {
		for range l.depth - base {
			b.WriteString("  ")
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// Changes is what differs between two snapshots of one document, from Diff.
type Changes struct {
	// Added, Removed, Changed and Moved count lines: a node new to the
	// tree, one gone from it (each line below it too), one whose role,
	// name or properties differ, and one now under another parent or in
	// another place among its siblings.
	Added, Removed, Changed, Moved int
	// Unchanged counts the lines of the new tree that are as they were.
	Unchanged int
	text      []byte
}

// None reports whether the two snapshots were alike.
func (c *Changes) None() bool { return c.Added+c.Removed+c.Changed+c.Moved == 0 }

// Text is the new tree with its changes marked and the rest folded, one line
// each ending in "\n". Each line begins with a mark and a space, then the
// line as the snapshot has it, indent included:
//
//   - a node added, with its uid (every line below it is marked too)
//   - a node removed, where it was, "(and N lines below it)" when it had any
//     ~ a node whose role, name or properties changed: its line now
//     > a node moved here from elsewhere in the tree
//     a node that did not change, shown because a change is below it
//     … N lines unchanged (uid=A to uid=B)  a run of siblings as they were:
//     the lines from A to B of the earlier snapshot, indented from here
//
// The text for no change at all is the root's run folded, one line.
func (c *Changes) Text() string { return string(c.text) }

// Summary counts the changes in words: "1 added, 2 removed; 57 of 58 lines
// unchanged".
func (c *Changes) Summary() string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{c.Added, "added"}, {c.Removed, "removed"}, {c.Changed, "changed"}, {c.Moved, "moved"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	total := c.Added + c.Changed + c.Moved + c.Unchanged
	kept := fmt.Sprintf("%d of %d lines unchanged", c.Unchanged, total)
	if len(parts) == 0 {
		return "no change; " + kept
	}
	return strings.Join(parts, ", ") + "; " + kept
}

// The status of a line of the new tree.
const (
	lineSame uint8 = iota
	lineAdded
	lineChanged
	lineMoved
)

// Diff compares cur with prev, an earlier snapshot of the same document
// whose uids cur's share (UIDs hands them out by DOM node, per document).
// ok is false when the trees are not of one document: their roots differ.
// Diff doesn't look at what the lines mean beyond their uid, parent, place
// among siblings and text.
func Diff(prev, cur *Tree) (c *Changes, ok bool) {
	if len(prev.lines) == 0 || len(cur.lines) == 0 || prev.lines[0].uid() != cur.lines[0].uid() {
		return nil, false
	}
	d := &differ{prev: prev, cur: cur, c: &Changes{}}
	d.classify()
	d.reorders()
	d.findRemoved()
	d.markInner()
	d.emitChildren(-1, -1)
	for _, s := range d.status {
		switch s {
		case lineSame:
			d.c.Unchanged++
		case lineAdded:
			d.c.Added++
		case lineChanged:
			d.c.Changed++
		case lineMoved:
			d.c.Moved++
		}
	}
	return d.c, true
}

type differ struct {
	prev, cur *Tree
	c         *Changes
	status    []uint8
	was       []int32 // line of prev of each line of cur, -1 for an added one
	// inner marks the lines of cur below which something changed.
	inner []bool
	// before holds the removed lines of prev to show before a line of
	// cur, atEnd those to show after the last child of a line of cur
	// (atEnd[0] for the roots, atEnd[i+1] for line i).
	before map[int32][]int32
	atEnd  map[int32][]int32
}

// parentUID is the uid of line i's parent in t, "" for a root.
func (t *Tree) parentUID(i int32) string {
	if p := t.lines[i].parent; p >= 0 {
		return t.lines[p].uid()
	}
	return ""
}

func (d *differ) classify() {
	d.status = make([]uint8, len(d.cur.lines))
	d.was = make([]int32, len(d.cur.lines))
	for i := range d.cur.lines {
		l := &d.cur.lines[i]
		j, ok := d.prev.index[l.uid()]
		if !ok {
			d.status[i], d.was[i] = lineAdded, -1
			continue
		}
		d.was[i] = j
		switch {
		case d.prev.parentUID(j) != d.cur.parentUID(int32(i)):
			d.status[i] = lineMoved
		case d.prev.lines[j].body() != l.body():
			d.status[i] = lineChanged
		}
	}
}

// reorders marks as moved the nodes that kept their parent but not their
// place among its other children: of the children that were there before,
// the longest run already in their old order stays, the others moved.
func (d *differ) reorders() {
	kids := map[int32][]int32{} // by parent, the children that kept it
	for i := range d.cur.lines {
		if s := d.status[i]; s == lineSame || s == lineChanged {
			p := d.cur.lines[i].parent
			kids[p] = append(kids[p], int32(i))
		}
	}
	for _, ks := range kids {
		inOrder := true
		for k := 1; k < len(ks); k++ {
			if d.was[ks[k]] < d.was[ks[k-1]] {
				inOrder = false
				break
			}
		}
		if inOrder {
			continue
		}
		stay := longestIncreasing(ks, d.was)
		for _, k := range ks {
			if !stay[k] {
				d.status[k] = lineMoved
			}
		}
	}
}

// longestIncreasing is a longest subsequence of ks whose keys increase.
func longestIncreasing(ks []int32, key []int32) map[int32]bool {
	tails := []int{}             // tails[n]: index in ks ending the best run of n+1
	back := make([]int, len(ks)) // the index before each in its run
	for i, k := range ks {
		lo, hi := 0, len(tails)
		for lo < hi {
			m := (lo + hi) / 2
			if key[ks[tails[m]]] < key[k] {
				lo = m + 1
			} else {
				hi = m
			}
		}
		back[i] = -1
		if lo > 0 {
			back[i] = tails[lo-1]
		}
		if lo == len(tails) {
			tails = append(tails, i)
		} else {
			tails[lo] = i
		}
	}
	stay := make(map[int32]bool, len(tails))
	for i := tails[len(tails)-1]; i >= 0; i = back[i] {
		stay[ks[i]] = true
	}
	return stay
}

// findRemoved places each removed node whose parent is still there among
// that parent's children in the new tree, before the first of its old next
// siblings that is still a child there, and counts the lines removed.
func (d *differ) findRemoved() {
	d.before, d.atEnd = map[int32][]int32{}, map[int32][]int32{}
	prev := d.prev
	for j := int32(0); j < int32(len(prev.lines)); j++ {
		l := &prev.lines[j]
		if _, ok := d.cur.index[l.uid()]; ok {
			continue
		}
		d.c.Removed++
		pj := l.parent
		pc := int32(-1)
		if pj >= 0 {
			i, ok := d.cur.index[prev.lines[pj].uid()]
			if !ok {
				continue // below a removed node: counted, not shown
			}
			pc = i
		}
		end := int32(len(prev.lines))
		if pj >= 0 {
			end = prev.lines[pj].end
		}
		anchor := int32(-1)
		for k := l.end; k < end; k = prev.lines[k].end {
			if i, ok := d.cur.index[prev.lines[k].uid()]; ok && d.cur.lines[i].parent == pc {
				anchor = i
				break
			}
		}
		if anchor >= 0 {
			d.before[anchor] = append(d.before[anchor], j)
		} else {
			d.atEnd[pc+1] = append(d.atEnd[pc+1], j)
		}
	}
}

func (d *differ) markInner() {
	d.inner = make([]bool, len(d.cur.lines))
	for k := range d.before {
		if p := d.cur.lines[k].parent; p >= 0 {
			d.inner[p] = true
		}
	}
	for k := range d.atEnd {
		if k > 0 {
			d.inner[k-1] = true
		}
	}
	// A node that moved away leaves its old parent changed below.
	for i, s := range d.status {
		if s != lineMoved {
			continue
		}
		if pj := d.prev.lines[d.was[i]].parent; pj >= 0 {
			if pc, ok := d.cur.index[d.prev.lines[pj].uid()]; ok {
				d.inner[pc] = true
			}
		}
	}
	for i := len(d.cur.lines) - 1; i >= 0; i-- {
		if p := d.cur.lines[i].parent; p >= 0 && (d.inner[i] || d.status[i] != lineSame) {
			d.inner[p] = true
		}
	}
}

// emitChildren writes the children of line p of cur (the roots for -1),
// whose depth is depth+1.
func (d *differ) emitChildren(p, depth int32) {
	start, end := p+1, int32(len(d.cur.lines))
	if p >= 0 {
		end = d.cur.lines[p].end
	}
	// run is the siblings folded into one line: they follow each other in
	// prev too, so that the line names a block of it.
	var run struct {
		n           int32
		first, last int32 // lines of cur: the first and the last of the block
		next        int32 // line of prev after the block
	}
	flush := func() {
		switch run.n {
		case 0:
			return
		case 1: // the line itself is no longer than its fold
			d.c.text = appendMarked(d.c.text, ' ', depth+1)
			d.c.text = append(d.c.text, d.cur.lines[run.first].text...)
			d.c.text = append(d.c.text, '\n')
		default:
			d.c.text = appendMarked(d.c.text, ' ', depth+1)
			d.c.text = fmt.Appendf(d.c.text, "… %d lines unchanged (uid=%s to uid=%s)\n", run.n, d.cur.lines[run.first].uid(), d.cur.lines[run.last].uid())
		}
		run.n = 0
	}
	for k := start; k < end; k = d.cur.lines[k].end {
		if rs := d.before[k]; len(rs) > 0 {
			flush()
			d.emitRemoved(rs, depth+1)
		}
		l := &d.cur.lines[k]
		if d.status[k] == lineSame && !d.inner[k] {
			if run.n > 0 && d.was[k] != run.next {
				flush()
			}
			if run.n == 0 {
				run.first = k
			}
			run.n += l.end - k
			run.last = l.end - 1
			run.next = d.prev.lines[d.was[k]].end
			continue
		}
		flush()
		mark := byte(' ')
		switch d.status[k] {
		case lineAdded:
			mark = '+'
		case lineChanged:
			mark = '~'
		case lineMoved:
			mark = '>'
		}
		d.c.text = appendMarked(d.c.text, mark, depth+1)
		d.c.text = append(d.c.text, l.text...)
		d.c.text = append(d.c.text, '\n')
		d.emitChildren(k, depth+1)
	}
	flush()
	d.emitRemoved(d.atEnd[p+1], depth+1)
}

// emitRemoved writes removed lines of prev at depth.
func (d *differ) emitRemoved(rs []int32, depth int32) {
	for _, j := range rs {
		l := &d.prev.lines[j]
		d.c.text = appendMarked(d.c.text, '-', depth)
		d.c.text = append(d.c.text, l.text...)
		below := 0
		for k := j + 1; k < l.end; k++ {
			if _, ok := d.cur.index[d.prev.lines[k].uid()]; !ok {
				below++
			}
		}
		switch below {
		case 0:
		case 1:
			d.c.text = append(d.c.text, " (and 1 line below it)"...)
		default:
			d.c.text = fmt.Appendf(d.c.text, " (and %d lines below it)", below)
		}
		d.c.text = append(d.c.text, '\n')
	}
}

// appendMarked starts a line of Changes.Text: its mark, a space, the indent.
func appendMarked(b []byte, mark byte, depth int32) []byte {
	b = append(b, mark, ' ')
	for range depth {
		b = append(b, ' ', ' ')
	}
	return b
}

// foldLine is a folded run of Changes.Text, after its mark and indent.
var foldLine = regexp.MustCompile(`^… (\d+) lines unchanged \(uid=(\S+) to uid=(\S+)\)$`)

// Apply is what an agent does with an incremental answer: from prev, the
// text of its earlier snapshot, and changes, a Changes.Text made against
// it, it writes the text of the new snapshot. Removed lines go, folded runs
// become the lines of prev they name, and the other lines are the new
// tree's. The error says which line it could not read.
func Apply(prev, changes string) (string, error) {
	t := ParseTree(prev)
	var b strings.Builder
	for line := range strings.Lines(changes) {
		line = strings.TrimSuffix(line, "\n")
		if len(line) < 2 || line[1] != ' ' || !strings.ContainsRune(marks, rune(line[0])) {
			return "", fmt.Errorf("line without a mark: %q", line)
		}
		rest := line[2:]
		body := strings.TrimLeft(rest, " ")
		depth := (len(rest) - len(body)) / 2
		if line[0] == '-' {
			continue
		}
		m := foldLine.FindStringSubmatch(body)
		if m == nil {
			if !strings.HasPrefix(body, "uid=") {
				return "", fmt.Errorf("line without a uid: %q", line)
			}
			b.WriteString(strings.Repeat("  ", depth) + body + "\n")
			continue
		}
		i, ok1 := t.index[m[2]]
		j, ok2 := t.index[m[3]]
		if !ok1 || !ok2 || fmt.Sprint(j-i+1) != m[1] {
			return "", errors.New("fold " + body + " does not name lines of the earlier snapshot")
		}
		base := int(t.lines[i].depth)
		for _, l := range t.lines[i : j+1] {
			b.WriteString(strings.Repeat("  ", depth+int(l.depth)-base) + l.text + "\n")
		}
	}
	return b.String(), nil
}
