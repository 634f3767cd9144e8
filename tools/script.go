package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pagemux/pagemux/browser"
)

// maxScriptResult bounds the JSON returned inline; a bigger value is cut
// with a note, so a huge result cannot flood the agent's context.
const maxScriptResult = 256 << 10

type evaluateArgs struct {
	pageArg
	Function string `json:"function" jsonschema:"A JavaScript function declaration to be executed by the tool in the currently selected page. Example without arguments: \"() => { return document.title }\" or \"async () => { return await fetch(\\\"example.com\\\") }\""`
}

func (s *Server) evaluateScript() tool {
	return newTool("evaluate_script", "Evaluate a JavaScript function inside the currently selected page. Returns the response as JSON so returned values have to JSON-serializable.", false, pageScope,
		func(ctx context.Context, c *call, a *evaluateArgs) error {
			v, err := c.page.Evaluate(ctx, a.Function)
			var se *browser.ScriptError
			if errors.As(err, &se) {
				return se
			}
			if err != nil && !isDialog(err) {
				return err
			}
			c.resp.say("Script ran on page and returned:\n```json\n%s\n```", formatJSON(v))
			return nil
		})
}

// formatJSON indents a script's value, cut to maxScriptResult.
func formatJSON(v json.RawMessage) string {
	if v == nil {
		return "undefined"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, v, "", "  "); err != nil {
		b.Reset()
		b.Write(v)
	}
	if b.Len() > maxScriptResult {
		return fmt.Sprintf("%s\n… (cut: the value is %d bytes; return a smaller part of it)", b.Bytes()[:maxScriptResult], b.Len())
	}
	return b.String()
}
