package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

func TestEvaluateScript(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	tests := []struct {
		fn, want string
	}{
		{"() => document.title", `"Harness Form"`},
		{"() => ({a: 1, b: [true, null]})", `{"a":1,"b":[true,null]}`},
		{"async () => { const r = await fetch('/api/data'); return r.json() }", `{"ok":true}`},
		{"() => undefined", "undefined"},
		{"() => 1/0", `"Infinity"`},
		{"() => document.getElementById('name')", "{}"},
	}
	for _, tt := range tests {
		if got := e.eval(t, id, tt.fn); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.fn, got, tt.want)
		}
	}
	text := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 2"})
	if text != "Script ran on page and returned:\n```json\n2\n```" {
		t.Errorf("answer shape:\n%s", text)
	}
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => { throw new Error('kaboom') }"}), "Error: kaboom")
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => {"}), "SyntaxError")
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "async () => { throw new TypeError('nope') }"}), "TypeError: nope")
	// A huge value is cut, with a note.
	huge := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 'x'.repeat(2000000)"})
	if len(huge) > 300<<10 || !strings.Contains(huge, "cut: the value is") {
		t.Errorf("huge value not cut: %d bytes", len(huge))
	}
}

// TestEvaluateSourceFormatStable: the script can come from a file, run as
// a classic script, and by default the call waits for the DOM to settle.
func TestEvaluateSourceFormatStable(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	dir, err := os.MkdirTemp("", "pagemux-source")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "title.js")
	if err := os.WriteFile(file, []byte("() => document.title"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustContain(t, e.ok(t, "evaluate_script", map[string]any{"pageId": id, "sourcePath": file}), `"Harness Form"`)
	mustContain(t, e.ok(t, "evaluate_script", map[string]any{"pageId": id, "format": "script", "function": "let x = 2;\nx * 21"}), "```json\n42\n```")
	mustContain(t, e.ok(t, "evaluate_script", map[string]any{"pageId": id, "format": "script", "function": "Promise.resolve('later')"}), `"later"`)
	mustContain(t, e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 'IDLE — ü'"}), `"IDLE — ü"`)
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 1", "sourcePath": file}), "not both")
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id}), "needs function")
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "format": "script", "function": "1", "args": []string{"1_1"}}), "takes no args")
	mustContain(t, e.fails(t, "evaluate_script", map[string]any{"pageId": id, "sourcePath": "/etc/hostname"}), "outside")
	// With waitForStableDom the call returns once the DOM is quiet: a change
	// the script scheduled has happened when it answers.
	e.ok(t, "evaluate_script", map[string]any{"pageId": id, "waitForStableDom": true,
		"function": "() => { setTimeout(() => document.body.dataset.late = 'yes', 20); return 0 }"})
	if got := e.eval(t, id, "() => document.body.dataset.late ?? 'no'"); got != `"yes"` {
		t.Errorf("after waitForStableDom the scheduled change is %s", got)
	}
	// By default it waits so when the script changed the DOM, so the page's
	// own reaction to the change is there too.
	e.ok(t, "evaluate_script", map[string]any{"pageId": id,
		"function": "() => { document.body.dataset.now = '1'; setTimeout(() => document.body.dataset.after = 'yes', 20); return 0 }"})
	if got := e.eval(t, id, "() => document.body.dataset.after ?? 'no'"); got != `"yes"` {
		t.Errorf("after a script that changed the DOM the follow-up change is %s", got)
	}
}

// TestUnescapeUnicode: Chrome's \uXXXX escapes become UTF-8; what JSON must
// escape stays escaped.
func TestUnescapeUnicode(t *testing.T) {
	tests := map[string]string{
		`"IDLE \u2014 \u00fc"`:              `"IDLE — ü"`,
		`{"a":"\ud83d\ude00","b":1}`:        `{"a":"😀","b":1}`,
		`"\u0022 \u005c \u0001 \n \\u00fc"`: `"\u0022 \u005c \u0001 \n \\u00fc"`,
		`"lone \ud83d x"`:                   `"lone \ud83d x"`,
		`[1,"\u00e9",{"\u00e9":true}]`:      `[1,"é",{"é":true}]`,
	}
	for in, want := range tests {
		if got := string(unescapeUnicode([]byte(in))); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}
