package tools

import (
	"context"

	"github.com/pagemux/pagemux/styles"
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
			st, err := c.page.CSSStyles(ctx, a.UID)
			if err != nil {
				return err
			}
			rules, paging := pageCSSRules(st.Rules, size, idx)
			for _, l := range paging {
				c.resp.say("%s", l)
			}
			c.resp.say("%s", styles.Format(st.Element, a.UID, rules))
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
func pageCSSRules(rules []*styles.Rule, size, idx int) ([]*styles.Rule, []string) {
	if len(rules) == 0 {
		var lines []string
		if idx != 0 {
			lines = append(lines, "Invalid page number provided. Showing first page.")
		}
		return nil, append(lines, "Showing 0-0 of 0 (Page 1 of 1).")
	}
	return paginate(rules, &size, &idx)
}
