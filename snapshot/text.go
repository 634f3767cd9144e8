package snapshot

import (
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// This file writes the text the agent reads: one line per shown node, its
// role, name and properties in chrome-devtools-mcp's order and spelling.

// format writes one line per shown node. A named node whose shown children
// are all childless StaticText spelling its name (ignoring whitespace) has
// those children left out unless verbose; they still got uids, as in
// chrome-devtools-mcp, so numbering matches.
func (t *axTree) format(uids []uidKey, verbose bool) string {
	if len(t.out) == 0 {
		return ""
	}
	skip := make([]bool, len(t.out)) // children of a node left out
	if !verbose {
		t.markRedundantText(skip)
	}
	b := make([]byte, 0, 64*len(t.out))
	var attrs [axNumAttrs]axValue
	for i, o := range t.out {
		if skip[i] {
			continue
		}
		b = t.appendLine(b, o, uids[i], &attrs)
	}
	return string(b)
}

func (t *axTree) markRedundantText(skip []bool) {
	// Link the shown children of each shown node.
	first := make([]int32, len(t.out))
	next := make([]int32, len(t.out))
	for i := range first {
		first[i], next[i] = -1, -1
	}
	for i := len(t.out) - 1; i >= 0; i-- {
		if p := t.out[i].parent; p >= 0 {
			next[i], first[p] = first[p], int32(i)
		}
	}
	var text []byte
	for p := range t.out {
		if first[p] < 0 {
			continue
		}
		name, ok := t.nodeName(t.out[p].node)
		if !ok || len(name) == 0 {
			continue
		}
		text = text[:0]
		redundant := true
		for c := first[p]; c >= 0; c = next[c] {
			if t.nodes[t.out[c].node].role != "StaticText" || first[c] >= 0 {
				redundant = false
				break
			}
			s, _ := t.nodeName(t.out[c].node)
			text = append(text, s...)
		}
		if redundant && equalIgnoringJSSpace(text, name) {
			for c := first[p]; c >= 0; c = next[c] {
				skip[c] = true
			}
		}
	}
}

// nodeName is the node's name, ok when it has one that is a string.
func (t *axTree) nodeName(i int32) ([]byte, bool) {
	src := t.nodes[i].src
	if src.name == nil {
		return nil, false
	}
	v := axDecode(src.name)
	return v.s, v.kind == axStr
}

// The properties puppeteer serializes, in the order chrome-devtools-mcp
// prints them: it sorts the keys of the serialized node by name.
const (
	axAttrAtomic = iota
	axAttrAutocomplete
	axAttrBusy
	axAttrChecked
	axAttrDescription
	axAttrDetails
	axAttrDisabled
	axAttrErrormessage
	axAttrExpanded
	axAttrFocused
	axAttrHaspopup
	axAttrInvalid
	axAttrKeyshortcuts
	axAttrLevel
	axAttrLive
	axAttrModal
	axAttrMultiline
	axAttrMultiselectable
	axAttrOrientation
	axAttrPressed
	axAttrReadonly
	axAttrRelevant
	axAttrRequired
	axAttrRoledescription
	axAttrSelected
	axAttrURL
	axAttrValue
	axAttrValuemax
	axAttrValuemin
	axAttrValuetext
	axNumAttrs
)

type axAttrKind uint8

const (
	axAttrString   axAttrKind = iota // copied as is
	axAttrBool                       // true/false by truthiness
	axAttrTristate                   // "mixed", true or false
	axAttrToken                      // only when truthy and not "false"
)

var axAttrInfo = [axNumAttrs]struct {
	name string
	kind axAttrKind
	// capability is printed as a bare word whenever the state is known,
	// true or false: "disableable", "expandable", "focusable", "selectable".
	capability string
}{
	axAttrAtomic:          {"atomic", axAttrBool, ""},
	axAttrAutocomplete:    {"autocomplete", axAttrToken, ""},
	axAttrBusy:            {"busy", axAttrBool, ""},
	axAttrChecked:         {"checked", axAttrTristate, ""},
	axAttrDescription:     {"description", axAttrString, ""},
	axAttrDetails:         {"details", axAttrToken, ""},
	axAttrDisabled:        {"disabled", axAttrBool, "disableable"},
	axAttrErrormessage:    {"errormessage", axAttrToken, ""},
	axAttrExpanded:        {"expanded", axAttrBool, "expandable"},
	axAttrFocused:         {"focused", axAttrBool, "focusable"},
	axAttrHaspopup:        {"haspopup", axAttrToken, ""},
	axAttrInvalid:         {"invalid", axAttrToken, ""},
	axAttrKeyshortcuts:    {"keyshortcuts", axAttrString, ""},
	axAttrLevel:           {"level", axAttrString, ""},
	axAttrLive:            {"live", axAttrToken, ""},
	axAttrModal:           {"modal", axAttrBool, ""},
	axAttrMultiline:       {"multiline", axAttrBool, ""},
	axAttrMultiselectable: {"multiselectable", axAttrBool, ""},
	axAttrOrientation:     {"orientation", axAttrToken, ""},
	axAttrPressed:         {"pressed", axAttrTristate, ""},
	axAttrReadonly:        {"readonly", axAttrBool, ""},
	axAttrRelevant:        {"relevant", axAttrToken, ""},
	axAttrRequired:        {"required", axAttrBool, ""},
	axAttrRoledescription: {"roledescription", axAttrString, ""},
	axAttrSelected:        {"selected", axAttrBool, "selectable"},
	axAttrURL:             {"url", axAttrString, ""},
	axAttrValue:           {"value", axAttrString, ""},
	axAttrValuemax:        {"valuemax", axAttrString, ""},
	axAttrValuemin:        {"valuemin", axAttrString, ""},
	axAttrValuetext:       {"valuetext", axAttrString, ""},
}

// axAttrSlot returns the slot of a property name, lower-cased as puppeteer
// does, or -1 for a property that isn't printed.
func axAttrSlot(name string) int {
	switch name {
	case "atomic":
		return axAttrAtomic
	case "autocomplete":
		return axAttrAutocomplete
	case "busy":
		return axAttrBusy
	case "checked":
		return axAttrChecked
	case "description":
		return axAttrDescription
	case "details":
		return axAttrDetails
	case "disabled":
		return axAttrDisabled
	case "errormessage":
		return axAttrErrormessage
	case "expanded":
		return axAttrExpanded
	case "focused":
		return axAttrFocused
	case "haspopup", "hasPopup":
		return axAttrHaspopup
	case "invalid":
		return axAttrInvalid
	case "keyshortcuts":
		return axAttrKeyshortcuts
	case "level":
		return axAttrLevel
	case "live":
		return axAttrLive
	case "modal":
		return axAttrModal
	case "multiline":
		return axAttrMultiline
	case "multiselectable":
		return axAttrMultiselectable
	case "orientation":
		return axAttrOrientation
	case "pressed":
		return axAttrPressed
	case "readonly":
		return axAttrReadonly
	case "relevant":
		return axAttrRelevant
	case "required":
		return axAttrRequired
	case "roledescription":
		return axAttrRoledescription
	case "selected":
		return axAttrSelected
	case "url":
		return axAttrURL
	case "value":
		return axAttrValue
	case "valuemax":
		return axAttrValuemax
	case "valuemin":
		return axAttrValuemin
	case "valuetext":
		return axAttrValuetext
	}
	// Chrome spells them as above; anything else is lower-cased first.
	if lower := strings.ToLower(name); lower != name {
		return axAttrSlot(lower)
	}
	return -1
}

func (t *axTree) appendLine(b []byte, o axOut, uid uidKey, attrs *[axNumAttrs]axValue) []byte {
	n := &t.nodes[o.node]
	src := n.src
	for range o.depth {
		b = append(b, ' ', ' ')
	}
	b = append(b, "uid="...)
	b = uid.append(b)
	if n.role != "" && n.role != "StaticText" {
		b = append(b, ' ')
		if n.role == "none" {
			b = append(b, "ignored"...)
		} else {
			b = append(b, n.role...)
		}
	}
	name := axDecode(src.name)
	if (name.kind == axStr || name.kind == axNum) && axTruthy(name) {
		b = append(b, ' ')
		b = appendAXQuoted(b, name.text())
	}

	// set has a bit for each slot of attrs that holds a value; a later
	// property of the same name wins, as in puppeteer's Map.
	var set uint32
	put := func(i int, v []byte) {
		set |= 1 << i
		attrs[i] = axPresent(axDecode(v))
	}
	for _, p := range src.props {
		if i := axAttrSlot(p.name); i >= 0 {
			put(i, p.value)
		}
	}
	if src.value != nil {
		put(axAttrValue, src.value)
	}
	if src.desc != nil {
		put(axAttrDescription, src.desc)
	}
	isOption := n.role == "option"
	if isOption && axTruthy(name) {
		// chrome-devtools-mcp sets an option's value to its text and
		// then doesn't print it.
		set &^= 1 << axAttrValue
	}
	for ; set != 0; set &= set - 1 {
		i := bits.TrailingZeros32(set)
		v := attrs[i]
		info := &axAttrInfo[i]
		switch info.kind {
		case axAttrBool:
			if i == axAttrFocused && n.role == "RootWebArea" {
				continue
			}
			v = axValue{kind: axBool, b: axTruthy(v)}
		case axAttrTristate:
			switch {
			case v.is("mixed"):
			case v.is("true"), v.kind == axBool && v.b:
				v = axValue{kind: axBool, b: true}
			default:
				v = axValue{kind: axBool}
			}
		case axAttrToken:
			if !axTruthy(v) || v.is("false") {
				continue
			}
		}
		if info.capability != "" && !(isOption && i == axAttrSelected) {
			b = append(b, ' ')
			b = append(b, info.capability...)
		}
		switch v.kind {
		case axBool:
			if v.b {
				b = append(b, ' ')
				b = append(b, info.name...)
			}
		case axStr, axNum:
			b = append(b, ' ')
			b = append(b, info.name...)
			b = append(b, '=')
			b = appendAXQuoted(b, v.text())
		}
	}
	return append(b, '\n')
}

// appendAXQuoted appends s in double quotes. chrome-devtools-mcp prints names
// and values raw, so a quote in a name or a newline in a textarea's value
// breaks its one-node-a-line format; we escape them as JSON does, which
// leaves every quoted string a valid JSON string literal. Non-ASCII text is
// kept as is.
func appendAXQuoted(b []byte, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, `\u00`...)
				b = append(b, axHexDigits[c>>4], axHexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029' || r == '\u0085':
			// Line separators that some readers break lines at.
			b = append(b, s[start:i]...)
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const axHexDigits = "0123456789abcdef"

// equalIgnoringJSSpace compares a and b with what JavaScript's /\s/ matches
// removed from both.
func equalIgnoringJSSpace(a, b []byte) bool {
	for {
		a, b = skipJSSpace(a), skipJSSpace(b)
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb || na != nb {
			return false
		}
		a, b = a[na:], b[nb:]
	}
}

func skipJSSpace(s []byte) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if !isJSSpace(r) {
			break
		}
		s = s[n:]
	}
	return s
}

func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680',
		'\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}
