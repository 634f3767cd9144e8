package browser

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/snapshot"
)

// This file puts the documents of a page's iframes into its snapshot, as
// chrome-devtools-mcp does (puppeteer's Accessibility.snapshot with
// includeIframes): each frame's tree goes under its Iframe node, frames
// inside frames too. A frame in the tab's own renderer process answers in
// the tab's session, by its frame id; a frame of another site runs in a
// process of its own (an out-of-process iframe, OOPIF), which Chrome lists
// as a target of the type "iframe": pagemux attaches to it (chromedp's
// WithTargetID) and asks it there. The uids of a frame's nodes are
// resolved in the same session (locateUID), and an OOPIF's coordinates,
// which are its own viewport's, are moved by where its iframe element's
// content box is in the parent (frameOffset).

// maxFrameDepth bounds how deep frames inside frames are followed; a page
// can nest them without end.
const maxFrameDepth = 16

// maxFrames bounds how many frames' documents one snapshot reads.
const maxFrames = 256

// frameTarget is an out-of-process frame that pagemux attached to.
type frameTarget struct {
	id     target.ID          // the target's, which is its frame's id
	ctx    context.Context    // the target's chromedp context
	cancel context.CancelFunc // detaches from it
	// parent is the session of the frame's parent document, nil for the
	// tab's; owner is the iframe element there.
	parent *frameTarget
	owner  cdp.BackendNodeID
}

// pageFrames is one page's knowledge of its child frames, from its latest
// snapshot: which session each frame's document answers in.
type pageFrames struct {
	mu      sync.Mutex
	targets map[target.ID]*frameTarget // attached OOPIFs
	// in is the session of each frame the latest snapshot showed: nil for
	// the tab's own process.
	in map[cdp.FrameID]*frameTarget
}

// frameWalk is one snapshot's walk through the page's frames.
type frameWalk struct {
	p *Page

	mu    sync.Mutex
	world runtime.ExecutionContextID // the snapshot's world of the main frame, once asked
	n     int                        // frames read
	in    map[cdp.FrameID]*frameTarget
	// local lists each session's own frames, to their URLs, once; oopifs
	// the iframe targets, once.
	local  map[*frameTarget]func() (map[cdp.FrameID]string, error)
	oopifs func() (map[target.ID]*target.Info, error)
}

// childFrames reads the documents of doc's iframes, recursively, for
// Frame.Frames: doc is the main frame's tree, Chrome's or the page's
// script's. A frame whose document cannot be read (it went away, it is on a
// URL the policy refuses, it is not loaded yet) stays an empty Iframe; its
// error is logged, not returned. ctx is a call context of the tab.
func (p *Page) childFrames(ctx context.Context, doc *snapshot.Doc) map[cdp.BackendNodeID]*snapshot.Frame {
	w := &frameWalk{p: p, in: map[cdp.FrameID]*frameTarget{}, local: map[*frameTarget]func() (map[cdp.FrameID]string, error){}}
	w.oopifs = sync.OnceValues(func() (map[target.ID]*target.Info, error) {
		infos, err := chromedp.Targets(ctx)
		m := map[target.ID]*target.Info{}
		for _, info := range infos {
			if info.Type == "iframe" {
				m[info.TargetID] = info
			}
		}
		return m, err
	})
	frames := w.children(ctx, nil, doc, 0)
	if w.world != 0 {
		_, _ = chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: framesGroup})
	}
	p.frames.keep(w.in)
	return frames
}

// framesGroup holds the iframe elements of a tree computed in the page,
// released after the walk.
const framesGroup = "pagemux-frames"

// children reads the frames of doc, a document of session s (nil: the
// tab's), at once.
func (w *frameWalk) children(ctx context.Context, s *frameTarget, doc *snapshot.Doc, depth int) map[cdp.BackendNodeID]*snapshot.Frame {
	owners := doc.Iframes()
	if len(owners) == 0 || depth >= maxFrameDepth {
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	// What every frame needs, asked beside the iframe elements.
	wg.Go(func() { w.localFrames(ctx, s) })
	if s == nil {
		wg.Go(func() { w.oopifs() })
	}
	out := make(map[cdp.BackendNodeID]*snapshot.Frame, len(owners))
	for _, owner := range owners {
		wg.Go(func() {
			f, err := w.frame(ctx, s, owner, depth)
			if err != nil {
				w.p.b.log.Debug("snapshot: a frame's document left out", "page", w.p.ID, "error", err)
				return
			}
			if f != nil {
				mu.Lock()
				out[owner] = f
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// frame reads the document of the frame whose iframe element is owner, a
// node of a document of session s; nil for a frame that has none to show.
func (w *frameWalk) frame(ctx context.Context, s *frameTarget, owner cdp.BackendNodeID, depth int) (*snapshot.Frame, error) {
	el, err := w.ownerNode(sessionCall(ctx, s), owner)
	if err != nil {
		return nil, err
	}
	child := el.FrameID
	if child == "" {
		return nil, nil
	}
	w.mu.Lock()
	if w.n >= maxFrames {
		w.mu.Unlock()
		return nil, errors.New("too many frames")
	}
	w.n++
	w.mu.Unlock()
	var doc *snapshot.Doc
	var cs *frameTarget
	for try := 0; ; try++ {
		var url string
		cs, url, err = w.sessionOf(ctx, s, child)
		if err == nil && cs == nil && url == "" {
			return nil, nil
		}
		if err == nil {
			if err := w.p.checkURL(url); err != nil {
				return nil, fmt.Errorf("frame on a refused URL, not read: %w", err)
			}
			if cs != s {
				w.p.frames.place(cs, s, el.BackendNodeID)
			}
			doc, err = w.p.frameTree(sessionCall(ctx, cs), child)
		}
		// An OOPIF attached by an earlier snapshot may be gone, and a new
		// target stand for its frame: attach to that once.
		if try > 0 || cs == s || !errors.Is(err, chromedp.ErrTargetDetached) {
			break
		}
		w.p.frames.drop(cs)
		w.mu.Lock()
		delete(w.local, cs)
		w.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.in[child] = cs
	w.mu.Unlock()
	return &snapshot.Frame{Doc: doc, Frames: w.children(ctx, cs, doc, depth+1)}, nil
}

// sessionOf finds where the document of frame, a child of a document of
// session s, answers, and the URL the frame is on: s itself (nil for the
// tab's) for a frame of s's process, else the frame's OOPIF target. It
// returns nil and "" for a frame that is neither (one that went away, or
// has no document yet).
func (w *frameWalk) sessionOf(ctx context.Context, s *frameTarget, frame cdp.FrameID) (*frameTarget, string, error) {
	local, err := w.localFrames(ctx, s)
	if err != nil {
		return s, "", err
	}
	if url, ok := local[frame]; ok {
		return s, url, nil
	}
	oopifs, err := w.oopifs()
	info := oopifs[target.ID(frame)]
	if err != nil || info == nil {
		return nil, "", err
	}
	t, err := w.p.frames.attach(ctx, w.p, info.TargetID)
	if err != nil || !strings.HasPrefix(info.URL, chromeErrorPage) {
		return t, info.URL, err
	}
	// An error page's target says chrome-error://; its frame tree says
	// which URL failed, which the policy judges.
	own, err := w.localFrames(ctx, t)
	return t, own[frame], err
}

// localFrames lists the frames of session s's own process, with their URLs
// (for an error page the URL that failed, which the policy judges: a
// refused frame shows Chrome's error page), once a walk.
func (w *frameWalk) localFrames(ctx context.Context, s *frameTarget) (map[cdp.FrameID]string, error) {
	w.mu.Lock()
	list, ok := w.local[s]
	if !ok {
		list = sync.OnceValues(func() (map[cdp.FrameID]string, error) { return listFrames(sessionCall(ctx, s)) })
		w.local[s] = list
	}
	w.mu.Unlock()
	return list()
}

// listFrames lists the frames of the process of the session of ctx, with
// their URLs, for localFrames.
func listFrames(ctx context.Context) (map[cdp.FrameID]string, error) {
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return nil, fmt.Errorf("list the frames: %w", err)
	}
	m := map[cdp.FrameID]string{}
	var walk func(t *page.FrameTree)
	walk = func(t *page.FrameTree) {
		if t == nil || t.Frame == nil {
			return
		}
		m[t.Frame.ID] = cmp.Or(t.Frame.UnreachableURL, t.Frame.URL+t.Frame.URLFragment, "about:blank")
		for _, c := range t.ChildFrames {
			walk(c)
		}
	}
	walk(tree.FrameTree)
	return m, nil
}

// ownerNode describes the iframe element owner: a backend id, or in a
// tree computed in the page (only the main frame's is) a ref. ctx is a call
// context of the element's session.
func (w *frameWalk) ownerNode(ctx context.Context, owner cdp.BackendNodeID) (*cdp.Node, error) {
	params := dom.DescribeNodeParams{BackendNodeID: owner}
	if ref, ok := snapshot.PageRef(owner); ok {
		obj, err := w.refObject(ctx, ref)
		if err != nil {
			return nil, err
		}
		params = dom.DescribeNodeParams{ObjectID: obj}
	}
	res, err := chromedp.Call(ctx, dom.DescribeNode, params)
	if err != nil || res.Node == nil {
		return nil, fmt.Errorf("the iframe element: %w", cmpErr(err))
	}
	return res.Node, nil
}

// cmpErr is err, or an error that says the node is gone for nil.
func cmpErr(err error) error {
	if err == nil {
		return errors.New("no such node")
	}
	return err
}

// refObject is the element that ref names in the snapshot's world of the
// main frame, as an object of framesGroup there.
func (w *frameWalk) refObject(ctx context.Context, ref int64) (runtime.RemoteObjectID, error) {
	w.mu.Lock()
	world := w.world
	w.mu.Unlock()
	if world == 0 {
		var err error
		if world, err = worldIn(ctx, cdp.FrameID(w.p.TargetID)); err != nil {
			return "", err
		}
		w.mu.Lock()
		w.world = world
		w.mu.Unlock()
	}
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: snapshot.PageNodeScript(ref), ContextID: world, ObjectGroup: framesGroup,
	})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return "", errors.New("no element of that ref")
	}
	return res.Result.ObjectID, nil
}

// worldIn is isolatedWorld for any frame of the session of ctx.
func worldIn(ctx context.Context, frame cdp.FrameID) (runtime.ExecutionContextID, error) {
	res, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame, WorldName: snapshotWorld})
	if err != nil {
		return 0, fmt.Errorf("snapshot: a world of its own in the frame: %w", err)
	}
	return res.ExecutionContextID, nil
}

// frameTree fetches Chrome's tree of a child frame's document. ctx is a
// call context of the frame's session.
//
// A child frame's tree is Chrome's for either source: exact, and a frame
// is mostly small. The page's script would need Chrome for its holes
// (snapshot_hybrid.go), and Accessibility.queryAXTree never answers in a
// frame whose rendering Chrome throttles (one scrolled out of its parent's
// view), where getFullAXTree does.
func (p *Page) frameTree(ctx context.Context, frame cdp.FrameID) (*snapshot.Doc, error) {
	res, err := chromedp.Call(ctx, snapshot.GetFullAXTree, accessibility.GetFullAXTreeParams{FrameID: frame})
	if err != nil {
		return nil, fmt.Errorf("the frame's tree: %w", err)
	}
	return res.Doc, nil
}

// sessionCall is a context for calls in session s (nil: the tab's, whose
// call context ctx is) that ends with ctx.
func sessionCall(ctx context.Context, s *frameTarget) context.Context {
	if s == nil {
		return ctx
	}
	cctx, cancel := context.WithCancelCause(s.ctx)
	context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return cctx
}

// attach returns the attached OOPIF target id, attaching to it the first
// time. The target's context lives with the tab's.
func (f *pageFrames) attach(ctx context.Context, p *Page, id target.ID) (*frameTarget, error) {
	f.mu.Lock()
	t := f.targets[id]
	f.mu.Unlock()
	if t != nil {
		return t, nil
	}
	// Cancelling detaches; without WithDetachOnCancel it would close the
	// target, and closing a frame's target closes its tab.
	tctx, cancel := chromedp.NewContext(p.ctx, chromedp.WithTargetID(id), chromedp.WithDetachOnCancel())
	done := make(chan error, 1)
	// The first Do binds the target to tctx, so it must not carry the
	// caller's deadline; the caller waits below instead.
	go func() {
		err := chromedp.Do(tctx)
		if err == nil {
			err = disableDOMEvents(tctx)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			cancel()
			return nil, fmt.Errorf("attach to the frame: %w", err)
		}
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
	t = &frameTarget{id: id, ctx: tctx, cancel: cancel}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.targets == nil {
		f.targets = map[target.ID]*frameTarget{}
	}
	if old := f.targets[id]; old != nil { // another walk attached meanwhile
		cancel()
		return old, nil
	}
	f.targets[id] = t
	return t, nil
}

// keep records where the frames of the latest snapshot answer, and detaches
// from the OOPIFs it did not show.
func (f *pageFrames) keep(in map[cdp.FrameID]*frameTarget) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in = in
	used := map[*frameTarget]bool{}
	for _, t := range in {
		for ; t != nil; t = t.parent {
			used[t] = true
		}
	}
	for id, t := range f.targets {
		if !used[t] {
			t.cancel()
			delete(f.targets, id)
		}
	}
}

// place records where the iframe element of OOPIF t is: owner, in the
// document of session parent.
func (f *pageFrames) place(t, parent *frameTarget, owner cdp.BackendNodeID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.parent, t.owner = parent, owner
}

// drop forgets an OOPIF that went away.
func (f *pageFrames) drop(t *frameTarget) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.targets[t.id] == t {
		delete(f.targets, t.id)
	}
	t.cancel()
}

// session is the session of frame's document as the latest snapshot found
// it: nil for the tab's own process; ok is false for a frame it did not
// show.
func (f *pageFrames) session(frame cdp.FrameID) (t *frameTarget, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok = f.in[frame]
	return t, ok
}

// uidNode is the DOM node of a uid and the session it answers in.
type uidNode struct {
	frame   cdp.FrameID       // of its document
	backend cdp.BackendNodeID // in its session
	// in is its OOPIF, nil for the tab's own process; ctx is a call
	// context of its session.
	in  *frameTarget
	ctx context.Context
}

// locateUID resolves a uid of the current document, frames included, to
// its DOM node and the session to ask about it. A uid of a frame that the
// latest snapshot did not show, or whose node is gone, fails with
// snapshot.ErrUnknownUID. ctx is a call context of the tab.
func (p *Page) locateUID(ctx context.Context, uid string) (*uidNode, error) {
	frame, id, err := p.UIDs.LookupFrame(uid)
	if err != nil {
		return nil, err
	}
	n := &uidNode{frame: frame, backend: id, ctx: ctx}
	main := frame == "" || frame == cdp.FrameID(p.TargetID)
	if !main {
		t, ok := p.frames.session(frame)
		if !ok {
			return nil, goneErr(uid)
		}
		n.in, n.ctx = t, sessionCall(ctx, t)
	}
	// Only the main frame's tree comes from the page's script (frameTree).
	if ref, ok := snapshot.PageRef(id); ok && main {
		n.backend, err = p.pageNode(ctx, uid, ref)
		return n, err
	}
	return n, nil
}

// goneErr is the error of a uid whose node went away.
func goneErr(uid string) error {
	return fmt.Errorf("%w: the element with uid %s is no longer in the page (its frame may have navigated or gone); take a new snapshot", snapshot.ErrUnknownUID, uid)
}

// frameOffset is where the viewport of OOPIF t (nil: the tab's) begins in
// the tab's viewport: the top left of its iframe element's content box,
// and of each OOPIF around it. ctx is a call context of the tab.
func (f *pageFrames) frameOffset(ctx context.Context, t *frameTarget) (x, y float64, err error) {
	for t != nil {
		f.mu.Lock()
		parent, owner := t.parent, t.owner
		f.mu.Unlock()
		res, err := chromedp.Call(sessionCall(ctx, parent), dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: owner})
		if err != nil || res.Model == nil || len(res.Model.Content) < 2 {
			return 0, 0, fmt.Errorf("where the frame is in the page: %w", cmpErr(err))
		}
		x, y = x+res.Model.Content[0], y+res.Model.Content[1]
		t = parent
	}
	return x, y, nil
}
