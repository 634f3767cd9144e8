package styles

import (
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
)

// These tests check the parts of get_css_styles that need no Chrome; the
// tools tests compare whole answers with chrome-devtools-mcp's on real pages.

func TestCSSEscape(t *testing.T) {
	for in, want := range map[string]string{
		"card": "card", "a b": `a\ b`, "1x": `\31 x`, "-1": `-\31 `, "-": `\-`, "é_-": "é_-", "a:b": `a\:b`,
	} {
		if got := cssEscape(in); got != want {
			t.Errorf("cssEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCSSFileOfURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8/css.html?open=3#x": "css.html",
		"http://127.0.0.1:8/":                  "index",
		"http://127.0.0.1:8":                   "index",
		"http://127.0.0.1:8/a/site.css":        "site.css",
		"data:text/css,p{}":                    "data-uri",
		"blob:http://127.0.0.1:8/1234":         "blob",
	} {
		if got := fileOfURL(in); got != want {
			t.Errorf("fileOfURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCSSSimpleSelector(t *testing.T) {
	el := func(name string, attrs ...string) *cdp.Node {
		return &cdp.Node{NodeType: 1, LocalName: name, NodeName: name, Attributes: attrs}
	}
	for _, c := range []struct {
		n    *cdp.Node
		want string
	}{
		{el("button", "id", "target", "class", "card"), "button#target"},
		{el("div", "class", " card  wide "), ".card.wide"},
		{el("p", "class", "x"), "p.x"},
		{el("input", "type", "text"), `input[type="text"]`},
		{el("input", "type", "text", "class", "f"), "input.f"},
		{el("html"), "html"},
	} {
		if got := SimpleSelector(c.n); got != c.want {
			t.Errorf("SimpleSelector(%v) = %q, want %q", c.n.Attributes, got, c.want)
		}
	}
}

func TestCSSMetadata(t *testing.T) {
	for name, want := range map[string]string{"-webkit-transform": "transform", "word-wrap": "overflow-wrap", "--x": "--x", "COLOR": "color"} {
		if got := canonicalCSSName(name); got != want {
			t.Errorf("canonicalCSSName(%q) = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]bool{"color": true, "font-family": true, "--any": true, "display": false, "margin": false} {
		if got := isInheritedCSS(name); got != want {
			t.Errorf("isInheritedCSS(%q) = %v, want %v", name, got, want)
		}
	}
	if got := cssMeta().longhands["margin"]; len(got) != 4 {
		t.Errorf("margin longhands %v", got)
	}
}

// The cascade: a later declaration of higher precedence wins unless an
// earlier one is !important, and an inherited value loses to the element's
// own.
func TestCSSCascade(t *testing.T) {
	prop := func(name, value string, important bool) *mProperty {
		return &mProperty{Name: name, Value: value, Important: important, Range: &css.SourceRange{StartLine: 1}}
	}
	rule := func(sel string, line int64, props ...*mProperty) *mRuleMatch {
		return &mRuleMatch{MatchingSelectors: []int64{0}, Rule: &mRule{
			StyleSheetID: "s", Origin: css.StyleSheetOriginRegular,
			SelectorList: &css.SelectorList{Text: sel, Selectors: []*css.Value{{Text: sel, Range: &css.SourceRange{StartLine: line}}}},
			Style:        &mStyle{StyleSheetID: "s", CSSText: "x", Range: &css.SourceRange{StartLine: line, EndLine: line + 1}, CSSProperties: props},
		}}
	}
	m := &MatchedStyles{
		// Chrome lists matched rules lowest precedence first.
		MatchedCSSRules: []*mRuleMatch{
			rule(".a", 0, prop("color", "red", true)),
			rule(".b", 1, prop("color", "blue", false), prop("margin", "0", false)),
		},
		Inherited: []*mInherited{{MatchedCSSRules: []*mRuleMatch{rule("body", 2, prop("color", "green", false), prop("display", "block", false))}}},
	}
	sheets := map[string]*css.StyleSheetHeader{"s": {StyleSheetID: "s", SourceURL: "http://h/site.css"}}
	got := build(m, sheets, []NodeRef{{Selector: "p"}, {Selector: "body", UID: "1_1"}}, []string{"p", "body"}, nil)
	want := []struct {
		kind  RuleKind
		sel   string
		src   string
		decls string
	}{
		{Matched, ".b", "site.css:2", "[overloaded] color: blue; margin: 0;"},
		{Matched, ".a", "site.css:1", "color: red !important;"},
		{Inherited, "body", "site.css:3", "[overloaded] color: green;"},
	}
	if len(got.Rules) != len(want) {
		t.Fatalf("%d rules, want %d: %+v", len(got.Rules), len(want), got.Rules)
	}
	for i, w := range want {
		r := got.Rules[i]
		decls := ""
		for _, d := range r.Declarations {
			if decls != "" {
				decls += " "
			}
			if d.Status != "" {
				decls += "[" + d.Status + "] "
			}
			decls += d.Name + ": " + d.Value
			if d.Important {
				decls += " !important"
			}
			decls += ";"
		}
		if r.Kind != w.kind || r.Selector != w.sel || r.Source != w.src || decls != w.decls {
			t.Errorf("rule %d: %v %q (%s) %s; want %v %q (%s) %s", i, r.Kind, r.Selector, r.Source, decls, w.kind, w.sel, w.src, w.decls)
		}
	}
	if from := got.Rules[2].From; from == nil || from.Selector != "body" || from.UID != "1_1" {
		t.Errorf("inherited from %+v", from)
	}
}
