package tools

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
)

// TestArgumentValidation: every tool checks its arguments against its own
// schema before it waits for anything: unknown and miscased keys are
// errors that list the valid ones, 1.0 is an integer and 1.5 is not, and
// the call acts on nothing.
func TestArgumentValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}}) // its own: it relies on the selection
	page := e.openPage(t, "/form.html")
	other := e.openPage(t, "/page2.html")
	e.ok(t, "select_page", map[string]any{"pageId": other})
	tests := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"evaluate_script", map[string]any{"pageID": page, "function": "() => location.pathname"},
			[]string{`unrecognized argument "pageID" for evaluate_script`, "valid arguments are", "pageId", "case-sensitive"}},
		{"evaluate_script", map[string]any{"function": "() => 1", "FUNCTION": "() => 2", "pageId": page},
			[]string{`unrecognized argument "FUNCTION"`}},
		{"new_page", map[string]any{"Url": "about:blank"}, []string{`unrecognized argument "Url"`, `missing required argument "url"`}},
		{"evaluate_script", map[string]any{"pageId": 1.5, "function": "() => 1"}, []string{`invalid argument "pageId" for evaluate_script: want an integer, got number`}},
		{"evaluate_script", map[string]any{"pageId": 0, "function": "() => 1"}, []string{"invalid pageId 0: want a page id from list_pages"}},
		// An integer too big for a page id is no page id, not the selected page.
		{"evaluate_script", map[string]any{"pageId": 1e20, "function": "() => 1"}, []string{"invalid pageId 1e+20"}},
		{"navigate_page", map[string]any{"pageId": page, "type": "sideways"}, []string{`invalid argument "type" for navigate_page: want one of "url", "back", "forward", "reload", got "sideways"`}},
		{"click", map[string]any{"pageId": page}, []string{`missing required argument "uid" for click`}},
		{"fill_form", map[string]any{"pageId": page, "elements": []any{map[string]any{"uid": "1_1", "value": "x", "extra": 1}}},
			[]string{`unrecognized key "extra" in argument "elements[0]" of fill_form`}},
	}
	for _, tt := range tests {
		mustContain(t, e.fails(t, tt.tool, tt.args), tt.want...)
	}
	// 1.0 is the integer 1, as JSON Schema says; the call works.
	if got := e.eval(t, 0, "() => 1"); got != "1" {
		t.Fatal(got)
	}
	res, err := e.client.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "evaluate_script",
		Arguments: json.RawMessage(fmt.Sprintf(`{"pageId": %d.0, "function": "() => location.pathname"}`, page))}})
	if err != nil || res.IsError {
		t.Fatalf("pageId %d.0: %v %+v", page, err, res)
	}
	mustContain(t, mcptest.Text(res), "/form.html")
	// An explicit null is an argument left out.
	mustContain(t, e.ok(t, "evaluate_script", map[string]any{"pageId": page, "function": "() => 'null ok'", "args": nil}), "null ok")
	// None of the bad calls touched the pages: the selection is still other.
	mustContain(t, e.ok(t, "list_pages", nil), "[selected]")
	if got := e.eval(t, 0, "() => location.pathname"); got != `"/page2.html"` {
		t.Errorf("the selected page is %s", got)
	}
}
