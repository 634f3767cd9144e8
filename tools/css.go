package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/pagemux/pagemux/browser"
)

func (s *Server) cssTools() []tool { return []tool{s.getCSSStyles()} }

type cssStylesArgs struct {
	pageArg
	UID      string `json:"uid" jsonschema:"The uid of the element on the page from the page content snapshot to inspect CSS styles for"`
	PageSize *int   `json:"pageSize,omitempty" jsonschema:"Maximum number of CSS rules to return per page. Defaults to 10."`
	PageIdx  *int   `json:"pageIdx,omitempty" jsonschema:"Page number to return (0-based). Defaults to 0 (the first page)."`
}

// defaultCSSPageSize is chrome-devtools-mcp's page of rules.
const defaultCSSPageSize = 10

func (s *Server) getCSSStyles() tool {
	t := newTool("get_css_styles", `Retrieve matched CSS rules, inline styles (element.style), inherited styles, custom properties, and cascade wrappers (@layer, @media, @container, @scope) for an element identified by its UID.
Rules are ordered from highest to lowest cascade precedence and include source line numbers (e.g. index:196). Active (winning) declarations have no prefix tag, while (losing) overridden declarations are prefixed with [overloaded].
Treat the output as authoritative and complete.
Results are paginated (10 rules per page by default); use pageIdx to page through the remaining rules. Requires a UID from take_snapshot.`,
		pageScope, func(ctx context.Context, c *call, a *cssStylesArgs) error {
			size, idx := defaultCSSPageSize, 0
			if a.PageSize != nil {
				size = *a.PageSize
			}
			if a.PageIdx != nil {
				idx = *a.PageIdx
			}
			if err := checkPaging(&size, &idx); err != nil {
				return err
			}
			styles, err := c.page.CSSStyles(ctx, a.UID)
			if err != nil {
				return err
			}
			rules, paging := pageCSSRules(styles.Rules, size, idx)
			for _, l := range paging {
				c.resp.say("%s", l)
			}
			c.resp.say("%s", formatCSSStyles(styles.Element, a.UID, rules))
			return nil
		})
	// zod's 2^53-1 maximum is left out, as for the other tools
	// (compat_test.go).
	patchSchema(&t, map[string]map[string]any{
		"pageSize": {"default": defaultCSSPageSize, "exclusiveMinimum": 0},
		"pageIdx":  {"default": 0, "minimum": 0},
	})
	return t
}

// pageCSSRules cuts the rules to one page, with the lines that say which,
// as chrome-devtools-mcp pages them (always: its defaults are set).
func pageCSSRules(rules []*browser.CSSRule, size, idx int) ([]*browser.CSSRule, []string) {
	if len(rules) == 0 {
		var lines []string
		if idx != 0 {
			lines = append(lines, "Invalid page number provided. Showing first page.")
		}
		return nil, append(lines, "Showing 0-0 of 0 (Page 1 of 1).")
	}
	return paginate(rules, &size, &idx)
}

// formatCSSStyles writes the rules as chrome-devtools-mcp does: a heading,
// then each rule after an empty line, two spaces of indent per level.
func formatCSSStyles(element, uid string, rules []*browser.CSSRule) string {
	var w cssWriter
	w.line(0, fmt.Sprintf("Styles for %s (uid: %q):", element, uid))
	if len(rules) == 0 {
		w.blank()
		w.line(1, "(no styles)")
		return w.String()
	}
	for _, r := range rules {
		w.blank()
		switch r.Kind {
		case browser.CSSInherited:
			w.line(1, "Inherited from "+nodeRef(r.From)+":")
			w.rule(2, r)
		case browser.CSSPseudo:
			from := ""
			if r.From != nil {
				from = " (inherited from " + r.From.Selector
				if r.From.UID != "" {
					from += fmt.Sprintf(", uid: %q", r.From.UID)
				}
				from += ")"
			}
			w.line(1, "/* Pseudo "+r.Pseudo+" element"+from+" */")
			w.rule(1, r)
		case browser.CSSKeyframes:
			w.line(1, ruleHeader(r)+" {")
			for _, k := range r.Keyframes {
				w.line(2, k.Key+" {")
				w.declarations(3, k.Declarations)
				w.line(2, "}")
			}
			w.line(1, "}")
		default:
			w.rule(1, r)
		}
	}
	return w.String()
}

func nodeRef(n *browser.CSSNodeRef) string {
	if n == nil {
		return ""
	}
	if n.UID == "" {
		return n.Selector
	}
	return fmt.Sprintf("%s (uid: %q)", n.Selector, n.UID)
}

// ruleHeader is a rule's selector and, when known, its source.
func ruleHeader(r *browser.CSSRule) string {
	sel := r.Selector
	if r.Kind == browser.CSSPositionTry && r.Inactive {
		sel = "[inactive] " + sel
	}
	if r.Source == "" {
		return sel
	}
	return sel + " (" + r.Source + ")"
}

type cssWriter struct{ lines []string }

func (w *cssWriter) line(level int, s string) {
	w.lines = append(w.lines, strings.Repeat("  ", level)+s)
}

func (w *cssWriter) blank() { w.lines = append(w.lines, "") }

// rule writes a rule inside its enclosing rules.
func (w *cssWriter) rule(level int, r *browser.CSSRule) {
	for _, a := range r.Ancestors {
		if a.Comment != "" {
			w.line(level, "/* "+a.Comment+" */")
		}
		w.line(level, a.Header+" {")
		level++
	}
	w.line(level, ruleHeader(r)+" {")
	w.declarations(level+1, r.Declarations)
	w.line(level, "}")
	for range r.Ancestors {
		level--
		w.line(level, "}")
	}
}

func (w *cssWriter) declarations(level int, decls []browser.CSSDeclaration) {
	for _, d := range decls {
		s := d.Name + ": " + d.Value
		if d.Important {
			s += " !important"
		}
		if d.Status != "" {
			s = "[" + d.Status + "] " + s
		}
		w.line(level, s+";")
	}
}

func (w *cssWriter) String() string { return strings.Join(w.lines, "\n") }
