package snapshot

import (
	"slices"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// This file links a document's nodes into a tree, with the trees of its
// frames, and picks the nodes a snapshot shows ("interesting" ones, as
// puppeteer does).

// Doc is one document's tree as the snapshot needs it, before it is
// linked: of each node only what the text or a uid can show. Chrome's nodes
// carry much more (the sources of every name, ignored reasons, Chrome's own
// role), which for a big page is most of the answer. ReadReply and
// GetFullAXTree decode one from Chrome's answer; it holds no Chrome state.
type Doc struct {
	frame cdp.FrameID // the frame of the document, from its root node
	nodes []axSrc
	ids   []int64 // the NodeID of each node, as axIDs numbers it
	kids  []int64 // the ChildIDs of all nodes, back to back
	nkids []int32 // how many of kids each node has
	other axIDs
	holes []int32 // of a tree computed in the page: its holes (holes.go)
}

// axIDs numbers AX node ids: Chrome's are decimal, and a number is a
// fraction of the size of a string; any other id gets a negative number of
// its own.
type axIDs map[string]int64

func (m *axIDs) of(id []byte) int64 {
	if len(id) > 0 && len(id) <= 18 && (id[0] != '0' || len(id) == 1) {
		n := int64(0)
		for _, c := range id {
			if c < '0' || c > '9' {
				goto other
			}
			n = n*10 + int64(c-'0')
		}
		return n
	}
other:
	if n, ok := (*m)[string(id)]; ok {
		return n
	}
	if *m == nil {
		*m = axIDs{}
	}
	n := -int64(len(*m)) - 1
	(*m)[string(id)] = n
	return n
}

// axSrc is one node of a Doc. The values are the raw JSON of the
// "value" member of an AXValue: nil when the AXValue is missing, empty when
// it is there without a value.
type axSrc struct {
	backend           cdp.BackendNodeID
	ignored           bool
	role              []byte
	name, desc, value []byte
	props             []axProp
}

// axProp is an AX property; value as in axSrc.
type axProp struct {
	name  string
	value []byte
}

// axEmpty is a value that is there but has no content.
var axEmpty = []byte{}

// axRawValue is the raw value of v in the form of axSrc.
func axRawValue(v *accessibility.Value) []byte {
	switch {
	case v == nil:
		return nil
	case v.Value == nil:
		return axEmpty
	}
	return v.Value
}

// rawDoc turns decoded nodes into the form the tree is built from; the
// values are shared, not copied.
func rawDoc(nodes []*accessibility.Node) *Doc {
	d := &Doc{nodes: make([]axSrc, len(nodes)), ids: make([]int64, len(nodes)), nkids: make([]int32, len(nodes))}
	if len(nodes) > 0 && nodes[0] != nil {
		d.frame = nodes[0].FrameID
	}
	for i, src := range nodes {
		if src == nil {
			d.ids[i] = d.other.of(nil)
			continue
		}
		n := &d.nodes[i]
		n.backend, n.ignored = src.BackendDOMNodeID, src.Ignored
		n.role, n.name = axRawValue(src.Role), axRawValue(src.Name)
		n.desc, n.value = axRawValue(src.Description), axRawValue(src.Value)
		if len(src.Properties) > 0 {
			n.props = make([]axProp, 0, len(src.Properties))
		}
		for _, p := range src.Properties {
			if p != nil {
				n.props = append(n.props, axProp{name: string(p.Name), value: axRawValue(p.Value)})
			}
		}
		d.ids[i] = d.other.of([]byte(src.NodeID))
		for _, id := range src.ChildIDs {
			d.kids = append(d.kids, d.other.of([]byte(id)))
		}
		d.nkids[i] = int32(len(src.ChildIDs))
	}
	return d
}

// node flags, read from the AX properties the way puppeteer's AXNode reads
// them, for deciding which nodes are interesting.
const (
	axfIgnored uint16 = 1 << iota
	axfHidden
	axfFocusable
	axfEditable
	axfRichlyEditable
	axfBusy
	axfModal
	axfLive // live region other than "off"
	axfErrormessage
	axfDetails
	axfRoledescription
	axfName        // non-empty name
	axfDescription // non-empty description
)

// axNode is one node of the parsed tree.
type axNode struct {
	src      *axSrc
	role     string
	children []int32
	doc      int32 // index into axTree.docs
	// owner and rank name a node without a DOM node of its own: the
	// nearest ancestor with one (-1 if none) and its rank below it.
	owner, rank int32
	flags       uint16
	// focusableChild caches hasFocusableChild: 0 unknown, 1 no, 2 yes.
	focusableChild int8
	frame          int32 // root node of the child frame's document, or -1
}

// axOut is a node that the snapshot shows, in pre-order.
type axOut struct {
	node  int32
	depth int32
	// parent is the index in axTree.out of the shown parent, -1 for the root.
	parent int32
}

// axTree is the parsed AX tree of a page and the list of nodes to show.
type axTree struct {
	nodes []axNode
	docs  []cdp.FrameID // frame of each document, from its root node
	out   []axOut
	seen  []bool // scratch for cycle detection
	roles map[string]string
}

func (t *axTree) ref(i int32) axRef {
	n := &t.nodes[i]
	ref := axRef{frame: t.docs[n.doc], backend: n.src.backend}
	if ref.backend == 0 {
		ref.rank = n.rank
		if n.owner >= 0 {
			ref.backend = t.nodes[n.owner].src.backend
		}
	}
	return ref
}

// buildAXTree parses every document and lists the nodes to show.
func buildAXTree(root *Frame, verbose bool) *axTree {
	t := &axTree{}
	r := t.addDoc(root, map[*Frame]bool{})
	if r < 0 {
		return t
	}
	var keep []bool
	if !verbose {
		keep = make([]bool, len(t.nodes))
		t.collectInteresting(keep, r)
	}
	t.out = make([]axOut, 0, len(t.nodes))
	t.seen = make([]bool, len(t.nodes))
	t.collectShown(keep, r, -1, 0)
	return t
}

// addDoc parses one document and, recursively, its child frames; it returns
// the index of the document's root, or -1 for an empty one.
func (t *axTree) addDoc(f *Frame, seen map[*Frame]bool) int32 {
	if f == nil || seen[f] {
		return -1
	}
	d := f.Doc
	if d == nil {
		d = rawDoc(f.Nodes)
	}
	if len(d.nodes) == 0 {
		return -1
	}
	seen[f] = true
	doc := int32(len(t.docs))
	t.docs = append(t.docs, d.frame)
	base := int32(len(t.nodes))
	t.nodes = slices.Grow(t.nodes, len(d.nodes))
	index := make(map[int64]int32, len(d.nodes))
	for i := range d.nodes {
		if _, dup := index[d.ids[i]]; !dup {
			index[d.ids[i]] = base + int32(i)
		}
		t.nodes = append(t.nodes, t.parseNode(&d.nodes[i], doc))
	}
	// One backing array for all children lists of this document.
	kids := make([]int32, 0, len(d.kids))
	next := 0
	for i, nk := range d.nkids {
		start := len(kids)
		for _, id := range d.kids[next : next+int(nk)] {
			if c, ok := index[id]; ok {
				kids = append(kids, c)
			}
		}
		next += int(nk)
		t.nodes[base+int32(i)].children = kids[start:len(kids):len(kids)]
	}
	t.rankNodesWithoutDOM(base)
	if len(f.Frames) == 0 {
		return base
	}
	// Each child frame goes under the first node of its owner element.
	attached := make(map[cdp.BackendNodeID]bool, len(f.Frames))
	for i, end := base, int32(len(t.nodes)); i < end; i++ {
		backend := t.nodes[i].src.backend
		child, ok := f.Frames[backend]
		if !ok || backend == 0 || attached[backend] {
			continue
		}
		attached[backend] = true
		// addDoc grows t.nodes: take its result before indexing.
		r := t.addDoc(child, seen)
		t.nodes[i].frame = r
	}
	return base
}

// rankNodesWithoutDOM sets owner and rank of the nodes below root that have
// no DOM node of their own, numbering them in document order below their
// owner, from 1. It walks the whole document, shown or not, so that a
// node's rank doesn't depend on verbose.
func (t *axTree) rankNodesWithoutDOM(root int32) {
	type item struct{ i, owner int32 }
	size := int32(len(t.nodes)) - root
	seen := make([]bool, size)
	ranks := make([]int32, size+1) // by owner-root+1: owner -1 is 0
	seen[0] = true
	stack := []item{{root, -1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &t.nodes[it.i]
		owner := it.i
		if n.src.backend == 0 {
			r := &ranks[it.owner-root+1]
			*r++
			n.owner, n.rank, owner = it.owner, *r, it.owner
		}
		for _, c := range slices.Backward(n.children) {
			if !seen[c-root] {
				seen[c-root] = true
				stack = append(stack, item{c, owner})
			}
		}
	}
}

// role returns the role as a string, shared between the nodes that have it:
// a page has few roles and many nodes.
func (t *axTree) role(raw []byte) string {
	v := axDecode(raw)
	if v.kind != axStr && v.kind != axNum {
		return ""
	}
	text := v.text()
	if r, ok := t.roles[string(text)]; ok {
		return r
	}
	if t.roles == nil {
		t.roles = map[string]string{}
	}
	r := string(text)
	t.roles[r] = r
	return r
}

func (t *axTree) parseNode(src *axSrc, doc int32) axNode {
	n := axNode{src: src, doc: doc, frame: -1, owner: -1, role: "Unknown"}
	if src.role != nil {
		n.role = t.role(src.role)
	}
	if src.ignored {
		n.flags |= axfIgnored
	}
	if axTruthy(axDecode(src.name)) {
		n.flags |= axfName
	}
	if axTruthy(axDecode(src.desc)) {
		n.flags |= axfDescription
	}
	for _, p := range src.props {
		v := axDecode(p.value)
		set := func(f uint16, on bool) {
			if on {
				n.flags |= f
			} else {
				n.flags &^= f
			}
		}
		switch p.name {
		case "editable":
			set(axfEditable, true)
			set(axfRichlyEditable, v.is("richtext"))
		case "focusable":
			set(axfFocusable, axTruthy(v))
		case "hidden":
			set(axfHidden, axTruthy(v))
		case "busy":
			set(axfBusy, axTruthy(v))
		case "live":
			set(axfLive, axTruthy(v) && !v.is("off"))
		case "modal":
			set(axfModal, axTruthy(v))
		case "roledescription":
			set(axfRoledescription, axTruthy(v))
		case "errormessage":
			set(axfErrormessage, true)
		case "details":
			set(axfDetails, true)
		}
	}
	return n
}

// collectInteresting marks the nodes that puppeteer's interestingOnly
// snapshot keeps. It doesn't descend below a leaf.
func (t *axTree) collectInteresting(keep []bool, root int32) {
	type item struct {
		i             int32
		insideControl bool
	}
	stack := []item{{root, false}}
	seen := make([]bool, len(t.nodes)) // guards against cycles in malformed input
	seen[root] = true
	keep[root] = true // puppeteer drops all but the first child of a dull root
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &t.nodes[it.i]
		if t.isInteresting(it.i, it.insideControl) || n.frame >= 0 {
			keep[it.i] = true
		}
		if n.frame >= 0 && !seen[n.frame] {
			// A child frame is judged on its own, as puppeteer takes
			// a separate snapshot of it.
			seen[n.frame] = true
			keep[n.frame] = true
			stack = append(stack, item{n.frame, false})
		}
		if t.isLeaf(it.i) {
			continue
		}
		inside := it.insideControl || axIsControl(n.role)
		for _, c := range n.children {
			if !seen[c] {
				seen[c] = true
				stack = append(stack, item{c, inside})
			}
		}
	}
}

// collectShown lists in pre-order the nodes to show: every node when keep is
// nil, else the kept ones, each under its nearest shown ancestor.
func (t *axTree) collectShown(keep []bool, i, parent, depth int32) {
	if t.seen[i] {
		return
	}
	t.seen[i] = true
	if keep == nil || keep[i] {
		t.out = append(t.out, axOut{node: i, depth: depth, parent: parent})
		parent, depth = int32(len(t.out)-1), depth+1
	}
	n := &t.nodes[i]
	for _, c := range n.children {
		t.collectShown(keep, c, parent, depth)
	}
	if n.frame >= 0 {
		t.collectShown(keep, n.frame, parent, depth)
	}
}

func (t *axTree) isInteresting(i int32, insideControl bool) bool {
	n := &t.nodes[i]
	if n.role == "Ignored" || n.flags&(axfIgnored|axfHidden) != 0 {
		return false
	}
	if axIsLandmark(n.role) {
		return true
	}
	if n.flags&(axfFocusable|axfRichlyEditable|axfBusy|axfLive|axfModal|axfErrormessage|axfDetails|axfRoledescription) != 0 {
		return true
	}
	if axIsControl(n.role) {
		return true
	}
	if insideControl {
		return false
	}
	return t.isLeaf(i) && n.flags&(axfName|axfDescription) != 0
}

func (t *axTree) isLeaf(i int32) bool {
	n := &t.nodes[i]
	if len(n.children) == 0 {
		return true
	}
	plainTextField := n.flags&axfRichlyEditable == 0 &&
		(n.flags&axfEditable != 0 || n.role == "textbox" || n.role == "searchbox")
	if plainTextField {
		return true
	}
	switch n.role {
	case "LineBreak", "text", "InlineTextBox", "StaticText",
		"doc-cover", "graphics-symbol", "img", "image", "Meter",
		"scrollbar", "slider", "separator", "progressbar":
		return true
	}
	if t.hasFocusableChild(i) {
		return false
	}
	return n.role == "heading" && n.flags&axfName != 0
}

func (t *axTree) hasFocusableChild(i int32) bool {
	n := &t.nodes[i]
	if n.focusableChild == 0 {
		n.focusableChild = 1 // also breaks cycles
		for _, c := range n.children {
			if t.nodes[c].flags&axfFocusable != 0 || t.hasFocusableChild(c) {
				n.focusableChild = 2
				break
			}
		}
	}
	return n.focusableChild == 2
}

func axIsControl(role string) bool {
	switch role {
	case "button", "checkbox", "ColorWell", "combobox", "DisclosureTriangle",
		"listbox", "menu", "menubar", "menuitem", "menuitemcheckbox",
		"menuitemradio", "radio", "scrollbar", "searchbox", "slider",
		"spinbutton", "switch", "tab", "textbox", "tree", "treeitem":
		return true
	}
	return false
}

func axIsLandmark(role string) bool {
	switch role {
	case "banner", "complementary", "contentinfo", "form", "main",
		"navigation", "region", "search":
		return true
	}
	return false
}
