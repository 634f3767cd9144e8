package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

// value reads the value of the element with the id on a page.
func (e *testEnv) value(t *testing.T, page int, id string) string {
	t.Helper()
	return e.eval(t, page, "() => { const el = document.getElementById('"+id+"'); return el.type === 'checkbox' ? String(el.checked) : el.value }")
}

func TestFillForm(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			id := e.openPage(t, "/fillform.html")
			snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
			user, plan, remember := uidIn(t, snap, `textbox "User"`), uidIn(t, snap, `combobox "Plan"`), uidIn(t, snap, `checkbox "Remember me"`)
			pass := uidIn(t, snap, `textbox "Password"`)

			text := e.ok(t, "fill_form", map[string]any{"pageId": id, "elements": []map[string]any{
				{"uid": user, "value": "ada"},
				{"uid": pass, "value": "s3cret"},
				{"uid": plan, "value": "Pro plan"},
				{"uid": remember, "value": "true"},
			}})
			if text != "Successfully filled out the form" {
				t.Fatalf("answer:\n%s", text)
			}
			for field, want := range map[string]string{"user": `"ada"`, "pass": `"s3cret"`, "plan": `"pro"`, "remember": `"true"`} {
				if got := e.value(t, id, field); got != want {
					t.Errorf("%s = %s, want %s", field, got, want)
				}
			}

			// includeSnapshot shows the filled values.
			text = e.ok(t, "fill_form", map[string]any{"pageId": id, "includeSnapshot": true, "elements": []map[string]any{{"uid": user, "value": "grace"}}})
			mustContain(t, text, "Successfully filled out the form\n## Latest page snapshot", `value="grace"`)

			// An unknown uid anywhere changes nothing.
			msg := e.fails(t, "fill_form", map[string]any{"pageId": id, "elements": []map[string]any{
				{"uid": user, "value": "changed"},
				{"uid": "99_99", "value": "x"},
			}})
			mustContain(t, msg, "99_99", "take a new snapshot", "no element was filled")
			if got := e.value(t, id, "user"); got != `"grace"` {
				t.Errorf("a failed fill_form changed the form: user = %s", got)
			}
			// A value the element cannot take names the element.
			msg = e.fails(t, "fill_form", map[string]any{"pageId": id, "elements": []map[string]any{
				{"uid": user, "value": "first"},
				{"uid": plan, "value": "Enterprise"},
			}})
			mustContain(t, msg, "uid "+plan, `no option "Enterprise"`, "the elements before it were filled")
			// Bad input.
			mustContain(t, e.fails(t, "fill_form", map[string]any{"pageId": id, "elements": []map[string]any{}}), "at least one element")
			mustContain(t, e.fails(t, "fill_form", map[string]any{"pageId": id, "elements": []map[string]any{{"value": "x"}}}), `missing key "uid" in argument "elements[0]" of fill_form`)
			mustContain(t, e.fails(t, "fill_form", map[string]any{"pageId": id}), `missing required argument "elements"`)
		})
	}
}

// A field that opens a dialog stops fill_form there, as in
// chrome-devtools-mcp, and the dialog is reported.
func TestFillFormDialog(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/fillform.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	user, trap, after := uidIn(t, snap, `textbox "User"`), uidIn(t, snap, `textbox "Trap"`), uidIn(t, snap, `textbox "After"`)

	text := e.ok(t, "fill_form", map[string]any{"pageId": id, "elements": []map[string]any{
		{"uid": user, "value": "ada"},
		{"uid": trap, "value": "t"},
		{"uid": after, "value": "never"},
	}})
	mustContain(t, text,
		"Filling out the element with uid "+trap+" opened a dialog. The remaining elements were not filled out.",
		"# Open dialog\nalert: trapped t.\nCall handle_dialog")
	e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "accept"})
	if got := e.value(t, id, "after"); got != `""` {
		t.Errorf("the element after the dialog was filled: %s", got)
	}
	if got := e.value(t, id, "user"); got != `"ada"` {
		t.Errorf("the element before the dialog was not filled: %s", got)
	}

	// The last element opening the dialog has no remaining ones.
	text = e.ok(t, "fill_form", map[string]any{"pageId": id, "elements": []map[string]any{{"uid": trap, "value": "u"}}})
	mustContain(t, text, "Filling out the element with uid "+trap+" opened a dialog.\n# Open dialog")
	if strings.Contains(text, "remaining") {
		t.Errorf("no element remained:\n%s", text)
	}
	e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "dismiss"})
}

func TestDrag(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			id := e.openPage(t, "/drag.html")
			snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
			card, zone := uidIn(t, snap, `button "Card"`), uidIn(t, snap, `region "Drop zone"`)
			box, target := uidIn(t, snap, `button "Box"`), uidIn(t, snap, `region "Mouse target"`)

			// HTML5 drag and drop: the drop sees the data of the drag.
			text := e.ok(t, "drag", map[string]any{"pageId": id, "from_uid": card, "to_uid": zone})
			if text != "Successfully dragged an element" {
				t.Fatalf("answer:\n%s", text)
			}
			if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"dropped card-1"` {
				t.Fatalf("HTML5 drop: %s", got)
			}
			// A page that follows the mouse gets press, moves and release.
			text = e.ok(t, "drag", map[string]any{"pageId": id, "from_uid": box, "to_uid": target, "includeSnapshot": true})
			mustContain(t, text, "Successfully dragged an element\n## Latest page snapshot", "mouse dropped after moves")

			msg := e.fails(t, "drag", map[string]any{"pageId": id, "from_uid": card, "to_uid": "42_42"})
			mustContain(t, msg, "42_42", "take a new snapshot")
			mustContain(t, e.fails(t, "drag", map[string]any{"pageId": id, "from_uid": card}), `missing required argument "to_uid"`)
		})
	}
}

func TestUploadFile(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			dir := t.TempDir() // inside the OS temp dir, an allowed root
			a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
			os.WriteFile(a, []byte("alpha"), 0o644)
			os.WriteFile(b, []byte("beta"), 0o644)
			id := e.openPage(t, "/upload.html")
			snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
			single, many := uidIn(t, snap, "Single file"), uidIn(t, snap, "Many files")
			choose, nothing := uidIn(t, snap, `button "Choose file"`), uidIn(t, snap, `button "Does nothing"`)
			shows := func(want string) {
				t.Helper()
				e.ok(t, "wait_for", map[string]any{"pageId": id, "text": []string{want}, "timeout": 5000})
			}

			text := e.ok(t, "upload_file", map[string]any{"pageId": id, "uid": single, "filePaths": []string{a}})
			if text != "File uploaded from "+a+"." {
				t.Fatalf("answer:\n%s", text)
			}
			shows("single: a.txt=alpha")

			e.ok(t, "upload_file", map[string]any{"pageId": id, "uid": many, "filePaths": []string{a, b}})
			shows("many: a.txt=alpha, b.txt=beta")

			// A button that opens the chooser of a hidden input.
			text = e.ok(t, "upload_file", map[string]any{"pageId": id, "uid": choose, "filePaths": []string{b}, "includeSnapshot": true})
			mustContain(t, text, "File uploaded from "+b+".\n## Latest page snapshot")
			shows("hidden: b.txt=beta")

			tests := []struct {
				name  string
				args  map[string]any
				wants []string
			}{
				{"outside the workspace", map[string]any{"uid": single, "filePaths": []string{"/etc/hostname"}},
					[]string{`"/etc/hostname" is outside the allowed roots`, os.TempDir()}},
				{"missing file", map[string]any{"uid": single, "filePaths": []string{filepath.Join(dir, "nope.txt")}},
					[]string{"cannot read", "nope.txt"}},
				{"a directory", map[string]any{"uid": single, "filePaths": []string{dir}},
					[]string{"is a directory"}},
				{"two files for one", map[string]any{"uid": single, "filePaths": []string{a, b}},
					[]string{"takes one file", "upload one file"}},
				{"no files", map[string]any{"uid": single, "filePaths": []string{}},
					[]string{`invalid argument "filePaths" for upload_file: want at least 1 item(s), got 0`}},
				{"unknown uid", map[string]any{"uid": "77_77", "filePaths": []string{a}},
					[]string{"77_77", "take a new snapshot"}},
				{"no chooser", map[string]any{"uid": nothing, "filePaths": []string{a}},
					[]string{"uid " + nothing + " is not a file input", "opened no file chooser", "give the uid of the file input"}},
			}
			for _, tt := range tests {
				tt.args["pageId"] = id
				mustContain(t, e.fails(t, "upload_file", tt.args), tt.wants...)
			}
			// The failed chooser left no interception behind: the button
			// that opens one still works.
			e.ok(t, "upload_file", map[string]any{"pageId": id, "uid": choose, "filePaths": []string{a}})
			shows("hidden: a.txt=alpha")
		})
	}
}
