package browser

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/snapshot"
)

// TestSnapshotStream: on real pages, the tree streamed from Chrome's pipe
// past chromedp, the tree streamed from chromedp's copy, and the tree chromedp
// decodes give the same snapshot.
func TestSnapshotStream(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.FileServer(http.Dir("../testdata")))
	t.Cleanup(site.Close)
	b := sharedBrowser(t)
	ctx := t.Context()
	p, err := b.NewPage(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	for _, path := range []string{"/form.html", "/fillform.html", "/typing.html"} {
		if err := p.Navigate(ctx, site.URL+path, 0); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := p.Context(ctx)
		streamed, err := p.streamedAXTree(cctx)
		if err != nil {
			t.Fatalf("%s: streaming through the mux: %v", path, err)
		}
		viaChromedp, err := chromedp.Call(cctx, snapshot.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := chromedp.Call(cctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, verbose := range []bool{false, true} {
			want := snapshot.NewUIDs().Snapshot(decoded.Nodes, verbose).Text
			if got := snapshot.NewUIDs().SnapshotFrames(&snapshot.Frame{Doc: streamed}, verbose).Text; got != want {
				t.Errorf("%s verbose=%v: the streamed tree gives\n%s\nwant\n%s", path, verbose, got, want)
			}
			if got := snapshot.NewUIDs().SnapshotFrames(&snapshot.Frame{Doc: viaChromedp.Doc}, verbose).Text; got != want {
				t.Errorf("%s verbose=%v: the tree streamed from chromedp gives\n%s\nwant\n%s", path, verbose, got, want)
			}
		}
		snap, err := p.Snapshot(ctx, false)
		if err != nil || len(snap.Text) == 0 {
			t.Fatalf("%s: Snapshot: %v", path, err)
		}
	}
}
