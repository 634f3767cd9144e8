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
// stay closed. A node whose children do not all fit shows its first and
// last children and folds the run between them. ok is false when not even
// the roots and their folds fit.
func (t *Tree) Outline(budget int) (text string, ok bool) {
	o := outliner{t: t, children: make([][]int32, len(t.lines)), state: make([]int8, len(t.lines)),
		runs: map[int32]run{}, size: make([]int, len(t.lines)+1)}
	var roots []int32
	for i := range t.lines {
		o.size[i+1] = o.size[i] + o.lineCost(int32(i))
		if _, ok := headingName(t.lines[i].body()); ok {
			o.headings = append(o.headings, int32(i))
		}
		if p := t.lines[i].parent; p >= 0 {
			o.children[p] = append(o.children[p], int32(i))
		} else {
			roots = append(roots, int32(i))
		}
	}
	left := budget
	for _, r := range roots {
		left -= o.shownCost(r)
	}
	if left < 0 {
		return "", false
	}
	queue := roots
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
		// Not all fit: the first and the last children, taken in turn, and
		// one line for the run between them.
		left += o.foldCost(i)
		head, tail, used := 0, len(kids), 0
		for head < tail {
			c := kids[head]
			if (head+len(kids)-tail)%2 == 1 {
				c = kids[tail-1]
			}
			if used+o.shownCost(c)+o.runCost(i, kids, head, tail, c) > left {
				break
			}
			used += o.shownCost(c)
			if c == kids[head] {
				head++
			} else {
				tail--
			}
		}
		if head == 0 && tail == len(kids) {
			left -= o.foldCost(i) // nothing fits beside the fold
			continue
		}
		left -= used + o.runCost(i, kids, head, tail, -1)
		o.state[i] = opened
		if head < tail {
			o.runs[i] = run{from: head, to: tail}
		}
		queue = append(queue, kids[:head]...)
		queue = append(queue, kids[tail:]...)
	}
	var b strings.Builder
	b.Grow(budget - left)
	for _, r := range roots {
		o.write(&b, r)
	}
	return b.String(), true
}

// The states of a node in an outline.
const (
	closed int8 = iota // its children are folded, if it has any
	opened             // its children show (but a run of them, if in runs)
)

type outliner struct {
	t        *Tree
	children [][]int32
	state    []int8
	runs     map[int32]run // by parent
	size     []int         // size[i] is the bytes of lines [0, i)
	headings []int32       // the heading lines, in order
}

// run is a run of a node's children folded into one line: children from
// up to, not including, to.
type run struct{ from, to int }

// lineCost is the bytes of line i as written: indent, text, newline.
func (o *outliner) lineCost(i int32) int {
	l := &o.t.lines[i]
	return 2*int(l.depth) + len(l.text) + 1
}

// shownCost is the bytes of line i shown closed: its line and its fold.
func (o *outliner) shownCost(i int32) int {
	c := o.lineCost(i)
	if len(o.children[i]) > 0 {
		c += o.foldCost(i)
	}
	return c
}

// foldCost is the bytes of the fold line of a closed node.
func (o *outliner) foldCost(i int32) int {
	return len(o.foldLine(i))
}

// runCost is the bytes of the fold line of kids[head:tail] when c is
// shown too (or none, c < 0); 0 when nothing is left between.
func (o *outliner) runCost(parent int32, kids []int32, head, tail int, c int32) int {
	if c >= 0 {
		if c == kids[head] {
			head++
		} else {
			tail--
		}
	}
	if head >= tail {
		return 0
	}
	return len(o.runLine(parent, kids[head:tail]))
}

// foldLine is the line that stands for the descendants of closed node i.
func (o *outliner) foldLine(i int32) string {
	l := &o.t.lines[i]
	return o.fold(l.depth+1, i+1, l.end, "below", l.uid())
}

// runLine is the line that stands for a run of parent's children: it names
// each of a short run's uids to open, else the parent's.
func (o *outliner) runLine(parent int32, kids []int32) string {
	first, last := kids[0], kids[len(kids)-1]
	open := o.t.lines[parent].uid()
	if len(kids) <= 4 {
		uids := make([]string, len(kids))
		for k, c := range kids {
			uids[k] = o.t.lines[c].uid()
		}
		open = strings.Join(uids, ", uid=")
	}
	return o.fold(o.t.lines[parent].depth+1, first, o.t.lines[last].end,
		"from uid="+o.t.lines[first].uid()+" to uid="+o.t.lines[last].uid(), open)
}

// fold writes a fold line for lines [from, to): how many, their size, the
// first headings among them, and the uids to open (a list "A, uid=B").
func (o *outliner) fold(depth, from, to int32, what, open string) string {
	size := o.size[to] - o.size[from]
	var heads []string
	k, _ := slices.BinarySearch(o.headings, from)
	for ; k < len(o.headings) && o.headings[k] < to && len(heads) < 3; k++ {
		name, _ := headingName(o.t.lines[o.headings[k]].body())
		heads = append(heads, name)
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("  ", int(depth)))
	b.WriteString("… ")
	b.WriteString(strconv.Itoa(int(to - from)))
	b.WriteString(" nodes ")
	b.WriteString(what)
	b.WriteString(" (")
	b.WriteString(strconv.Itoa(size))
	b.WriteString(" characters")
	if len(heads) > 0 {
		b.WriteString("; headings ")
		b.WriteString(strings.Join(heads, ", "))
	}
	b.WriteString("): take_snapshot uid=")
	b.WriteString(open)
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
	from, to := len(kids), len(kids)
	if r, ok := o.runs[i]; ok {
		from, to = r.from, r.to
	}
	for k, c := range kids {
		switch {
		case k == from:
			b.WriteString(o.runLine(i, kids[from:to]))
			fallthrough
		case k > from && k < to:
			continue
		}
		o.write(b, c)
	}
}
