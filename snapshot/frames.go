package snapshot

import (
	"bytes"

	"github.com/chromedp/cdproto/cdp"
)

var iframeRole = []byte("Iframe")

// This file tells the browser which frames' documents a tree leaves out,
// so that it can fetch them for SnapshotFrames.

// Frame returns the frame of the document, as its root node gives it (or
// as ReadPageTree was told); empty when the tree carried none.
func (d *Doc) Frame() cdp.FrameID { return d.frame }

// Iframes returns the DOM nodes of the document's Iframe nodes that have no
// children in the tree, in document order: the frame owners whose
// documents the tree does not show, for Frame.Frames. An Iframe whose
// document the tree holds already (a page's script that walked into a
// same-origin frame) is left out. For a tree computed in the page the ids
// are its refs (see PageRef).
func (d *Doc) Iframes() []cdp.BackendNodeID {
	var out []cdp.BackendNodeID
	for i := range d.nodes {
		n := &d.nodes[i]
		// The role's raw bytes first: this runs over every node of a page.
		if n.backend != 0 && d.nkids[i] == 0 && bytes.Contains(n.role, iframeRole) && axDecode(n.role).is("Iframe") {
			out = append(out, n.backend)
		}
	}
	return out
}
