package browser

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/snapshot"
)

// This file computes a snapshot's tree in the page (Config.SnapshotSource
// "page"), with the script of package snapshot, and finds the DOM node of a
// uid from such a snapshot again.

// Snapshot sources, the values of Config.SnapshotSource.
const (
	// SourceChrome is Chrome's own accessibility tree
	// (Accessibility.getFullAXTree), as chrome-devtools-mcp reads it.
	SourceChrome = "chrome"
	// SourcePage is the tree computed by a script in the page, with
	// Chrome's own subtrees where the script is not sure of Chrome's rules
	// (snapshot_hybrid.go).
	SourcePage = "page"
	// SourceAuto is SourcePage where that is the quicker, and SourceChrome
	// on a small page, or one of middle size with widgets or form controls,
	// whose holes would cost more than Chrome's whole tree. Both give the
	// same text.
	SourceAuto = "auto"
)

// snapshotWorld names the isolated world the page's tree is computed in:
// Chrome keeps one world of a name per frame, so its refs last as long as
// the document.
const snapshotWorld = "pagemux-snapshot"

// isolatedWorld returns the execution context of the snapshot's world in the
// page's main frame, making the world when the document has none yet. The
// page's own scripts run in another world: they can neither read the refs
// nor change the DOM functions the script calls.
func (p *Page) isolatedWorld(ctx context.Context) (runtime.ExecutionContextID, error) {
	res, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID:   cdp.FrameID(p.TargetID), // a tab's main frame has its target's id
		WorldName: snapshotWorld,
	})
	if err != nil {
		return 0, fmt.Errorf("snapshot: a world of its own in the page: %w", err)
	}
	return res.ExecutionContextID, nil
}

// pageTree computes the main frame's tree in the page; with auto, where
// that is quicker than Chrome's tree, else it fails with
// snapshot.ErrChromeQuicker.
func (p *Page) pageTree(ctx context.Context, auto bool) (*snapshot.Doc, error) {
	world, err := p.isolatedWorld(ctx)
	if err != nil {
		return nil, err
	}
	script := snapshot.PageScript
	if auto {
		script = snapshot.PageScriptAuto
	}
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    script,
		ContextID:     world,
		ReturnByValue: new(true),
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if res.ExceptionDetails != nil {
		return nil, fmt.Errorf("snapshot: the page's tree: %w", &chromedp.ExceptionError{ExceptionDetails: res.ExceptionDetails})
	}
	if res.Result == nil || len(res.Result.Value) == 0 {
		return nil, errors.New("snapshot: the page's tree came back empty")
	}
	doc, err := snapshot.ReadPageTree(res.Result.Value, cdp.FrameID(p.TargetID))
	if err != nil {
		return nil, err
	}
	return doc, p.fillHoles(ctx, world, doc) // snapshot_hybrid.go
}

// pageNode is the backend id of the DOM node that ref names in the current
// document, from a snapshot computed in the page.
func (p *Page) pageNode(ctx context.Context, uid string, ref int64) (cdp.BackendNodeID, error) {
	gone := fmt.Errorf("%w: the element with uid %s is no longer in the page; take a new snapshot", snapshot.ErrUnknownUID, uid)
	world, err := p.isolatedWorld(ctx)
	if err != nil {
		return 0, err
	}
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: snapshot.PageNodeScript(ref),
		ContextID:  world,
	})
	if err != nil {
		return 0, err
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return 0, gone
	}
	defer chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: res.Result.ObjectID})
	node, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil || node.Node == nil {
		return 0, gone
	}
	return node.Node.BackendNodeID, nil
}

// lookupUID resolves a uid of the current document to the frame of its
// document and its DOM node's backend id (nodeOf). ctx is a call context of
// the tab.
func (p *Page) lookupUID(ctx context.Context, uid string) (cdp.FrameID, cdp.BackendNodeID, error) {
	frame, id, err := p.UIDs.LookupFrame(uid)
	if err != nil {
		return "", 0, err
	}
	id, err = p.nodeOf(ctx, uid, id)
	return frame, id, err
}

// nodeOf is the backend id of the DOM node that id, the node of uid in
// p.UIDs, stands for: id itself, or for a snapshot computed in the page the
// node the page finds for its ref.
func (p *Page) nodeOf(ctx context.Context, uid string, id cdp.BackendNodeID) (cdp.BackendNodeID, error) {
	if ref, ok := snapshot.PageRef(id); ok {
		return p.pageNode(ctx, uid, ref)
	}
	return id, nil
}

// uidOfNode returns a function that gives the uid of a DOM node of the
// current document, "" for a node no snapshot showed; it hands out no uid.
// With fromPage (the uids came from a snapshot computed in the page) a node
// not known by its backend id is looked up by its ref in the page, once.
// ctx is a call context of the tab, which the function uses.
func (p *Page) uidOfNode(ctx context.Context, frame cdp.FrameID, fromPage bool) func(*cdp.Node) string {
	var world runtime.ExecutionContextID
	known := map[cdp.BackendNodeID]string{}
	return func(n *cdp.Node) string {
		if uid := p.UIDs.UID(frame, n.BackendNodeID); uid != "" || !fromPage {
			return uid
		}
		if uid, ok := known[n.BackendNodeID]; ok {
			return uid
		}
		known[n.BackendNodeID] = ""
		if world == 0 {
			var err error
			if world, err = worldIn(ctx, cmp.Or(frame, cdp.FrameID(p.TargetID))); err != nil {
				return ""
			}
		}
		if ref, err := p.pageRef(ctx, world, n.BackendNodeID); err == nil && ref > 0 {
			known[n.BackendNodeID] = p.UIDs.UID(frame, cdp.BackendNodeID(-ref))
		}
		return known[n.BackendNodeID]
	}
}

// pageRef is the ref that snapshots computed in the page gave the node of
// backend, 0 if none did.
func (p *Page) pageRef(ctx context.Context, world runtime.ExecutionContextID, backend cdp.BackendNodeID) (int64, error) {
	const group = "pagemux-ref"
	defer chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
	node, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: backend, ExecutionContextID: world, ObjectGroup: group})
	if err != nil || node.Object == nil {
		return 0, err
	}
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: snapshot.PageRefFunction, ObjectID: node.Object.ObjectID, ReturnByValue: new(true),
	})
	if err != nil || res.ExceptionDetails != nil || res.Result == nil {
		return 0, err
	}
	var ref int64
	err = json.Unmarshal(res.Result.Value, &ref)
	return ref, err
}
