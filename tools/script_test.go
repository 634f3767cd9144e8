package tools

import (
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
