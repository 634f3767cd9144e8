package cdpcbor

import (
	"bufio"
	"bytes"
	"io"
	"math"
)

// Kind is the kind of the next data item, as JSON would have it.
type Kind byte

// The kinds of item: Binary is a byte string under tag 22 (base64 in JSON);
// a string is String whether Chrome sent UTF-8 or UTF-16.
const (
	Invalid Kind = iota
	Map
	Array
	String
	Int
	Float
	Bool
	Null
	Binary
)

// Decoder reads the data items of one CBOR stream in place, without making
// JSON of them, for an answer that is decoded into something of its own
// (a snapshot's tree). Members and Items do not check that an envelope's
// length is right (Skip takes an envelope by its length); AppendJSON checks
// an item as ToJSON does.
type Decoder struct {
	c       conv
	scratch []byte
}

// NewDecoder returns a Decoder that reads r.
func NewDecoder(r io.Reader) *Decoder {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < chunk {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	return &Decoder{c: conv{r: br}}
}

// Peek returns the kind of the next item without reading it.
func (d *Decoder) Peek() (Kind, error) {
	b, err := d.c.peek(2)
	if len(b) == 0 {
		return Invalid, err
	}
	switch x := b[0]; {
	case x == indefMap || x>>5 == 5:
		return Map, nil
	case x == indefArray || x>>5 == 4:
		return Array, nil
	case x == tag1 && len(b) > 1 && b[1] == envelopeTag:
		// An envelope holds a map or an array; which, its content says.
		h, err := d.c.peek(envelopeBytes + 1)
		if err != nil || len(h) < envelopeBytes+1 {
			return Invalid, err
		}
		if h[envelopeBytes] == indefArray || h[envelopeBytes]>>5 == 4 {
			return Array, nil
		}
		return Map, nil
	case x == tagBinary || x == tag1 && len(b) > 1 && b[1] == binaryTag:
		return Binary, nil
	case x>>5 == 2 || x>>5 == 3:
		return String, nil
	case x>>5 == 0 || x>>5 == 1:
		return Int, nil
	case x == float64Byte || x == float32Byte || x == float16Byte:
		return Float, nil
	case x == trueByte || x == falseByte:
		return Bool, nil
	case x == nullByte || x == undefinedByte:
		return Null, nil
	}
	return Invalid, syntaxError("item % x", b[0])
}

// Members calls member with each key of the map that comes next, for it to
// read the member's value; any other item is skipped whole.
func (d *Decoder) Members(member func(key []byte) error) error {
	return d.each(Map, func() error {
		k, err := d.Str()
		if err != nil {
			return err
		}
		return member(k)
	})
}

// Items calls item for each item of the array that comes next, for it to
// read the item; any other item is skipped whole.
func (d *Decoder) Items(item func() error) error {
	return d.each(Array, item)
}

// each opens the map or array of kind that comes next, its envelope taken,
// and calls one for each of its members or items; another kind is skipped.
func (d *Decoder) each(kind Kind, one func() error) error {
	if k, err := d.Peek(); err != nil || k != kind {
		if err != nil {
			return err
		}
		return d.Skip()
	}
	n, err := d.begin()
	if err != nil {
		return err
	}
	for i := int64(0); ; i++ {
		more, err := d.c.more(n - i)
		if err != nil || !more {
			return err
		}
		if err := one(); err != nil {
			return err
		}
	}
}

// begin opens the map or array that comes next, its envelope taken, and
// returns how many members or items it has (-1: up to its break).
func (d *Decoder) begin() (int64, error) {
	b, err := d.c.readByte()
	if err != nil {
		return 0, err
	}
	if b == tag1 {
		if t, err := d.c.readByte(); err != nil || t != envelopeTag {
			return 0, orSyntax(err, "tag %d where a map or array belongs", t)
		}
		if _, err := d.c.byteString("an envelope"); err != nil {
			return 0, err
		}
		if b, err = d.c.readByte(); err != nil {
			return 0, err
		}
	}
	switch {
	case b == indefMap || b == indefArray:
		return -1, nil
	case b>>5 == 4 || b>>5 == 5:
		n, err := d.c.argument(b & 31)
		return int64(min(n, math.MaxInt64)), err
	}
	return 0, syntaxError("% x where a map or array belongs", b)
}

func orSyntax(err error, format string, a ...any) error {
	if err != nil {
		return err
	}
	return syntaxError(format, a...)
}

// Str reads a string as UTF-8 (a UTF-16 one converted). The bytes are
// valid until the next read; any other item is an error.
func (d *Decoder) Str() ([]byte, error) {
	b, err := d.c.readByte()
	if err != nil {
		return nil, err
	}
	major := b >> 5
	if (major != 2 && major != 3) || b&31 == 31 {
		return nil, syntaxError("% x where a string belongs", b)
	}
	n, err := d.c.argument(b & 31)
	if err != nil {
		return nil, err
	}
	if n > math.MaxInt32 {
		return nil, syntaxError("a string of %d bytes", n)
	}
	var raw []byte
	if int(n) <= d.c.r.Size() {
		if raw, err = d.c.peek(int(n)); err != nil {
			return nil, err
		}
		d.c.discard(int(n))
	} else {
		// Grown as the bytes come, not to the length the item claims.
		buf := bytes.NewBuffer(d.scratch[:0])
		if _, err := io.CopyN(buf, d.c.r, int64(n)); err != nil {
			return nil, unexpected(err)
		}
		d.c.n += int64(n)
		raw, d.scratch = buf.Bytes(), buf.Bytes()
	}
	if major == 3 {
		return raw, nil
	}
	if n%2 != 0 {
		return nil, syntaxError("a UTF-16 string of %d bytes", n)
	}
	var u utf16Decoder
	out := u.end(u.append(make([]byte, 0, n), raw))
	return out, nil
}

// Int reads an int, or a double's integral part.
func (d *Decoder) Int() (int64, error) {
	b, err := d.c.readByte()
	if err != nil {
		return 0, err
	}
	if b == float64Byte || b == float32Byte || b == float16Byte {
		f, err := d.c.float(b)
		return int64(f), err
	}
	if major := b >> 5; major > 1 || b&31 == 31 {
		return 0, syntaxError("% x where an int belongs", b)
	}
	v, err := d.c.argument(b & 31)
	if err != nil || v > math.MaxInt64 {
		return 0, orSyntax(err, "an int beyond int64")
	}
	if b>>5 == 1 {
		return -1 - int64(v), nil
	}
	return int64(v), nil
}

// Bool reads an item and says whether it is true.
func (d *Decoder) Bool() (bool, error) {
	b, err := d.c.peek(1)
	if err != nil {
		return false, err
	}
	if b[0] == trueByte {
		d.c.discard(1)
		return true, nil
	}
	return false, d.Skip()
}

// AppendJSON appends the next item as JSON.
func (d *Decoder) AppendJSON(dst []byte) ([]byte, error) {
	d.c.out = dst
	err := d.c.value(0)
	dst, d.c.out = d.c.out, nil
	return dst, err
}

// Skip reads the next item away; an envelope goes in one step.
func (d *Decoder) Skip() error {
	return d.c.skip(0)
}

// skip reads one item away without converting it.
func (c *conv) skip(depth int) error {
	b, err := c.initial(depth)
	if err != nil {
		return err
	}
	switch b {
	case indefMap, indefArray:
		for {
			ok, err := c.more(-1)
			if err != nil || !ok {
				return err
			}
			if err := c.skip(depth + 1); err != nil {
				return err
			}
		}
	case falseByte, trueByte, nullByte, undefinedByte:
		return nil
	case float64Byte, float32Byte, float16Byte:
		_, err := c.float(b)
		return err
	case tagBinary:
		return c.skip(depth + 1)
	case tag1:
		if _, err := c.readByte(); err != nil { // envelope or binary: a byte string follows
			return err
		}
		return c.skip(depth + 1)
	}
	major, arg, err := c.head(b)
	if err != nil {
		return err
	}
	switch major {
	case 0, 1:
		return nil
	case 2, 3:
		return c.skipBytes(arg)
	case 4, 5:
		items := arg
		if major == 5 {
			items *= 2
		}
		for range items {
			if err := c.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return syntaxError("item % x", b)
}

func (c *conv) skipBytes(n uint64) error {
	for n > 0 {
		size := int(min(n, uint64(c.r.Size())))
		got, err := c.r.Discard(size)
		c.n += int64(got)
		if err != nil {
			return unexpected(err)
		}
		n -= uint64(size)
	}
	return nil
}
