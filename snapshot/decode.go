package snapshot

import (
	"fmt"
	"io"
	"slices"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
)

// A big page's accessibility tree is a big answer: 200,000 DOM nodes make
// about 100 MB of JSON. chromedp reads an answer whole, copies it twice on
// the way and then decodes it into a Node per node, so such a snapshot held
// the tree five times over (1 GB). Here the answer is read as a stream, and
// each node is kept only as far as the snapshot needs it (Doc), so memory
// grows with what the snapshot shows, not with what Chrome says. Where the
// stream comes from (Chrome's pipe, a websocket of its own, chromedp's copy
// of the answer) is browser/'s business (browser/snapshot.go).

// decodeOptions are the options chromedp decodes Chrome's messages with.
var decodeOptions = jsonv2.JoinOptions(jsonv2.DefaultOptionsV2(), jsonv2.AllowInvalidUTF8(true))

// axArenaChunk is the size of the blocks the values of a tree are copied
// into: one allocation for thousands of small values.
const axArenaChunk = 64 << 10

// axDecoder reads Accessibility.getFullAXTree's result into a Doc.
type axDecoder struct {
	doc     *Doc
	arena   []byte
	names   map[string]string // property names, shared
	scratch []byte            // a value's JSON, before the arena
}

// copy keeps b in the arena; nil stays nil and empty stays empty.
func (a *axDecoder) copy(b []byte) []byte {
	switch {
	case b == nil:
		return nil
	case len(b) == 0:
		return axEmpty
	case len(b) > axArenaChunk/4:
		return append([]byte(nil), b...)
	}
	if cap(a.arena)-len(a.arena) < len(b) {
		a.arena = make([]byte, 0, axArenaChunk)
	}
	start := len(a.arena)
	a.arena = append(a.arena, b...)
	return a.arena[start:len(a.arena):len(a.arena)]
}

func (a *axDecoder) name(b []byte) string {
	if s, ok := a.names[string(b)]; ok {
		return s
	}
	if a.names == nil {
		a.names = map[string]string{}
	}
	s := string(b)
	a.names[s] = s
	return s
}

// key reads an object member's name, as raw JSON: compare it with a quoted
// string. It allocates nothing; the bytes last until the next read.
func key(d *jsonv2.Decoder) ([]byte, error) {
	return d.ReadValue()
}

// str reads a string and returns its content, valid until the next read;
// any other value gives nil.
func str(d *jsonv2.Decoder) ([]byte, error) {
	raw, err := d.ReadValue()
	if err != nil || len(raw) < 2 || raw[0] != '"' {
		return nil, err
	}
	if !slices.Contains(raw, '\\') {
		return raw[1 : len(raw)-1], nil
	}
	s, _ := axUnquote(raw)
	return s, nil
}

// push appends v, doubling the capacity when it runs out: append grows a
// big slice by a quarter, which for a tree of 200,000 nodes allocates five
// times its size on the way.
func push[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 256))
	}
	return append(s, v)
}

// Result is the result of getFullAXTree decoded as a stream, for a call
// through chromedp (GetFullAXTree).
type Result struct{ Doc *Doc }

// UnmarshalJSONFrom decodes {"nodes": [...]}.
func (r *Result) UnmarshalJSONFrom(d *jsonv2.Decoder) error {
	doc, err := decodeAXResult(d)
	r.Doc = doc
	return err
}

// GetFullAXTree is Accessibility.getFullAXTree with a result that decodes
// itself into a Doc as chromedp reads it. It is only the command: the caller
// sends it.
var GetFullAXTree = cdp.Command[accessibility.GetFullAXTreeParams, Result]{Method: accessibility.CommandGetFullAXTree}

// decodeAXResult reads the result object of getFullAXTree.
func decodeAXResult(d *jsonv2.Decoder) (*Doc, error) {
	a := &axDecoder{doc: &Doc{}}
	if err := expect(d, '{'); err != nil {
		return nil, err
	}
	for d.PeekKind() != '}' {
		k, err := key(d)
		if err != nil {
			return nil, err
		}
		if string(k) != `"nodes"` {
			if err := d.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		if d.PeekKind() == 'n' {
			if _, err := d.ReadToken(); err != nil {
				return nil, err
			}
			continue
		}
		if err := expect(d, '['); err != nil {
			return nil, err
		}
		for d.PeekKind() != ']' {
			if err := a.node(d); err != nil {
				return nil, err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
	}
	_, err := d.ReadToken()
	return a.doc, err
}

func expect(d *jsonv2.Decoder, kind byte) error {
	tok, err := d.ReadToken()
	if err != nil {
		return err
	}
	if byte(tok.Kind()) != kind {
		return fmt.Errorf("accessibility tree: want %q, got %v", kind, tok)
	}
	return nil
}

// add appends an empty node, without an id nor children, and returns its
// index; the decoders fill it in.
func (doc *Doc) add() int {
	doc.nodes = push(doc.nodes, axSrc{})
	doc.ids = push(doc.ids, doc.other.of(nil))
	doc.nkids = push(doc.nkids, 0)
	return len(doc.nodes) - 1
}

// node reads one AXNode.
func (a *axDecoder) node(d *jsonv2.Decoder) error {
	doc := a.doc
	i := doc.add()
	if d.PeekKind() == 'n' { // a null node, as rawDoc takes it
		_, err := d.ReadToken()
		return err
	}
	if err := expect(d, '{'); err != nil {
		return err
	}
	n := &doc.nodes[i]
	for d.PeekKind() != '}' {
		k, err := key(d)
		if err != nil {
			return err
		}
		switch k := string(k); k {
		case `"nodeId"`:
			v, err := str(d)
			if err != nil {
				return err
			}
			doc.ids[i] = doc.other.of(v)
		case `"ignored"`:
			v, err := d.ReadToken()
			if err != nil {
				return err
			}
			n.ignored = v.Kind() == 't'
		case `"backendDOMNodeId"`:
			v, err := d.ReadToken()
			if err != nil {
				return err
			}
			if v.Kind() == '0' {
				n.backend = cdp.BackendNodeID(v.Int())
			}
		case `"frameId"`:
			v, err := str(d)
			if err != nil {
				return err
			}
			if i == 0 {
				doc.frame = cdp.FrameID(v)
			}
		case `"role"`, `"name"`, `"description"`, `"value"`:
			v, err := a.value(d)
			if err != nil {
				return err
			}
			switch k {
			case `"role"`:
				n.role = v
			case `"name"`:
				n.name = v
			case `"description"`:
				n.desc = v
			default:
				n.value = v
			}
		case `"properties"`:
			if err := a.props(d, n); err != nil {
				return err
			}
		case `"childIds"`:
			count, err := a.childIDs(d)
			if err != nil {
				return err
			}
			doc.nkids[i] = count
		default:
			if err := d.SkipValue(); err != nil {
				return err
			}
		}
	}
	_, err := d.ReadToken()
	return err
}

// value reads an AXValue and returns the raw JSON of its "value" member.
func (a *axDecoder) value(d *jsonv2.Decoder) ([]byte, error) {
	if d.PeekKind() != '{' {
		return nil, d.SkipValue() // null, or not an AXValue: missing
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	out := axEmpty
	for d.PeekKind() != '}' {
		k, err := key(d)
		if err != nil {
			return nil, err
		}
		if string(k) != `"value"` {
			if err := d.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		raw, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		out = a.copy(raw)
	}
	_, err := d.ReadToken()
	return out, err
}

// props reads the properties array.
func (a *axDecoder) props(d *jsonv2.Decoder, n *axSrc) error {
	if d.PeekKind() != '[' {
		return d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != ']' {
		if d.PeekKind() != '{' {
			if err := d.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		var p axProp
		for d.PeekKind() != '}' {
			k, err := key(d)
			if err != nil {
				return err
			}
			switch string(k) {
			case `"name"`:
				v, err := str(d)
				if err != nil {
					return err
				}
				p.name = a.name(v)
			case `"value"`:
				if p.value, err = a.value(d); err != nil {
					return err
				}
			default:
				if err := d.SkipValue(); err != nil {
					return err
				}
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		n.props = append(n.props, p)
	}
	_, err := d.ReadToken()
	return err
}

// childIDs appends the ids of the childIds array to the document's.
func (a *axDecoder) childIDs(d *jsonv2.Decoder) (int32, error) {
	if d.PeekKind() != '[' {
		return 0, d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return 0, err
	}
	var count int32
	for d.PeekKind() != ']' {
		v, err := str(d)
		if err != nil {
			return 0, err
		}
		a.doc.kids = push(a.doc.kids, a.doc.other.of(v))
		count++
	}
	_, err := d.ReadToken()
	return count, err
}

// ReadReply reads one protocol message from r, the answer to a
// getFullAXTree sent past chromedp, as it arrives. done says it was the
// answer (an error answer gives a *cdproto.Error); an event gives done
// false, and may be left partly unread. It sends nothing.
func ReadReply(r io.Reader) (doc *Doc, done bool, err error) {
	var d jsonv2.Decoder
	d.Reset(r, decodeOptions)
	return decodeReply(&d)
}

// decodeReply reads one protocol message.
func decodeReply(d *jsonv2.Decoder) (doc *Doc, done bool, err error) {
	if err := expect(d, '{'); err != nil {
		return nil, false, err
	}
	for d.PeekKind() != '}' {
		k, err := key(d)
		if err != nil {
			return nil, false, err
		}
		switch string(k) {
		case `"result"`:
			doc, err := decodeAXResult(d)
			return doc, true, err
		case `"error"`:
			e := &cdproto.Error{}
			if err := jsonv2.UnmarshalDecode(d, e); err != nil {
				return nil, true, err
			}
			return nil, true, e
		case `"method"`:
			return nil, false, nil
		default:
			if err := d.SkipValue(); err != nil {
				return nil, false, err
			}
		}
	}
	return nil, false, nil
}
