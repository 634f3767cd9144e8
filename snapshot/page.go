package snapshot

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
)

// This file reads the tree that PageScript computes in the page, the fast
// way to a snapshot (--snapshot-source=page): Chrome's own tree costs its
// renderer a walk that names every node and a node per line of text, which
// on a big page is most of a snapshot's time.
//
// The page's tree names its DOM nodes by the numbers PageScript gives them
// (refs), not by backend node ids, which a script cannot see. A Doc of the
// page's tree carries each ref as a negative backend id, so that uids of the
// two sources never meet in one registry; PageRef tells such an id apart
// and PageNodeScript finds its node again.

// PageScript is the script that computes a document's tree in the page. Run
// it in an isolated world of the page's main frame (the page's scripts must
// not reach the refs it keeps) and return its result by value to
// ReadPageTree. Its result is null for a document it does not walk, one
// without an HTML body (SVG, XML, a frameset): take Chrome's tree there.
// Its stack holds a document some 2,000 elements deep, not much more.
//
//go:embed page.js
var PageScript string

// PageScriptAuto is PageScript where its tree is likely quicker than
// Chrome's whole tree, and else evaluates to "chrome", which ReadPageTree
// answers with ErrChromeQuicker: on a document of fewer than 300 elements,
// or of fewer than 600 with an element the script would leave to Chrome
// (a hole: its filling waits for Chrome's next frame). The check is one
// count and one selector, in the same evaluation as the tree.
var PageScriptAuto = `((() => { const n = document.getElementsByTagName('*').length; ` +
	`return n < 300 || (n < 600 && !!document.querySelector(` + "`" + holeSelector + "`" + `)) })()) ? "chrome" : ` + PageScript

// holeSelector matches most elements PageScript leaves as holes.
const holeSelector = `input:not([type=hidden]),select,textarea,meter,progress,output,video,audio,dialog,canvas,math,` +
	`[contenteditable],[aria-expanded],[aria-haspopup],[aria-checked],[aria-selected],[aria-pressed],[aria-valuenow],` +
	`[aria-live],[aria-describedby],[aria-labelledby],[aria-invalid],[aria-current],[aria-level],` +
	`[role]:not([role=main],[role=navigation],[role=banner],[role=contentinfo],[role=complementary],[role=search],` +
	`[role=article],[role=list],[role=listitem],[role=paragraph],[role=generic])`

// PageRef reports whether a backend id of a snapshot's node is a ref of a
// tree computed in the page, and which.
func PageRef(id cdp.BackendNodeID) (ref int64, ok bool) {
	return int64(-id), id < 0
}

// PageNodeScript is an expression that evaluates, in the isolated world
// PageScript ran in, to the DOM node of ref, or null when the document no
// longer has it.
func PageNodeScript(ref int64) string {
	return `(() => { const S = globalThis.__pagemuxSnap; const w = S && S.refs.get(` + strconv.FormatInt(ref, 10) +
		`); const n = w && w.deref(); return n && n.isConnected ? n : null })()`
}

// PageRefFunction is a function declaration to call on a DOM node in the
// isolated world PageScript ran in: it returns the node's ref, or 0 for a
// node no snapshot of the document named.
const PageRefFunction = `function () { const S = globalThis.__pagemuxSnap; return (S && S.ids.get(this)) || 0 }`

// ErrChromeQuicker is ReadPageTree's error for PageScriptAuto's answer
// that Chrome's whole tree is the quicker for the document.
const ErrChromeQuicker Error = "Chrome's tree is the quicker for this document"

// ErrNotWalked is ReadPageTree's error for a document PageScript does not
// walk.
const ErrNotWalked Error = "the page's script does not walk this document"

// ReadPageTree decodes PageScript's result, the raw JSON of its value, into
// a Doc of the document of frame.
func ReadPageTree(raw []byte, frame cdp.FrameID) (*Doc, error) {
	switch string(raw) {
	case "null":
		return nil, ErrNotWalked
	case `"chrome"`:
		return nil, ErrChromeQuicker
	}
	var d jsonv2.Decoder
	d.Reset(bytes.NewReader(raw), decodeOptions)
	a := &axDecoder{doc: &Doc{frame: frame}}
	if err := expect(&d, '['); err != nil {
		return nil, fmt.Errorf("page tree: %w", err)
	}
	for d.PeekKind() != ']' {
		if err := a.pageNode(&d); err != nil {
			return nil, fmt.Errorf("page tree: %w", err)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("page tree: %w", err)
	}
	if err := linkPreorder(a.doc); err != nil {
		return nil, err
	}
	return a.doc, nil
}

// pageNode reads one node of PageScript's array, its seven values; its id
// is its index.
func (a *axDecoder) pageNode(d *jsonv2.Decoder) error {
	doc := a.doc
	i := doc.add()
	doc.ids[i] = int64(i)
	n := &doc.nodes[i]
	v, err := d.ReadToken()
	if err != nil {
		return err
	}
	if v.Kind() != '0' || v.Int() < 0 {
		return errors.New("a node's ref is not a number")
	}
	n.backend = cdp.BackendNodeID(-v.Int())
	for _, dst := range []*[]byte{&n.role, &n.name, &n.value, &n.desc} {
		raw, err := d.ReadValue()
		if err != nil {
			return err
		}
		if raw[0] != 'n' {
			*dst = a.copy(raw)
		}
	}
	if r := string(n.role); r == holeRole || r == gapRole {
		doc.holes = append(doc.holes, int32(i))
	}
	if d.PeekKind() == '[' {
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		for d.PeekKind() != ']' {
			name, err := str(d)
			if err != nil {
				return err
			}
			p := axProp{name: a.name(name)}
			raw, err := d.ReadValue()
			if err != nil {
				return err
			}
			p.value = a.copy(raw)
			n.props = append(n.props, p)
		}
	}
	if _, err := d.ReadToken(); err != nil { // ']' or null
		return err
	}
	if v, err = d.ReadToken(); err != nil {
		return err
	}
	if v.Kind() != '0' || v.Int() < 0 || v.Int() > 1<<30 {
		return errors.New("a node's child count is not a count")
	}
	doc.nkids[i] = int32(v.Int())
	return nil
}

// linkPreorder fills doc's children lists from the child counts of its
// nodes, listed in pre-order.
func linkPreorder(doc *Doc) error {
	type open struct{ node, left int32 }
	var stack []open
	parent := make([]int32, len(doc.nodes))
	for i := range doc.nodes {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		parent[i] = -1
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			parent[i] = top.node
			top.left--
		} else if i > 0 {
			return errors.New("page tree: more than one root")
		}
		stack = append(stack, open{int32(i), doc.nkids[i]})
	}
	for _, o := range stack {
		if o.left != 0 {
			return errors.New("page tree: a node has fewer children than it says")
		}
	}
	// Children of a node are contiguous in doc.kids, nodes in order.
	start := make([]int32, len(doc.nodes)+1)
	for i, n := range doc.nkids {
		start[i+1] = start[i] + n
	}
	doc.kids = make([]int64, start[len(doc.nodes)])
	for i, p := range parent {
		if p >= 0 {
			doc.kids[start[p]] = int64(i)
			start[p]++
		}
	}
	return nil
}
