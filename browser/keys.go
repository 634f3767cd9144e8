package browser

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/input"
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
