package browser

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/sync/errgroup"

	"github.com/pagemux/pagemux/snapshot"
)

// This file fills the holes of a tree computed in the page (snapshot/holes.go)
// with Chrome's own subtrees: where the page's script is not sure of
// Chrome's rules, the snapshot says what Chrome says, never a guess.

// holesGroup is the object group of the holes' elements, released after
// each snapshot.
const holesGroup = "pagemux-holes"

// fillHoles asks Chrome for the accessibility subtree of each hole of doc,
// a tree the page's script computed in world, and puts them in place. The
// script kept the holes' elements, in order, in its world's global. ctx is
// a call context of the tab.
func (p *Page) fillHoles(ctx context.Context, world runtime.ExecutionContextID, doc *snapshot.Doc) error {
	holes := doc.Holes()
	n := len(holes)
	if n == 0 {
		return nil
	}
	defer chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: holesGroup})
	objs, err := holeElements(ctx, world, n)
	if err != nil {
		return err
	}
	subs := make([]*snapshot.Doc, n)
	// Asked all at once: Chrome answers each element's queryAXTree at its
	// next frame, so the holes cost one frame, not one each; a gap's
	// getPartialAXTree answers at once.
	var g errgroup.Group
	for i, h := range holes {
		if objs[i] == "" {
			continue // the node went away: its hole stays empty
		}
		g.Go(func() (err error) {
			subs[i], err = holeTree(ctx, objs[i], h.Gap)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return doc.Fill(subs)
}

// holeTree asks Chrome for the accessibility subtree of a hole's node obj:
// for a gap (a text node of white space) the node alone, which Chrome
// leaves out or marks ignored where it shows no space; for an element its
// whole subtree.
func holeTree(ctx context.Context, obj runtime.RemoteObjectID, gap bool) (*snapshot.Doc, error) {
	if gap {
		res, err := chromedp.Call(ctx, snapshot.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj, FetchRelatives: new(false)})
		if err != nil {
			return nil, fmt.Errorf("snapshot: Chrome's node of a space: %w", err)
		}
		return res.Doc, nil
	}
	res, err := chromedp.Call(ctx, snapshot.QueryAXTree, accessibility.QueryAXTreeParams{ObjectID: obj})
	if err != nil {
		return nil, fmt.Errorf("snapshot: Chrome's tree of an element: %w", err)
	}
	if res.Doc.Empty() {
		// Chrome keeps no node of its own for some elements (an SVG of
		// role none): queryAXTree then answers nothing, not even the
		// children.
		return nil, fmt.Errorf("%w: Chrome has no subtree for an element the script left to it", snapshot.ErrNotWalked)
	}
	return res.Doc, nil
}

// holeElements returns the objects of the n elements the page's script left
// as holes, in order, in holesGroup; "" for one that is gone.
func holeElements(ctx context.Context, world runtime.ExecutionContextID, n int) ([]runtime.RemoteObjectID, error) {
	arr, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: "globalThis.__pagemuxSnap.holes", ContextID: world, ObjectGroup: holesGroup,
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: the holes' elements: %w", err)
	}
	if arr.ExceptionDetails != nil || arr.Result == nil || arr.Result.ObjectID == "" {
		return nil, errors.New("snapshot: the page's script kept no holes")
	}
	props, err := chromedp.Call(ctx, runtime.GetProperties, runtime.GetPropertiesParams{
		ObjectID: arr.Result.ObjectID, OwnProperties: new(true),
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: the holes' elements: %w", err)
	}
	objs := make([]runtime.RemoteObjectID, n)
	for _, pr := range props.Result {
		i, err := strconv.Atoi(pr.Name)
		if err != nil || i < 0 || i >= n || pr.Value == nil {
			continue
		}
		objs[i] = pr.Value.ObjectID
	}
	return objs, nil
}
