package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/domdebugger"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// Key is a key with the modifiers held while it is pressed, parsed from text
// such as "Enter", "a" or "Control+Shift+R".
type Key struct {
	Name      string   // a key value such as "Enter", "ArrowDown", "a"
	Modifiers []string // "Control", "Shift", "Alt" or "Meta", in press order
}

// modifierBits are the CDP modifier flags.
var modifierBits = map[string]int64{"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}

// keyAliases are names agents use that are not key values.
var keyAliases = map[string]string{
	"Ctrl": "Control", "Cmd": "Meta", "Command": "Meta", "Option": "Alt", "ControlOrMeta": "Control",
	"Esc": "Escape", "Return": "Enter", "Space": " ", "Del": "Delete", "Up": "ArrowUp", "Down": "ArrowDown",
	"Left": "ArrowLeft", "Right": "ArrowRight", "PgUp": "PageUp", "PgDn": "PageDown",
}

// keysByName maps key values ("Enter") to their definitions.
var keysByName = func() map[string]*kb.Key {
	m := map[string]*kb.Key{}
	for _, k := range kb.Keys {
		if prev, ok := m[k.Key]; !ok || (prev.Shift && !k.Shift) {
			m[k.Key] = k
		}
	}
	return m
}()

// ParseKey parses "Control+Shift+R", "Enter" or "+". It fails for a key that
// Chrome does not know, with an error that gives examples.
func ParseKey(s string) (Key, error) {
	var k Key
	parts := strings.Split(s, "+")
	if strings.HasSuffix(s, "++") || s == "+" { // the plus key itself
		parts = append(parts[:len(parts)-2], "+")
	}
	for i, part := range parts {
		name := part
		if a, ok := keyAliases[name]; ok {
			name = a
		}
		if i < len(parts)-1 {
			if _, ok := modifierBits[name]; !ok {
				return Key{}, fmt.Errorf("invalid key %q: %q is not a modifier; use Control, Shift, Alt or Meta, as in \"Control+Shift+R\"", s, part)
			}
			k.Modifiers = append(k.Modifiers, name)
			continue
		}
		if _, ok := lookupKey(name); !ok {
			return Key{}, fmt.Errorf("invalid key %q: unknown key %q; use a key value such as \"Enter\", \"Tab\", \"Escape\", \"ArrowDown\", \"a\" or \"Control+A\"", s, part)
		}
		k.Name = name
	}
	return k, nil
}

func lookupKey(name string) (*kb.Key, bool) {
	if k, ok := keysByName[name]; ok {
		return k, true
	}
	if r, n := utf8.DecodeRuneInString(name); n == len(name) && n > 0 {
		k, ok := kb.Keys[r]
		return k, ok
	}
	return nil, false
}

// pressKey holds the modifiers, presses and releases the key, and releases
// the modifiers in reverse order.
func pressKey(ctx context.Context, k Key) error {
	var mods int64
	for _, m := range k.Modifiers {
		mods |= modifierBits[m]
		d, _ := lookupKey(m)
		if err := dispatchKey(ctx, input.DispatchKeyEventTypeRawKeyDown, d, mods, ""); err != nil {
			return err
		}
	}
	d, ok := lookupKey(k.Name)
	if !ok {
		return fmt.Errorf("unknown key %q", k.Name)
	}
	text := d.Text
	if mods&^modifierBits["Shift"] != 0 {
		text = "" // a shortcut types nothing
	}
	typ := input.DispatchKeyEventTypeKeyDown
	if text == "" {
		typ = input.DispatchKeyEventTypeRawKeyDown
	}
	if err := dispatchKey(ctx, typ, d, mods, text); err != nil {
		return err
	}
	if err := dispatchKey(ctx, input.DispatchKeyEventTypeKeyUp, d, mods, ""); err != nil {
		return err
	}
	for i := len(k.Modifiers) - 1; i >= 0; i-- {
		mods &^= modifierBits[k.Modifiers[i]]
		d, _ := lookupKey(k.Modifiers[i])
		if err := dispatchKey(ctx, input.DispatchKeyEventTypeKeyUp, d, mods, ""); err != nil {
			return err
		}
	}
	return nil
}

func dispatchKey(ctx context.Context, typ input.DispatchKeyEventType, d *kb.Key, mods int64, text string) error {
	_, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{
		Type:                  typ,
		Modifiers:             mods,
		Key:                   d.Key,
		Code:                  d.Code,
		Text:                  text,
		UnmodifiedText:        text,
		WindowsVirtualKeyCode: d.Windows,
		NativeVirtualKeyCode:  d.Native,
	})
	return err
}

// Typing says how TypeText entered its text.
type Typing struct {
	// Keys says it was typed key by key, as a keyboard does, because of
	// Why: the page listens for key events where the text goes, or the
	// text doesn't go to a text field. Otherwise it was inserted as text in
	// one step, as an input method commits it (beforeinput and input
	// events, no key events), with Enter and Tab still pressed as keys.
	Keys bool
	Why  string
}

// keyEvents are the events that make typing key by key matter: a page
// that listens for them sees each key. Listeners for input and beforeinput
// are content with text inserted in one step: they get one event for it.
var keyEvents = []string{"keydown", "keypress", "keyup"}

// focusPathJS returns the element the keys would go to, through shadow roots
// and same-origin frames, then the nodes a key event passes on its way up
// (shadow roots and their hosts, the document) and the window. The array's
// own properties say whether the element is a text field (editable) or why
// not (why).
const focusPathJS = `(() => {
  let doc = document, el = doc.activeElement, why = '';
  for (;;) {
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    if (!el || (el.tagName !== 'IFRAME' && el.tagName !== 'FRAME')) break;
    let inner = null;
    try { inner = el.contentDocument; } catch (e) {}
    if (!inner) { why = 'the focus is in a frame of another origin'; el = null; break; }
    doc = inner; el = inner.activeElement;
  }
  const path = [];
  for (let n = el; n; n = n.parentNode || n.host || null) path.push(n);
  if (doc.defaultView) path.push(doc.defaultView);
  const text = ['text', 'search', 'url', 'tel', 'email', 'password', 'number'];
  const field = !!el && ((el.tagName === 'INPUT' && text.includes(el.type)) || el.tagName === 'TEXTAREA' || el.isContentEditable);
  if (!why && (!el || el === doc.body || el === doc.documentElement)) why = 'no text field has the focus';
  else if (!why && !field) why = 'the focused ' + el.tagName.toLowerCase() + ' is not a text field';
  else if (!why && (el.disabled || el.readOnly)) why = 'the focused field is read-only';
  path.editable = !why;
  path.why = why;
  return path;
})()`

// typingGroup is the object group of the remote objects typing looks at.
const typingGroup = "pagemux-typing"

// needsKeys decides how text must be typed where the focus is now: key by
// key when the focus is not in a text field or when a listener for key
// events sits on the field, on a node above it, on its document or its
// window (DOMDebugger.getEventListeners, which sees inline handlers too).
func needsKeys(ctx context.Context) (bool, string, error) {
	defer chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: typingGroup})
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: focusPathJS, ObjectGroup: typingGroup, Silent: new(true)})
	if err != nil {
		return false, "", err
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return true, "the focused element could not be inspected", nil
	}
	props, err := chromedp.Call(ctx, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: res.Result.ObjectID, OwnProperties: new(true)})
	if err != nil {
		return false, "", err
	}
	why := ""
	for _, d := range props.Result {
		if d.Name == "why" && d.Value != nil {
			_ = json.Unmarshal(d.Value.Value, &why)
		}
	}
	if why != "" {
		return true, why, nil
	}
	path := arrayObjects(props.Result)
	for i, id := range path {
		l, err := chromedp.Call(ctx, domdebugger.GetEventListeners, domdebugger.GetEventListenersParams{ObjectID: id})
		if err != nil {
			return false, "", err
		}
		for _, ev := range l.Listeners {
			if slices.Contains(keyEvents, ev.Type) {
				return true, fmt.Sprintf("the page listens for %s on %s", ev.Type, pathPlace(i, len(path))), nil
			}
		}
	}
	return false, "", nil
}

// pathPlace names the i-th of n entries of focusPathJS's path.
func pathPlace(i, n int) string {
	switch {
	case i == 0:
		return "the focused field"
	case i == n-1:
		return "the window"
	case i == n-2:
		return "the document"
	}
	return "an element around the focused field"
}

// typeText types text where the focus is, the fast way where it can (see
// Typing): plain text in one Input.insertText, line breaks and tabs as
// keys. A tab may move the focus, so the way is decided again after one.
func typeText(ctx context.Context, text string) (Typing, error) {
	var how Typing
	for text != "" {
		keys, why, err := needsKeys(ctx)
		if err != nil {
			return how, err
		}
		if keys {
			how = Typing{Keys: true, Why: why}
			return how, chromedp.Do(ctx, chromedp.KeyEvent(text))
		}
		for text != "" {
			i := strings.IndexAny(text, "\r\n\t")
			if i < 0 {
				i = len(text)
			}
			if i > 0 {
				if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text[:i]}); err != nil {
					return how, err
				}
			}
			if i == len(text) {
				return how, nil
			}
			c := text[i]
			if err := chromedp.Do(ctx, chromedp.KeyEvent(text[i:i+1])); err != nil {
				return how, err
			}
			text = text[i+1:]
			if c == '\t' {
				break // the focus may have moved: look again
			}
		}
	}
	return how, nil
}
