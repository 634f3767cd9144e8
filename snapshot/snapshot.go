// Package snapshot makes the text of take_snapshot from an accessibility
// tree: the one Chrome's Accessibility.getFullAXTree returns, or the one its
// script PageScript computes in the page with Chrome's roles and names
// (page.js). It decodes either (Chrome's as a stream, from an io.Reader,
// or from cdproto's decoded nodes; the page's from the script's value),
// picks the nodes chrome-devtools-mcp shows, writes them one a line, and
// keeps a page's uids, the registry that hands them out and resolves them
// back to DOM nodes. Diff compares two snapshots of one document for
// incremental snapshots (diff.go).
//
// It makes no Chrome calls and knows no page: browser/ fetches the tree
// (from Chrome's pipe, a websocket of its own, or chromedp; or runs the
// script in an isolated world of the page), calls Reset
// when the page navigates, and resolves a uid's DOM node in the page. The
// tests run on recorded getFullAXTree answers in testdata, without a
// browser.
package snapshot

import (
	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// The text matches chrome-devtools-mcp 1.11, which formats the tree that
// puppeteer's Accessibility.snapshot returns: which nodes appear ("interesting"
// nodes, with the children of uninteresting ones promoted), which properties
// print and in which order, and how uids are numbered all follow it. Where it
// has bugs we do better, and say so next to the code.

// Snapshot is the formatted accessibility tree of one take_snapshot.
type Snapshot struct {
	// Seq is the snapshot's number, the prefix of the uids it handed out.
	Seq int
	// Document numbers the document the snapshot is of, within its UIDs:
	// it goes up with every Reset, so two snapshots of one document (whose
	// uids are comparable, see Diff) have the same Document.
	Document int
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
	seq, doc, uids := u.assign(t)
	text := t.format(uids, verbose)
	u.mu.Lock()
	if u.resets == doc {
		u.lastText = text
	}
	u.mu.Unlock()
	return &Snapshot{Seq: seq, Document: doc, Text: text}
}
