package browser

import (
	"bytes"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// Chrome itself, speaking CBOR by default: strings of both widths and
// every kind of character, numbers, binary data (a screenshot) and a
// snapshot of a real page (its tree decoded from CBOR, or streamed as JSON
// through the mux) come through as they do over a JSON pipe.
func TestCBORPipe(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.FileServer(http.Dir("../testdata")))
	t.Cleanup(site.Close)
	const fn = `() => ({
		latin1: "café", wide: "日本語 😀", controls: "a\u0000b\n\t\"\\", lone: "x\ud800y",
		long: "é日😀".repeat(30000), ascii: "q".repeat(200000),
		nums: [2 ** 40, 0.1, -5, 1e300, 5e-7, -2147483649, 2147483648],
	})`
	answers, snaps := map[bool]any{}, map[bool]string{}
	for _, pipeJSON := range []bool{false, true} {
		b := startBrowser(t, Config{PipeJSON: pipeJSON})
		ctx := t.Context()
		p, err := b.NewPage(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := p.Evaluate(ctx, fn, nil)
		if err != nil {
			t.Fatalf("pipeJSON=%v: %v", pipeJSON, err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		answers[pipeJSON] = v
		shot, err := p.Capture().Screenshot(ctx, ScreenshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
			t.Errorf("pipeJSON=%v: the screenshot is no PNG: %v", pipeJSON, err)
		}
		if err := p.Navigate(ctx, site.URL+"/real/go_mem.html", 0); err != nil {
			t.Fatal(err)
		}
		snap, err := p.Snapshot(ctx, true)
		if err != nil {
			t.Fatalf("pipeJSON=%v: %v", pipeJSON, err)
		}
		snaps[pipeJSON] = snap.Text
	}
	if snaps[false] != snaps[true] || !strings.Contains(snaps[false], `heading "Introduction"`) {
		t.Errorf("the snapshot over CBOR\n%.2000s\nover JSON\n%.2000s", snaps[false], snaps[true])
	}
	if !reflect.DeepEqual(answers[false], answers[true]) {
		t.Errorf("over CBOR\n%.500v\nover JSON\n%.500v", answers[false], answers[true])
	}
	if m, _ := answers[false].(map[string]any); m["wide"] != "日本語 😀" || m["lone"] != "x\ufffdy" || m["controls"] != "a\x00b\n\t\"\\" {
		t.Errorf("over CBOR: %.300v", m)
	}
}
