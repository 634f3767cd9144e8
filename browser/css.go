package browser

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/snapshot"
	"github.com/pagemux/pagemux/styles"
)

// This file asks Chrome what get_css_styles needs: the element's ancestors,
// its matched styles (CSS.getMatchedStylesForNode), the style sheets'
// headers and the containers of container queries. Package styles computes
// the cascade from them.

// ErrNotElement is wrapped by CSSStyles for a uid whose node is neither an
// element nor inside one.
const ErrNotElement Error = "not an element"

// notElementError names the uid; Unwrap gives ErrNotElement.
type notElementError struct{ uid string }

func (e *notElementError) Error() string {
	return "the node with uid " + e.uid + " is not an element and has no parent element; give the uid of an element from the snapshot"
}

func (e *notElementError) Unwrap() error { return ErrNotElement }

// CSSStyles gets the matched styles of the element a uid names (of the
// parent element, for a text node). It turns the DOM domain on for the call
// and off again after it, so that no DOM event reaches the tab's event loop
// between calls (see disableDOMEvents); the CSS domain stays on until the
// page has been idle for cssIdle. It changes nothing in the page.
func (p *Page) CSSStyles(ctx context.Context, uid string) (*styles.Styles, error) {
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	if _, _, err := p.UIDs.LookupFrame(uid); err != nil {
		return nil, err
	}
	// Ancestors are looked up by ref where the snapshot had refs, whatever
	// the uid's own node is: Chrome's node in a hole of the page's tree
	// has ancestors of the page's. Only the main frame's tree is the page's.
	fromPage := p.UIDs.FromPage()
	var out *styles.Styles
	err := p.await(ctx, func(ctx context.Context) error {
		n, err := p.locateUID(ctx, uid) // its frame's session (snapshot_frames.go)
		if err != nil {
			return err
		}
		chain, err := elementChain(n.ctx, uid, n.backend)
		if err != nil {
			return err
		}
		main := n.frame == "" || n.frame == cdp.FrameID(p.TargetID)
		uidOf := p.uidOfNode(n.ctx, n.frame, fromPage && main)
		payload, sheets, err := matchedStyles(n.ctx, p, n.in, uid, chain[0].BackendNodeID, uidOf)
		if err != nil {
			return err
		}
		out = styles.Compute(payload, sheets, chain, uidOf)
		return nil
	})
	return out, err
}

// chainScript returns the element (the parent element of a text node) and
// its ancestors in the flat tree, which is the order of the inherited
// entries of CSS.getMatchedStylesForNode.
const chainScript = `function () {
	let n = this.nodeType === 1 ? this : this.parentElement;
	const out = [];
	while (n) {
		out.push(n);
		n = n.assignedSlot || n.parentElement || (n.parentNode instanceof ShadowRoot ? n.parentNode.host : null);
	}
	return out;
}`

// elementChain describes the element of backend and its ancestors.
func elementChain(ctx context.Context, uid string, backend cdp.BackendNodeID) ([]*cdp.Node, error) {
	const group = "pagemux-css"
	defer chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
	res, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: backend, ObjectGroup: group})
	if err != nil || res.Object == nil {
		return nil, fmt.Errorf("%w: the element with uid %s was detached or no longer exists on the page; take a new snapshot", snapshot.ErrUnknownUID, uid)
	}
	arr, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: chainScript, ObjectID: res.Object.ObjectID, ObjectGroup: group,
	})
	if err != nil {
		return nil, err
	}
	if arr.ExceptionDetails != nil || arr.Result == nil || arr.Result.ObjectID == "" {
		return nil, fmt.Errorf("could not read the ancestors of the element with uid %s", uid)
	}
	props, err := chromedp.Call(ctx, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: arr.Result.ObjectID, OwnProperties: new(true)})
	if err != nil {
		return nil, err
	}
	items := arrayObjects(props.Result)
	if len(items) == 0 {
		return nil, &notElementError{uid}
	}
	chain := make([]*cdp.Node, 0, len(items))
	for _, id := range items {
		d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: id, Depth: new(int64(0))})
		if err != nil || d.Node == nil {
			return nil, fmt.Errorf("describe the ancestors of the element with uid %s: %v", uid, err)
		}
		chain = append(chain, d.Node)
	}
	return withClosedSlots(ctx, chain), nil
}

// arrayObjects returns, in index order, the objects among the own
// properties of an array ("0", "1", …), as Runtime.getProperties lists them.
func arrayObjects(props []*runtime.PropertyDescriptor) []runtime.RemoteObjectID {
	type indexed struct {
		i  int
		id runtime.RemoteObjectID
	}
	var items []indexed
	for _, pd := range props {
		i, err := strconv.Atoi(pd.Name)
		if err != nil || i < 0 || pd.Value == nil || pd.Value.ObjectID == "" {
			continue
		}
		items = append(items, indexed{i, pd.Value.ObjectID})
	}
	slices.SortFunc(items, func(a, b indexed) int { return a.i - b.i })
	ids := make([]runtime.RemoteObjectID, len(items))
	for k, it := range items {
		ids[k] = it.id
	}
	return ids
}

// withClosedSlots adds to the chain the slots of closed and user-agent
// shadow trees that script cannot see (the content of a <details> is in
// one) and their ancestors in that tree: Chrome's inherited styles follow
// the flat tree through them.
func withClosedSlots(ctx context.Context, chain []*cdp.Node) []*cdp.Node {
	var out []*cdp.Node
	for i, n := range chain {
		out = append(out, n)
		if n.AssignedSlot == nil || i+1 >= len(chain) || chain[i+1].BackendNodeID == n.AssignedSlot.BackendNodeID {
			continue
		}
		host, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: chain[i+1].BackendNodeID, Depth: new(int64(-1)), Pierce: new(true)})
		if err != nil || host.Node == nil {
			continue
		}
		for _, root := range host.Node.ShadowRoots {
			if path := pathTo(root, n.AssignedSlot.BackendNodeID); path != nil {
				for j := len(path) - 1; j >= 0; j-- {
					if path[j].NodeType == 1 {
						out = append(out, path[j])
					}
				}
				break
			}
		}
	}
	return out
}

// pathTo returns the nodes from below root down to the node of id, or nil.
func pathTo(root *cdp.Node, id cdp.BackendNodeID) []*cdp.Node {
	for _, c := range root.Children {
		if c.BackendNodeID == id {
			return []*cdp.Node{c}
		}
		if p := pathTo(c, id); p != nil {
			return append([]*cdp.Node{c}, p...)
		}
	}
	return nil
}

// cssIdle is how long the CSS domain of a page stays on after its last
// get_css_styles: turning it on announces every style sheet and costs more
// than the styles themselves, and agents inspect elements in a row.
const cssIdle = 30 * time.Second

// cssSession is the CSS domain of one page while it is on, and the headers
// of the style sheets it announced. Unlike the DOM domain, whose events
// would go through the tab's event loop (disableDOMEvents), the CSS domain
// sends events to listeners only, so it may stay on between calls; it is
// turned off when the page has been idle for cssIdle.
type cssSession struct {
	p      *Page
	base   context.Context // of the session: the tab's, or an OOPIF's
	mu     sync.Mutex      // held while a call uses the domain, and by the idle stop
	on     bool
	idle   *time.Timer
	sheets map[string]*css.StyleSheetHeader
	smu    sync.Mutex // guards sheets, written from the event loop
}

// cssSessions holds a session for each page (keyed by its *Page) and for
// each out-of-process frame (its *frameTarget) that get_css_styles asked.
var cssSessions = struct {
	sync.Mutex
	of map[any]*cssSession
}{of: map[any]*cssSession{}}

// cssSessionOf returns the session of the page, or of its OOPIF t when t
// is not nil, listening for style sheets from the first call until the
// page or the frame goes away.
func cssSessionOf(p *Page, t *frameTarget) (*cssSession, error) {
	var key any = p
	base := p.ctx
	if t != nil {
		key, base = t, t.ctx
	}
	cssSessions.Lock()
	defer cssSessions.Unlock()
	if s := cssSessions.of[key]; s != nil {
		return s, nil
	}
	s := &cssSession{p: p, base: base, sheets: map[string]*css.StyleSheetHeader{}}
	lctx, stop := context.WithCancel(base)
	if err := chromedp.Listen(lctx, s.onEvent); err != nil {
		stop()
		return nil, err
	}
	s.idle = time.AfterFunc(cssIdle, s.turnOff)
	context.AfterFunc(closedContext{p.closed}, stop)
	context.AfterFunc(lctx, func() {
		s.idle.Stop()
		cssSessions.Lock()
		delete(cssSessions.of, key)
		cssSessions.Unlock()
	})
	cssSessions.of[key] = s
	return s, nil
}

func (s *cssSession) onEvent(ev any) {
	switch e := ev.(type) {
	case *css.EventStyleSheetAdded:
		if e.Header != nil {
			s.smu.Lock()
			s.sheets[string(e.Header.StyleSheetID)] = e.Header
			s.smu.Unlock()
		}
	case *css.EventStyleSheetRemoved:
		s.smu.Lock()
		delete(s.sheets, string(e.StyleSheetID))
		s.smu.Unlock()
	}
}

// turnOff turns the domain off after the page was idle.
func (s *cssSession) turnOff() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on || s.p.Closed() {
		return
	}
	ctx, cancel := context.WithTimeout(s.base, 5*time.Second)
	defer cancel()
	_, _ = chromedp.Call(ctx, css.Disable, cdp.Empty{})
	s.on = false
}

// enable turns the domain on unless it is; again turns it off first.
func (s *cssSession) enable(ctx context.Context, again bool) error {
	if s.on && !again {
		return nil
	}
	if again {
		_, _ = chromedp.Call(ctx, css.Disable, cdp.Empty{})
	}
	s.on = false
	// Chrome announces every sheet again: forget those of documents gone.
	s.smu.Lock()
	clear(s.sheets)
	s.smu.Unlock()
	if _, err := chromedp.Call(ctx, css.Enable, cdp.Empty{}); err != nil {
		return fmt.Errorf("enable the CSS domain: %w", err)
	}
	s.on = true
	return nil
}

// missing reports whether a rule of res names a sheet not announced.
func (s *cssSession) missing(res *styles.MatchedStyles) bool {
	s.smu.Lock()
	defer s.smu.Unlock()
	return slices.ContainsFunc(res.SheetIDs(), func(id string) bool { return s.sheets[id] == nil })
}

// matchedStyles turns the DOM domain on for the call, and the CSS domain
// unless it is on, asks for the matched styles of the element, and turns
// the DOM domain off again. It returns the headers of the page's style
// sheets, which CSS.enable announces.
func matchedStyles(ctx context.Context, p *Page, t *frameTarget, uid string, backend cdp.BackendNodeID, uidOf func(*cdp.Node) string) (*styles.MatchedStyles, map[string]*css.StyleSheetHeader, error) {
	sess, err := cssSessionOf(p, t)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		// Also when the caller gave up: a page left with DOM events on
		// could stall its event loop later (disableDOMEvents).
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = chromedp.Call(dctx, dom.Disable, cdp.Empty{})
	}()
	if _, err := chromedp.Call(ctx, dom.Enable, dom.EnableParams{}); err != nil {
		return nil, nil, fmt.Errorf("enable the DOM domain: %w", err)
	}
	if _, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: new(int64(0))}); err != nil {
		return nil, nil, fmt.Errorf("get the document: %w", err)
	}
	pushed, err := chromedp.Call(ctx, dom.PushNodesByBackendIDsToFrontend, dom.PushNodesByBackendIDsToFrontendParams{BackendNodeIDs: []cdp.BackendNodeID{backend}})
	if err != nil || len(pushed.NodeIDs) == 0 || pushed.NodeIDs[0] == 0 {
		return nil, nil, fmt.Errorf("%w: the element with uid %s was detached or no longer exists on the page; take a new snapshot", snapshot.ErrUnknownUID, uid)
	}
	node := pushed.NodeIDs[0]
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.idle.Reset(cssIdle)
	if err := sess.enable(ctx, false); err != nil {
		return nil, nil, err
	}
	getMatched := cdp.Command[css.GetMatchedStylesForNodeParams, styles.MatchedStyles]{Method: css.CommandGetMatchedStylesForNode}
	res, err := chromedp.Call(ctx, getMatched, css.GetMatchedStylesForNodeParams{NodeID: node})
	if err != nil && ctx.Err() == nil {
		// The domain may have gone off without pagemux asking (a renderer
		// swapped by a navigation): turn it on and ask once more.
		if eerr := sess.enable(ctx, true); eerr != nil {
			return nil, nil, eerr
		}
		res, err = chromedp.Call(ctx, getMatched, css.GetMatchedStylesForNodeParams{NodeID: node})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("could not retrieve matched styles for the element with uid %s: %w", uid, err)
	}
	findContainers(ctx, &res, node, uidOf)
	// The first CSS.enable of a document may announce no style sheet at
	// all (seen with Chromium 156): turning the domain off and on again
	// announces every sheet.
	if sess.missing(&res) {
		if err := sess.enable(ctx, true); err != nil {
			return nil, nil, err
		}
	}
	sess.smu.Lock()
	defer sess.smu.Unlock()
	return &res, maps.Clone(sess.sheets), nil
}

// findContainers finds the container element of each container query of
// the element's rules, for the comments above @container: the DOM domain
// must be on.
func findContainers(ctx context.Context, m *styles.MatchedStyles, node cdp.NodeID, uidOf func(*cdp.Node) string) {
	for _, q := range m.ContainerQueries() {
		res, err := chromedp.Call(ctx, dom.GetContainerForNode, dom.GetContainerForNodeParams{
			NodeID: node, ContainerName: q.Name, PhysicalAxes: q.PhysicalAxes, LogicalAxes: q.LogicalAxes,
			QueriesScrollState: new(q.QueriesScrollState), QueriesAnchored: new(q.QueriesAnchored),
		})
		if err != nil || res.NodeID == 0 {
			continue
		}
		d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{NodeID: res.NodeID, Depth: new(int64(0))})
		if err != nil || d.Node == nil {
			continue
		}
		q.Container = &styles.NodeRef{Selector: styles.SimpleSelector(d.Node), UID: uidOf(d.Node)}
	}
}
