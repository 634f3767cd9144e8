package snapshot

import (
	"slices"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// Iframes lists the Iframe nodes without children, those whose documents
// the tree leaves out, and the frame the root names.
func TestDocIframes(t *testing.T) {
	role := func(r string) *accessibility.Value {
		return &accessibility.Value{Type: accessibility.ValueTypeRole, Value: []byte(`"` + r + `"`)}
	}
	nodes := []*accessibility.Node{
		{NodeID: "1", Role: role("RootWebArea"), FrameID: "F", BackendDOMNodeID: 1, ChildIDs: []accessibility.NodeID{"2", "3", "4", "6"}},
		{NodeID: "2", Role: role("Iframe"), BackendDOMNodeID: 2},
		{NodeID: "3", Role: role("Iframe"), BackendDOMNodeID: 3, ChildIDs: []accessibility.NodeID{"5"}},
		{NodeID: "4", Role: role("button"), BackendDOMNodeID: 4},
		{NodeID: "5", Role: role("RootWebArea"), BackendDOMNodeID: 5},
		{NodeID: "6", Role: role("Iframe"), BackendDOMNodeID: 6, Ignored: true},
	}
	d := rawDoc(nodes)
	if got, want := d.Iframes(), []cdp.BackendNodeID{2, 6}; !slices.Equal(got, want) {
		t.Errorf("Iframes() = %v, want %v", got, want)
	}
	if d.Frame() != "F" {
		t.Errorf("Frame() = %q, want F", d.Frame())
	}
}
