package tools

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

func TestClickFillSubmit(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, e.ok(t, "fill", map[string]any{"pageId": id, "uid": uidIn(t, snap, `textbox "Name"`), "value": "Ada"}), "Successfully filled out the element")
	// Filling again replaces the value.
	e.ok(t, "fill", map[string]any{"pageId": id, "uid": uidIn(t, snap, `textbox "Name"`), "value": "Ada Lovelace"})
	// A select takes an option by value or by its label.
	e.ok(t, "fill", map[string]any{"pageId": id, "uid": uidIn(t, snap, `combobox "Color"`), "value": "Blue sky"})
	text := e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Submit"`), "includeSnapshot": true})
	mustContain(t, text, "Successfully clicked on the element", "## Latest page snapshot", "submitted Ada Lovelace blue")
	mustContain(t, e.fails(t, "fill", map[string]any{"pageId": id, "uid": uidIn(t, snap, `combobox "Color"`), "value": "purple"}), `no option "purple"`)

	e.ok(t, "fill", map[string]any{"pageId": id, "uid": uidIn(t, snap, `checkbox "Agree"`), "value": "true"})
	if got := e.eval(t, id, "() => document.getElementById('agree').checked"); got != "true" {
		t.Fatalf("checkbox checked = %s", got)
	}
}

func TestClickSettles(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	// A fetch started by the click has changed the DOM when click returns.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Fetch"`)})
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"fetched true"` {
		t.Fatalf("after click the DOM shows %s, want the fetched result", got)
	}
	// So is one that takes longer than the quiet window (50 ms): the click
	// waits for the requests it sent (up to 2 s), then for a quiet DOM.
	e.eval(t, id, `() => { const b = document.createElement('button'); b.textContent = 'Load late';
		b.onclick = () => fetch('/slow?ms=300').then(r => r.text()).then(() => { document.getElementById('out').textContent = 'loaded late'; });
		document.body.append(b); return 1 }`)
	late := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, late, `button "Load late"`)})
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"loaded late"` {
		t.Fatalf("after a click whose fetch takes 300 ms the DOM shows %s, want its result", got)
	}
	snap = late
	// A navigation by script is waited for.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Go by script"`)})
	if got := e.eval(t, id, "() => document.title"); got != `"Page Two"` {
		t.Fatalf("after a click that navigates the title is %s", got)
	}
	// uids of the old document are void now.
	mustContain(t, e.fails(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Submit"`)}), "from before the page navigated")
}

func TestDoubleClickAndHover(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	mustContain(t, e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Double me"`), "dblClick": true}), "Successfully double clicked")
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"double clicked"` {
		t.Fatalf("out = %s", got)
	}
	mustContain(t, e.ok(t, "hover", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Hover me"`)}), "Successfully hovered over the element")
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"hovered"` {
		t.Fatalf("out = %s", got)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `textbox "Keys"`)})
	mustContain(t, e.ok(t, "press_key", map[string]any{"pageId": id, "key": "Control+Shift+Y"}), "Successfully pressed key: Control+Shift+Y")
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"key Control+Shift+Y"` {
		t.Fatalf("out = %s", got)
	}
	e.ok(t, "type_text", map[string]any{"pageId": id, "text": "hi there"})
	if got := e.eval(t, id, "() => document.getElementById('keys').value"); got != `"hi there"` {
		t.Fatalf("typed value = %s", got)
	}
	mustContain(t, e.fails(t, "press_key", map[string]any{"pageId": id, "key": "Hyper+Q"}), `"Hyper" is not a modifier`)
	mustContain(t, e.fails(t, "press_key", map[string]any{"pageId": id, "key": "Frobnicate"}), `unknown key "Frobnicate"`)

	// Type into the name field and submit the form with Enter.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `textbox "Name"`)})
	e.ok(t, "type_text", map[string]any{"pageId": id, "text": "Bo", "submitKey": "Enter"})
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"submitted Bo red"` {
		t.Fatalf("out = %s", got)
	}
}

func TestDialogs(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})

	text := e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Alert"`)})
	if text != "The element was clicked and it opened a dialog.\n# Open dialog\nalert: boom.\nCall handle_dialog to handle it before continuing." {
		t.Fatalf("click that opened a dialog:\n%s", text)
	}
	// Other calls on the page fail with the dialog, and do not hang.
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"take_snapshot", map[string]any{"pageId": id}},
		{"click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Submit"`)}},
		{"evaluate_script", map[string]any{"pageId": id, "function": "() => 1"}},
		{"take_screenshot", map[string]any{"pageId": id}},
	} {
		mustContain(t, e.fails(t, call.name, call.args), "# Open dialog\nalert: boom.", "Error: A dialog is open (alert: boom)")
	}
	mustContain(t, e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "accept"}), "Successfully accepted the dialog")
	mustContain(t, e.fails(t, "handle_dialog", map[string]any{"pageId": id, "action": "accept"}), "Error: No open dialog found")

	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Confirm"`)})
	mustContain(t, e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "dismiss"}), "Successfully dismissed the dialog")
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"confirm false"` {
		t.Fatalf("out = %s", got)
	}

	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `button "Prompt"`)})
	e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "accept", "promptText": "Grace"})
	if got := e.eval(t, id, "() => document.getElementById('out').textContent"); got != `"prompt Grace"` {
		t.Fatalf("out = %s", got)
	}
	mustContain(t, e.fails(t, "handle_dialog", map[string]any{"pageId": id, "action": "maybe"}), `invalid argument "action" for handle_dialog: want one of "accept", "dismiss", got "maybe"`)

	// A dialog opened by a script is answered by dialogAction, accept by default.
	if got := e.eval(t, id, "() => { alert('from script'); return confirm('sure?') }"); got != "true" {
		t.Fatalf("confirm in a script returned %s, want the default accept", got)
	}
	text = e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => prompt('name?')", "dialogAction": "Ada"})
	mustContain(t, text, `"Ada"`)
	text = e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => confirm('sure?')", "dialogAction": "dismiss"})
	mustContain(t, text, "false")
}

func TestBadUID(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.Global)
	id := e.openPage(t, "/form.html")
	mustContain(t, e.fails(t, "click", map[string]any{"pageId": id, "uid": "99_99"}), "no element with uid 99_99", "take a new snapshot")
	mustContain(t, e.fails(t, "click", map[string]any{"pageId": id, "uid": "nonsense"}), "take a new snapshot")
	mustContain(t, e.fails(t, "click", map[string]any{"pageId": id}), `missing required argument "uid"`)
	mustContain(t, e.fails(t, "click", map[string]any{"pageId": id, "uid": 7}), `invalid argument "uid" for click: want a string, got number`)
	mustContain(t, e.fails(t, "fill", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Submit"`), "value": "x"}), "not a text field")
}

// TestTypeTextPaths: type_text inserts plain text in one step into a field
// nothing listens to keys on, and types key by key where the page listens,
// so that the page still sees every key.
func TestTypeTextPaths(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/typing.html")
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})

	// 20,000 characters into a plain field: one step (it took 83 s key by
	// key). The bound is generous; the point is that it is not 4 ms a key.
	long := strings.Repeat("pagemux é✓ ", 2000)[:20000]
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `textbox "Plain"`)})
	start := time.Now()
	got := e.ok(t, "type_text", map[string]any{"pageId": id, "text": long})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("typing 20,000 characters into a plain field took %v", d)
	} else {
		t.Logf("20,000 characters typed in %v", d)
	}
	mustContain(t, got, "Inserted the text in one step")
	if v := e.eval(t, id, "() => document.getElementById('plain').value.length"); v != fmt.Sprint(len([]rune(long))) {
		t.Errorf("plain field holds %s characters, want %d", v, len([]rune(long)))
	}
	if n := e.eval(t, id, "() => window.plainInputs"); n == "0" {
		t.Errorf("the plain field saw no input event")
	}

	// Line breaks still go as Enter into a textarea.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `textbox "Area"`)})
	mustContain(t, e.ok(t, "type_text", map[string]any{"pageId": id, "text": "one\ntwo"}), "Inserted the text in one step")
	if v := e.eval(t, id, "() => document.getElementById('area').value"); v != `"one\ntwo"` {
		t.Errorf("textarea holds %s", v)
	}

	// A field with key listeners sees each key.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uidIn(t, snap, `textbox "Watched"`)})
	got = e.ok(t, "type_text", map[string]any{"pageId": id, "text": "hello"})
	mustContain(t, got, "Typed key by key: the page listens for keydown on the focused field.")
	if v := e.eval(t, id, "() => [document.getElementById('watched').value, seen.keydown, seen.keypress, seen.keyup, seen.input]"); v != `["hello",5,5,5,5]` {
		t.Errorf("watched field: [value, keydown, keypress, keyup, input] = %s", v)
	}

	// A listener on a shadow host counts too.
	e.eval(t, id, "() => { document.getElementById('host').shadowRoot.getElementById('shadow').focus(); return true }")
	mustContain(t, e.ok(t, "type_text", map[string]any{"pageId": id, "text": "abc"}), "Typed key by key: the page listens for keyup on an element around the focused field.")
	if v := e.eval(t, id, "() => [document.getElementById('host').shadowRoot.getElementById('shadow').value, seen.hostKeyup]"); v != `["abc",3]` {
		t.Errorf("shadow field: [value, host keyups] = %s", v)
	}

	// No text field focused: keys, as a keyboard would.
	e.eval(t, id, "() => { document.activeElement.blur(); return true }")
	mustContain(t, e.ok(t, "type_text", map[string]any{"pageId": id, "text": "x"}), "Typed key by key: no text field has the focus.")
}
