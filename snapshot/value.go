package snapshot

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file reads AX values as JavaScript would see them: truthiness, and
// numbers printed as Number#toString prints them.

// axValue is an AX value as JavaScript would see it, since the rules we
// follow test values for truthiness. It points into the raw JSON when it
// can, so reading a tree allocates little.
type axValue struct {
	kind axKind
	s    []byte // a string's content, or a number's JSON text
	b    bool
}

type axKind uint8

const (
	axUndefined axKind = iota
	axNull
	axBool
	axNum
	axStr
	axOther // object or array
)

func axDecode(raw []byte) axValue {
	if len(raw) == 0 {
		return axValue{}
	}
	switch c := raw[0]; {
	case c == '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && !slices.Contains(raw[1:len(raw)-1], '\\') {
			return axValue{kind: axStr, s: raw[1 : len(raw)-1]}
		}
		if s, ok := axUnquote(raw); ok {
			return axValue{kind: axStr, s: s}
		}
		return axValue{kind: axOther}
	case c == 't':
		return axValue{kind: axBool, b: true}
	case c == 'f':
		return axValue{kind: axBool}
	case c == 'n':
		return axValue{kind: axNull}
	case c == '-' || c >= '0' && c <= '9':
		return axValue{kind: axNum, s: raw}
	default:
		return axValue{kind: axOther}
	}
}

// axUnquote decodes a JSON string with escapes. It is much cheaper than
// the JSON package for the short strings of a tree.
func axUnquote(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	in := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i++; i == len(in) {
			return nil, false
		}
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := axHex4(in[i+1:])
			if !ok {
				return nil, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := axHex4(in[min(i+3, len(in)):]); ok && i+2 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					}
				}
			}
			out = utf8.AppendRune(out, r) // a lone surrogate becomes U+FFFD
		default:
			return nil, false
		}
	}
	return out, true
}

func axHex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// is reports whether v is the string want.
func (v axValue) is(want string) bool { return v.kind == axStr && string(v.s) == want }

// axPresent marks a value as given, even when it has no content: a boolean
// state that is present prints its capability word.
func axPresent(v axValue) axValue {
	if v.kind == axUndefined {
		v.kind = axNull
	}
	return v
}

func axTruthy(v axValue) bool {
	switch v.kind {
	case axBool:
		return v.b
	case axStr:
		return len(v.s) != 0
	case axNum:
		// Zero whatever its spelling: no digit but 0 before the exponent.
		for _, c := range v.s {
			if c == 'e' || c == 'E' {
				break
			}
			if c >= '1' && c <= '9' {
				return true
			}
		}
		return false
	case axOther:
		return true
	}
	return false
}

// text is the value as JavaScript's template strings print it.
func (v axValue) text() []byte {
	switch v.kind {
	case axStr:
		return v.s
	case axNum:
		return axJSNumber(v.s)
	case axBool:
		return strconv.AppendBool(nil, v.b)
	}
	return nil
}

// axJSNumber formats a JSON number as JavaScript's Number#toString does.
func axJSNumber(lit []byte) []byte {
	plain := len(lit) > 0 && len(lit) < 16
	for i, c := range lit {
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			plain = false
			break
		}
	}
	if plain && (lit[0] != '-' || string(lit) != "-0") {
		return lit // an integer JavaScript prints the same way
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return lit
	}
	if f == 0 {
		return []byte("0")
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(nil, f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e-07, 1.5e+21
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return []byte(mant + "e" + string(sign) + exp)
}
