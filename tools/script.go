package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pagemux/pagemux/browser"
)

// maxScriptResult bounds the JSON returned inline; a bigger value is cut
// with a note, so a huge result cannot flood the agent's context.
const maxScriptResult = 256 << 10

func (s *Server) scriptTools() []tool { return []tool{s.evaluateScript()} }

type evaluateArgs struct {
	pageArg
	Function     string   `json:"function" jsonschema:"A JavaScript function declaration to be executed by the tool in the currently selected page. Example without arguments: \"() => { return document.title }\" or \"async () => { return await fetch(\\\"example.com\\\") }\". Example with arguments: \"(el) => el.innerText\""`
	Args         []string `json:"args,omitempty" jsonschema:"An optional list of arguments (element uids from the page content snapshot) to pass to the function."`
	FilePath     string   `json:"filePath,omitempty" jsonschema:"The absolute or relative path to a file to save the script output to. If omitted, the output is returned inline."`
	DialogAction string   `json:"dialogAction,omitempty" jsonschema:"Handle dialogs while execution. \"accept\", \"dismiss\", or string for response of window.prompt. Defaults to accept."`
}

func (s *Server) evaluateScript() tool {
	return newTool("evaluate_script", "Evaluate a JavaScript function inside the currently selected page. Returns the response as JSON so returned values have to JSON-serializable.", false, pageScope,
		func(ctx context.Context, c *call, a *evaluateArgs) error {
			c.resp.reportNavigation = true
			if a.FilePath != "" {
				// Refuse a bad path before the script runs, not after.
				if _, err := s.files.output(a.FilePath); err != nil {
					return err
				}
			}
			v, err := c.page.Evaluate(ctx, a.Function, dialogAnswer(a.DialogAction), a.Args...)
			var se *browser.ScriptError
			if errors.As(err, &se) {
				return se
			}
			if err != nil {
				return err
			}
			if a.FilePath != "" {
				out := "undefined"
				if v != nil {
					out = string(v)
				}
				full, err := s.files.write(a.FilePath, []byte(out))
				if err != nil {
					return err
				}
				c.resp.say("Script ran on page. Output saved to %s.", full)
				return nil
			}
			c.resp.say("Script ran on page and returned:\n```json\n%s\n```", formatJSON(v))
			return nil
		})
}

// dialogAnswer turns dialogAction into the answer to dialogs a script opens.
func dialogAnswer(action string) *browser.DialogAnswer {
	switch action {
	case "", "accept":
		return &browser.DialogAnswer{Accept: true}
	case "dismiss":
		return &browser.DialogAnswer{}
	}
	return &browser.DialogAnswer{Accept: true, PromptText: action}
}

// formatJSON is the script's value as compact JSON, as JSON.stringify gives
// it, cut to maxScriptResult.
func formatJSON(v json.RawMessage) string {
	if v == nil {
		return "undefined"
	}
	if len(v) > maxScriptResult {
		return fmt.Sprintf("%s\n%s", v[:maxScriptResult], cutNote("value", len(v), maxScriptResult, "bytes", "return a smaller part of it, or pass filePath to save all of it"))
	}
	return string(v)
}
