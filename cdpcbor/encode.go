package cdpcbor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf16"
	"unicode/utf8"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
)

// FromJSON appends the CBOR of one JSON message (without a NUL) to dst, as
// Chrome's own conversion makes it: the message and each map in it in an
// envelope, arrays bare and indefinite, ASCII strings as text and the
// others in UTF-16LE, integral numbers in int32's range as ints and the
// rest as doubles. It does not append a NUL: a CBOR pipe has none.
func FromJSON(dst, msg []byte) ([]byte, error) {
	var d jsonv2.Decoder
	d.Reset(bytes.NewReader(msg))
	var envelopes []int // where each open map's content begins
	depth, start := 0, len(dst)
	for {
		tok, err := d.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return dst, fmt.Errorf("a command for chrome: %w", err)
		}
		switch k := tok.Kind(); k {
		case '{':
			dst = append(dst, tag1, envelopeTag, byteString32, 0, 0, 0, 0, indefMap)
			envelopes = append(envelopes, len(dst)-1)
			depth++
		case '[':
			dst = append(dst, indefArray)
			depth++
		case '}', ']':
			dst = append(dst, breakByte)
			depth--
			if k == '}' {
				at := envelopes[len(envelopes)-1]
				envelopes = envelopes[:len(envelopes)-1]
				binary.BigEndian.PutUint32(dst[at-4:at], uint32(len(dst)-at))
			}
		case 'n':
			dst = append(dst, nullByte)
		case 'f':
			dst = append(dst, falseByte)
		case 't':
			dst = append(dst, trueByte)
		case '"':
			dst = appendString(dst, tok.String())
		case '0':
			f := tok.Float()
			if f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 {
				dst = appendInt(dst, int64(f))
			} else {
				dst = binary.BigEndian.AppendUint64(append(dst, float64Byte), math.Float64bits(f))
			}
		}
	}
	if len(dst) == start || dst[start] != tag1 || depth != 0 {
		return dst, errors.New("a command for chrome: not one JSON object")
	}
	return dst, nil
}

// appendHead appends an initial byte of major type major with its
// argument v.
func appendHead(dst []byte, major byte, v uint64) []byte {
	m := major << 5
	switch {
	case v < 24:
		return append(dst, m|byte(v))
	case v <= math.MaxUint8:
		return append(dst, m|24, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), v)
}

func appendInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return appendHead(dst, 0, uint64(v))
	}
	return appendHead(dst, 1, uint64(-1-v))
}

// appendString appends s as Chrome encodes a string: ASCII as text,
// anything else as UTF-16LE in a byte string.
func appendString(dst []byte, s string) []byte {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return append(appendHead(dst, 3, uint64(len(s))), s...)
	}
	u := utf16.Encode([]rune(s))
	dst = appendHead(dst, 2, uint64(2*len(u)))
	for _, x := range u {
		dst = binary.LittleEndian.AppendUint16(dst, x)
	}
	return dst
}
