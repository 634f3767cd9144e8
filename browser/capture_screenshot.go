package browser

import (
	"context"
	"fmt"
	"math"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The captures of a page: a screenshot (this file), a screencast, a trace
// and a heap snapshot (capture_*.go).

// ScreenshotOptions say what to capture and how to encode it.
type ScreenshotOptions struct {
	Format   string // png (default), jpeg or webp
	Quality  int    // 0-100, jpeg and webp only; 0 means the encoder's default
	FullPage bool
	UID      string // capture only this element
}

// Screenshot captures the viewport, the whole page or one element.
func (p *Page) Screenshot(ctx context.Context, o ScreenshotOptions) ([]byte, error) {
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	release, err := p.HoldFront(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []byte
	err = p.await(ctx, func(ctx context.Context) error {
		params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormat(o.Format), OptimizeForSpeed: new(true)}
		if o.Format == "" {
			params.Format = page.CaptureScreenshotFormatPng
		}
		if o.Quality > 0 && params.Format != page.CaptureScreenshotFormatPng {
			params.Quality = new(int64(o.Quality))
		}
		switch {
		case o.UID != "":
			el, err := p.resolve(ctx, o.UID)
			if err != nil {
				return err
			}
			if _, _, err := el.center(ctx); err != nil {
				return err
			}
			clip, inView, err := el.clip(ctx)
			if err != nil {
				return err
			}
			params.Clip = clip
			// Beyond the viewport Chrome lays the page out again at its
			// whole size, and a frame in a process of its own may not have
			// drawn itself anew when the shot is taken: only an element
			// bigger than the viewport is captured so.
			params.CaptureBeyondViewport = new(!inView)
		case o.FullPage:
			m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
			if err != nil {
				return err
			}
			if m.CSSContentSize != nil {
				params.Clip = &page.Viewport{Width: m.CSSContentSize.Width, Height: m.CSSContentSize.Height, Scale: 1}
				params.CaptureBeyondViewport = new(true)
			}
		}
		res, err := chromedp.Call(ctx, page.CaptureScreenshot, params)
		out = res.Data
		return err
	})
	return out, err
}

// clip returns the element's border box in page coordinates, and whether
// it lies within the visual viewport.
func (e *element) clip(ctx context.Context) (clip *page.Viewport, inView bool, err error) {
	res, err := chromedp.Call(e.on(ctx), dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: e.backend})
	if err != nil || res.Model == nil || len(res.Model.Border) < 8 {
		return nil, false, fmt.Errorf("the element with uid %s has no box to capture", e.uid)
	}
	border, err := e.toTab(ctx, res.Model.Border)
	if err != nil {
		return nil, false, err
	}
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return nil, false, err
	}
	b := border
	minX, minY := math.Min(math.Min(b[0], b[2]), math.Min(b[4], b[6])), math.Min(math.Min(b[1], b[3]), math.Min(b[5], b[7]))
	maxX, maxY := math.Max(math.Max(b[0], b[2]), math.Max(b[4], b[6])), math.Max(math.Max(b[1], b[3]), math.Max(b[5], b[7]))
	var sx, sy float64
	if v := m.CSSVisualViewport; v != nil {
		sx, sy = v.PageX, v.PageY
		inView = minX >= 0 && minY >= 0 && maxX <= v.ClientWidth && maxY <= v.ClientHeight
	}
	return &page.Viewport{X: minX + sx, Y: minY + sy, Width: maxX - minX, Height: maxY - minY, Scale: 1}, inView, nil
}
