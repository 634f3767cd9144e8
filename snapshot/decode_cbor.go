package snapshot

import (
	"errors"
	"io"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"

	"github.com/pagemux/pagemux/cdpcbor"
)

// This file reads getFullAXTree's answer as Chrome encodes it on a CBOR
// pipe, straight into a Doc: the answer is never JSON, neither in Chrome's
// browser process nor here. It reads what decode.go reads, the same way.

// ReadCBORReply reads the answer to a getFullAXTree from r, one message's
// map as cdpcbor.Divert hands it over, as it arrives. An error answer
// gives a *cdproto.Error. It sends nothing.
func ReadCBORReply(r io.Reader) (*Doc, error) {
	d := cdpcbor.NewDecoder(r)
	msg, err := d.Begin()
	if err != nil {
		return nil, err
	}
	for {
		more, err := d.Next(&msg)
		if err != nil {
			return nil, err
		}
		if !more {
			return nil, errors.New("snapshot: the answer had no result")
		}
		k, err := d.Str()
		if err != nil {
			return nil, err
		}
		switch string(k) {
		case "result":
			a := &axDecoder{doc: &Doc{}}
			return a.doc, a.cborResult(d)
		case "error":
			return nil, cborError(d)
		}
		if err := d.Skip(); err != nil {
			return nil, err
		}
	}
}

// cborError reads an error answer's error.
func cborError(d *cdpcbor.Decoder) error {
	e := &cdproto.Error{}
	err := cborMembers(d, func(k []byte) error {
		var err error
		switch string(k) {
		case "code":
			e.Code, err = d.Int()
		case "message":
			var s []byte
			s, err = d.Str()
			e.Message = string(s)
		default:
			err = d.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	return e
}

// cborMembers calls member with each key of the map that comes next, for
// it to read the value; anything but a map is skipped.
func cborMembers(d *cdpcbor.Decoder, member func(k []byte) error) error {
	if k, err := d.Peek(); err != nil || k != cdpcbor.Map {
		if err != nil {
			return err
		}
		return d.Skip()
	}
	m, err := d.Begin()
	if err != nil {
		return err
	}
	for {
		more, err := d.Next(&m)
		if err != nil || !more {
			return err
		}
		k, err := d.Str()
		if err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
	}
}

// cborItems calls item for each item of the array that comes next;
// anything but an array is skipped.
func cborItems(d *cdpcbor.Decoder, item func() error) error {
	if k, err := d.Peek(); err != nil || k != cdpcbor.Array {
		if err != nil {
			return err
		}
		return d.Skip()
	}
	s, err := d.Begin()
	if err != nil {
		return err
	}
	for {
		more, err := d.Next(&s)
		if err != nil || !more {
			return err
		}
		if err := item(); err != nil {
			return err
		}
	}
}

// cborResult reads {"nodes": [...]}.
func (a *axDecoder) cborResult(d *cdpcbor.Decoder) error {
	return cborMembers(d, func(k []byte) error {
		if string(k) != "nodes" {
			return d.Skip()
		}
		return cborItems(d, func() error { return a.cborNode(d) })
	})
}

// cborNode reads one AXNode, as node does.
func (a *axDecoder) cborNode(d *cdpcbor.Decoder) error {
	doc := a.doc
	i := len(doc.nodes)
	doc.nodes = push(doc.nodes, axSrc{})
	doc.ids = push(doc.ids, doc.other.of(nil))
	doc.nkids = push(doc.nkids, 0)
	n := &doc.nodes[i]
	return cborMembers(d, func(k []byte) error {
		var err error
		switch string(k) {
		case "nodeId":
			var v []byte
			if v, err = a.cborStr(d); err == nil {
				doc.ids[i] = doc.other.of(v)
			}
		case "ignored":
			n.ignored, err = d.Bool()
		case "backendDOMNodeId":
			var v int64
			if v, err = d.Int(); err == nil {
				n.backend = cdp.BackendNodeID(v)
			}
		case "frameId":
			var v []byte
			if v, err = a.cborStr(d); err == nil && i == 0 {
				doc.frame = cdp.FrameID(v)
			}
		case "role":
			n.role, err = a.cborValue(d)
		case "name":
			n.name, err = a.cborValue(d)
		case "description":
			n.desc, err = a.cborValue(d)
		case "value":
			n.value, err = a.cborValue(d)
		case "properties":
			err = cborItems(d, func() error {
				var p axProp
				err := cborMembers(d, func(k []byte) error {
					switch string(k) {
					case "name":
						v, err := a.cborStr(d)
						p.name = a.name(v)
						return err
					case "value":
						var err error
						p.value, err = a.cborValue(d)
						return err
					}
					return d.Skip()
				})
				n.props = append(n.props, p)
				return err
			})
		case "childIds":
			err = cborItems(d, func() error {
				v, err := a.cborStr(d)
				doc.kids = push(doc.kids, doc.other.of(v))
				doc.nkids[i]++
				return err
			})
		default:
			err = d.Skip()
		}
		return err
	})
}

// cborStr reads a string; anything else gives nil, as str does.
func (a *axDecoder) cborStr(d *cdpcbor.Decoder) ([]byte, error) {
	if k, err := d.Peek(); err != nil || k != cdpcbor.String {
		if err != nil {
			return nil, err
		}
		return nil, d.Skip()
	}
	return d.Str()
}

// cborValue reads an AXValue and returns the JSON of its "value" member,
// as value does: nil for a missing AXValue, empty for one without a value.
func (a *axDecoder) cborValue(d *cdpcbor.Decoder) ([]byte, error) {
	if k, err := d.Peek(); err != nil || k != cdpcbor.Map {
		if err != nil {
			return nil, err
		}
		return nil, d.Skip()
	}
	out := axEmpty
	err := cborMembers(d, func(k []byte) error {
		if string(k) != "value" {
			return d.Skip()
		}
		raw, err := d.AppendJSON(a.scratch[:0])
		a.scratch = raw
		out = a.copy(raw)
		return err
	})
	return out, err
}
