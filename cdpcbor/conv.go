// Package cdpcbor reads and writes the CBOR that Chrome speaks on a
// DevTools pipe opened with --remote-debugging-pipe=cbor.
//
// On such a pipe Chrome's browser process passes its renderers' messages
// on as they are encoded, in CBOR, instead of converting each to JSON; for
// a big answer (a snapshot's accessibility tree) that conversion is a third
// of the answer's time. pagemux converts at its own end instead: ToJSON
// turns Chrome's messages into the JSON messages chromedp reads, FromJSON
// turns commands into Chrome's CBOR, and Decoder reads a message in place,
// for an answer decoded without ever being JSON.
//
// Chrome's CBOR is a subset of RFC 8949 (crdtp's encoding): a message is an
// envelope (tag 24 around a byte string with a 32-bit length) holding an
// indefinite-length map; maps nested in a message are enveloped too, arrays
// are indefinite and bare; strings are UTF-8 text or, where Chrome holds
// them in 16 bits, a byte string of UTF-16LE; binary data is a byte string
// under tag 22 (what JSON gives as base64); numbers are 32-bit ints and
// doubles. A general CBOR library would read UTF-16 strings as bytes and
// not know tag 22, and none writes envelopes, so the package is its own.
// It does not speak CBOR beyond what Chrome sends and takes.
package cdpcbor

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	envelopeTag = 24 // tag 24: an encoded data item, Chrome's envelope
	binaryTag   = 22 // tag 22: expected conversion to base64

	breakByte     = 0xff
	indefMap      = 0xbf
	indefArray    = 0x9f
	tag1          = 0xd8 // a tag with its number in the next byte
	tagBinary     = 0xc0 | binaryTag
	byteString32  = 0x5a // a byte string with a 32-bit length
	falseByte     = 0xf4
	trueByte      = 0xf5
	nullByte      = 0xf6
	undefinedByte = 0xf7
	float16Byte   = 0xf9
	float32Byte   = 0xfa
	float64Byte   = 0xfb

	maxDepth      = 1000     // deeper than any of Chrome's messages (its own limit is 300)
	chunk         = 48 << 10 // a piece of a long string; a multiple of 3 for base64
	flushAt       = 64 << 10 // JSON kept before it goes on
	envelopeBytes = 7        // d8 18 5a and the 32-bit length
)

// ErrSyntax is wrapped by the error of every message that is not Chrome's
// CBOR.
var ErrSyntax = errors.New("not chrome's cbor")

func syntaxError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSyntax}, a...)...)
}

// Divert may take a message away from ToJSON's stream: given the id of an
// answer, it returns a func that reads the message itself, or nil to let
// it be converted. The func gets the message's map (after its envelope),
// as a Decoder reads it, and must not keep the reader; what it leaves
// unread is read away, and whatever it made of the message, the stream
// goes on after it.
type Divert func(id int64) func(r io.Reader)

// ToJSON converts Chrome's CBOR messages on src to JSON messages, each
// followed by a NUL, as Chrome writes them on a JSON pipe. The reader gives
// them as they are converted (a big answer streams through); closing it
// stops the conversion, which otherwise ends with src. divert, if not nil,
// takes answers off the stream.
func ToJSON(src io.Reader, divert Divert) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		c := &conv{r: bufio.NewReaderSize(src, 256<<10), w: pw}
		pw.CloseWithError(c.run(divert))
	}()
	return pr
}

// conv converts CBOR from r to JSON in out, which goes to w (if any) when
// it grows past flushAt and at the end of each message.
type conv struct {
	r   *bufio.Reader
	w   io.Writer
	out []byte
	n   int64 // bytes taken from r
}

func (c *conv) run(divert Divert) error {
	for {
		size, err := c.envelope()
		if err != nil {
			return err
		}
		c.n = 0
		if read := c.diverted(divert); read != nil {
			err = c.divert(read, size)
		} else {
			err = c.message(size)
		}
		if err != nil {
			return err
		}
	}
}

// envelope reads a message's envelope header and returns its size. Chrome
// may end a message with a NUL; none begins with one.
func (c *conv) envelope() (int64, error) {
	for {
		b, err := c.r.Peek(1)
		if err != nil {
			return 0, err
		}
		if b[0] != 0 {
			break
		}
		c.r.Discard(1)
	}
	h, err := c.r.Peek(envelopeBytes)
	if err != nil {
		return 0, unexpected(err)
	}
	if h[0] != tag1 || h[1] != envelopeTag || h[2] != byteString32 {
		return 0, syntaxError("a message begins with % x, not an envelope", h[:3])
	}
	size := int64(binary.BigEndian.Uint32(h[3:]))
	c.r.Discard(envelopeBytes)
	if b, err := c.r.Peek(1); err != nil || b[0] != indefMap {
		if err != nil {
			return 0, unexpected(err)
		}
		return 0, syntaxError("a message that is not a map")
	}
	return size, nil
}

// diverted returns divert's reader for the message that begins now, if it
// is an answer divert takes. An answer's id comes first in its map.
func (c *conv) diverted(divert Divert) func(io.Reader) {
	if divert == nil {
		return nil
	}
	h, _ := c.r.Peek(4 + 5) // bf 62 "id", then an int of up to 5 bytes
	if len(h) < 5 || h[1] != 0x62 || h[2] != 'i' || h[3] != 'd' || h[4]>>5 != 0 {
		return nil
	}
	var id int64
	switch ai := h[4] & 31; {
	case ai < 24:
		id = int64(ai)
	case ai == 24 && len(h) >= 6:
		id = int64(h[5])
	case ai == 25 && len(h) >= 7:
		id = int64(binary.BigEndian.Uint16(h[5:]))
	case ai == 26 && len(h) >= 9:
		id = int64(binary.BigEndian.Uint32(h[5:]))
	default:
		return nil
	}
	return divert(id)
}

// divert hands the message's size bytes to read, then reads away the rest.
func (c *conv) divert(read func(io.Reader), size int64) error {
	lr := &io.LimitedReader{R: c.r, N: size}
	read(lr)
	if _, err := io.Copy(io.Discard, lr); err != nil {
		return err
	}
	if lr.N > 0 {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// message converts one message of size bytes, its NUL included, and sends
// it on.
func (c *conv) message(size int64) error {
	if err := c.value(0); err != nil {
		return err
	}
	if c.n != size {
		return syntaxError("a message's envelope says %d bytes, its map took %d", size, c.n)
	}
	c.out = append(c.out, 0)
	return c.flush()
}

func (c *conv) flush() error {
	if c.w == nil || len(c.out) == 0 {
		return nil
	}
	_, err := c.w.Write(c.out)
	c.out = c.out[:0]
	return err
}

// unexpected is err, with an end of input inside an item told as such.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (c *conv) readByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err != nil {
		return 0, unexpected(err)
	}
	c.n++
	return b, nil
}

// peek returns the next n bytes, n at most the reader's buffer, without
// taking them.
func (c *conv) peek(n int) ([]byte, error) {
	b, err := c.r.Peek(n)
	return b, unexpected(err)
}

func (c *conv) discard(n int) {
	c.r.Discard(n)
	c.n += int64(n)
}

// argument reads the argument of an initial byte's additional information
// ai (RFC 8949 3.1); indefinite lengths are not arguments.
func (c *conv) argument(ai byte) (uint64, error) {
	var size int
	switch {
	case ai < 24:
		return uint64(ai), nil
	case ai == 24:
		size = 1
	case ai == 25:
		size = 2
	case ai == 26:
		size = 4
	case ai == 27:
		size = 8
	default:
		return 0, syntaxError("additional information %d where an argument belongs", ai)
	}
	b, err := c.peek(size)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	c.discard(size)
	return v, nil
}

// initial reads the initial byte of an item at depth.
func (c *conv) initial(depth int) (byte, error) {
	if depth > maxDepth {
		return 0, syntaxError("nested deeper than %d", maxDepth)
	}
	return c.readByte()
}

// byteString reads the head of a definite byte string, which what (an
// envelope, binary data) must be, and returns its length.
func (c *conv) byteString(what string) (uint64, error) {
	b, err := c.readByte()
	if err != nil {
		return 0, err
	}
	if b>>5 != 2 || b&31 == 31 {
		return 0, syntaxError("%s of % x", what, b)
	}
	return c.argument(b & 31)
}

// head splits the initial byte b of a definite item into its major type
// and its argument, which it reads.
func (c *conv) head(b byte) (major byte, arg uint64, err error) {
	if b&31 == 31 {
		return 0, 0, syntaxError("indefinite item % x", b)
	}
	arg, err = c.argument(b & 31)
	return b >> 5, arg, err
}

// value converts one data item.
func (c *conv) value(depth int) error {
	b, err := c.initial(depth)
	if err != nil {
		return err
	}
	switch b {
	case indefMap, indefArray:
		return c.seq(depth, -1, b == indefMap)
	case falseByte:
		c.out = append(c.out, "false"...)
		return nil
	case trueByte:
		c.out = append(c.out, "true"...)
		return nil
	case nullByte, undefinedByte:
		c.out = append(c.out, "null"...)
		return nil
	case float64Byte, float32Byte, float16Byte:
		f, err := c.float(b)
		c.out = appendFloat(c.out, f)
		return err
	case tagBinary:
		return c.binary()
	case tag1:
		tag, err := c.readByte()
		if err != nil {
			return err
		}
		switch tag {
		case envelopeTag:
			return c.envelopeValue(depth)
		case binaryTag:
			return c.binary()
		}
		return syntaxError("tag %d", tag)
	}
	major, arg, err := c.head(b)
	if err != nil {
		return err
	}
	switch major {
	case 0:
		c.out = strconv.AppendUint(c.out, arg, 10)
	case 1:
		if arg > math.MaxInt64 {
			return syntaxError("a negative int below int64")
		}
		c.out = strconv.AppendInt(c.out, -1-int64(arg), 10)
	case 2:
		return c.utf16(arg)
	case 3:
		return c.text(arg)
	case 4, 5:
		return c.seq(depth, int64(min(arg, math.MaxInt64)), major == 5)
	default:
		return syntaxError("item % x", b)
	}
	return nil
}

// envelopeValue converts an envelope's content, after its tag: one map or
// array, as long as the envelope says.
func (c *conv) envelopeValue(depth int) error {
	size, err := c.byteString("an envelope")
	if err != nil {
		return err
	}
	start := c.n
	if err := c.value(depth + 1); err != nil {
		return err
	}
	if uint64(c.n-start) != size {
		return syntaxError("an envelope says %d bytes, its content took %d", size, c.n-start)
	}
	return nil
}

// more reports whether a map or array has another item: for n >= 0, n
// items are left; n < 0 is indefinite, and a break (taken) ends it.
func (c *conv) more(n int64) (bool, error) {
	if n >= 0 {
		return n > 0, nil
	}
	b, err := c.peek(1)
	if err != nil {
		return false, err
	}
	if b[0] != breakByte {
		return true, nil
	}
	c.discard(1)
	return false, nil
}

// seq converts a map (isMap) or an array of n items, a map's item a
// member (n < 0: up to its break). A member's key is a string.
func (c *conv) seq(depth int, n int64, isMap bool) error {
	open, end := byte('['), byte(']')
	if isMap {
		open, end = '{', '}'
	}
	c.out = append(c.out, open)
	for i := int64(0); ; i++ {
		ok, err := c.more(n - i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if i > 0 {
			c.out = append(c.out, ',')
		}
		if isMap {
			if err := c.key(depth); err != nil {
				return err
			}
		}
		if err := c.value(depth + 1); err != nil {
			return err
		}
	}
	c.out = append(c.out, end)
	return nil
}

// key converts a member's key and its colon.
func (c *conv) key(depth int) error {
	b, err := c.peek(1)
	if err != nil {
		return err
	}
	if m := b[0] >> 5; (m != 2 && m != 3) || b[0]&31 == 31 {
		return syntaxError("a map key of % x", b[0])
	}
	if err := c.value(depth + 1); err != nil {
		return err
	}
	c.out = append(c.out, ':')
	return nil
}

// float reads a double, or a smaller float, after its initial byte b.
func (c *conv) float(b byte) (float64, error) {
	size := 8
	switch b {
	case float32Byte:
		size = 4
	case float16Byte:
		size = 2
	}
	raw, err := c.peek(size)
	if err != nil {
		return 0, err
	}
	var f float64
	switch size {
	case 8:
		f = math.Float64frombits(binary.BigEndian.Uint64(raw))
	case 4:
		f = float64(math.Float32frombits(binary.BigEndian.Uint32(raw)))
	default:
		f = float16(binary.BigEndian.Uint16(raw))
	}
	c.discard(size)
	return f, nil
}

// appendFloat writes f as encoding/json does: integral values without an
// exponent below 1e21, so that a field Go reads as an int takes it. JSON
// has no NaN or infinity; Chrome's own JSON writes null for them.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(dst, f, format, -1, 64)
}

// float16 is an IEEE 754 half-precision number's value.
func float16(h uint16) float64 {
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	var f float64
	switch exp {
	case 0:
		f = math.Ldexp(frac, -24)
	case 31:
		f = math.Inf(1)
		if frac != 0 {
			f = math.NaN()
		}
	default:
		f = math.Ldexp(frac+1024, exp-25)
	}
	if h&0x8000 != 0 {
		f = -f
	}
	return f
}

// text converts a UTF-8 string of n bytes, in pieces for a long one, each
// cut where a character begins.
func (c *conv) text(n uint64) error {
	return c.quoted(n, func(b []byte, last bool) int {
		size := len(b)
		if !last {
			size = utf8Cut(b)
		}
		c.out = appendEscaped(c.out, b[:size])
		return size
	})
}

// quoted converts the n bytes that come into a JSON string, piece by
// piece: piece appends what it makes of b, the next bytes (last: the end
// of them), and returns how many of them it took, at least one.
func (c *conv) quoted(n uint64, piece func(b []byte, last bool) int) error {
	c.out = append(c.out, '"')
	for n > 0 {
		size := int(min(n, chunk))
		b, err := c.peek(size)
		if err != nil {
			return err
		}
		size = piece(b, uint64(size) == n)
		c.discard(size)
		n -= uint64(size)
		if err := c.flushBig(); err != nil {
			return err
		}
	}
	c.out = append(c.out, '"')
	return nil
}

// flushBig sends out on when it grew past flushAt, inside a message.
func (c *conv) flushBig() error {
	if len(c.out) < flushAt {
		return nil
	}
	return c.flush()
}

// utf8Cut is how many bytes of b end on a whole character, for b a piece
// of a longer string: all of them, or up to where the last incomplete
// character begins.
func utf8Cut(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) && i > 0 {
				return i
			}
			break
		}
	}
	return len(b)
}

// appendEscaped appends b, UTF-8, as the inside of a JSON string. Bytes
// that are not UTF-8 become U+FFFD, as a JSON decoder would read them.
func appendEscaped(dst, b []byte) []byte {
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte(string(utf8.RuneError)))
	}
	start := 0
	for i, x := range b {
		if x >= 0x20 && x != '"' && x != '\\' {
			continue
		}
		dst = append(dst, b[start:i]...)
		start = i + 1
		switch x {
		case '"', '\\':
			dst = append(dst, '\\', x)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[x>>4], hex[x&15])
		}
	}
	return append(dst, b[start:]...)
}

// utf16 converts a string Chrome holds in 16 bits: n bytes of UTF-16LE.
func (c *conv) utf16(n uint64) error {
	if n%2 != 0 {
		return syntaxError("a UTF-16 string of %d bytes", n)
	}
	var d utf16Decoder
	var buf []byte
	return c.quoted(n, func(b []byte, last bool) int {
		buf = d.append(buf[:0], b)
		if last {
			buf = d.end(buf)
		}
		c.out = appendEscaped(c.out, buf)
		return len(b)
	})
}

// utf16Decoder turns UTF-16LE into UTF-8 piece by piece. A lone surrogate
// becomes U+FFFD, as a JSON decoder makes of Chrome's escape for it.
type utf16Decoder struct {
	high rune // a high surrogate whose pair may be in the next piece
}

func (d *utf16Decoder) append(dst, b []byte) []byte {
	for i := 0; i+1 < len(b); i += 2 {
		r := rune(binary.LittleEndian.Uint16(b[i:]))
		if d.high != 0 {
			high := d.high
			d.high = 0
			if r >= 0xdc00 && r < 0xe000 {
				dst = utf8.AppendRune(dst, utf16.DecodeRune(high, r))
				continue
			}
			dst = utf8.AppendRune(dst, utf8.RuneError)
		}
		switch {
		case r >= 0xd800 && r < 0xdc00:
			d.high = r
		case r >= 0xdc00 && r < 0xe000:
			dst = utf8.AppendRune(dst, utf8.RuneError)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

// end finishes the string: a high surrogate left alone is U+FFFD.
func (d *utf16Decoder) end(dst []byte) []byte {
	if d.high != 0 {
		d.high = 0
		dst = utf8.AppendRune(dst, utf8.RuneError)
	}
	return dst
}

// binary converts tag 22's byte string to base64, after the tag.
func (c *conv) binary() error {
	n, err := c.byteString("binary data")
	if err != nil {
		return err
	}
	// chunk is a multiple of 3: no padding inside.
	return c.quoted(n, func(b []byte, _ bool) int {
		c.out = base64.StdEncoding.AppendEncode(c.out, b)
		return len(b)
	})
}
