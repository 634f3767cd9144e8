package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

const geoJS = `() => new Promise(r => navigator.geolocation.getCurrentPosition(
	p => r(p.coords.latitude + "," + p.coords.longitude), e => r("error " + e.code), {timeout: 3000}))`

func emulateTestSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!doctype html><title>%s</title>", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func openEmulated(t *testing.T, b *Browser, url string) *Page {
	t.Helper()
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p)
	if url != "" {
		if err := p.Navigate(t.Context(), url, 0); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func evalEmulated(t *testing.T, p *Page, fn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	v, err := p.Evaluate(ctx, fn, nil)
	if err != nil {
		t.Fatalf("page %d: %s: %v", p.ID, fn, err)
	}
	return string(v)
}

// Chrome keeps geolocation permissions per origin: pages of one origin share
// the grant, and it ends when the last page that holds it lets go.
func TestGeolocationPermission(t *testing.T) {
	t.Parallel()
	srv := emulateTestSite(t)
	b := sharedBrowser(t) // the grants are its server's origin's, a port of its own
	paris := &Geolocation{Latitude: 48.8584, Longitude: 2.2945}
	rome := &Geolocation{Latitude: 41.9, Longitude: 12.5}

	t.Run("shared by an origin", func(t *testing.T) {
		x := openEmulated(t, b, srv.URL+"/x")
		y := openEmulated(t, b, srv.URL+"/y")
		if err := x.Emulate(t.Context(), Emulation{Geolocation: paris}); err != nil {
			t.Fatal(err)
		}
		if err := y.Emulate(t.Context(), Emulation{Geolocation: rome}); err != nil {
			t.Fatal(err)
		}
		if got := evalEmulated(t, x, geoJS); got != `"48.8584,2.2945"` {
			t.Fatalf("x: %s", got)
		}
		if err := x.Emulate(t.Context(), Emulation{}); err != nil {
			t.Fatal(err)
		}
		if got := evalEmulated(t, y, geoJS); got != `"41.9,12.5"` {
			t.Fatalf("y after x let go: %s, want its own position", got)
		}
		if got := evalEmulated(t, x, geoJS); got == `"48.8584,2.2945"` || got == `"41.9,12.5"` {
			t.Fatalf("x after clearing: %s, want no emulated position", got)
		}
		if err := b.ClosePage(t.Context(), y); err != nil {
			t.Fatal(err)
		}
		// Closing y gives the grant back in the background.
		deadline := time.Now().Add(10 * time.Second)
		for got := ""; got != `"error 1"`; got = evalEmulated(t, x, geoJS) {
			if time.Now().After(deadline) {
				t.Fatalf("after the last holder closed: %s, want denied (error 1)", got)
			}
		}
	})

	t.Run("follows navigation", func(t *testing.T) {
		p := openEmulated(t, b, "")
		if err := p.Emulate(t.Context(), Emulation{Geolocation: paris}); err != nil {
			t.Fatal(err)
		}
		if err := p.Navigate(t.Context(), srv.URL+"/later", 0); err != nil {
			t.Fatal(err)
		}
		// The grant follows the page a moment after its document commits.
		deadline := time.Now().Add(10 * time.Second)
		for got := ""; got != `"48.8584,2.2945"`; got = evalEmulated(t, p, geoJS) {
			if time.Now().After(deadline) {
				t.Fatalf("after navigating from about:blank: %s, want the emulated position", got)
			}
		}
	})
}

// Every override outlives a renderer crash and the navigation that recovers
// the page.
func TestEmulationSurvivesCrash(t *testing.T) {
	t.Parallel()
	srv := emulateTestSite(t)
	b := startBrowser(t, Config{})
	p := openEmulated(t, b, srv.URL+"/before")
	want := Emulation{
		UserAgent: "crash-test/1", ColorScheme: "dark", CPURate: 2, Network: "Fast 4G",
		Viewport: &Viewport{Width: 420, Height: 320, DeviceScaleFactor: 2, Touch: true},
		Headers:  map[string]string{"X-Crash": "1"},
	}
	if err := p.Emulate(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	const state = `() => [navigator.userAgent, matchMedia("(prefers-color-scheme: dark)").matches, innerWidth, devicePixelRatio, "ontouchstart" in window].join()`
	const emulated = `"crash-test/1,true,420,2,true"`
	if got := evalEmulated(t, p, state); got != emulated {
		t.Fatalf("before the crash: %s, want %s", got, emulated)
	}
	cctx, cancel := p.Context(t.Context())
	go chromedp.Call(cctx, page.Crash, cdp.Empty{}) // never answers: the renderer is gone
	for deadline := time.Now().Add(20 * time.Second); !p.Crashed(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the crash was not noticed")
		}
	}
	cancel()
	if err := p.Navigate(t.Context(), srv.URL+"/after", 0); err != nil {
		t.Fatalf("navigate to recover: %v", err)
	}
	if got := evalEmulated(t, p, state); got != emulated {
		t.Fatalf("after the crash: %s, want %s", got, emulated)
	}
	if got := p.Scale(time.Second); got != 2*time.Second {
		t.Fatalf("waits scale 1s to %v, want 2s", got)
	}
}

func TestEmulationSlowdown(t *testing.T) {
	tests := []struct {
		e    Emulation
		want float64
	}{
		{Emulation{}, 1},
		{Emulation{CPURate: 4}, 4},
		{Emulation{Network: "Slow 3G"}, 10},
		{Emulation{Network: "Fast 3G", CPURate: 2}, 10},
		{Emulation{Network: "Slow 4G"}, 2.5},
		{Emulation{Network: "Fast 4G"}, 1},
		{Emulation{Network: "Offline", CPURate: 3}, 3},
	}
	for _, tt := range tests {
		if got := tt.e.Slowdown(); got != tt.want {
			t.Errorf("%+v: slowdown %v, want %v", tt.e, got, tt.want)
		}
	}
	for _, name := range NetworkPresetNames() {
		if _, ok := LookupNetworkPreset(name); !ok {
			t.Errorf("preset %q listed but not found", name)
		}
	}
}
