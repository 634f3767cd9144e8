package browser

import (
	"bytes"
	"context"
	"image/jpeg"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// TestThumbnails: a page that paints gives small JPEG frames, one per
// Every at most; a recording takes the page's screencast over, and the
// thumbnails wait for it to end, then come again; Thumbnails returns when
// its context ends.
func TestThumbnails(t *testing.T) {
	t.Parallel()
	p := openHTML(t, `<h1 id=n>0</h1><script>let k = 0; (function f() { n.textContent = ++k; requestAnimationFrame(f) })()</script>`)
	frames := make(chan []byte, 64)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const every = 100 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		done <- p.Capture().Thumbnails(ctx, ThumbnailOptions{Every: every}, func(b []byte) { frames <- b })
	}()
	next := func(what string) []byte {
		t.Helper()
		select {
		case b := <-frames:
			return b
		case err := <-done:
			t.Fatalf("%s: Thumbnails returned: %v", what, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no thumbnail in 10 s", what)
		}
		return nil
	}
	start := time.Now()
	for i := range 3 {
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(next("a painting page")))
		if err != nil || cfg.Width > 320 || cfg.Height > 200 {
			t.Fatalf("thumbnail %d: %v, %dx%d", i, err, cfg.Width, cfg.Height)
		}
	}
	if took := time.Since(start); took < 2*every {
		t.Errorf("3 thumbnails in %v: want one per %v at most", took, every)
	}

	var recorded atomic.Int64
	lctx, stopListening := context.WithCancel(p.ctx)
	defer stopListening()
	if err := chromedp.Listen(lctx, func(ev any) {
		if _, ok := ev.(*page.EventScreencastFrame); ok {
			recorded.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	sc, err := p.Capture().StartScreencast(t.Context(), filepath.Join(t.TempDir(), "video.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	for len(frames) > 0 {
		<-frames // taken before the recording started
	}
	// The recording gets the page's frames, the thumbnails none of them.
	recorded.Store(0)
	mcptest.WaitFor(t, "the recording's frames beside Thumbnails", func() bool { return recorded.Load() >= 20 })
	if n := len(frames); n > 1 {
		t.Errorf("%d thumbnails while a recording ran", n)
	}
	if _, err := sc.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	for len(frames) > 0 {
		<-frames
	}
	next("after the recording")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Thumbnails after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Thumbnails did not return after its context ended")
	}
}
