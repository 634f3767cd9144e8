package snapshot

import (
	"slices"
	"strconv"
	"strings"
)

// This file writes a snapshot too big for the answer as an outline that
// still covers the whole page, instead of its first part and nothing after:
// the tree is opened level by level, breadth first, as far as the budget
// goes, so every region near the top shows, the last ones too, and each
// part left closed is one line that says how big it is, which headings are
// in it, and which take_snapshot uid opens it.

// Outline writes the tree in at most budget bytes: its lines as far as
// they fit, each node's children opened in breadth-first order (the roots
// first, then their children, …), and a fold line where a node's children
// stay closed. A node whose children do not all fit shows its heading
// children and its first and last ones, as many as fit, and folds each run
// between them into a line. ok is false when not even the roots and their
// folds fit.
func (t *Tree) Outline(budget int) (text string, ok bool) {
	// The roots are the children of a node of no line of its own, the
	// top, which is opened as any node is: a subtree has one root, a run
	// of siblings (take_snapshot uid to) several.
	n := int32(len(t.lines))
	o := outliner{t: t, top: n, children: make([][]int32, n+1), state: make([]int8, n+1),
		partial: map[int32]map[int]bool{}, size: make([]int, n+1)}
	if t.marked {
		o.changes = make([]int, n+1)
	}
	for i := range n {
		o.size[i+1] = o.size[i] + o.lineCost(i)
		if t.marked {
			o.changes[i+1] = o.changes[i]
			if t.lines[i].mark != ' ' {
				o.changes[i+1]++
			}
		}
		if _, ok := headingName(t.lines[i].body()); ok {
			o.headings = append(o.headings, i)
		}
		p := t.lines[i].parent
		if p < 0 {
			p = n
		}
		o.children[p] = append(o.children[p], i)
	}
	left := budget
	queue := []int32{n}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		kids := o.children[i]
		if len(kids) == 0 {
			continue
		}
		cost := -o.foldCost(i)
		for _, c := range kids {
			cost += o.shownCost(c)
		}
		if cost <= left {
			left -= cost
			o.state[i] = opened
			queue = append(queue, kids...)
			continue
		}
		// Not all fit: some children show, and each run of those that do
		// not is one line. Headings first (the page's table of contents,
		// higher levels first), then the first and the last children in
		// turn, while they fit.
		left += o.foldCost(i)
		sel := o.choose(i, kids, left)
		if len(sel.shown) == 0 {
			if i == o.top {
				return "", false
			}
			left -= o.foldCost(i) // nothing fits beside the fold
			continue
		}
		left -= sel.cost
		o.state[i] = opened
		o.partial[i] = sel.shown
		for k, c := range kids {
			if sel.shown[k] {
				queue = append(queue, c)
			}
		}
	}
	var b strings.Builder
	b.Grow(budget - left)
	o.writeChildren(&b, n)
	return b.String(), true
}

// OutlineChanges writes changes, a Changes.Text too big for the answer, in
// at most budget bytes as Outline writes a tree: each line keeps its mark,
// a node's children open breadth first as far as they fit, and among
// children that do not all fit the changes show first (the lines marked
// +, -, ~ or > and the nodes a change is below), then headings, then the
// first and the last. A fold line is "  … N lines below (…)" of a node or
// "  … N lines from uid=A to uid=B (…)" of a run, with how many changes
// it holds, and names the take_snapshot that shows that part of the page
// as it is now, without marks; a run of removed lines alone names none.
// ok is false when not even the roots and their folds fit.
func OutlineChanges(changes string, budget int) (text string, ok bool) {
	return parseChanges(changes).Outline(budget)
}

// The states of a node in an outline.
const (
	closed int8 = iota // its children are folded, if it has any
	opened             // its children show (but a run of them, if in runs)
)

type outliner struct {
	t        *Tree
	top      int32 // the node above the roots, of no line
	children [][]int32
	state    []int8
	partial  map[int32]map[int]bool // by parent: which of its children show, when not all
	size     []int                  // size[i] is the bytes of lines [0, i)
	headings []int32                // the heading lines, in order
	changes  []int                  // of a marked tree: changes[i] is the lines of [0, i) marked as a change
}

// selection is the children of a node that show when not all fit.
type selection struct {
	shown map[int]bool // by index among the children
	cost  int          // of their lines and of the run lines between
}

// choose picks the children of i to show within left bytes, counting a
// run line for each run of those left out: heading children first, by
// level then in order, then the first and the last in turn.
func (o *outliner) choose(i int32, kids []int32, left int) selection {
	var order []int
	if o.t.marked {
		// What changed first: its lines, and the nodes a change is below;
		// then the folds of unchanged lines, shorter than a fold of them.
		for k, c := range kids {
			if o.t.lines[c].mark != ' ' || len(o.children[c]) > 0 {
				order = append(order, k)
			}
		}
		for k, c := range kids {
			if o.t.lines[c].uidLen < 0 {
				order = append(order, k)
			}
		}
	}
	first := len(order) // of the headings in order
	type head struct{ k, level int }
	var heads []head
	for k, c := range kids {
		if name, ok := headingName(o.t.lines[c].body()); ok && name != "" {
			heads = append(heads, head{k, headingLevel(o.t.lines[c].body())})
		}
	}
	slices.SortStableFunc(heads, func(a, b head) int { return a.level - b.level })
	for _, h := range heads {
		order = append(order, h.k)
	}
	for f, l := 0, len(kids)-1; f <= l; f, l = f+1, l-1 {
		order = append(order, f)
		if l != f {
			order = append(order, l)
		}
	}
	sel := selection{shown: map[int]bool{}, cost: o.runCost(i, kids, 0, len(kids))}
	var picked []int // sorted
	for j, k := range order {
		if sel.shown[k] {
			continue
		}
		// The run k is in, between the shown children around it.
		at, _ := slices.BinarySearch(picked, k)
		from, to := 0, len(kids)
		if at > 0 {
			from = picked[at-1] + 1
		}
		if at < len(picked) {
			to = picked[at]
		}
		delta := o.shownCost(kids[k]) - o.runCost(i, kids, from, to) + o.runCost(i, kids, from, k) + o.runCost(i, kids, k+1, to)
		if sel.cost+delta > left {
			if j < first+len(heads) {
				continue // another change or heading may fit still
			}
			break
		}
		sel.cost += delta
		sel.shown[k] = true
		picked = slices.Insert(picked, at, k)
	}
	return sel
}

// lineCost is the bytes of line i as written: indent, text, newline.
func (o *outliner) lineCost(i int32) int {
	l := &o.t.lines[i]
	c := 2*int(l.depth) + len(l.text) + 1
	if o.t.marked {
		c += 2 // the mark and its space
	}
	return c
}

// shownCost is the bytes of line i shown closed: its line and its fold.
func (o *outliner) shownCost(i int32) int {
	c := o.lineCost(i)
	if len(o.children[i]) > 0 {
		c += o.foldCost(i)
	}
	return c
}

// foldCost is the bytes of the fold line of a closed node; the top has
// none, as it is always opened.
func (o *outliner) foldCost(i int32) int {
	if i == o.top {
		return 0
	}
	return len(o.foldLine(i))
}

// depth is the depth of node i's line; -1 for the top.
func (o *outliner) depth(i int32) int32 {
	if i == o.top {
		return -1
	}
	return o.t.lines[i].depth
}

// runCost is the bytes of the fold line of the run kids[from:to]; 0 for
// an empty run.
func (o *outliner) runCost(parent int32, kids []int32, from, to int) int {
	if from >= to {
		return 0
	}
	return len(o.runLine(parent, kids[from:to]))
}

// foldLine is the line that stands for the descendants of closed node i.
func (o *outliner) foldLine(i int32) string {
	l := &o.t.lines[i]
	return o.fold(l.depth+1, i+1, l.end, "below", l.uid())
}

// runLine is the line that stands for a run of parent's children: it names
// the take_snapshot that opens the run (uid and to, its two ends).
func (o *outliner) runLine(parent int32, kids []int32) string {
	first, last := kids[0], kids[len(kids)-1]
	from, to := o.runEnds(kids)
	what, open := "from uid="+from+" to uid="+to, from
	switch {
	case from == "":
		what = "of removed nodes" // nothing of the page to open
	case to != from:
		open += " to=" + to
	}
	return o.fold(o.depth(parent)+1, first, o.t.lines[last].end, what, open)
}

// runEnds are the uids of the first and the last node of the page that
// the run of siblings kids stands for: of a plain tree, its ends; of a
// marked one, the ends of the lines that are still on the page (not
// removed), a fold line's standing for the run it names. "" when there is
// none.
func (o *outliner) runEnds(kids []int32) (from, to string) {
	if !o.t.marked {
		return o.t.lines[kids[0]].uid(), o.t.lines[kids[len(kids)-1]].uid()
	}
	ends := func(i int32) (string, string) {
		l := &o.t.lines[i]
		switch {
		case l.mark == '-':
			return "", ""
		case l.uidLen >= 0:
			return l.uid(), l.uid()
		}
		if m := foldLine.FindStringSubmatch(l.text); m != nil {
			return m[2], m[3]
		}
		return "", ""
	}
	for _, k := range kids {
		if from, _ = ends(k); from != "" {
			break
		}
	}
	for k := len(kids) - 1; k >= 0; k-- {
		if _, to = ends(kids[k]); to != "" {
			break
		}
	}
	return from, to
}

// fold writes a fold line for lines [from, to): how many, their size, the
// first headings among them, and the take_snapshot that opens them.
func (o *outliner) fold(depth, from, to int32, what, open string) string {
	size := o.size[to] - o.size[from]
	var heads []string
	k, _ := slices.BinarySearch(o.headings, from)
	for ; k < len(o.headings) && o.headings[k] < to && len(heads) < 3; k++ {
		name, _ := headingName(o.t.lines[o.headings[k]].body())
		heads = append(heads, name)
	}
	var b strings.Builder
	noun := " nodes "
	if o.t.marked {
		b.WriteString("  ") // the mark of a line that is no change
		noun = " lines "
	}
	b.WriteString(strings.Repeat("  ", int(depth)))
	b.WriteString("… ")
	b.WriteString(strconv.Itoa(int(to - from)))
	b.WriteString(noun)
	b.WriteString(what)
	b.WriteString(" (")
	b.WriteString(strconv.Itoa(size))
	b.WriteString(" characters")
	if o.t.marked {
		switch n := o.changes[to] - o.changes[from]; n {
		case 0:
			b.WriteString(", no change")
		case 1:
			b.WriteString(", 1 change")
		default:
			b.WriteString(", " + strconv.Itoa(n) + " changes")
		}
	}
	if len(heads) > 0 {
		b.WriteString("; headings ")
		b.WriteString(strings.Join(heads, ", "))
	}
	b.WriteString(")")
	if open != "" {
		b.WriteString(": take_snapshot uid=")
		b.WriteString(open)
	}
	b.WriteString("\n")
	return b.String()
}

// headingName is the quoted name of a heading line's body (after its
// uid), cut to 40 characters.
func headingName(body string) (string, bool) {
	rest, ok := strings.CutPrefix(body, " heading \"")
	if !ok {
		return "", false
	}
	end := strings.IndexByte(rest, '"')
	if end < 0 {
		return "", false
	}
	name := rest[:end]
	if r := []rune(name); len(r) > 40 {
		name = string(r[:39]) + "…"
	}
	return `"` + name + `"`, true
}

// write writes node i and what of its subtree the outline shows.
func (o *outliner) write(b *strings.Builder, i int32) {
	l := &o.t.lines[i]
	if o.t.marked {
		b.WriteByte(l.mark)
		b.WriteByte(' ')
	}
	b.WriteString(strings.Repeat("  ", int(l.depth)))
	b.WriteString(l.text)
	b.WriteString("\n")
	kids := o.children[i]
	if len(kids) == 0 {
		return
	}
	if o.state[i] == closed {
		b.WriteString(o.foldLine(i))
		return
	}
	o.writeChildren(b, i)
}

// writeChildren writes the children of opened node i that show, and a run
// line for each run of those that do not.
func (o *outliner) writeChildren(b *strings.Builder, i int32) {
	kids, shown := o.children[i], o.partial[i]
	for k := 0; k < len(kids); k++ {
		if shown == nil || shown[k] {
			o.write(b, kids[k])
			continue
		}
		end := k
		for end < len(kids) && !shown[end] {
			end++
		}
		b.WriteString(o.runLine(i, kids[k:end]))
		k = end - 1
	}
}

// headingLevel is the level="N" of a heading line's body, 9 without one.
func headingLevel(body string) int {
	_, rest, ok := strings.Cut(body, ` level="`)
	if !ok || len(rest) < 2 || rest[1] != '"' || rest[0] < '1' || rest[0] > '9' {
		return 9
	}
	return int(rest[0] - '0')
}
