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
	n := len(doc.Holes())
	if n == 0 {
		return nil
	}
	defer chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: holesGroup})
	elems, err := holeElements(ctx, world, n)
	if err != nil {
		return err
	}
	// Chrome answers queryAXTree at its next frame: asked all at once, the
	// holes cost one frame, not one each.
	subs := make([]*snapshot.Doc, n)
	var g errgroup.Group
	for i, obj := range elems {
		if obj == "" {
			continue // the element went away: its hole stays empty
		}
		g.Go(func() error {
			res, err := chromedp.Call(ctx, snapshot.QueryAXTree, accessibility.QueryAXTreeParams{ObjectID: obj})
			if err != nil {
				return fmt.Errorf("snapshot: Chrome's tree of an element: %w", err)
			}
			if res.Doc.Empty() {
				// Chrome keeps no node of its own for some elements (an
				// SVG of role none): queryAXTree then answers nothing, not
				// even the children.
				return fmt.Errorf("%w: Chrome has no subtree for an element the script left to it", snapshot.ErrNotWalked)
			}
			subs[i] = res.Doc
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return doc.Fill(subs)
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
