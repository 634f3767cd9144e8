package styles

import (
	"slices"

	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
)

// MatchedStyles is the result of CSS.getMatchedStylesForNode, decoded into
// types of this file where cdproto's lose what the front end reads:
// parsedOk, which Chrome sends only when false, and the text of a container
// query. Use it as the result type of the command; the caller sends it.
type MatchedStyles struct {
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

// ContainerQuery is an @container rule around a matched rule.
type ContainerQuery struct {
	Text               string           `json:"text"`
	Name               string           `json:"name"`
	PhysicalAxes       dom.PhysicalAxes `json:"physicalAxes"`
	LogicalAxes        dom.LogicalAxes  `json:"logicalAxes"`
	QueriesScrollState bool             `json:"queriesScrollState"`
	QueriesAnchored    bool             `json:"queriesAnchored"`
	// Container is the element the query is evaluated against, for the
	// element whose styles are asked for: the caller finds it
	// (DOM.getContainerForNode) before Compute.
	Container *NodeRef `json:"-"`
}

// The parts of MatchedStyles.
type (
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
		ContainerQueries []*ContainerQuery    `json:"containerQueries"`
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

// ContainerQueries lists, once each, the container queries around the rules
// that match the element, its ancestors and its pseudo-elements, whose
// Container the caller is to find.
func (m *MatchedStyles) ContainerQueries() []*ContainerQuery {
	var out []*ContainerQuery
	each := func(rules []*mRuleMatch) {
		for _, rm := range rules {
			if rm.Rule == nil {
				continue
			}
			for _, q := range rm.Rule.ContainerQueries {
				if !slices.Contains(out, q) {
					out = append(out, q)
				}
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
	return out
}

// SheetIDs lists the style sheets the payload's rules come from.
func (m *MatchedStyles) SheetIDs() []string {
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
