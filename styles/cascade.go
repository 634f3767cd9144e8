package styles

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
)

// This file computes the answer of get_css_styles from the payload of
// CSS.getMatchedStylesForNode, as the DevTools front end does; it sends no
// command.

// The cascade model: a style (one declaration block) and its properties,
// as the front end reads them.

type styleType int

const (
	styleRegular styleType = iota
	styleInline
	styleAttributes
)

type cStyle struct {
	typ       styleType
	rule      *mRule // nil for element.style and attribute styles
	sheet     *css.StyleSheetHeader
	sheetID   string
	rng       *css.SourceRange
	props     []*cProp // all properties, longhands and synthetic shorthands included
	shorthand map[string]string
	node      int  // index of the element it belongs to: 0 the element, i its i-th ancestor
	inherited bool // a style of an ancestor, shown as inherited
	matches   bool // takes part in the cascade
	leading   []*cProp
}

type cProp struct {
	style                       *cStyle
	name, value                 string
	important, disabled, parsed bool
	hasRange                    bool
	longhands                   []*cProp
	active                      bool // wins within its own style
}

func newStyle(p *mStyle, rule *mRule, typ styleType) *cStyle {
	s := &cStyle{typ: typ, rule: rule, sheetID: p.StyleSheetID, rng: p.Range, shorthand: map[string]string{}, matches: true}
	important := map[string]bool{}
	for _, e := range p.ShorthandEntries {
		s.shorthand[e.Name] = e.Value
		if e.Important {
			important[e.Name] = true
		}
	}
	if p.CSSText != "" && p.Range != nil {
		var longhands []*cProp
		for _, mp := range p.CSSProperties {
			if mp.Range == nil {
				continue
			}
			cp := s.newProp(mp.Name, mp.Value, mp.Important, mp.Disabled, mp.ParsedOk == nil || *mp.ParsedOk, true, mp.Longhands)
			s.props = append(s.props, cp)
			longhands = append(longhands, cp.longhands...)
		}
		s.props = append(s.props, longhands...)
	} else {
		for _, mp := range p.CSSProperties {
			s.props = append(s.props, s.newProp(mp.Name, mp.Value, mp.Important, mp.Disabled, mp.ParsedOk == nil || *mp.ParsedOk, mp.Range != nil, mp.Longhands))
		}
	}
	if s.rng == nil && len(s.shorthand) > 0 {
		// A style without source text lists longhands only: give it back
		// the shorthands it has values for.
		have := map[string]bool{}
		for _, cp := range s.props {
			have[cp.name] = true
		}
		var synthetic []*cProp
		for _, cp := range s.props {
			for _, sh := range cssMeta().shorthands[cp.name] {
				if have[sh] || s.shorthand[sh] == "" {
					continue
				}
				synthetic = append(synthetic, s.newProp(sh, s.shorthand[sh], important[sh], false, true, false, nil))
				have[sh] = true
			}
		}
		s.props = append(s.props, synthetic...)
	}
	s.markInactive()
	s.leading = s.leadingProps()
	return s
}

func (s *cStyle) newProp(name, value string, important, disabled, parsed, hasRange bool, longhands []*mProperty) *cProp {
	p := &cProp{style: s, name: name, value: value, important: important, disabled: disabled, parsed: parsed, hasRange: hasRange, active: true}
	if len(longhands) > 0 {
		for _, l := range longhands {
			p.longhands = append(p.longhands, s.newProp(l.Name, l.Value, important, disabled, parsed, false, nil))
		}
	} else {
		for _, l := range cssMeta().longhands[name] {
			p.longhands = append(p.longhands, s.newProp(l, "", important, disabled, parsed, false, nil))
		}
	}
	return p
}

// markInactive marks the properties that lose to a later or !important one
// of the same name in the same style.
func (s *cStyle) markInactive() {
	active := map[string]*cProp{}
	done := map[*cProp]bool{}
	set := func(name string, p *cProp) {
		cur := active[name]
		switch {
		case cur == nil:
			active[name] = p
		case !cur.important || p.important:
			cur.active = false
			active[name] = p
		default:
			p.active = false
		}
	}
	for _, p := range s.props {
		name := canonicalCSSName(p.name)
		if p.disabled || !p.parsed {
			if !p.disabled && isCustomProperty(p.name) {
				if cur := active[name]; cur != nil {
					cur.active = false
				}
				delete(active, name)
			}
			p.active = false
			continue
		}
		if done[p] {
			continue
		}
		for _, l := range p.longhands {
			set(l.name, l)
			done[l] = true
		}
		set(name, p)
	}
}

// leadingProps are the properties a style shows: those written in its
// source, or, without source, all but the longhands of a shorthand it has.
func (s *cStyle) leadingProps() []*cProp {
	var out []*cProp
	for _, p := range s.props {
		if s.rng != nil {
			if p.hasRange {
				out = append(out, p)
			}
			continue
		}
		covered := false
		for _, sh := range cssMeta().shorthands[p.name] {
			if s.shorthand[sh] != "" {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// containsInherited reports whether a style has a property that applies and
// that children inherit.
func (s *cStyle) containsInherited() bool {
	for _, p := range s.props {
		if p.active && isInheritedCSS(p.name) {
			return true
		}
	}
	return false
}

func (s *cStyle) containsCustom() bool {
	for _, p := range s.props {
		if isCustomProperty(p.name) {
			return true
		}
	}
	return false
}

// sameSource reports whether two styles are the same block of the same
// style sheet, such as one rule that matches an element and its parent.
func sameSource(a, b *cStyle) bool {
	return a.sheetID != "" && a.rng != nil && b.sheetID == a.sheetID && b.rng != nil && *a.rng == *b.rng
}

// nodeCascade is the styles of one element, highest precedence first.
type nodeCascade struct {
	styles    []*cStyle
	inherited bool
	highlight bool            // of a highlight pseudo-element: every property inherits
	state     map[*cProp]bool // true: active, false: overloaded
	winners   map[string]*cProp
}

func (c *nodeCascade) compute(reg map[string]bool) {
	c.state = map[*cProp]bool{}
	c.winners = map[string]*cProp{}
	for i := len(c.styles) - 1; i >= 0; i-- {
		s := c.styles[i]
		if !s.matches {
			continue
		}
		for _, p := range s.props {
			if c.inherited {
				if c.highlight {
					if isCustomProperty(p.name) {
						continue
					}
				} else if !isInheritedCSS(p.name) {
					continue
				}
			}
			if s.rng != nil && !p.hasRange {
				continue
			}
			if !p.active {
				c.state[p] = false
				continue
			}
			if c.inherited {
				if inherits, ok := reg[p.name]; ok && !inherits {
					c.state[p] = false
					continue
				}
			}
			c.update(p, canonicalCSSName(p.name))
			for _, l := range p.longhands {
				if isCSSPropertyName(l.name) {
					c.update(l, l.name)
				}
			}
		}
	}
}

// update lets p, of higher precedence than what came before, win unless an
// !important declaration already does.
func (c *nodeCascade) update(p *cProp, name string) {
	cur := c.winners[name]
	if cur != nil && cur.important && !p.important {
		c.state[p] = false
		return
	}
	if cur != nil {
		c.state[cur] = false
	}
	c.state[p] = true
	c.winners[name] = p
}

// domCascade is an element's cascade and those of its ancestors, nearest
// first, or the same for one pseudo-element.
type domCascade struct {
	nodes []*nodeCascade
	state map[*cProp]bool
}

func newDOMCascade(nodes []*nodeCascade, reg map[string]bool) *domCascade {
	d := &domCascade{nodes: nodes, state: map[*cProp]bool{}}
	active := map[string]*cProp{}
	var order []string
	for _, n := range nodes {
		n.compute(reg)
		// Go maps have no order: walk the styles to visit the properties in
		// the order the front end's maps keep them.
		for _, p := range n.ordered() {
			win, ok := n.state[p]
			if !ok {
				continue
			}
			if !win {
				d.state[p] = false
				continue
			}
			name := canonicalCSSName(p.name)
			if active[name] != nil {
				d.state[p] = false
				continue
			}
			active[name] = p
			order = append(order, name)
			d.state[p] = true
		}
	}
	// A shorthand none of whose longhands wins from its own style loses.
	for _, name := range order {
		sh := active[name]
		if sh == nil || len(sh.longhands) == 0 {
			continue
		}
		own := false
		for _, l := range sh.longhands {
			if w := active[canonicalCSSName(l.name)]; w != nil && w.style == sh.style {
				own = true
				break
			}
		}
		if !own {
			delete(active, name)
			d.state[sh] = false
		}
	}
	return d
}

// ordered lists the properties whose state the cascade set, in the order
// they were first set: styles from lowest precedence up, each style's
// properties in order, longhands after their shorthand.
func (c *nodeCascade) ordered() []*cProp {
	var out []*cProp
	seen := map[*cProp]bool{}
	add := func(p *cProp) {
		if _, ok := c.state[p]; ok && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for i := len(c.styles) - 1; i >= 0; i-- {
		for _, p := range c.styles[i].props {
			add(p)
			for _, l := range p.longhands {
				add(l)
			}
		}
	}
	return out
}

// cleanUserAgentRules keeps only the selectors of user-agent rules that
// match, and merges consecutive user-agent rules whose selectors and media
// are then the same, as the front end does: Chrome splits one UA rule into
// several, and the Styles pane shows them as one.
func cleanUserAgentRules(rules []*mRuleMatch) []*mRuleMatch {
	var out []*mRuleMatch
	for _, rm := range rules {
		if rm.Rule == nil || rm.Rule.Style == nil || rm.Rule.SelectorList == nil {
			continue
		}
		r := *rm.Rule
		rm := &mRuleMatch{Rule: &r, MatchingSelectors: rm.MatchingSelectors}
		if r.Origin == css.StyleSheetOriginUserAgent && len(rm.MatchingSelectors) > 0 {
			var sel []*css.Value
			var texts []string
			for i, s := range r.SelectorList.Selectors {
				if slices.Contains(rm.MatchingSelectors, int64(i)) {
					sel = append(sel, s)
					texts = append(texts, s.Text)
				}
			}
			r.SelectorList = &css.SelectorList{Selectors: sel, Text: strings.Join(texts, ", ")}
			idx := make([]int64, len(sel))
			for i := range idx {
				idx[i] = int64(i)
			}
			rm.MatchingSelectors = idx
		}
		if n := len(out); n > 0 {
			last := out[n-1]
			if r.Origin == css.StyleSheetOriginUserAgent && last.Rule.Origin == css.StyleSheetOriginUserAgent &&
				r.SelectorList.Text == last.Rule.SelectorList.Text && mediaText(&r) == mediaText(last.Rule) {
				last.Rule.Style = mergeStyles(last.Rule.Style, r.Style)
				continue
			}
		}
		out = append(out, rm)
	}
	return out
}

func mediaText(r *mRule) string {
	if r.Media == nil {
		return "\x00" // no media, which differs from media with no text
	}
	var t []string
	for _, m := range r.Media {
		t = append(t, m.Text)
	}
	return strings.Join(t, ", ")
}

// mergeStyles merges the properties of from into to by name, keeping the
// first position and the last value: only names and values survive.
func mergeStyles(to, from *mStyle) *mStyle {
	merged := &mStyle{StyleSheetID: to.StyleSheetID}
	shIdx := map[string]int{}
	for _, list := range [][]*css.ShorthandEntry{to.ShorthandEntries, from.ShorthandEntries} {
		for _, e := range list {
			if i, ok := shIdx[e.Name]; ok {
				merged.ShorthandEntries[i] = &css.ShorthandEntry{Name: e.Name, Value: e.Value}
				continue
			}
			shIdx[e.Name] = len(merged.ShorthandEntries)
			merged.ShorthandEntries = append(merged.ShorthandEntries, &css.ShorthandEntry{Name: e.Name, Value: e.Value})
		}
	}
	idx := map[string]int{}
	for _, list := range [][]*mProperty{to.CSSProperties, from.CSSProperties} {
		for _, p := range list {
			if i, ok := idx[p.Name]; ok {
				merged.CSSProperties[i] = &mProperty{Name: p.Name, Value: p.Value}
				continue
			}
			idx[p.Name] = len(merged.CSSProperties)
			merged.CSSProperties = append(merged.CSSProperties, &mProperty{Name: p.Name, Value: p.Value})
		}
	}
	return merged
}

// cssBuild turns a payload into the answer.
type cssBuild struct {
	sheets map[string]*css.StyleSheetHeader
	nodes  []NodeRef
	tags   []string        // the local names of nodes
	reg    map[string]bool // registered custom properties: inherits
	state  map[*cStyle]*domCascade
	out    []*Rule
}

func build(m *MatchedStyles, sheets map[string]*css.StyleSheetHeader, nodes []NodeRef, tags []string, pseudos map[string]bool) *Styles {
	b := &cssBuild{sheets: sheets, nodes: nodes, tags: tags, reg: map[string]bool{}, state: map[*cStyle]*domCascade{}}
	for _, r := range m.CSSPropertyRules {
		if r.PropertyName != nil && r.Style != nil {
			b.reg[r.PropertyName.Text] = propertyRuleInherits(r.Style)
		}
	}
	for _, r := range m.CSSPropertyRegistrations {
		b.reg[r.PropertyName] = r.Inherits
	}
	main := b.mainCascade(m)
	b.nodeRules(main)
	b.pseudoRules(m, pseudos)
	b.keyframes(m)
	b.atRules(m)
	b.positionTry(m)
	b.registered(m)
	return &Styles{Element: nodes[0].Selector, Rules: b.out}
}

func propertyRuleInherits(s *mStyle) bool {
	for _, p := range s.CSSProperties {
		if p.Name == "inherits" {
			return strings.TrimSpace(p.Value) == "true"
		}
	}
	return false
}

func (b *cssBuild) ruleStyle(rm *mRuleMatch, node int) *cStyle {
	s := newStyle(rm.Rule.Style, rm.Rule, styleRegular)
	s.sheet = b.sheets[rm.Rule.StyleSheetID]
	s.node = node
	s.matches = ruleApplies(rm.Rule)
	return s
}

// ruleApplies reports whether a rule's conditions hold, as the front end
// checks them before letting a rule take part in the cascade.
func ruleApplies(r *mRule) bool {
	for _, m := range r.Media {
		if len(m.MediaList) == 0 {
			continue
		}
		if !slices.ContainsFunc(m.MediaList, func(q struct {
			Active bool `json:"active"`
		}) bool {
			return q.Active
		}) {
			return false
		}
	}
	for _, s := range r.Supports {
		if s.Active != nil && !*s.Active {
			return false
		}
	}
	return true
}

// mainCascade is the element's styles and what it inherits.
func (b *cssBuild) mainCascade(m *MatchedStyles) *domCascade {
	var own []*cStyle
	attributes := func() {
		if m.AttributesStyle != nil {
			own = append(own, newStyle(m.AttributesStyle, nil, styleAttributes))
		}
	}
	if m.InlineStyle != nil {
		own = append(own, newStyle(m.InlineStyle, nil, styleInline))
	}
	matched := cleanUserAgentRules(m.MatchedCSSRules)
	added := false
	for i := len(matched) - 1; i >= 0; i-- {
		o := matched[i].Rule.Origin
		if !added && (o == css.StyleSheetOriginUserAgent || o == css.StyleSheetOriginInjected) {
			added = true
			attributes()
		}
		own = append(own, b.ruleStyle(matched[i], 0))
	}
	if !added {
		attributes()
	}
	cascades := []*nodeCascade{{styles: own}}
	var all []*cStyle
	for i, e := range m.Inherited {
		node := i + 1
		if node >= len(b.nodes) {
			break
		}
		var styles []*cStyle
		if e.InlineStyle != nil {
			s := newStyle(e.InlineStyle, nil, styleInline)
			if s.containsInherited() {
				s.node, s.inherited = node, true
				styles = append(styles, s)
				all = append(all, s)
			}
		}
		rules := cleanUserAgentRules(e.MatchedCSSRules)
		for j := len(rules) - 1; j >= 0; j-- {
			s := b.ruleStyle(rules[j], node)
			if !s.containsInherited() {
				continue
			}
			if !s.containsCustom() && (slices.ContainsFunc(own, func(o *cStyle) bool { return sameSource(s, o) }) ||
				slices.ContainsFunc(all, func(o *cStyle) bool { return sameSource(s, o) })) {
				continue
			}
			s.inherited = true
			styles = append(styles, s)
			all = append(all, s)
		}
		cascades = append(cascades, &nodeCascade{styles: styles, inherited: true})
	}
	d := newDOMCascade(cascades, b.reg)
	for _, c := range cascades {
		for _, s := range c.styles {
			b.state[s] = d
		}
	}
	return d
}

// nodeRules adds the blocks of the element's own and inherited styles.
func (b *cssBuild) nodeRules(d *domCascade) {
	for _, c := range d.nodes {
		for _, s := range c.styles {
			props := s.leading
			if len(props) == 0 {
				continue
			}
			if s.inherited {
				props = b.inheritable(props, false)
				if len(props) == 0 {
					continue
				}
				r := &Rule{Kind: Inherited, Selector: b.styleSelector(s), From: b.nodeRef(s.node)}
				b.describe(r, s)
				r.Declarations = b.declarations(props)
				b.out = append(b.out, r)
				continue
			}
			r := &Rule{Selector: b.styleSelector(s)}
			switch s.typ {
			case styleInline:
				r.Kind = Inline
			case styleAttributes:
				r.Kind = Attributes
			default:
				r.Kind = Matched
				b.describe(r, s)
			}
			r.Declarations = b.declarations(props)
			b.out = append(b.out, r)
		}
	}
}

func (b *cssBuild) nodeRef(i int) *NodeRef {
	if i < 0 || i >= len(b.nodes) {
		return nil
	}
	n := b.nodes[i]
	return &n
}

// styleSelector heads a style's block.
func (b *cssBuild) styleSelector(s *cStyle) string {
	switch s.typ {
	case styleInline:
		return "element.style"
	case styleAttributes:
		if s.node < len(b.tags) {
			return b.tags[s.node] + "[attributes style]"
		}
		return "[attributes style]"
	}
	return selectorText(s.rule)
}

func selectorText(r *mRule) string {
	if r == nil || r.SelectorList == nil {
		return ""
	}
	var t []string
	for _, s := range r.SelectorList.Selectors {
		t = append(t, s.Text)
	}
	return strings.Join(t, ", ")
}

// inheritable keeps the properties an element can inherit.
func (b *cssBuild) inheritable(props []*cProp, highlight bool) []*cProp {
	var out []*cProp
	for _, p := range props {
		switch {
		case highlight:
			if !isCustomProperty(p.name) {
				out = append(out, p)
			}
		case isCustomProperty(p.name):
			if inherits, ok := b.reg[p.name]; !ok || inherits {
				out = append(out, p)
			}
		case isInheritedCSS(p.name):
			out = append(out, p)
		}
	}
	return out
}

// describe sets a rule's source and enclosing rules from its style's rule.
func (b *cssBuild) describe(r *Rule, s *cStyle) {
	if s.rule == nil {
		return
	}
	r.Source = sourceLocation(s.rule.Origin, s.sheet, lineOfSelector(s.rule))
	r.Ancestors = ancestors(s.rule)
}

// lineOfSelector is the 0-based line of a rule's first selector in its
// style sheet, or -1 when Chrome gave no range.
func lineOfSelector(r *mRule) int64 {
	if r.SelectorList == nil || len(r.SelectorList.Selectors) == 0 || r.SelectorList.Selectors[0].Range == nil {
		return -1
	}
	return r.SelectorList.Selectors[0].Range.StartLine
}

// sourceLocation writes where a rule is, as the Styles pane does: the file
// name and 1-based line ("index" for a page at a directory URL).
func sourceLocation(origin css.StyleSheetOrigin, sheet *css.StyleSheetHeader, line int64) string {
	switch origin {
	case css.StyleSheetOriginUserAgent:
		return "user agent stylesheet"
	case css.StyleSheetOriginInjected:
		return "injected stylesheet"
	case css.StyleSheetOriginInspector:
		return "via inspector"
	}
	if sheet == nil {
		return "<style>:1" // no header: the front end counts from line 0
	}
	if sheet.IsConstructed && sheet.SourceURL == "" {
		return "constructed stylesheet"
	}
	suffix := ":1"
	if line >= 0 {
		suffix = fmt.Sprintf(":%d", int64(sheet.StartLine)+line+1)
	}
	if sheet.SourceURL == "" {
		return "<style>" + suffix
	}
	return fileOfURL(sheet.SourceURL) + suffix
}

// fileOfURL is the last path component of a URL, "index" when it has none.
func fileOfURL(raw string) string {
	switch {
	case strings.HasPrefix(raw, "data:"):
		return "data-uri"
	case strings.HasPrefix(raw, "blob:"):
		return "blob"
	}
	path := raw
	if u, err := url.Parse(raw); err == nil {
		path = u.EscapedPath()
	} else {
		path, _, _ = strings.Cut(path, "?")
		path, _, _ = strings.Cut(path, "#")
	}
	if last := path[strings.LastIndex(path, "/")+1:]; last != "" {
		return last
	}
	return "index"
}

// ancestors lists the rules a rule is nested in, outermost first.
func ancestors(r *mRule) []Ancestor {
	var out []Ancestor
	var media, container, layer, scope, supports, nesting, navigation int
	next := func(list []*mText, i *int) *mText {
		if *i >= len(list) {
			*i++
			return nil
		}
		v := list[*i]
		*i++
		return v
	}
	for _, t := range r.RuleTypes {
		switch t {
		case css.RuleTypeMediaRule:
			if media < len(r.Media) && r.Media[media].Text != "" {
				out = append(out, Ancestor{Header: "@media " + r.Media[media].Text})
			}
			media++
		case css.RuleTypeContainerRule:
			if container < len(r.ContainerQueries) {
				q := r.ContainerQueries[container]
				name := ""
				if q.Name != "" && !strings.HasPrefix(q.Text, q.Name) {
					name = q.Name + " "
				}
				a := Ancestor{Header: "@container " + name + q.Text}
				if c := q.Container; c != nil {
					a.Comment = "container: " + c.Selector
					if c.UID != "" {
						a.Comment += fmt.Sprintf(" (uid: %q)", c.UID)
					}
				}
				out = append(out, a)
			}
			container++
		case css.RuleTypeLayerRule:
			// Chrome lists layers outermost first, unlike the other
			// conditions and ruleTypes (and its own documentation): the
			// front end pairs them the wrong way round and nests @layer a
			// { @layer b { … } } as b in a; pagemux does not copy that.
			if layer < len(r.Layers) {
				l := r.Layers[len(r.Layers)-1-layer]
				out = append(out, Ancestor{Header: strings.TrimSpace("@layer " + l.Text)})
			}
			layer++
		case css.RuleTypeScopeRule:
			if s := next(r.Scopes, &scope); s != nil {
				out = append(out, Ancestor{Header: strings.TrimSpace("@scope " + strings.TrimSpace(s.Text))})
			}
		case css.RuleTypeSupportsRule:
			if s := next(r.Supports, &supports); s != nil && s.Text != "" {
				out = append(out, Ancestor{Header: "@supports " + s.Text})
			}
		case css.RuleTypeStartingStyleRule:
			out = append(out, Ancestor{Header: "@starting-style"})
		case css.RuleTypeStyleRule:
			if nesting < len(r.NestingSelectors) && r.NestingSelectors[nesting] != "" {
				out = append(out, Ancestor{Header: r.NestingSelectors[nesting]})
			}
			nesting++
		case css.RuleTypeNavigationRule:
			if n := next(r.Navigations, &navigation); n != nil && n.Text != "" {
				out = append(out, Ancestor{Header: "@navigation " + n.Text})
			}
		}
	}
	slices.Reverse(out)
	return out
}

// declarations writes the properties with their cascade status.
func (b *cssBuild) declarations(props []*cProp) []Declaration {
	out := make([]Declaration, 0, len(props))
	for _, p := range props {
		d := Declaration{Name: p.name, Value: p.value, Important: p.important}
		switch {
		case !p.parsed:
			d.Status = "invalid"
		case p.disabled:
			d.Status = "disabled"
		default:
			if dc := b.state[p.style]; dc != nil {
				if win, ok := dc.state[p]; ok && !win {
					d.Status = "overloaded"
				}
			}
		}
		if p.important {
			d.Value = strings.TrimRight(importantSuffix.ReplaceAllString(d.Value, ""), " \t\n\r\f")
		}
		out = append(out, d)
	}
	return out
}

var importantSuffix = regexp.MustCompile(`(?i)\s*!\s*important$`)

var highlightName = regexp.MustCompile(`::highlight\((.*)\)`)

// pseudoRules adds the blocks of the element's pseudo-elements: custom
// highlights first, then the others in Chrome's order.
func (b *cssBuild) pseudoRules(m *MatchedStyles, exists map[string]bool) {
	type pseudoCascade struct {
		name   string
		nodes  []*nodeCascade
		isHigh bool
		custom bool
	}
	var list []*pseudoCascade
	find := func(name string, custom bool) *pseudoCascade {
		for _, c := range list {
			if c.name == name && c.custom == custom {
				return c
			}
		}
		c := &pseudoCascade{name: name, custom: custom, isHigh: custom || isHighlightPseudo(name)}
		list = append(list, c)
		return c
	}
	add := func(pm *mPseudoMatches, node int, inherited bool) {
		rules := pm.Matches
		if pm.PseudoType == "highlight" {
			byName := map[string][]*cStyle{}
			var names []string
			for j := len(rules) - 1; j >= 0; j-- {
				seen := map[string]bool{}
				for _, i := range rules[j].MatchingSelectors {
					if rules[j].Rule == nil || rules[j].Rule.SelectorList == nil || int(i) >= len(rules[j].Rule.SelectorList.Selectors) {
						continue
					}
					mm := highlightName.FindStringSubmatch(rules[j].Rule.SelectorList.Selectors[i].Text)
					if mm == nil || seen[mm[1]] {
						continue
					}
					seen[mm[1]] = true
					s := b.ruleStyle(rules[j], node)
					s.inherited = inherited
					if _, ok := byName[mm[1]]; !ok {
						names = append(names, mm[1])
					}
					byName[mm[1]] = append(byName[mm[1]], s)
				}
			}
			for _, n := range names {
				c := find(n, true)
				c.nodes = append(c.nodes, &nodeCascade{styles: byName[n], inherited: inherited, highlight: true})
			}
			return
		}
		var styles []*cStyle
		for j := len(rules) - 1; j >= 0; j-- {
			if rules[j].Rule == nil || rules[j].Rule.Style == nil {
				continue
			}
			s := b.ruleStyle(rules[j], node)
			s.inherited = inherited
			// The front end cascades a pseudo-element's rules only when the
			// DOM has that pseudo-element (or it is a highlight).
			if !inherited && !isHighlightPseudo(pm.PseudoType) && !exists[pm.PseudoType] {
				s.matches = false
			}
			styles = append(styles, s)
		}
		c := find(pm.PseudoType, false)
		c.nodes = append(c.nodes, &nodeCascade{styles: styles, inherited: inherited, highlight: isHighlightPseudo(pm.PseudoType)})
	}
	for _, pm := range m.PseudoElements {
		if pm.PseudoType != "highlight" {
			// A second entry of one type replaces the first in its place,
			// as in the front end's map.
			find(pm.PseudoType, false).nodes = nil
		}
		add(pm, 0, false)
	}
	for i, e := range m.InheritedPseudoElements {
		if i+1 >= len(b.nodes) {
			break
		}
		for _, pm := range e.PseudoElements {
			add(pm, i+1, true)
		}
	}
	emit := func(c *pseudoCascade, header string) {
		d := newDOMCascade(c.nodes, b.reg)
		for _, n := range c.nodes {
			for _, s := range n.styles {
				b.state[s] = d
			}
		}
		for _, n := range c.nodes {
			for _, s := range n.styles {
				props := s.leading
				if len(props) == 0 {
					continue
				}
				r := &Rule{Kind: Pseudo, Pseudo: header}
				if s.inherited {
					r.From = b.nodeRef(s.node)
					props = b.inheritable(props, c.isHigh)
					if len(props) == 0 {
						continue
					}
				}
				r.Selector = selectorText(s.rule)
				if r.Selector == "" {
					r.Selector = header
				}
				b.describe(r, s)
				r.Declarations = b.declarations(props)
				b.out = append(b.out, r)
			}
		}
	}
	for _, c := range list {
		if c.custom {
			emit(c, "::highlight("+c.name+")")
		}
	}
	for _, c := range list {
		if !c.custom {
			emit(c, "::"+c.name)
		}
	}
}

func isHighlightPseudo(t string) bool {
	switch t {
	case "highlight", "selection", "target-text", "grammar-error", "spelling-error":
		return true
	}
	return false
}

// keyframes adds the @keyframes rules of the element's animations.
func (b *cssBuild) keyframes(m *MatchedStyles) {
	for _, k := range m.CSSKeyframesRules {
		r := &Rule{Kind: Keyframes, Selector: "@keyframes " + valueText(k.AnimationName)}
		for _, f := range k.Keyframes {
			if f.Style == nil {
				continue
			}
			s := newStyle(f.Style, nil, styleRegular)
			if len(s.leading) == 0 {
				continue
			}
			if r.Source == "" {
				r.Source = b.styleSource(f.Origin, f.StyleSheetID, f.Style)
			}
			r.Keyframes = append(r.Keyframes, Keyframe{Key: valueText(f.KeyText), Declarations: b.declarations(s.leading)})
		}
		if len(r.Keyframes) > 0 {
			b.out = append(b.out, r)
		}
	}
}

// valueText is the text of v, "" when it is missing.
func valueText(v *css.Value) string {
	if v == nil {
		return ""
	}
	return v.Text
}

// styleSource locates a rule by the start of its declaration block, as the
// front end does for rules that are not style rules.
func (b *cssBuild) styleSource(origin css.StyleSheetOrigin, sheetID string, s *mStyle) string {
	sheet := b.sheets[sheetID]
	switch origin {
	case css.StyleSheetOriginUserAgent, css.StyleSheetOriginInjected, css.StyleSheetOriginInspector:
		return sourceLocation(origin, sheet, 0)
	}
	if sheet == nil || s.Range == nil {
		if sheet != nil && sheet.IsConstructed && sheet.SourceURL == "" {
			return "constructed stylesheet"
		}
		if sheet == nil || sheet.SourceURL == "" {
			return "<style>"
		}
		return fileOfURL(sheet.SourceURL)
	}
	return sourceLocation(origin, sheet, s.Range.StartLine)
}

// atRules adds other at-rules that affect the element.
func (b *cssBuild) atRules(m *MatchedStyles) {
	for _, a := range m.CSSAtRules {
		if a.Style == nil {
			continue
		}
		s := newStyle(a.Style, nil, styleRegular)
		if len(s.leading) == 0 {
			continue
		}
		name := valueText(a.Name)
		r := &Rule{Kind: AtRule, Source: b.styleSource(a.Origin, a.StyleSheetID, a.Style)}
		switch {
		case a.Subsection != "":
			r.Selector = "@" + a.Subsection
			r.Ancestors = []Ancestor{{Header: strings.TrimSpace("@" + a.Type + " " + name)}}
		case name != "":
			r.Selector = "@" + a.Type + " " + name
		default:
			r.Selector = "@" + a.Type
		}
		r.Declarations = b.declarations(s.leading)
		b.out = append(b.out, r)
	}
}

// positionTry adds the @position-try rules of the element.
func (b *cssBuild) positionTry(m *MatchedStyles) {
	for _, p := range m.CSSPositionTryRules {
		if p.Style == nil {
			continue
		}
		s := newStyle(p.Style, nil, styleRegular)
		if len(s.leading) == 0 {
			continue
		}
		b.out = append(b.out, &Rule{Kind: PositionTry, Selector: "@position-try " + valueText(p.Name), Inactive: !p.Active,
			Source: b.styleSource(p.Origin, p.StyleSheetID, p.Style), Declarations: b.declarations(s.leading)})
	}
}

// registered adds the @property rules and CSS.registerProperty
// registrations of the custom properties the element uses.
func (b *cssBuild) registered(m *MatchedStyles) {
	for _, p := range m.CSSPropertyRules {
		if p.Style == nil || p.PropertyName == nil {
			continue
		}
		s := newStyle(p.Style, nil, styleRegular)
		if len(s.leading) == 0 {
			continue
		}
		b.out = append(b.out, &Rule{Kind: PropertyRule, Selector: "@property " + p.PropertyName.Text,
			Source: b.styleSource(p.Origin, p.StyleSheetID, p.Style), Declarations: b.declarations(s.leading)})
	}
	for _, p := range m.CSSPropertyRegistrations {
		decl := []Declaration{{Name: "inherits", Value: strconv.FormatBool(p.Inherits)}, {Name: "syntax", Value: `"` + p.Syntax + `"`}}
		if p.InitialValue != nil {
			decl = append(decl, Declaration{Name: "initial-value", Value: p.InitialValue.Text})
		}
		b.out = append(b.out, &Rule{Kind: PropertyRule, Selector: "@property " + p.PropertyName, Source: "CSS.registerProperty", Declarations: decl})
	}
}

// SimpleSelector names an element as DevTools does: tag#id, tag.class,
// input[type="x"].
func SimpleSelector(n *cdp.Node) string {
	name := n.LocalName
	if name == "" {
		name = strings.ToLower(n.NodeName)
	}
	if n.NodeType != 1 { // not an element
		return name
	}
	attr := func(k string) (string, bool) {
		for i := 0; i+1 < len(n.Attributes); i += 2 {
			if n.Attributes[i] == k {
				return n.Attributes[i+1], true
			}
		}
		return "", false
	}
	typ, hasType := attr("type")
	id, _ := attr("id")
	class, _ := attr("class")
	if name == "input" && hasType && typ != "" && id == "" && class == "" {
		return name + `[type="` + cssEscape(typ) + `"]`
	}
	if id != "" {
		return name + "#" + cssEscape(id)
	}
	if strings.TrimSpace(class) != "" {
		var b strings.Builder
		if name != "div" {
			b.WriteString(name)
		}
		for _, c := range strings.Fields(class) {
			b.WriteString("." + cssEscape(c))
		}
		return b.String()
	}
	return name
}

// cssEscape is CSS.escape: it makes s an identifier.
func cssEscape(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		switch {
		case c == 0:
			b.WriteRune('\uFFFD')
		case c >= 1 && c <= 0x1f || c == 0x7f,
			i == 0 && c >= '0' && c <= '9',
			i == 1 && c >= '0' && c <= '9' && r[0] == '-':
			fmt.Fprintf(&b, `\%x `, c)
		case i == 0 && c == '-' && len(r) == 1:
			b.WriteString(`\-`)
		case c >= 0x80 || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			b.WriteRune(c)
		default:
			b.WriteString(`\` + string(c))
		}
	}
	return b.String()
}

// The metadata, parsed once from metadata.go.

type cssMetadata struct {
	known      map[string]bool
	inherited  map[string]bool
	longhands  map[string][]string
	shorthands map[string][]string
	aliases    map[string]string
}

var cssMeta = sync.OnceValue(func() *cssMetadata {
	m := &cssMetadata{known: map[string]bool{}, inherited: map[string]bool{}, longhands: map[string][]string{}, shorthands: map[string][]string{}, aliases: map[string]string{}}
	for _, n := range strings.Fields(cssKnownNames) {
		m.known[n] = true
	}
	for _, n := range strings.Fields(cssInheritedNames) {
		m.inherited[n] = true
	}
	for _, line := range strings.Split(strings.TrimSpace(cssShorthandLonghands), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		m.longhands[f[0]] = f[1:]
		for _, l := range f[1:] {
			m.shorthands[l] = append(m.shorthands[l], f[0])
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(cssAliases), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			m.aliases[f[0]] = f[1]
		}
	}
	return m
})

func isCustomProperty(name string) bool { return strings.HasPrefix(name, "--") }

// canonicalCSSName resolves aliases and -webkit- prefixes of known
// properties, as the front end does.
func canonicalCSSName(name string) string {
	if isCustomProperty(name) {
		return name
	}
	name = strings.ToLower(name)
	m := cssMeta()
	if a, ok := m.aliases[name]; ok {
		return a
	}
	if len(name) < 9 || name[0] != '-' {
		return name
	}
	if i := strings.Index(name, "-webkit-"); i >= 0 {
		if rest := name[i+len("-webkit-"):]; m.known[rest] {
			return rest
		}
	}
	return name
}

func isCSSPropertyName(name string) bool {
	name = strings.ToLower(name)
	if isCustomProperty(name) && len(name) > 2 {
		return true
	}
	for _, p := range []string{"-moz-", "-ms-", "-o-", "-webkit-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return cssMeta().known[name]
}

func isInheritedCSS(name string) bool {
	name = strings.ToLower(name)
	m := cssMeta()
	return isCustomProperty(name) || m.inherited[canonicalCSSName(name)] || m.inherited[name]
}
