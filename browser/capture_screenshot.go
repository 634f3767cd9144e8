package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // image.DecodeConfig of a capture
	_ "image/png"
	"math"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
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
	// Max caps the image's size in pixels, either side 0 for no cap of
	// its own: a bigger capture is scaled down to fit (never cut), its
	// aspect kept (capCapture).
	Max Size
}

// Size is an image's width and height in pixels.
type Size struct{ Width, Height int }

// Shot is a screenshot: the encoded image, and when Max scaled it down,
// the size it would have had (Scaled false, From zero, when it was not).
type Shot struct {
	Data   []byte
	Scaled bool
	From   Size
	Size   Size // the size Max scaled it to
}

// Capture is what a page gives as files: screenshots, screencasts,
// performance traces, heap snapshots, HAR, PDF, and the live view's
// thumbnails (capture_*.go, har.go, pdf.go, thumbnail.go). Take it with
// Page.Capture; call it holding the page's lock, but for thumbnails.
type Capture struct{ p *Page }

// Capture returns the page's captures.
func (p *Page) Capture() Capture { return Capture{p} }

// Screenshot captures the viewport, the whole page or one element: the
// image of CaptureScreenshot.
func (cp Capture) Screenshot(ctx context.Context, o ScreenshotOptions) ([]byte, error) {
	shot, err := cp.CaptureScreenshot(ctx, o)
	return shot.Data, err
}

// CaptureScreenshot captures the viewport, the whole page or one element,
// scaled down to fit o.Max when it is bigger.
func (cp Capture) CaptureScreenshot(ctx context.Context, o ScreenshotOptions) (Shot, error) {
	p := cp.p
	if err := p.Ready(ctx); err != nil {
		return Shot{}, err
	}
	release, err := p.HoldFront(ctx)
	if err != nil {
		return Shot{}, err
	}
	defer release()
	var out Shot
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
		if o.Max.Width > 0 || o.Max.Height > 0 {
			if err := capCapture(ctx, &params, o.Max, &out); err != nil {
				return err
			}
		}
		res, err := chromedp.Call(ctx, page.CaptureScreenshot, params)
		out.Data = res.Data
		if err == nil && params.Clip != nil && (o.Max.Width > 0 || o.Max.Height > 0) {
			err = recapOver(ctx, &params, o.Max, &out)
		}
		return err
	})
	return out, err
}

// recapOver captures again, smaller, an image that came out bigger than
// max: a page that lies about its devicePixelRatio. Its real size says
// by how much. An image it cannot read the size of (webp) is left as it
// came.
func recapOver(ctx context.Context, params *page.CaptureScreenshotParams, max Size, shot *Shot) error {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(shot.Data))
	if err != nil {
		return nil
	}
	got := Size{cfg.Width, cfg.Height}
	f := fitFactor(float64(got.Width), float64(got.Height), max)
	if f >= 1 || got.Width <= max.Width+1 && got.Height <= max.Height+1 {
		return nil
	}
	if !shot.Scaled {
		shot.From = got
	}
	clip := *params.Clip
	clip.Scale *= f
	params.Clip = &clip
	res, err := chromedp.Call(ctx, page.CaptureScreenshot, *params)
	shot.Data, shot.Scaled = res.Data, true
	shot.Size = Size{int(math.Floor(float64(got.Width) * f)), int(math.Floor(float64(got.Height) * f))}
	return err
}

// fitFactor is the scale, at most 1, that brings a w×h image within max
// (a side of 0 is no bound).
func fitFactor(w, h float64, max Size) float64 {
	f := 1.0
	if max.Width > 0 && w > float64(max.Width) {
		f = float64(max.Width) / w
	}
	if max.Height > 0 && h > float64(max.Height) {
		f = math.Min(f, float64(max.Height)/h)
	}
	return f
}

// capCapture scales params' clip (the visual viewport when it has none)
// down so that the image fits max, and notes in shot what it did. Chrome
// renders the clip at the smaller scale: the whole of it shows, smaller.
func capCapture(ctx context.Context, params *page.CaptureScreenshotParams, max Size, shot *Shot) error {
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return err
	}
	// The image's pixels are device pixels. The page may lie about its
	// ratio: CaptureScreenshot checks the image it gets.
	dpr := 1.0
	if r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "window.devicePixelRatio", ReturnByValue: new(true)}); err == nil && r.Result != nil {
		if json.Unmarshal(r.Result.Value, &dpr) != nil || dpr <= 0 || dpr > 16 {
			dpr = 1
		}
	}
	clip := params.Clip
	if clip == nil {
		v := m.CSSVisualViewport
		if v == nil {
			return nil
		}
		clip = &page.Viewport{X: v.PageX, Y: v.PageY, Width: v.ClientWidth, Height: v.ClientHeight, Scale: 1}
	}
	w, h := clip.Width*clip.Scale*dpr, clip.Height*clip.Scale*dpr
	f := fitFactor(w, h, max)
	scaled := *clip
	scaled.Scale *= f
	params.Clip = &scaled // set when not scaled too: recapOver may scale it
	if f >= 1 {
		return nil
	}
	shot.Scaled = true
	shot.From = Size{int(math.Round(w)), int(math.Round(h))}
	shot.Size = Size{int(math.Floor(w * f)), int(math.Floor(h * f))}
	return nil
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
