package styles

import (
	"fmt"
	"strings"
)

// Format writes the answer of get_css_styles as chrome-devtools-mcp does: a
// heading that names element and the uid asked for, then each of rules (the
// page of them the agent asked for) after an empty line, two spaces of
// indent per level. It writes no paging lines.
func Format(element, uid string, rules []*Rule) string {
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
		case Inherited:
			w.line(1, "Inherited from "+nodeRef(r.From)+":")
			w.rule(2, r)
		case Pseudo:
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
		case Keyframes:
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

func nodeRef(n *NodeRef) string {
	if n == nil {
		return ""
	}
	if n.UID == "" {
		return n.Selector
	}
	return fmt.Sprintf("%s (uid: %q)", n.Selector, n.UID)
}

// ruleHeader is a rule's selector and, when known, its source.
func ruleHeader(r *Rule) string {
	sel := r.Selector
	if r.Kind == PositionTry && r.Inactive {
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
func (w *cssWriter) rule(level int, r *Rule) {
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

func (w *cssWriter) declarations(level int, decls []Declaration) {
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
