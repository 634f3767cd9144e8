package tools

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

func TestScreenshot(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	decode := func(r result) (string, image.Point) {
		t.Helper()
		if r.isError || len(r.images) != 1 {
			t.Fatalf("screenshot: error=%v images=%d: %s", r.isError, len(r.images), r.text)
		}
		data, err := base64.StdEncoding.DecodeString(r.images[0].Data)
		if err != nil {
			t.Fatal(err)
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("not an image: %v", err)
		}
		if "image/"+format != r.images[0].MIMEType {
			t.Fatalf("mime %s for a %s image", r.images[0].MIMEType, format)
		}
		return format, image.Pt(cfg.Width, cfg.Height)
	}
	r := e.call(t, "take_screenshot", map[string]any{"pageId": id})
	mustContain(t, r.text, "Took a screenshot of the current page's viewport.")
	format, view := decode(r)
	if format != "png" {
		t.Fatalf("default format %s", format)
	}
	e.eval(t, id, "() => { document.body.style.height = '5000px'; return 1 }")
	_, full := decode(e.call(t, "take_screenshot", map[string]any{"pageId": id, "fullPage": true}))
	if full.Y <= view.Y {
		t.Fatalf("full page %v is not taller than the viewport %v", full, view)
	}
	format, _ = decode(e.call(t, "take_screenshot", map[string]any{"pageId": id, "format": "jpeg", "quality": 50}))
	if format != "jpeg" {
		t.Fatalf("format %s, want jpeg", format)
	}
	_, el := decode(e.call(t, "take_screenshot", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Submit"`)}))
	if el.X >= view.X || el.Y >= view.Y {
		t.Fatalf("element shot %v is not smaller than the viewport %v", el, view)
	}
	mustContain(t, e.fails(t, "take_screenshot", map[string]any{"pageId": id, "format": "gif"}), `invalid argument "format" for take_screenshot: want one of "png", "jpeg", "webp", got "gif"`)
}
