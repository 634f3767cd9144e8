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
)

// This file answers get_css_styles: the rules that style one element, in
// cascade order, each declaration marked with whether it wins, as the
// DevTools Styles pane computes it (chrome-devtools-mcp 1.11 runs that same
// front-end model, so its answers are the reference). Chrome gives the
// matched rules (CSS.getMatchedStylesForNode); which declaration wins is
// computed here, from that payload alone, the way the front end does:
// user-agent rules of one selector merged, shorthands expanded, !important,
// inheritance and custom properties. It does not model shadow-tree cascade
// contexts nor animated styles, which chrome-devtools-mcp leaves out too.

// CSSStyles is what applies to one element, highest precedence first.
type CSSStyles struct {
	// Element is the element's simple selector, as DevTools writes it:
	// button#target, div.card.wide, input[type="text"].
	Element string
	// Rules are the element's own styles, then the inherited ones, then
	// those of its pseudo-elements and the at-rules that affect it.
	Rules []*CSSRule
}

// CSSRuleKind says what a CSSRule is.
type CSSRuleKind int

const (
	CSSMatched      CSSRuleKind = iota // a style rule that matches the element
	CSSInline                          // the style attribute: element.style
	CSSAttributes                      // presentational attributes (width=, bgcolor=)
	CSSInherited                       // a style of an ancestor the element inherits from
	CSSPseudo                          // a rule of one of the element's pseudo-elements
	CSSKeyframes                       // an @keyframes rule its animations use
	CSSAtRule                          // another at-rule, such as @font-palette-values
	CSSPositionTry                     // an @position-try rule
	CSSPropertyRule                    // an @property rule or a CSS.registerProperty call
)

// CSSRule is one block of the answer.
type CSSRule struct {
	Kind CSSRuleKind
	// Selector heads the block: ".card", "element.style", "@keyframes spin".
	Selector string
	// Source is where the rule is written: "site.css:12", "index:40",
	// "user agent stylesheet"; empty for element.style.
	Source string
	// Ancestors are the rules the rule is nested in, outermost first.
	Ancestors []CSSAncestor
	// From is the ancestor element an inherited style belongs to, or the
	// element whose pseudo-element an inherited pseudo rule styles.
	From *CSSNodeRef
	// Pseudo is the pseudo-element of a CSSPseudo rule: "::before".
	Pseudo string
	// Inactive marks an @position-try rule that is not the one in use.
	Inactive     bool
	Declarations []CSSDeclaration
	// Keyframes are the steps of a CSSKeyframes rule.
	Keyframes []CSSKeyframe
}

// CSSAncestor is an enclosing rule: "@media print", "@layer base".
type CSSAncestor struct {
	Header string
	// Comment is a note on the header, such as the container element of
	// an @container query.
	Comment string
}

// CSSNodeRef names an element: its simple selector and, when the page's
// latest snapshot has it, its uid.
type CSSNodeRef struct {
	Selector string
	UID      string
}

// CSSKeyframe is one step of an @keyframes rule.
type CSSKeyframe struct {
	Key          string
	Declarations []CSSDeclaration
}

// CSSDeclaration is one property of a rule.
type CSSDeclaration struct {
	Name, Value string
	Important   bool
	// Status is "" for a declaration that applies, else "overloaded" (it
	// loses the cascade), "invalid" (Chrome could not parse it) or
	// "disabled" (commented out).
	Status string
}

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
func (p *Page) CSSStyles(ctx context.Context, uid string) (*CSSStyles, error) {
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	frame, backend, err := p.UIDs.LookupFrame(uid)
	if err != nil {
		return nil, err
	}
	var out *CSSStyles
	err = p.await(ctx, func(ctx context.Context) error {
		chain, err := elementChain(ctx, uid, backend)
		if err != nil {
			return err
		}
		name := func(n *cdp.Node) CSSNodeRef {
			return CSSNodeRef{Selector: simpleSelector(n), UID: p.UIDs.UID(frame, n.BackendNodeID)}
		}
		payload, sheets, err := matchedStyles(ctx, p, uid, chain[0].BackendNodeID, name)
		if err != nil {
			return err
		}
		refs := make([]CSSNodeRef, len(chain))
		tags := make([]string, len(chain))
		for i, n := range chain {
			refs[i] = name(n)
			tags[i] = n.LocalName
			if len(n.LocalName) != len(n.NodeName) {
				tags[i] = n.NodeName
			}
		}
		pseudos := map[string]bool{}
		for _, pe := range chain[0].PseudoElements {
			pseudos[string(pe.PseudoType)] = true
		}
		out = buildCSSStyles(payload, sheets, refs, tags, pseudos)
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
	mu     sync.Mutex // held while a call uses the domain, and by the idle stop
	on     bool
	idle   *time.Timer
	sheets map[string]*css.StyleSheetHeader
	smu    sync.Mutex // guards sheets, written from the event loop
}

var cssSessions = struct {
	sync.Mutex
	of map[*Page]*cssSession
}{of: map[*Page]*cssSession{}}

// cssSessionOf returns the page's session, listening for style sheets from
// the first call until the page goes away.
func cssSessionOf(p *Page) (*cssSession, error) {
	cssSessions.Lock()
	defer cssSessions.Unlock()
	if s := cssSessions.of[p]; s != nil {
		return s, nil
	}
	s := &cssSession{p: p, sheets: map[string]*css.StyleSheetHeader{}}
	lctx, stop := context.WithCancel(p.ctx)
	if err := chromedp.Listen(lctx, s.onEvent); err != nil {
		stop()
		return nil, err
	}
	s.idle = time.AfterFunc(cssIdle, s.turnOff)
	context.AfterFunc(closedContext{p.closed}, func() {
		stop()
		s.idle.Stop()
		cssSessions.Lock()
		delete(cssSessions.of, p)
		cssSessions.Unlock()
	})
	cssSessions.of[p] = s
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
	ctx, cancel := context.WithTimeout(s.p.ctx, 5*time.Second)
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
func (s *cssSession) missing(res *mStyles) bool {
	s.smu.Lock()
	defer s.smu.Unlock()
	return slices.ContainsFunc(res.sheetIDs(), func(id string) bool { return s.sheets[id] == nil })
}

// matchedStyles turns the DOM domain on for the call, and the CSS domain
// unless it is on, asks for the matched styles of the element, and turns
// the DOM domain off again. It returns the headers of the page's style
// sheets, which CSS.enable announces.
func matchedStyles(ctx context.Context, p *Page, uid string, backend cdp.BackendNodeID, name func(*cdp.Node) CSSNodeRef) (*mStyles, map[string]*css.StyleSheetHeader, error) {
	sess, err := cssSessionOf(p)
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
	getMatched := cdp.Command[css.GetMatchedStylesForNodeParams, mStyles]{Method: css.CommandGetMatchedStylesForNode}
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
	res.findContainers(ctx, node, name)
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

// The payload of CSS.getMatchedStylesForNode, decoded into types of this
// file where cdproto's lose what the front end reads: parsedOk, which
// Chrome sends only when false, and the text of a container query.
type (
	mStyles struct {
		InlineStyle              *mStyle                     `json:"inlineStyle"`
		AttributesStyle          *mStyle                     `json:"attributesStyle"`
		MatchedCSSRules          []*mRuleMatch               `json:"matchedCSSRules"`
		PseudoElements           []*mPseudoMatches           `json:"pseudoElements"`
		Inherited                []*mInherited               `json:"inherited"`
		InheritedPseudoElements  []*mInheritedPseudo         `json:"inheritedPseudoElements"`
		CSSKeyframesRules        []*mKeyframes               `json:"cssKeyframesRules"`
		CSSPositionTryRules      []*mNamedRule               `json:"cssPositionTryRules"`
		CSSPropertyRules         []*mPropertyRule            `json:"cssPropertyRules"`
		CSSPropertyRegistrations []*css.PropertyRegistration `json:"cssPropertyRegistrations"`
		CSSAtRules               []*mAtRule                  `json:"cssAtRules"`
	}
	mStyle struct {
		StyleSheetID     string                `json:"styleSheetId"`
		CSSProperties    []*mProperty          `json:"cssProperties"`
		ShorthandEntries []*css.ShorthandEntry `json:"shorthandEntries"`
		CSSText          string                `json:"cssText"`
		Range            *css.SourceRange      `json:"range"`
	}
	mProperty struct {
		Name      string           `json:"name"`
		Value     string           `json:"value"`
		Important bool             `json:"important"`
		ParsedOk  *bool            `json:"parsedOk"`
		Disabled  bool             `json:"disabled"`
		Range     *css.SourceRange `json:"range"`
		Longhands []*mProperty     `json:"longhandProperties"`
	}
	mRuleMatch struct {
		Rule              *mRule  `json:"rule"`
		MatchingSelectors []int64 `json:"matchingSelectors"`
	}
	mRule struct {
		StyleSheetID     string               `json:"styleSheetId"`
		SelectorList     *css.SelectorList    `json:"selectorList"`
		NestingSelectors []string             `json:"nestingSelectors"`
		Origin           css.StyleSheetOrigin `json:"origin"`
		Style            *mStyle              `json:"style"`
		Media            []*mMedia            `json:"media"`
		ContainerQueries []*mContainer        `json:"containerQueries"`
		Supports         []*mText             `json:"supports"`
		Layers           []*mText             `json:"layers"`
		Scopes           []*mText             `json:"scopes"`
		RuleTypes        []css.RuleType       `json:"ruleTypes"`
		Navigations      []*mText             `json:"navigations"`
	}
	// mText is a conditional rule: @supports, @layer, @scope, @container.
	mText struct {
		Text   string `json:"text"`
		Name   string `json:"name"`
		Active *bool  `json:"active"`
	}
	mContainer struct {
		Text               string           `json:"text"`
		Name               string           `json:"name"`
		PhysicalAxes       dom.PhysicalAxes `json:"physicalAxes"`
		LogicalAxes        dom.LogicalAxes  `json:"logicalAxes"`
		QueriesScrollState bool             `json:"queriesScrollState"`
		QueriesAnchored    bool             `json:"queriesAnchored"`
		// container is the element the query is evaluated against, found
		// for the element whose styles are asked for.
		container *CSSNodeRef
	}
	mMedia struct {
		Text      string `json:"text"`
		MediaList []struct {
			Active bool `json:"active"`
		} `json:"mediaList"`
	}
	mInherited struct {
		InlineStyle     *mStyle       `json:"inlineStyle"`
		MatchedCSSRules []*mRuleMatch `json:"matchedCSSRules"`
	}
	mPseudoMatches struct {
		PseudoType string        `json:"pseudoType"`
		Matches    []*mRuleMatch `json:"matches"`
	}
	mInheritedPseudo struct {
		PseudoElements []*mPseudoMatches `json:"pseudoElements"`
	}
	mKeyframes struct {
		AnimationName *css.Value `json:"animationName"`
		Keyframes     []*struct {
			StyleSheetID string               `json:"styleSheetId"`
			Origin       css.StyleSheetOrigin `json:"origin"`
			KeyText      *css.Value           `json:"keyText"`
			Style        *mStyle              `json:"style"`
		} `json:"keyframes"`
	}
	mNamedRule struct {
		StyleSheetID string               `json:"styleSheetId"`
		Origin       css.StyleSheetOrigin `json:"origin"`
		Name         *css.Value           `json:"name"`
		Style        *mStyle              `json:"style"`
		Active       bool                 `json:"active"`
	}
	mPropertyRule struct {
		StyleSheetID string               `json:"styleSheetId"`
		Origin       css.StyleSheetOrigin `json:"origin"`
		PropertyName *css.Value           `json:"propertyName"`
		Style        *mStyle              `json:"style"`
	}
	mAtRule struct {
		Type         string               `json:"type"`
		Subsection   string               `json:"subsection"`
		Name         *css.Value           `json:"name"`
		StyleSheetID string               `json:"styleSheetId"`
		Origin       css.StyleSheetOrigin `json:"origin"`
		Style        *mStyle              `json:"style"`
	}
)

// findContainers finds the container element of each container query of
// the element's rules, for the comments above @container: the DOM domain
// must be on.
func (m *mStyles) findContainers(ctx context.Context, node cdp.NodeID, name func(*cdp.Node) CSSNodeRef) {
	seen := map[*mContainer]bool{}
	each := func(rules []*mRuleMatch) {
		for _, rm := range rules {
			if rm.Rule == nil {
				continue
			}
			for _, q := range rm.Rule.ContainerQueries {
				if seen[q] {
					continue
				}
				seen[q] = true
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
				ref := name(d.Node)
				q.container = &ref
			}
		}
	}
	each(m.MatchedCSSRules)
	for _, e := range m.Inherited {
		each(e.MatchedCSSRules)
	}
	for _, p := range m.PseudoElements {
		each(p.Matches)
	}
}

// sheetIDs lists the style sheets the payload's rules come from.
func (m *mStyles) sheetIDs() []string {
	var ids []string
	addRules := func(rules []*mRuleMatch) {
		for _, rm := range rules {
			if rm.Rule != nil && rm.Rule.StyleSheetID != "" && !slices.Contains(ids, rm.Rule.StyleSheetID) {
				ids = append(ids, rm.Rule.StyleSheetID)
			}
		}
	}
	addRules(m.MatchedCSSRules)
	for _, e := range m.Inherited {
		addRules(e.MatchedCSSRules)
	}
	for _, p := range m.PseudoElements {
		addRules(p.Matches)
	}
	for _, e := range m.InheritedPseudoElements {
		for _, p := range e.PseudoElements {
			addRules(p.Matches)
		}
	}
	return ids
}
