package snapshot

import (
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// This file fills the holes of a tree computed in the page with Chrome's
// own nodes. PageScript leaves a hole where Chrome's rules are more than the
// script can be sure of (ARIA widgets and states, form controls and their
// user-agent shadow trees, media, editing hosts): one node of role "#hole"
// for the element, without children. browser/ asks Chrome for each hole's
// subtree (QueryAXTree) and Fill puts it in the hole's place, so that the
// snapshot is Chrome's tree there and the page's, which is the same text
// computed faster, everywhere else.

// holeRole is the role PageScript gives a hole, gapRole the one of a text
// node of white space that Chrome may leave out: whether a lone space
// shows there.
const (
	holeRole = `"#hole"`
	gapRole  = `"#gap"`
)

// QueryAXTree is Accessibility.queryAXTree with a result that decodes itself
// into a Doc as chromedp reads it: with neither a name nor a role given, it
// answers every node of the element's subtree, ignored ones included,
// linked by ChildIDs as getFullAXTree's. It is only the command: the caller
// sends it.
var QueryAXTree = cdp.Command[accessibility.QueryAXTreeParams, Result]{Method: accessibility.CommandQueryAXTree}

// Hole is a hole of a tree computed in the page.
type Hole struct {
	// Ref names the hole's DOM node (see PageRef).
	Ref int64
	// Gap says the node is a text node of white space, which Chrome may
	// leave out of its tree: an empty subtree is an answer. Any other
	// hole is an element, whose subtree Chrome must have.
	Gap bool
}

// GetPartialAXTree is Accessibility.getPartialAXTree with a result that
// decodes itself into a Doc as chromedp reads it. It is only the command:
// the caller sends it.
var GetPartialAXTree = cdp.Command[accessibility.GetPartialAXTreeParams, Result]{Method: accessibility.CommandGetPartialAXTree}

// Holes returns the holes of a tree computed in the page, in document
// order: the nodes whose subtrees Fill wants.
func (doc *Doc) Holes() []Hole {
	holes := make([]Hole, len(doc.holes))
	for i, h := range doc.holes {
		n := &doc.nodes[h]
		holes[i].Ref, _ = PageRef(n.backend)
		holes[i].Gap = string(n.role) == gapRole
	}
	return holes
}

// Fill puts in the place of each hole of doc, a tree computed in the page,
// the subtree Chrome gave for its element, subs[i] for the i-th of Holes:
// the subtree's root (its node that is no other's child) takes the hole's
// place, the rest of its nodes go below it. A hole whose subtree is nil or
// empty (its element left the tree meanwhile) is left out of the tree, as an
// ignored node. Fill changes doc.
func (doc *Doc) Fill(subs []*Doc) error {
	if len(subs) != len(doc.holes) {
		return fmt.Errorf("snapshot: %d subtrees for %d holes", len(subs), len(doc.holes))
	}
	if len(subs) == 0 {
		return nil
	}
	// The page's nodes keep their ids (their indices); each subtree's nodes
	// are numbered after them, in order.
	next := int64(len(doc.nodes))
	newIDs := make([]map[int64]int64, len(subs))
	roots := make([]int, len(subs))
	for i, sub := range subs {
		roots[i] = -1
		if sub == nil || len(sub.nodes) == 0 {
			continue
		}
		root, err := sub.root()
		if err != nil {
			return err
		}
		roots[i] = root
		ids := make(map[int64]int64, len(sub.ids))
		for j, id := range sub.ids {
			if j == root {
				ids[id] = int64(doc.holes[i]) // the root takes the hole's id
				continue
			}
			ids[id] = next
			next++
		}
		newIDs[i] = ids
	}
	kids := make([]int64, 0, len(doc.kids))
	nkids := make([]int32, 0, int(next))
	// remapped appends a subtree node's children with their new ids.
	remapped := func(sub *Doc, ids map[int64]int64, start, n int) {
		c := 0
		for _, k := range sub.kids[start : start+n] {
			if id, ok := ids[k]; ok {
				kids = append(kids, id)
				c++
			}
		}
		nkids = append(nkids, int32(c))
	}
	starts := make([][]int, len(subs))
	for i, sub := range subs {
		if roots[i] >= 0 {
			starts[i] = sub.kidStarts()
		}
	}
	at, hole := 0, 0
	for i := range doc.nodes {
		n := int(doc.nkids[i])
		if hole < len(doc.holes) && int(doc.holes[hole]) == i {
			if r := roots[hole]; r >= 0 {
				sub := subs[hole]
				doc.nodes[i] = sub.nodes[r]
				remapped(sub, newIDs[hole], starts[hole][r], int(sub.nkids[r]))
			} else {
				doc.nodes[i] = axSrc{backend: doc.nodes[i].backend, ignored: true}
				nkids = append(nkids, 0)
			}
			hole++
		} else {
			kids = append(kids, doc.kids[at:at+n]...)
			nkids = append(nkids, int32(n))
		}
		at += n
	}
	for h, sub := range subs {
		if roots[h] < 0 {
			continue
		}
		for j := range sub.nodes {
			if j == roots[h] {
				continue
			}
			doc.nodes = append(doc.nodes, sub.nodes[j])
			doc.ids = append(doc.ids, newIDs[h][sub.ids[j]])
			remapped(sub, newIDs[h], starts[h][j], int(sub.nkids[j]))
		}
	}
	doc.kids, doc.nkids, doc.holes = kids, nkids, nil
	return nil
}

// root is the index of doc's root: its first node that is no other's child.
func (doc *Doc) root() (int, error) {
	child := make(map[int64]bool, len(doc.kids))
	for _, k := range doc.kids {
		child[k] = true
	}
	for i, id := range doc.ids {
		if !child[id] {
			return i, nil
		}
	}
	return 0, errors.New("snapshot: a subtree without a root")
}

// kidStarts is where each node's children start in doc.kids.
func (doc *Doc) kidStarts() []int {
	starts := make([]int, len(doc.nodes))
	at := 0
	for i, n := range doc.nkids {
		starts[i] = at
		at += int(n)
	}
	return starts
}

// Empty reports whether doc has no node.
func (doc *Doc) Empty() bool { return len(doc.nodes) == 0 }
