package cdpcbor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// cborMessages converts messages from CBOR to JSON as the mux does, and
// returns them without their NULs.
func cborMessages(t *testing.T, stream []byte) ([]string, error) {
	t.Helper()
	r := ToJSON(bytes.NewReader(stream), nil)
	defer r.Close()
	out, err := io.ReadAll(r)
	msgs := strings.Split(string(out), "\x00")
	return msgs[:len(msgs)-1], err
}

// envelope wraps content as Chrome does a message.
func envelope(content ...byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{tag1, envelopeTag, byteString32}, uint32(len(content))), content...)
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %v\n%q", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// What pagemux sends Chrome comes back the same through Chrome's encoding
// and the mux's conversion, nested maps enveloped, strings in either of
// Chrome's forms.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é日😀x", 20000) // pieces cut inside characters
	for _, msg := range []string{
		`{"id":1,"method":"Browser.getVersion","params":{}}`,
		`{"id":2,"method":"Runtime.evaluate","params":{"expression":"1+1","returnByValue":true,"awaitPromise":false},"sessionId":"ABC"}`,
		`{"id":1073741824,"result":{"a":[1,-1,-2147483648,2147483647,2147483648,-2147483649,0.5,-1e300,1e21,5e-7,true,false,null,[],{}]}}`,
		`{"s":"caf\u00e9 \u65e5\u672c \ud83d\ude00 \" \\ \n\t\u0001 /"}`,
		`{"long":"` + long + `","deep":{"a":{"b":{"c":[{"d":{}}]}}}}`,
	} {
		b, err := FromJSON(nil, []byte(msg))
		if err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		if b[0] != tag1 || b[1] != envelopeTag {
			t.Fatalf("%.40s: not an envelope: % x", msg, b[:8])
		}
		got, err := cborMessages(t, b)
		if err != nil || len(got) != 1 {
			t.Fatalf("%.40s: %d messages, %v", msg, len(got), err)
		}
		sameJSON(t, got[0], msg)
	}
	// Non-ASCII goes as UTF-16LE, as Chrome's own conversion has it.
	b, _ := FromJSON(nil, []byte(`{"s":"é"}`))
	if !bytes.Contains(b, []byte{0x42, 0xe9, 0x00}) {
		t.Errorf("é not in UTF-16LE: % x", b)
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `[1,2`} {
		if _, err := FromJSON(nil, []byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The parts of Chrome's CBOR that JSON writes otherwise: binary as base64,
// doubles that Go reads as ints, no NaN, lone surrogates, bad UTF-8, NULs
// between messages, definite lengths.
func TestFromChrome(t *testing.T) {
	t.Parallel()
	key := func(s string) []byte { return append([]byte{0x60 | byte(len(s))}, s...) }
	double := func(f float64) []byte {
		return binary.BigEndian.AppendUint64([]byte{float64Byte}, math.Float64bits(f))
	}
	bin := bytes.Repeat([]byte{0, 1, 2, 0xff}, 40000) // over a piece
	binItem := append(binary.BigEndian.AppendUint32([]byte{tagBinary, byteString32}, uint32(len(bin))), bin...)
	var m []byte
	m = append(m, indefMap)
	m = append(append(m, key("bin")...), binItem...)
	m = append(append(m, key("big")...), double(5e9)...)
	m = append(append(m, key("frac")...), double(0.25)...)
	m = append(append(m, key("nan")...), double(math.NaN())...)
	m = append(append(m, key("half")...), float16Byte, 0x3e, 0x00) // 1.5
	// "a", a lone high surrogate, "b", a lone low one, in UTF-16LE.
	m = append(append(m, key("u16")...), 0x48, 'a', 0, 0x00, 0xd8, 'b', 0, 0x00, 0xdc)
	m = append(append(m, key("utf8")...), 0x63, 'a', 0xff, 'b')
	m = append(append(m, key("arr")...), 0x82, 0x01, 0x20) // [1, -1]
	m = append(append(m, key("map")...), 0xa1, 0x61, 'k', 0xf6)
	m = append(m, breakByte)
	stream := append(envelope(m...), 0) // a NUL after it, as on a JSON pipe
	stream = append(stream, envelope(indefMap, 0x62, 'i', 'd', 0x07, breakByte)...)
	msgs, err := cborMessages(t, stream)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	var got struct {
		Bin       []byte // base64 in JSON
		Big       int64
		Frac      float64
		Nan       *float64
		Half      float64
		U16, UTF8 string
		Arr       []int
		Map       map[string]any
	}
	if err := json.Unmarshal([]byte(msgs[0]), &got); err != nil {
		t.Fatalf("%v\n%.300s", err, msgs[0])
	}
	if !bytes.Equal(got.Bin, bin) || got.Big != 5e9 || got.Frac != 0.25 || got.Nan != nil || got.Half != 1.5 ||
		got.U16 != "a\ufffdb\ufffd" || got.UTF8 != "a\ufffdb" || !reflect.DeepEqual(got.Arr, []int{1, -1}) || len(got.Map) != 1 {
		t.Errorf("got %+v", got)
	}
	if msgs[1] != `{"id":7}` {
		t.Errorf("second message %s", msgs[1])
	}
}

// A stream that is not Chrome's CBOR ends the conversion with an error,
// never a hang or a message with a wrong end.
func TestBad(t *testing.T) {
	t.Parallel()
	for name, stream := range map[string][]byte{
		"not an envelope":   {0xbf, 0xff},
		"short envelope":    envelope(indefMap, 0x61, 'a', 0x01, breakByte)[:9],
		"envelope too long": append(binary.BigEndian.AppendUint32([]byte{tag1, envelopeTag, byteString32}, 9), indefMap, breakByte, 0, 0, 0, 0, 0, 0, 0),
		"not a map":         envelope(0x01),
		"key not a string":  envelope(indefMap, 0x01, 0x01, breakByte),
		"odd UTF-16":        envelope(indefMap, 0x61, 'a', 0x43, 1, 2, 3, breakByte),
		"unknown tag":       envelope(indefMap, 0x61, 'a', tag1, 99, 0x01, breakByte),
	} {
		msgs, err := cborMessages(t, stream)
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("%s: no error (%q)", name, msgs)
		}
	}
}

// FuzzToJSON: whatever the bytes, the conversion ends, and what it
// gives as a message is JSON.
func FuzzToJSON(f *testing.F) {
	m, _ := FromJSON(nil, []byte(`{"id":1,"result":{"a":[1,"é",{"b":null}],"c":1.5}}`))
	f.Add(m)
	f.Add(envelope(indefMap, 0x61, 'a', 0x43, 1, 2, 3, breakByte))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := ToJSON(bytes.NewReader(b), nil)
		out, _ := io.ReadAll(r)
		r.Close()
		msgs := bytes.Split(out, []byte{0})
		for _, msg := range msgs[:len(msgs)-1] {
			if !json.Valid(msg) {
				t.Fatalf("not JSON: %q", msg)
			}
		}
	})
}

// FuzzDecoder: whatever the bytes, walking them with a Decoder ends
// without a panic, and a map or array read whole gives JSON.
func FuzzDecoder(f *testing.F) {
	m, _ := FromJSON(nil, []byte(`{"id":1,"result":{"nodes":[{"nodeId":"1","ignored":false,"name":{"type":"computedString","value":"é"},"childIds":["2"]}]}}`))
	f.Add(m)
	f.Add(envelope(indefMap, 0x61, 'a', 0x5a, 0x7f, 0xff, 0xff, 0xff, breakByte)) // a string longer than the input
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(bytes.NewReader(b))
		var walk func(depth int) error
		walk = func(depth int) error {
			k, err := d.Peek()
			if err != nil {
				return err
			}
			switch {
			case depth > 3 && (k == Map || k == Array):
				out, err := d.AppendJSON(nil)
				if err == nil && !json.Valid(out) {
					t.Fatalf("not JSON: %q", out)
				}
				return err
			case k == Map:
				return d.Members(func([]byte) error { return walk(depth + 1) })
			case k == Array:
				return d.Items(func() error { return walk(depth + 1) })
			case k == String:
				_, err = d.Str()
			case k == Int || k == Float:
				_, err = d.Int()
			case k == Bool:
				_, err = d.Bool()
			default:
				err = d.Skip()
			}
			return err
		}
		for walk(0) == nil {
		}
	})
}

// A Decoder reads maps and arrays of either length, enveloped or not, a
// member at a time, and leaves what follows them for the next read.
func TestDecoderMembersItems(t *testing.T) {
	t.Parallel()
	stream := []byte{0xa2, 0x61, 'a', 0x01, 0x61, 'b', 0x82, 0x02, 0x03} // {"a":1,"b":[2,3]}
	stream = append(stream, envelope(indefMap, 0x61, 'c', indefArray, 0x04, breakByte, breakByte)...)
	stream = append(stream, 0x05) // what follows
	d := NewDecoder(bytes.NewReader(stream))
	var got []string
	var ints []int64
	readMap := func() error {
		return d.Members(func(k []byte) error {
			got = append(got, string(k))
			if k, _ := d.Peek(); k == Array {
				return d.Items(func() error {
					n, err := d.Int()
					ints = append(ints, n)
					return err
				})
			}
			n, err := d.Int()
			ints = append(ints, n)
			return err
		})
	}
	if err := readMap(); err != nil {
		t.Fatal(err)
	}
	if err := readMap(); err != nil {
		t.Fatal(err)
	}
	last, err := d.Int()
	if err != nil || last != 5 || strings.Join(got, ",") != "a,b,c" || !reflect.DeepEqual(ints, []int64{1, 2, 3, 4}) {
		t.Errorf("keys %v, ints %v, then %d (%v)", got, ints, last, err)
	}
}
