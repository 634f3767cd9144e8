package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pagemux/pagemux/browser"
)

// maxScriptResult bounds the JSON returned inline; a bigger value is cut
// with a note, so a huge result cannot flood the agent's context.
const maxScriptResult = 256 << 10

func (s *Server) scriptTools() []tool { return []tool{s.evaluateScript()} }

type evaluateArgs struct {
	pageArg
	Function         string   `json:"function,omitempty" jsonschema:"JavaScript source to execute in the target page. Provide either this or sourcePath, but not both. The source is interpreted according to format. Example without arguments: () => document.title or async () => await fetch(\"example.com\"). Example with arguments: (el) => el.innerText"`
	SourcePath       string   `json:"sourcePath,omitempty" jsonschema:"The absolute or relative path to a JavaScript file on the MCP server's local filesystem. Provide either this or function, but not both."`
	Format           string   `json:"format,omitempty" jsonschema:"How to interpret the source. \"function\" treats it as a function declaration and supports args. \"script\" evaluates it as classic JavaScript and does not support args. Defaults to \"function\". ECMAScript modules are not supported."`
	Args             []string `json:"args,omitempty" jsonschema:"An optional list of arguments (element uids from the page content snapshot) to pass to the function."`
	FilePath         string   `json:"filePath,omitempty" jsonschema:"The absolute or relative path to a file to save the script output to. If omitted, the output is returned inline."`
	DialogAction     string   `json:"dialogAction,omitempty" jsonschema:"Handle dialogs while execution. \"accept\", \"dismiss\", or string for response of window.prompt. Defaults to accept."`
	WaitForStableDom *bool    `json:"waitForStableDom,omitempty" jsonschema:"Whether to wait for the DOM to settle. Pass false if the script only reads data. Defaults to true."`
}

// settleAfter says whether evaluate_script waits for the DOM to be quiet:
// always when waitForStableDom is true, never when it is false, and when it
// is not given (chrome-devtools-mcp's default is true) only if the script
// changed the DOM: a script that only reads answers at once, one that
// changed the page answers once the page has stopped changing.
func settleAfter(ctx context.Context, p *browser.Page, asked *bool, watched bool) bool {
	if asked != nil {
		return *asked
	}
	if !watched {
		return true
	}
	return p.DOMChanged(ctx)
}

// source returns the script to run, from function or sourcePath.
func (s *Server) source(ctx context.Context, a *evaluateArgs) (string, error) {
	switch {
	case a.Function != "" && a.SourcePath != "":
		return "", &argError{"give function or sourcePath, not both"}
	case a.SourcePath != "":
		b, err := s.files.read(ctx, "sourcePath", a.SourcePath, 0)
		if err != nil {
			return "", err
		}
		return string(b), nil
	case a.Function != "":
		return a.Function, nil
	}
	return "", &argError{"evaluate_script needs function (the JavaScript to run) or sourcePath (a file of it)"}
}

func (s *Server) evaluateScript() tool {
	return newTool("evaluate_script", "Evaluate a JavaScript function inside the currently selected page. Returns the response as JSON so returned values have to JSON-serializable.", pageScope,
		func(ctx context.Context, c *call, a *evaluateArgs) error {
			c.resp.reportNavigation = true
			if a.FilePath != "" {
				// Refuse a bad path before the script runs, not after.
				if _, err := s.files.output(ctx, a.FilePath); err != nil {
					return err
				}
			}
			src, err := s.source(ctx, a)
			if err != nil {
				return err
			}
			if a.Format == "script" && len(a.Args) > 0 {
				return &argError{`format "script" runs classic JavaScript, which takes no args; use format "function" to pass elements`}
			}
			mark := c.page.NavMark()
			watch := a.WaitForStableDom == nil && c.page.WatchDOM(ctx) == nil
			var v json.RawMessage
			var cut *pageCut
			if a.FilePath == "" {
				cut = newPageCut(s.scriptLimit())
			}
			if a.Format == "script" {
				v, err = c.page.EvaluateClassic(ctx, src, dialogAnswer(a.DialogAction), cut.onThis())
			} else {
				v, err = c.page.Evaluate(ctx, cut.wrap(src), dialogAnswer(a.DialogAction), a.Args...)
			}
			if err == nil && settleAfter(ctx, c.page, a.WaitForStableDom, watch) {
				err = c.page.Settle(ctx, mark)
			}
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
				full, err := s.files.write(ctx, a.FilePath, []byte(out))
				if err != nil {
					return err
				}
				c.resp.say("Script ran on page. Output saved to %s.", full)
				c.resp.answer.Script = &ScriptResult{SavedTo: full}
				return nil
			}
			if head, total, ok := cut.read(v); ok {
				c.resp.say("Script ran on page and returned:\n```json\n%s\n%s\n```", unescapeUnicode(head),
					cutNote("value", total, cut.limit, "characters of JSON", "return a smaller part of it, or pass filePath to save all of it"))
				c.resp.answer.Script = &ScriptResult{Cut: total}
				return nil
			}
			c.resp.say("Script ran on page and returned:\n```json\n%s\n```", formatJSON(v))
			c.resp.answer.Script = scriptResult(v)
			return nil
		})
}

// scriptLimit is how many characters of a script's JSON may cross from the
// page: maxScriptResult, or nine tenths of --max-output if that is less, so
// that the result with its note still fits --max-output, cut once.
func (s *Server) scriptLimit() int {
	if s.maxOutput > 0 {
		return max(min(s.maxOutput*9/10, maxScriptResult), 1)
	}
	return maxScriptResult
}

// pageCut cuts a script's value inside the page, before it crosses CDP, so
// that a huge value costs pagemux nothing: a value whose JSON (as
// JSON.stringify writes it) is longer than limit comes back as the first
// limit characters of that JSON and its length, marked with a key of this
// call's own. A smaller value, or one JSON.stringify cannot write (cycles,
// BigInt), comes back as it is, as Chrome serializes it. A nil pageCut
// wraps and reads nothing.
type pageCut struct {
	limit int
	key   string
}

func newPageCut(limit int) *pageCut {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &pageCut{limit: limit, key: "pagemuxCut" + hex.EncodeToString(b)}
}

// wrap returns fn (a function's source) wrapped so that its value, or the
// value its promise resolves to, is cut as pageCut says. The wrapper is on
// the first line, so the lines of fn's errors keep their numbers, and fn is
// compiled where it was, in the global scope. A nil pageCut returns fn.
func (pc *pageCut) wrap(fn string) string {
	if pc == nil {
		return fn
	}
	fn = strings.TrimRight(strings.TrimSpace(fn), ";")
	return fmt.Sprintf("(f => function (...args) { const cut = %s; "+
		"const v = f.apply(this, args); return v instanceof Promise ? v.then(cut) : cut(v); })(%s\n)", pc.cutter(), fn)
}

// onThis returns a function declaration that gives its this cut as
// pageCut says, for the completion value of a classic script; "" for a nil
// pageCut.
func (pc *pageCut) onThis() string {
	if pc == nil {
		return ""
	}
	return fmt.Sprintf("function () { return (%s)(this); }", pc.cutter())
}

// cutter is the arrow function that cuts one value.
func (pc *pageCut) cutter() string {
	return fmt.Sprintf("v => { let s; try { s = JSON.stringify(v); } catch { return v; } "+
		"if (typeof s !== 'string' || s.length <= %d) return v; return {%q: true, head: s.slice(0, %d), length: s.length}; }", pc.limit, pc.key, pc.limit)
}

// read returns the head of a value the page cut, and the length of its
// whole JSON; ok is false for a value that was not cut.
func (pc *pageCut) read(v json.RawMessage) (head []byte, total int, ok bool) {
	if pc == nil || !bytes.Contains(v, []byte(pc.key)) {
		return nil, 0, false
	}
	var cut struct {
		Head   string `json:"head"`
		Length int    `json:"length"`
	}
	var marked map[string]json.RawMessage
	if json.Unmarshal(v, &marked) != nil || string(marked[pc.key]) != "true" || json.Unmarshal(v, &cut) != nil {
		return nil, 0, false
	}
	return []byte(cut.Head), cut.Length, true
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

// scriptResult is a value returned whole as data: its JSON, as formatJSON
// shows it, unless formatJSON cuts it.
func scriptResult(v json.RawMessage) *ScriptResult {
	switch {
	case v == nil:
		return &ScriptResult{Undefined: true}
	case len(v) > maxScriptResult:
		return &ScriptResult{Cut: len(v)}
	}
	return &ScriptResult{Value: v}
}

// formatJSON is the script's value as compact JSON, as JSON.stringify gives
// it, cut to maxScriptResult.
func formatJSON(v json.RawMessage) string {
	if v == nil {
		return "undefined"
	}
	v = unescapeUnicode(v)
	if len(v) > maxScriptResult {
		return fmt.Sprintf("%s\n%s", v[:maxScriptResult], cutNote("value", len(v), maxScriptResult, "bytes", "return a smaller part of it, or pass filePath to save all of it"))
	}
	return string(v)
}

// unescapeUnicode writes the \uXXXX escapes Chrome puts in JSON strings as
// the UTF-8 they stand for, as JSON.stringify prints them: "IDLE — …", not
// "IDLE \u2014 …". Escapes JSON requires (quotes, backslashes, control
// characters) and lone surrogates stay as they are.
func unescapeUnicode(v []byte) []byte {
	if !bytes.Contains(v, []byte(`\u`)) {
		return v
	}
	out := make([]byte, 0, len(v))
	inString := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(v):
			if v[i+1] == 'u' {
				if r, n := decodeEscape(v[i:]); n > 0 {
					out = utf8.AppendRune(out, r)
					i += n - 1
					continue
				}
			}
			out = append(out, c, v[i+1]) // any other escape, kept whole
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

// decodeEscape reads a \uXXXX escape, or a surrogate pair of two, at the
// start of b, and returns its rune and length; n is 0 for escapes that
// must stay.
func decodeEscape(b []byte) (r rune, n int) {
	hex := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		x, err := strconv.ParseUint(string(b[2:6]), 16, 16)
		return rune(x), err == nil
	}
	r, ok := hex(b)
	switch {
	case !ok || r < 0x20 || r == '"' || r == '\\':
		return 0, 0
	case utf16.IsSurrogate(r):
		lo, ok := hex(b[6:])
		if !ok {
			return 0, 0
		}
		if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
			return pair, 12
		}
		return 0, 0
	}
	return r, 6
}
