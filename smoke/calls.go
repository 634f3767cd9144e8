package smoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/tools"
)

// agent calls pagemux's tools over MCP, as an agent would, and asks for
// their answers as data (tools.StructuredMeta): the same answers as the
// text, from the same queries, so that smoke reads no tool's text.
type agent struct{ c *client.Client }

// ToolError is a tool's answer with isError set: what an agent would be
// told, such as a navigation that timed out. Answer is its typed part,
// when the error has one (tools.NavigationFailure).
type ToolError struct {
	Tool   string
	Text   string
	Answer tools.Answer
}

func (e *ToolError) Error() string {
	return e.Tool + ": " + strings.TrimPrefix(strings.TrimSpace(e.Text), "Error: ")
}

// call runs one tool and returns its typed answer; a tool error is a
// *ToolError.
func (a *agent) call(ctx context.Context, tool string, args map[string]any) (tools.Answer, error) {
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args,
		Meta: &mcp.Meta{AdditionalFields: map[string]any{tools.StructuredMeta: true}}}}
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return tools.Answer{}, fmt.Errorf("%s: %w", tool, err)
	}
	var ans tools.Answer
	if len(res.RawStructuredContent) > 0 {
		if err := json.Unmarshal(res.RawStructuredContent, &ans); err != nil {
			return tools.Answer{}, fmt.Errorf("%s: its typed answer: %w", tool, err)
		}
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(mcp.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		return tools.Answer{}, &ToolError{Tool: tool, Text: b.String(), Answer: ans}
	}
	return ans, nil
}

// scriptValue runs evaluate_script with args and JSON-decodes its value
// into v.
func (a *agent) scriptValue(ctx context.Context, args map[string]any, v any) error {
	ans, err := a.call(ctx, "evaluate_script", args)
	if err != nil {
		return err
	}
	switch sr := ans.Script; {
	case sr == nil:
		return errors.New("evaluate_script: no value in its answer")
	case sr.Cut > 0:
		return fmt.Errorf("evaluate_script: the value is %d characters of JSON, too big to return", sr.Cut)
	case sr.Undefined:
		return errors.New("evaluate_script: the script returned undefined")
	}
	return json.Unmarshal(ans.Script.Value, v)
}
