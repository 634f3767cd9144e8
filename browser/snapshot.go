package browser

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/cdppipe"
	"github.com/pagemux/pagemux/snapshot"
)

// This file fetches the accessibility tree for take_snapshot; package
// snapshot decodes it, hands out the uids and writes the text.
//
// The tree is read as a stream (a big page's answer is 100 MB, see
// snapshot/decode.go), past chromedp, which would read it whole. For a
// Chrome pagemux launched the answer is read in process from its pipe,
// through cdppipe.Mux, in the tab's own session, before chromedp could see it;
// for an attached one over a DevTools connection of its own to the page.
// Where neither can be had, the answer comes through chromedp, still
// decoded as a stream from its copy.

// Snapshot takes the accessibility tree of the main frame, with its frames'
// documents under their Iframe nodes, and formats it with uids that later
// calls can name. The tree comes from the browser's
// Config.SnapshotSource; see SnapshotFrom.
func (p *Page) Snapshot(ctx context.Context, verbose bool) (*snapshot.Snapshot, error) {
	return p.SnapshotFrom(ctx, verbose, p.b.cfg.SnapshotSource)
}

// SnapshotFrom is Snapshot with the tree from source: SourcePage computes
// a non-verbose snapshot's tree in the page, falling back on Chrome's tree
// where the page's script fails; SourceAuto (or "") does so where that is
// the quicker; a verbose snapshot, which shows what only Chrome's tree has
// (text boxes, ignored nodes), and SourceChrome take Chrome's.
func (p *Page) SnapshotFrom(ctx context.Context, verbose bool, source string) (*snapshot.Snapshot, error) {
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	var snap *snapshot.Snapshot
	err := p.await(ctx, func(ctx context.Context) error {
		for range 3 {
			gen := p.Generation()
			doc, err := p.tree(ctx, gen, treeSource(verbose, source))
			if errors.Is(err, errNavigated) {
				continue
			}
			if err != nil {
				return err
			}
			// A tree of a document that went away meanwhile would hand out
			// uids of the old document as if they were current.
			frames := p.childFrames(ctx, doc) // snapshot_frames.go
			if p.Generation() == gen {
				snap = p.UIDs.SnapshotFrames(&snapshot.Frame{Doc: doc, Frames: frames}, verbose)
				return nil
			}
		}
		return errors.New("the page kept navigating while the snapshot was taken; wait for it to load and take it again")
	})
	return snap, err
}

// errNavigated is tree's error when the page's script failed because the
// document of generation gen went away: take the new one's tree.
var errNavigated = errors.New("snapshot: the document went away")

// treeSource is where a snapshot's tree comes from: SourceChrome for a
// verbose one, else source, SourceAuto for "".
func treeSource(verbose bool, source string) string {
	if verbose {
		return SourceChrome
	}
	return cmp.Or(source, SourceAuto)
}

// tree fetches the main frame's tree: computed in the page from SourcePage,
// and from SourceAuto where that is the quicker; Chrome's from
// SourceChrome, or where the page's script fails (a page too deep for its
// stack, a document without a body). gen is the page's generation before
// it.
func (p *Page) tree(ctx context.Context, gen uint64, source string) (*snapshot.Doc, error) {
	if source != SourceChrome {
		doc, err := p.pageTree(ctx, source == SourceAuto)
		if err == nil || ctx.Err() != nil {
			return doc, err
		}
		if p.Generation() != gen {
			return nil, errNavigated
		}
		switch {
		case errors.Is(err, snapshot.ErrChromeQuicker): // the same text, sooner
		case errors.Is(err, snapshot.ErrNotWalked):
			p.b.log.Debug("snapshot: taking Chrome's tree", "page", p.ID, "why", err)
		default:
			msg, _, _ := strings.Cut(err.Error(), "\n") // not a script's whole stack
			p.b.log.Warn("snapshot: the page's tree failed; taking Chrome's", "page", p.ID, "error", msg)
		}
	}
	return p.fullAXTree(ctx)
}

// fullAXTree fetches the main frame's accessibility tree: streamed, where
// the browser gives a second way to the page (streamedAXTree), else through
// chromedp. ctx is a call context of the tab.
func (p *Page) fullAXTree(ctx context.Context) (*snapshot.Doc, error) {
	doc, err := p.streamedAXTree(ctx)
	if !errors.Is(err, errNoConn) {
		return doc, err
	}
	p.b.log.Debug("snapshot: no second DevTools connection; reading the tree through chromedp", "page", p.ID, "error", err)
	res, err := chromedp.Call(ctx, snapshot.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	return res.Doc, err
}

// streamedAXTree asks for the tree past chromedp and decodes the answer as
// it arrives: for a launched Chrome through its cdppipe.Mux, in the tab's own
// session, in process; for an attached one over a websocket of its own to
// the page's endpoint. Errors of getting there wrap errNoConn.
func (p *Page) streamedAXTree(ctx context.Context) (*snapshot.Doc, error) {
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

// errNoConn marks a failure to reach an endpoint, as opposed to a failure
// of the call made over it.
var errNoConn = errors.New("no devtools connection")

// muxAXTree asks Chrome for the tree in session sid through mux; chromedp
// never sees the answer. On a CBOR pipe the answer is decoded from Chrome's
// CBOR, never made JSON.
func muxAXTree(ctx context.Context, mux *cdppipe.Mux, sid string) (*snapshot.Doc, error) {
	var doc *snapshot.Doc
	cbor := mux.SpeaksCBOR()
	err := mux.StreamCall(ctx, sid, accessibility.CommandGetFullAXTree, nil, cbor, func(r io.Reader) error {
		var done bool
		var err error
		if cbor {
			doc, err = snapshot.ReadCBORReply(r)
			return err
		}
		doc, done, err = snapshot.ReadReply(r)
		if err == nil && !done {
			err = errors.New("snapshot: the answer had no result")
		}
		return err
	})
	if errors.Is(err, cdppipe.ErrClosed) {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return doc, err
}

// pageEndpoint is the websocket address of an attached browser's page's
// own DevTools endpoint, ws://HOST:PORT/devtools/page/TARGET.
func (p *Page) pageEndpoint(ctx context.Context) (string, error) {
	base, err := p.DevToolsURL()
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
func streamAXTree(ctx context.Context, u string) (*snapshot.Doc, error) {
	c, err := cdppipe.DialWS(ctx, u)
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
	for {
		msg, err := c.NextMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("snapshot connection: %w", err)
		}
		doc, done, err := snapshot.ReadReply(msg)
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
