package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/chromedp"
)

// A big page's accessibility tree is a big answer: 200,000 DOM nodes make
// about 100 MB of JSON. chromedp reads an answer whole, copies it twice on
// the way and then decodes it into a Node per node, so such a snapshot held
// the tree five times over (1 GB). Here the answer is read as a stream,
// past chromedp, and each node is kept only
// as far as the snapshot needs it (axRawDoc), so memory grows with what the
// snapshot shows, not with what Chrome says. For a Chrome pagemux launched
// the answer is read in process from its pipe, through cdpMux, in the tab's
// own session, before chromedp could see it; for an attached one over a
// DevTools connection of its own to the page. Where neither can be had, the
// answer comes through chromedp, still decoded as a stream from its copy.

// axArenaChunk is the size of the blocks the values of a tree are copied
// into: one allocation for thousands of small values.
const axArenaChunk = 64 << 10

// axDecoder reads Accessibility.getFullAXTree's result into an axRawDoc.
type axDecoder struct {
	doc   *axRawDoc
	arena []byte
	names map[string]string // property names, shared
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

// axTreeResult is the result of getFullAXTree decoded as a stream, for a
// call through chromedp.
type axTreeResult struct{ doc *axRawDoc }

// UnmarshalJSONFrom decodes {"nodes": [...]}.
func (r *axTreeResult) UnmarshalJSONFrom(d *jsonv2.Decoder) error {
	doc, err := decodeAXResult(d)
	r.doc = doc
	return err
}

// getFullAXTreeStream is Accessibility.getFullAXTree with a result that
// decodes itself into an axRawDoc.
var getFullAXTreeStream = cdp.Command[accessibility.GetFullAXTreeParams, axTreeResult]{Method: accessibility.CommandGetFullAXTree}

// decodeAXResult reads the result object of getFullAXTree.
func decodeAXResult(d *jsonv2.Decoder) (*axRawDoc, error) {
	a := &axDecoder{doc: &axRawDoc{}}
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

// node reads one AXNode.
func (a *axDecoder) node(d *jsonv2.Decoder) error {
	doc := a.doc
	i := len(doc.nodes)
	doc.nodes = push(doc.nodes, axSrc{})
	doc.ids = push(doc.ids, doc.other.of(nil))
	doc.nkids = push(doc.nkids, 0)
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

// fullAXTree fetches the main frame's accessibility tree: streamed, where
// the browser gives a second way to the page (streamedAXTree), else through
// chromedp. ctx is a call context of the tab.
func (p *Page) fullAXTree(ctx context.Context) (*axRawDoc, error) {
	doc, err := p.streamedAXTree(ctx)
	if !errors.Is(err, errNoConn) {
		return doc, err
	}
	p.b.log.Debug("snapshot: no second DevTools connection; reading the tree through chromedp", "page", p.ID, "error", err)
	res, err := chromedp.Call(ctx, getFullAXTreeStream, accessibility.GetFullAXTreeParams{})
	return res.doc, err
}

// streamedAXTree asks for the tree past chromedp and decodes the answer as
// it arrives: for a launched Chrome through its cdpMux, in the tab's own
// session, in process; for an attached one over a websocket of its own to
// the page's endpoint. Errors of getting there wrap errNoConn.
func (p *Page) streamedAXTree(ctx context.Context) (*axRawDoc, error) {
	if !p.b.cfg.Attaches() {
		mux := p.launch.mux
		c := chromedp.FromContext(ctx)
		if mux == nil || c == nil || c.Target == nil || c.Target.SessionID == "" {
			return nil, fmt.Errorf("%w: no devtools pipe to share, or no session of the tab", errNoConn)
		}
		return muxAXTree(ctx, mux, string(c.Target.SessionID))
	}
	u, err := p.pageEndpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoConn, err)
	}
	return streamAXTree(ctx, u)
}

// muxAXTree asks Chrome for the tree in session sid through mux; chromedp
// never sees the answer.
func muxAXTree(ctx context.Context, mux *cdpMux, sid string) (*axRawDoc, error) {
	var doc *axRawDoc
	err := mux.streamCall(ctx, sid, accessibility.CommandGetFullAXTree, nil, func(r io.Reader) error {
		var d jsonv2.Decoder
		d.Reset(r, chromedp.DefaultUnmarshalOptions)
		var done bool
		var err error
		doc, done, err = decodeReplyMessage(&d)
		if err == nil && !done {
			err = errors.New("snapshot: the answer had no result")
		}
		return err
	})
	if errors.Is(err, errMuxClosed) {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return doc, err
}

// pageEndpoint is the websocket address of an attached browser's page's
// own DevTools endpoint, ws://HOST:PORT/devtools/page/TARGET.
func (p *Page) pageEndpoint(ctx context.Context) (string, error) {
	base, err := p.b.DevToolsURL(ctx)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "ws", "http":
		u.Scheme = "ws"
	default: // wss and https would need TLS: chromedp's connection does
		return "", fmt.Errorf("devtools endpoint %s: not plain ws or http", base)
	}
	u.Path, u.RawQuery = "/devtools/page/"+string(p.TargetID), ""
	return u.String(), nil
}

// streamAXTree asks the page at the websocket address u for its tree and
// decodes the answer as it arrives. Errors of the connection itself wrap
// errNoConn.
func streamAXTree(ctx context.Context, u string) (*axRawDoc, error) {
	c, err := dialWS(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoConn, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	const cmd = `{"id":1,"method":"` + accessibility.CommandGetFullAXTree + `","params":{}}`
	if err := c.WriteText([]byte(cmd)); err != nil {
		return nil, fmt.Errorf("%w: %v", errNoConn, err)
	}
	var d jsonv2.Decoder
	for {
		msg, err := c.NextMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("snapshot connection: %w", err)
		}
		d.Reset(msg, chromedp.DefaultUnmarshalOptions)
		doc, done, err := decodeReplyMessage(&d)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if done || err != nil {
			return doc, err
		}
		// An event: read the rest of it away.
		if _, err := io.Copy(io.Discard, msg); err != nil {
			return nil, err
		}
	}
}

// decodeReplyMessage reads one protocol message. done says it was the
// answer; an event gives done false.
func decodeReplyMessage(d *jsonv2.Decoder) (doc *axRawDoc, done bool, err error) {
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
