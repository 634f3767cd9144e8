// Package snapshot makes the text of take_snapshot from the accessibility
// tree that Chrome's Accessibility.getFullAXTree returns: it decodes the
// answer (as a stream, from an io.Reader, or from cdproto's decoded nodes),
// picks the nodes chrome-devtools-mcp shows, writes them one a line, and
// keeps a page's uids, the registry that hands them out and resolves them
// back to DOM nodes.
//
// It makes no Chrome calls and knows no page: browser/ fetches the tree
// (from Chrome's pipe, a websocket of its own, or chromedp), calls Reset
// when the page navigates, and resolves a uid's DOM node in the page. The
// tests run on recorded getFullAXTree answers in testdata, without a
// browser.
package snapshot

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// The text matches chrome-devtools-mcp 1.11, which formats the tree that
// puppeteer's Accessibility.snapshot returns: which nodes appear ("interesting"
// nodes, with the children of uninteresting ones promoted), which properties
// print and in which order, and how uids are numbered all follow it. Where it
// has bugs we do better, and say so next to the code.

// Error is the type of the sentinel errors of this package.
type Error string

// Error satisfies the error interface.
func (e Error) Error() string { return string(e) }

// The uid errors.
const (
	// ErrUnknownUID is wrapped by Lookup for a uid that was never handed out
	// for the current document, or that is not a uid at all.
	ErrUnknownUID Error = "unknown uid"
	// ErrStaleUID is wrapped by Lookup for a uid that was handed out before
	// the last main-frame navigation.
	ErrStaleUID Error = "stale uid"
)

// uidError is the error of Lookup: the message tells the agent what to do
// next, and Unwrap gives the sentinel.
type uidError struct {
	uid  string
	kind Error
}

func (e *uidError) Error() string {
	uid := e.uid
	if _, ok := parseUID(uid); !ok {
		uid = strconv.Quote(uid)
	}
	if e.kind == ErrStaleUID {
		return "uid " + uid + " is from before the page navigated; take a new snapshot"
	}
	return "no element with uid " + uid + " in the latest snapshot; take a new snapshot to get current uids"
}

func (e *uidError) Unwrap() error { return e.kind }

// maxRememberedNodes bounds the uids one document keeps for nodes that were
// not in the latest snapshot. Such nodes are kept (a node hidden now or left
// out of a non-verbose snapshot is still in the DOM and should get its uid
// back), but a page that keeps replacing its content would otherwise grow
// the registry until it navigates.
const maxRememberedNodes = 50_000

// uidKey is a parsed uid: "<seq>_<n>".
type uidKey struct{ seq, n int }

func (k uidKey) append(b []byte) []byte {
	b = strconv.AppendInt(b, int64(k.seq), 10)
	b = append(b, '_')
	return strconv.AppendInt(b, int64(k.n), 10)
}

// parseUID parses "<seq>_<n>": decimal digits only, seq from 1.
func parseUID(s string) (uidKey, bool) {
	a, b, ok := strings.Cut(s, "_")
	seq, ok1 := parseUIDDigits(a)
	n, ok2 := parseUIDDigits(b)
	if !ok || !ok1 || !ok2 || seq < 1 {
		return uidKey{}, false
	}
	return uidKey{seq, n}, true
}

func parseUIDDigits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// axRef names the DOM node of an AX node. Backend node ids are unique only
// within one renderer process, so the frame of the document tells nodes of
// out-of-process iframes apart. An AX node without a DOM node of its own
// (InlineTextBox, the text of a CSS ::before) is named by its nearest
// ancestor that has one and its rank among such nodes below it, so that it
// too keeps its uid and resolves to something an agent can act on.
// chrome-devtools-mcp gives all of them one shared uid that resolves to
// nothing.
type axRef struct {
	frame   cdp.FrameID
	backend cdp.BackendNodeID
	rank    int32 // 0 for a node with a DOM node of its own
}

type uidEntry struct {
	uid      uidKey
	lastSeen int // seq of the latest snapshot that showed the node
}

// UIDs is one page's registry of snapshot uids: it numbers snapshots, hands
// out uids, and resolves them back to DOM nodes. Safe for concurrent use.
// It talks to no browser: the caller fetches the accessibility tree and
// calls Reset when the page navigates.
type UIDs struct {
	mu       sync.Mutex
	seq      int   // sequence number of the latest snapshot
	resetSeq int   // latest seq taken before the last Reset
	minted   []int // minted[seq-1]: how many uids that snapshot handed out
	byNode   map[axRef]*uidEntry
	byUID    map[uidKey]axRef
}

// NewUIDs returns an empty registry whose first snapshot is number 1.
func NewUIDs() *UIDs {
	return &UIDs{byNode: map[axRef]*uidEntry{}, byUID: map[uidKey]axRef{}}
}

// Snapshot is the formatted accessibility tree of one take_snapshot.
type Snapshot struct {
	// Seq is the snapshot's number, the prefix of the uids it handed out.
	Seq int
	// Text is one node a line, each line ending in "\n", without the
	// "## Latest page snapshot" heading.
	Text string
}

// Frame is the accessibility tree of one frame's document together with the
// trees of the frames inside it, for SnapshotFrames.
type Frame struct {
	// Nodes is Accessibility.getFullAXTree for the frame: root first,
	// linked by ChildIDs.
	Nodes []*accessibility.Node
	// Frames holds the documents of child frames, keyed by the
	// BackendDOMNodeID of the Iframe node in Nodes that owns each.
	Frames map[cdp.BackendNodeID]*Frame

	// Doc, when set, is the tree as read from Chrome's answer (decode.go),
	// which then stands in for Nodes.
	Doc *Doc
}

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

// Snapshot formats the accessibility tree of the main frame (as returned by
// Accessibility.getFullAXTree: a flat list, root first, linked by ChildIDs)
// and records which DOM node each uid stands for. Each call is a new snapshot
// with the next sequence number; a node that already had a uid in the current
// document keeps it, new nodes get "<seq>_<n>". Without verbose only the
// nodes chrome-devtools-mcp calls interesting are shown. Snapshot doesn't
// look into iframes: see SnapshotFrames.
func (u *UIDs) Snapshot(nodes []*accessibility.Node, verbose bool) *Snapshot {
	return u.SnapshotFrames(&Frame{Nodes: nodes}, verbose)
}

// SnapshotFrames is Snapshot for a page with iframes: each child frame's tree
// is shown under its Iframe node, after that node's own children, as
// chrome-devtools-mcp does.
func (u *UIDs) SnapshotFrames(root *Frame, verbose bool) *Snapshot {
	t := buildAXTree(root, verbose)
	seq, uids := u.assign(t)
	return &Snapshot{Seq: seq, Text: t.format(uids, verbose)}
}

// Reset forgets every uid: call it when the main frame commits a new document
// (not on a same-document navigation). Uids handed out before it become
// stale; snapshot numbers go on counting.
func (u *UIDs) Reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.resetSeq = u.seq
	u.byNode = map[axRef]*uidEntry{}
	u.byUID = map[uidKey]axRef{}
}

// Lookup resolves a uid of the current document to its DOM node. The error
// wraps ErrStaleUID for a uid handed out before the last Reset and
// ErrUnknownUID for any other uid it can't resolve; its message tells the
// agent to take a new snapshot. Lookup doesn't check that the node still
// exists: the browser will tell.
func (u *UIDs) Lookup(uid string) (cdp.BackendNodeID, error) {
	_, id, err := u.LookupFrame(uid)
	return id, err
}

// LookupFrame is Lookup that also returns the frame whose document holds the
// node: the FrameID of that document's root node in the tree given to
// SnapshotFrames (empty when the tree carried none). Nodes of an
// out-of-process iframe must be resolved in that frame's session.
func (u *UIDs) LookupFrame(uid string) (cdp.FrameID, cdp.BackendNodeID, error) {
	k, ok := parseUID(uid)
	if !ok {
		return "", 0, &uidError{uid, ErrUnknownUID}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if ref, ok := u.byUID[k]; ok && ref.backend != 0 {
		return ref.frame, ref.backend, nil
	}
	if k.seq <= u.resetSeq && k.n < u.minted[k.seq-1] {
		return "", 0, &uidError{uid, ErrStaleUID}
	}
	return "", 0, &uidError{uid, ErrUnknownUID}
}

// UID returns the uid of the node of backend in frame's document, or ""
// when no snapshot of the current document showed it. It hands out no uid.
func (u *UIDs) UID(frame cdp.FrameID, backend cdp.BackendNodeID) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	e := u.byNode[axRef{frame: frame, backend: backend}]
	if e == nil {
		return ""
	}
	return string(e.uid.append(nil))
}

// Len is the number of nodes the registry remembers a uid of: those of the
// current document that a snapshot showed, up to a bound.
func (u *UIDs) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.byNode)
}

// assign hands out the uids of one snapshot, in the order of t.out.
func (u *UIDs) assign(t *axTree) (int, []uidKey) {
	uids := make([]uidKey, len(t.out))
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seq++
	seq, n := u.seq, 0
	for i, o := range t.out {
		ref := t.ref(o.node)
		if e := u.byNode[ref]; e != nil {
			e.lastSeen = seq
			uids[i] = e.uid
			continue
		}
		k := uidKey{seq, n}
		n++
		u.byNode[ref] = &uidEntry{uid: k, lastSeen: seq}
		u.byUID[k] = ref
		uids[i] = k
	}
	u.minted = append(u.minted, n)
	u.prune()
	return seq, uids
}

// prune drops the nodes unseen for longest once the registry outgrows
// maxRememberedNodes, down to three quarters of it so that it doesn't sort
// on every snapshot. Nodes of the latest snapshot always stay.
func (u *UIDs) prune() {
	if len(u.byNode) <= maxRememberedNodes {
		return
	}
	var old []axRef
	for ref, e := range u.byNode {
		if e.lastSeen < u.seq {
			old = append(old, ref)
		}
	}
	slices.SortFunc(old, func(a, b axRef) int {
		return cmp.Compare(u.byNode[a].lastSeen, u.byNode[b].lastSeen)
	})
	for _, ref := range old {
		if len(u.byNode) <= maxRememberedNodes*3/4 {
			break
		}
		delete(u.byUID, u.byNode[ref].uid)
		delete(u.byNode, ref)
	}
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

// format writes one line per shown node. A named node whose shown children
// are all childless StaticText spelling its name (ignoring whitespace) has
// those children left out unless verbose; they still got uids, as in
// chrome-devtools-mcp, so numbering matches.
func (t *axTree) format(uids []uidKey, verbose bool) string {
	if len(t.out) == 0 {
		return ""
	}
	skip := make([]bool, len(t.out)) // children of a node left out
	if !verbose {
		t.markRedundantText(skip)
	}
	b := make([]byte, 0, 64*len(t.out))
	var attrs [axNumAttrs]axValue
	for i, o := range t.out {
		if skip[i] {
			continue
		}
		b = t.appendLine(b, o, uids[i], &attrs)
	}
	return string(b)
}

func (t *axTree) markRedundantText(skip []bool) {
	// Link the shown children of each shown node.
	first := make([]int32, len(t.out))
	next := make([]int32, len(t.out))
	for i := range first {
		first[i], next[i] = -1, -1
	}
	for i := len(t.out) - 1; i >= 0; i-- {
		if p := t.out[i].parent; p >= 0 {
			next[i], first[p] = first[p], int32(i)
		}
	}
	var text []byte
	for p := range t.out {
		if first[p] < 0 {
			continue
		}
		name, ok := t.nodeName(t.out[p].node)
		if !ok || len(name) == 0 {
			continue
		}
		text = text[:0]
		redundant := true
		for c := first[p]; c >= 0; c = next[c] {
			if t.nodes[t.out[c].node].role != "StaticText" || first[c] >= 0 {
				redundant = false
				break
			}
			s, _ := t.nodeName(t.out[c].node)
			text = append(text, s...)
		}
		if redundant && equalIgnoringJSSpace(text, name) {
			for c := first[p]; c >= 0; c = next[c] {
				skip[c] = true
			}
		}
	}
}

// nodeName is the node's name, ok when it has one that is a string.
func (t *axTree) nodeName(i int32) ([]byte, bool) {
	src := t.nodes[i].src
	if src.name == nil {
		return nil, false
	}
	v := axDecode(src.name)
	return v.s, v.kind == axStr
}

// The properties puppeteer serializes, in the order chrome-devtools-mcp
// prints them: it sorts the keys of the serialized node by name.
const (
	axAttrAtomic = iota
	axAttrAutocomplete
	axAttrBusy
	axAttrChecked
	axAttrDescription
	axAttrDetails
	axAttrDisabled
	axAttrErrormessage
	axAttrExpanded
	axAttrFocused
	axAttrHaspopup
	axAttrInvalid
	axAttrKeyshortcuts
	axAttrLevel
	axAttrLive
	axAttrModal
	axAttrMultiline
	axAttrMultiselectable
	axAttrOrientation
	axAttrPressed
	axAttrReadonly
	axAttrRelevant
	axAttrRequired
	axAttrRoledescription
	axAttrSelected
	axAttrURL
	axAttrValue
	axAttrValuemax
	axAttrValuemin
	axAttrValuetext
	axNumAttrs
)

type axAttrKind uint8

const (
	axAttrString   axAttrKind = iota // copied as is
	axAttrBool                       // true/false by truthiness
	axAttrTristate                   // "mixed", true or false
	axAttrToken                      // only when truthy and not "false"
)

var axAttrInfo = [axNumAttrs]struct {
	name string
	kind axAttrKind
	// capability is printed as a bare word whenever the state is known,
	// true or false: "disableable", "expandable", "focusable", "selectable".
	capability string
}{
	axAttrAtomic:          {"atomic", axAttrBool, ""},
	axAttrAutocomplete:    {"autocomplete", axAttrToken, ""},
	axAttrBusy:            {"busy", axAttrBool, ""},
	axAttrChecked:         {"checked", axAttrTristate, ""},
	axAttrDescription:     {"description", axAttrString, ""},
	axAttrDetails:         {"details", axAttrToken, ""},
	axAttrDisabled:        {"disabled", axAttrBool, "disableable"},
	axAttrErrormessage:    {"errormessage", axAttrToken, ""},
	axAttrExpanded:        {"expanded", axAttrBool, "expandable"},
	axAttrFocused:         {"focused", axAttrBool, "focusable"},
	axAttrHaspopup:        {"haspopup", axAttrToken, ""},
	axAttrInvalid:         {"invalid", axAttrToken, ""},
	axAttrKeyshortcuts:    {"keyshortcuts", axAttrString, ""},
	axAttrLevel:           {"level", axAttrString, ""},
	axAttrLive:            {"live", axAttrToken, ""},
	axAttrModal:           {"modal", axAttrBool, ""},
	axAttrMultiline:       {"multiline", axAttrBool, ""},
	axAttrMultiselectable: {"multiselectable", axAttrBool, ""},
	axAttrOrientation:     {"orientation", axAttrToken, ""},
	axAttrPressed:         {"pressed", axAttrTristate, ""},
	axAttrReadonly:        {"readonly", axAttrBool, ""},
	axAttrRelevant:        {"relevant", axAttrToken, ""},
	axAttrRequired:        {"required", axAttrBool, ""},
	axAttrRoledescription: {"roledescription", axAttrString, ""},
	axAttrSelected:        {"selected", axAttrBool, "selectable"},
	axAttrURL:             {"url", axAttrString, ""},
	axAttrValue:           {"value", axAttrString, ""},
	axAttrValuemax:        {"valuemax", axAttrString, ""},
	axAttrValuemin:        {"valuemin", axAttrString, ""},
	axAttrValuetext:       {"valuetext", axAttrString, ""},
}

// axAttrSlot returns the slot of a property name, lower-cased as puppeteer
// does, or -1 for a property that isn't printed.
func axAttrSlot(name string) int {
	switch name {
	case "atomic":
		return axAttrAtomic
	case "autocomplete":
		return axAttrAutocomplete
	case "busy":
		return axAttrBusy
	case "checked":
		return axAttrChecked
	case "description":
		return axAttrDescription
	case "details":
		return axAttrDetails
	case "disabled":
		return axAttrDisabled
	case "errormessage":
		return axAttrErrormessage
	case "expanded":
		return axAttrExpanded
	case "focused":
		return axAttrFocused
	case "haspopup", "hasPopup":
		return axAttrHaspopup
	case "invalid":
		return axAttrInvalid
	case "keyshortcuts":
		return axAttrKeyshortcuts
	case "level":
		return axAttrLevel
	case "live":
		return axAttrLive
	case "modal":
		return axAttrModal
	case "multiline":
		return axAttrMultiline
	case "multiselectable":
		return axAttrMultiselectable
	case "orientation":
		return axAttrOrientation
	case "pressed":
		return axAttrPressed
	case "readonly":
		return axAttrReadonly
	case "relevant":
		return axAttrRelevant
	case "required":
		return axAttrRequired
	case "roledescription":
		return axAttrRoledescription
	case "selected":
		return axAttrSelected
	case "url":
		return axAttrURL
	case "value":
		return axAttrValue
	case "valuemax":
		return axAttrValuemax
	case "valuemin":
		return axAttrValuemin
	case "valuetext":
		return axAttrValuetext
	}
	// Chrome spells them as above; anything else is lower-cased first.
	if lower := strings.ToLower(name); lower != name {
		return axAttrSlot(lower)
	}
	return -1
}

func (t *axTree) appendLine(b []byte, o axOut, uid uidKey, attrs *[axNumAttrs]axValue) []byte {
	n := &t.nodes[o.node]
	src := n.src
	for range o.depth {
		b = append(b, ' ', ' ')
	}
	b = append(b, "uid="...)
	b = uid.append(b)
	if n.role != "" && n.role != "StaticText" {
		b = append(b, ' ')
		if n.role == "none" {
			b = append(b, "ignored"...)
		} else {
			b = append(b, n.role...)
		}
	}
	name := axDecode(src.name)
	if (name.kind == axStr || name.kind == axNum) && axTruthy(name) {
		b = append(b, ' ')
		b = appendAXQuoted(b, name.text())
	}

	// set has a bit for each slot of attrs that holds a value; a later
	// property of the same name wins, as in puppeteer's Map.
	var set uint32
	put := func(i int, v []byte) {
		set |= 1 << i
		attrs[i] = axPresent(axDecode(v))
	}
	for _, p := range src.props {
		if i := axAttrSlot(p.name); i >= 0 {
			put(i, p.value)
		}
	}
	if src.value != nil {
		put(axAttrValue, src.value)
	}
	if src.desc != nil {
		put(axAttrDescription, src.desc)
	}
	isOption := n.role == "option"
	if isOption && axTruthy(name) {
		// chrome-devtools-mcp sets an option's value to its text and
		// then doesn't print it.
		set &^= 1 << axAttrValue
	}
	for ; set != 0; set &= set - 1 {
		i := bits.TrailingZeros32(set)
		v := attrs[i]
		info := &axAttrInfo[i]
		switch info.kind {
		case axAttrBool:
			if i == axAttrFocused && n.role == "RootWebArea" {
				continue
			}
			v = axValue{kind: axBool, b: axTruthy(v)}
		case axAttrTristate:
			switch {
			case v.is("mixed"):
			case v.is("true"), v.kind == axBool && v.b:
				v = axValue{kind: axBool, b: true}
			default:
				v = axValue{kind: axBool}
			}
		case axAttrToken:
			if !axTruthy(v) || v.is("false") {
				continue
			}
		}
		if info.capability != "" && !(isOption && i == axAttrSelected) {
			b = append(b, ' ')
			b = append(b, info.capability...)
		}
		switch v.kind {
		case axBool:
			if v.b {
				b = append(b, ' ')
				b = append(b, info.name...)
			}
		case axStr, axNum:
			b = append(b, ' ')
			b = append(b, info.name...)
			b = append(b, '=')
			b = appendAXQuoted(b, v.text())
		}
	}
	return append(b, '\n')
}

// appendAXQuoted appends s in double quotes. chrome-devtools-mcp prints names
// and values raw, so a quote in a name or a newline in a textarea's value
// breaks its one-node-a-line format; we escape them as JSON does, which
// leaves every quoted string a valid JSON string literal. Non-ASCII text is
// kept as is.
func appendAXQuoted(b []byte, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, `\u00`...)
				b = append(b, axHexDigits[c>>4], axHexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029' || r == '\u0085':
			// Line separators that some readers break lines at.
			b = append(b, s[start:i]...)
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const axHexDigits = "0123456789abcdef"

// equalIgnoringJSSpace compares a and b with what JavaScript's /\s/ matches
// removed from both.
func equalIgnoringJSSpace(a, b []byte) bool {
	for {
		a, b = skipJSSpace(a), skipJSSpace(b)
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb || na != nb {
			return false
		}
		a, b = a[na:], b[nb:]
	}
}

func skipJSSpace(s []byte) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if !isJSSpace(r) {
			break
		}
		s = s[n:]
	}
	return s
}

func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680',
		'\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

// axValue is an AX value as JavaScript would see it, since the rules we
// follow test values for truthiness. It points into the raw JSON when it
// can, so reading a tree allocates little.
type axValue struct {
	kind axKind
	s    []byte // a string's content, or a number's JSON text
	b    bool
}

type axKind uint8

const (
	axUndefined axKind = iota
	axNull
	axBool
	axNum
	axStr
	axOther // object or array
)

func axDecode(raw []byte) axValue {
	if len(raw) == 0 {
		return axValue{}
	}
	switch c := raw[0]; {
	case c == '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && !slices.Contains(raw[1:len(raw)-1], '\\') {
			return axValue{kind: axStr, s: raw[1 : len(raw)-1]}
		}
		if s, ok := axUnquote(raw); ok {
			return axValue{kind: axStr, s: s}
		}
		return axValue{kind: axOther}
	case c == 't':
		return axValue{kind: axBool, b: true}
	case c == 'f':
		return axValue{kind: axBool}
	case c == 'n':
		return axValue{kind: axNull}
	case c == '-' || c >= '0' && c <= '9':
		return axValue{kind: axNum, s: raw}
	default:
		return axValue{kind: axOther}
	}
}

// axUnquote decodes a JSON string with escapes. It is much cheaper than
// the JSON package for the short strings of a tree.
func axUnquote(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	in := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i++; i == len(in) {
			return nil, false
		}
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := axHex4(in[i+1:])
			if !ok {
				return nil, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := axHex4(in[min(i+3, len(in)):]); ok && i+2 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					}
				}
			}
			out = utf8.AppendRune(out, r) // a lone surrogate becomes U+FFFD
		default:
			return nil, false
		}
	}
	return out, true
}

func axHex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// is reports whether v is the string want.
func (v axValue) is(want string) bool { return v.kind == axStr && string(v.s) == want }

// axPresent marks a value as given, even when it has no content: a boolean
// state that is present prints its capability word.
func axPresent(v axValue) axValue {
	if v.kind == axUndefined {
		v.kind = axNull
	}
	return v
}

func axTruthy(v axValue) bool {
	switch v.kind {
	case axBool:
		return v.b
	case axStr:
		return len(v.s) != 0
	case axNum:
		// Zero whatever its spelling: no digit but 0 before the exponent.
		for _, c := range v.s {
			if c == 'e' || c == 'E' {
				break
			}
			if c >= '1' && c <= '9' {
				return true
			}
		}
		return false
	case axOther:
		return true
	}
	return false
}

// text is the value as JavaScript's template strings print it.
func (v axValue) text() []byte {
	switch v.kind {
	case axStr:
		return v.s
	case axNum:
		return axJSNumber(v.s)
	case axBool:
		return strconv.AppendBool(nil, v.b)
	}
	return nil
}

// axJSNumber formats a JSON number as JavaScript's Number#toString does.
func axJSNumber(lit []byte) []byte {
	plain := len(lit) > 0 && len(lit) < 16
	for i, c := range lit {
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			plain = false
			break
		}
	}
	if plain && (lit[0] != '-' || string(lit) != "-0") {
		return lit // an integer JavaScript prints the same way
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return lit
	}
	if f == 0 {
		return []byte("0")
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(nil, f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e-07, 1.5e+21
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return []byte(mant + "e" + string(sign) + exp)
}
