// Package styles computes the answer of get_css_styles from the payload of
// CSS.getMatchedStylesForNode: the rules that style one element, in cascade
// order, each declaration marked with whether it wins, as the DevTools
// Styles pane computes it (chrome-devtools-mcp 1.11 runs that same
// front-end model, so its answers are the reference), and the text of that
// answer. Chrome gives the matched rules in order of precedence (origin,
// layer, specificity, order); which declaration wins is computed here, from
// that payload alone, the way the front end does: user-agent rules of one
// selector merged, shorthands expanded (the property metadata in
// metadata.go), !important, inheritance and custom properties.
//
// It sends no command and knows no page: browser/ asks Chrome for the
// payload, the style sheet headers and the element's ancestors, and finds
// the containers of container queries. It does not model shadow-tree
// cascade contexts nor animated styles, which chrome-devtools-mcp leaves out
// too.
package styles

import (
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
)

// Styles is what applies to one element, highest precedence first.
type Styles struct {
	// Element is the element's simple selector, as DevTools writes it:
	// button#target, div.card.wide, input[type="text"].
	Element string
	// Rules are the element's own styles, then the inherited ones, then
	// those of its pseudo-elements and the at-rules that affect it.
	Rules []*Rule
}

// RuleKind says what a Rule is.
type RuleKind int

const (
	Matched      RuleKind = iota // a style rule that matches the element
	Inline                       // the style attribute: element.style
	Attributes                   // presentational attributes (width=, bgcolor=)
	Inherited                    // a style of an ancestor the element inherits from
	Pseudo                       // a rule of one of the element's pseudo-elements
	Keyframes                    // an @keyframes rule its animations use
	AtRule                       // another at-rule, such as @font-palette-values
	PositionTry                  // an @position-try rule
	PropertyRule                 // an @property rule or a CSS.registerProperty call
)

// Rule is one block of the answer.
type Rule struct {
	Kind RuleKind
	// Selector heads the block: ".card", "element.style", "@keyframes spin".
	Selector string
	// Source is where the rule is written: "site.css:12", "index:40",
	// "user agent stylesheet"; empty for element.style.
	Source string
	// Ancestors are the rules the rule is nested in, outermost first.
	Ancestors []Ancestor
	// From is the ancestor element an inherited style belongs to, or the
	// element whose pseudo-element an inherited pseudo rule styles.
	From *NodeRef
	// Pseudo is the pseudo-element of a Pseudo rule: "::before".
	Pseudo string
	// Inactive marks an @position-try rule that is not the one in use.
	Inactive     bool
	Declarations []Declaration
	// Keyframes are the steps of a Keyframes rule.
	Keyframes []Keyframe
}

// Ancestor is an enclosing rule: "@media print", "@layer base".
type Ancestor struct {
	Header string
	// Comment is a note on the header, such as the container element of
	// an @container query.
	Comment string
}

// NodeRef names an element: its simple selector and, when the page's
// latest snapshot has it, its uid.
type NodeRef struct {
	Selector string
	UID      string
}

// Keyframe is one step of an @keyframes rule.
type Keyframe struct {
	Key          string
	Declarations []Declaration
}

// Declaration is one property of a rule.
type Declaration struct {
	Name, Value string
	Important   bool
	// Status is "" for a declaration that applies, else "overloaded" (it
	// loses the cascade), "invalid" (Chrome could not parse it) or
	// "disabled" (commented out).
	Status string
}

// Compute is the answer for the element chain[0], from m, the element's
// CSS.getMatchedStylesForNode, and sheets, the headers of the page's style
// sheets by id (CSS.enable announces them). chain is the element and its
// ancestors in the flat tree, as DOM.describeNode describes them: the order
// of m's inherited entries. uid gives the snapshot uid of a node, "" for
// none.
func Compute(m *MatchedStyles, sheets map[string]*css.StyleSheetHeader, chain []*cdp.Node, uid func(*cdp.Node) string) *Styles {
	refs := make([]NodeRef, len(chain))
	tags := make([]string, len(chain))
	for i, n := range chain {
		refs[i] = NodeRef{Selector: SimpleSelector(n), UID: uid(n)}
		tags[i] = n.LocalName
		if len(n.LocalName) != len(n.NodeName) {
			tags[i] = n.NodeName
		}
	}
	pseudos := map[string]bool{}
	for _, pe := range chain[0].PseudoElements {
		pseudos[string(pe.PseudoType)] = true
	}
	return build(m, sheets, refs, tags, pseudos)
}
