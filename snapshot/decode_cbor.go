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
	var doc *Doc
	answer := errors.New("snapshot: the answer had no result")
	err := d.Members(func(k []byte) error {
		switch string(k) {
		case "result":
			a := &axDecoder{doc: &Doc{}}
			doc, answer = a.doc, nil
			return a.cborResult(d)
		case "error":
			e, err := cborError(d)
			answer = e
			return err
		}
		return d.Skip()
	})
	if err != nil {
		return nil, err
	}
	if answer != nil {
		return nil, answer
	}
	return doc, nil
}

// cborError reads an error answer's error.
func cborError(d *cdpcbor.Decoder) (*cdproto.Error, error) {
	e := &cdproto.Error{}
	return e, d.Members(func(k []byte) error {
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
}

// cborResult reads {"nodes": [...]}.
func (a *axDecoder) cborResult(d *cdpcbor.Decoder) error {
	return d.Members(func(k []byte) error {
		if string(k) != "nodes" {
			return d.Skip()
		}
		return d.Items(func() error { return a.cborNode(d) })
	})
}

// cborNode reads one AXNode, as node does.
func (a *axDecoder) cborNode(d *cdpcbor.Decoder) error {
	doc := a.doc
	i := doc.add()
	n := &doc.nodes[i]
	return d.Members(func(k []byte) error {
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
			err = d.Items(func() error {
				var p axProp
				err := d.Members(func(k []byte) error {
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
			err = d.Items(func() error {
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
	err := d.Members(func(k []byte) error {
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
