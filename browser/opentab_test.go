package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/internal/testchrome"
)

// pagemux's --disable-features keeps chromedp's, adds the headless ones and
// takes in the user's, as one flag.
func TestDisabledFeatures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       Config
		want, not []string
	}{
		{"headless", Config{}, []string{"Translate", "BlinkGenPropertyTrees", "WebUIOmniboxPopup", "WebUIOmniboxAimPopup"}, nil},
		{"headful", Config{Headful: true}, []string{"Translate", "BlinkGenPropertyTrees"}, []string{"WebUIOmniboxPopup"}},
		{"user's merged", Config{ChromeArgs: []string{"--disable-features=Foo,Translate", "--lang=de"}}, []string{"Foo", "Translate", "WebUIOmniboxPopup"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := tt.cfg.flags()
			if err != nil {
				t.Fatal(err)
			}
			var lists []string
			for _, f := range fs {
				if f.name == "disable-features" {
					lists = append(lists, f.value.(string))
				}
			}
			if len(lists) != 1 {
				t.Fatalf("%d --disable-features flags, want 1: %q", len(lists), lists)
			}
			names := strings.Split(lists[0], ",")
			for _, w := range tt.want {
				if !slices.Contains(names, w) {
					t.Errorf("--disable-features=%s lacks %s", lists[0], w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(names, n) {
					t.Errorf("--disable-features=%s has %s", lists[0], n)
				}
			}
			for i, n := range names {
				if slices.Contains(names[:i], n) {
					t.Errorf("--disable-features=%s names %s twice", lists[0], n)
				}
			}
		})
	}
}

// A new window in headless Chrome loads no address-bar popup.
func TestNoOmniboxPopup(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	if _, err := b.NewPage(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.CallBrowser(b.members[0].launch.rootCtx, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, info := range res.TargetInfos {
		if strings.Contains(info.URL, "omnibox") {
			t.Errorf("a target of the address bar: %s %s", info.Type, info.URL)
		}
		if info.Type == "page" {
			pages++
		}
	}
	if pages != 2 {
		t.Errorf("%d page targets, want the first tab and the new one", pages)
	}
}

// Pages asked for at once are made a few at a time: the first is ready
// well before the last, instead of all of them at the end.
func TestNewPagesInTurn(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	const n = 4 * openAtOnce
	start := time.Now()
	took := make([]time.Duration, n)
	ids := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := b.NewPage(t.Context(), true)
			if err != nil {
				t.Error(err)
				return
			}
			took[i], ids[i] = time.Since(start), p.ID
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	slices.Sort(ids)
	if ids = slices.Compact(ids); len(ids) != n {
		t.Errorf("%d distinct page ids for %d pages", len(ids), n)
	}
	if got := len(b.Pages()); got != n+1 {
		t.Errorf("%d pages, want %d and the first tab", got, n)
	}
	first, last := slices.Min(took), slices.Max(took)
	if first > last/2 {
		t.Errorf("the first of %d pages opened at once was ready after %v, the last after %v: want the first well before", n, first, last)
	}
}

// A call that waits for its turn to open a tab gives up with its context,
// and opens nothing.
func TestNewPageWaitCancelled(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	if err := b.opening.Acquire(t.Context(), openAtOnce); err != nil { // as if that many tabs were being made
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := b.NewPage(ctx, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewPage while every turn is taken: %v, want the context's deadline", err)
	}
	if n := len(b.Pages()); n != 1 {
		t.Errorf("%d pages after a cancelled NewPage, want the first tab only", n)
	}
	b.opening.Release(1)
	if _, err := b.NewPage(t.Context(), true); err != nil {
		t.Fatalf("NewPage once a turn is free: %v", err)
	}
}

// With Config.Tabs, pages are tabs of one window, and each, behind the
// others or not, is visible, focused and painting, across a navigation to
// another site; screenshots of a tab behind others show that tab. On the
// full Chrome: the headless shell opens every page in a window of its own.
func TestTabsStayVisible(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Red</title><body style="margin:0;background:rgb(255,0,0)">red</body>`)
	}))
	t.Cleanup(site.Close)
	for _, tabs := range []bool{false, true} {
		t.Run(fmt.Sprintf("tabs=%v", tabs), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, Config{ExecPath: testchrome.Full(), Tabs: tabs, ViewportWidth: 640, ViewportHeight: 480})
			var pages []*Page
			for range 3 {
				p, err := b.NewPage(t.Context(), true)
				if err != nil {
					t.Fatal(err)
				}
				pages = append(pages, p)
			}
			windows := map[browser.WindowID]bool{}
			for i, p := range pages {
				win, err := chromedp.CallBrowser(b.members[0].launch.rootCtx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{TargetID: p.TargetID})
				if err != nil {
					t.Fatal(err)
				}
				windows[win.WindowID] = true
				if err := p.Navigate(t.Context(), site.URL, 0); err != nil {
					t.Fatal(err)
				}
				got, err := p.EvaluateClassic(t.Context(), `new Promise(r => { let n = 0; const tick = () => { n++; requestAnimationFrame(tick); };
					requestAnimationFrame(tick); setTimeout(() => r(document.visibilityState + " focused=" + document.hasFocus() + " frames=" + (n > 0)), 300); })`, nil, "")
				if err != nil {
					t.Fatal(err)
				}
				if want := `"visible focused=true frames=true"`; string(got) != want && (tabs || !strings.HasPrefix(string(got), `"visible`)) {
					t.Errorf("page %d of 3: %s, want %s", i+1, got, want)
				}
			}
			if want := map[bool]int{false: 3, true: 1}[tabs]; len(windows) != want {
				t.Errorf("the 3 pages are in %d windows, want %d", len(windows), want)
			}
			shot, err := pages[0].Capture().Screenshot(t.Context(), ScreenshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatal(err)
			}
			r, g, bl, _ := img.At(img.Bounds().Dx()/2, img.Bounds().Dy()-5).RGBA()
			if img.Bounds().Dx() != 640 || r>>8 != 255 || g>>8 != 0 || bl>>8 != 0 {
				t.Errorf("screenshot of the first page: %v, colour (%d,%d,%d), want 640 wide and red", img.Bounds(), r>>8, g>>8, bl>>8)
			}
			// Captures beyond the viewport, of every tab at once: Chrome
			// makes them at the front only (HoldFront); a tab behind others
			// waited seconds for a capture, or for ever.
			var wg sync.WaitGroup
			for i, p := range pages {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
					defer cancel()
					if _, err := p.Capture().Screenshot(ctx, ScreenshotOptions{FullPage: true}); err != nil {
						t.Errorf("full-page screenshot of page %d of 3: %v", i+1, err)
					}
				})
			}
			wg.Wait()
		})
	}
}
