package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

func busyScript(ms int) string {
	return fmt.Sprintf("() => { const t = Date.now(); while (Date.now() - t < %d) {} return 'done' }", ms)
}

// sameSite opens two pages of one site in a Chrome with one renderer per
// site, so they share a renderer and its JavaScript thread.
func sameSite(t *testing.T) (b *Browser, a, other *Page) {
	t.Helper()
	b = startBrowser(t, Config{ProcessPerSite: true})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!doctype html><title>site</title><p>"+r.URL.Path+"</p>")
	}))
	t.Cleanup(site.Close)
	var pages []*Page
	for _, path := range []string{"/a", "/b"} {
		p, err := b.NewPage(t.Context(), true)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Navigate(t.Context(), site.URL+path, 0); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	return b, pages[0], pages[1]
}

// A call on B queued in the shared renderer behind A's busy script gives
// up: A's script runs to its end, and B's script is stopped as soon as it
// starts, so the work of the call that gave up does not run on.
func TestCancelStopsOnlyOwnScript(t *testing.T) {
	t.Parallel()
	_, a, b := sameSite(t)
	aDone := make(chan error, 1)
	go func() {
		v, err := a.Evaluate(t.Context(), busyScript(3000), nil)
		if err == nil && string(v) != `"done"` {
			err = errors.New("got " + string(v))
		}
		aDone <- err
	}()
	time.Sleep(300 * time.Millisecond) // A's script runs
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := b.Evaluate(ctx, "() => { window.started = true; const t = Date.now(); while (Date.now() - t < 8000) {} window.finished = true }", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("B's call behind A's script: %v", err)
	}
	if err := <-aDone; err != nil {
		t.Fatalf("A's script was stopped by B's call giving up: %v", err)
	}
	start := time.Now()
	v, err := b.Evaluate(t.Context(), "() => [window.started ?? null, window.finished ?? null]", nil)
	if err != nil || string(v) != "[true,null]" {
		t.Fatalf("B after its call gave up: %s %v", v, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("B's abandoned script ran on for %s", d)
	}
}

// A script that Chrome terminates, whoever asked, is a ScriptStoppedError
// that says so, not a protocol error.
func TestTerminatedScriptSaysSo(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Evaluate(t.Context(), busyScript(20000), nil)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	cctx, cancel := p.Context(t.Context())
	defer cancel()
	if _, err := chromedp.Call(cctx, runtime.TerminateExecution, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var se *ScriptStoppedError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "the script was stopped") {
		t.Fatalf("a terminated script: %v", err)
	}
	if v, err := p.Evaluate(t.Context(), "() => 1", nil); err != nil || string(v) != "1" {
		t.Fatalf("the page afterwards: %s %v", v, err)
	}
}

// A tab closed from outside pagemux under nine calls: every call says so in
// the same words, and so does the page afterwards.
func TestClosedOutsideOneText(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	keep, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, keep)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 9)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = p.Evaluate(t.Context(), "() => new Promise(r => setTimeout(r, 20000))", nil)
		})
	}
	time.Sleep(500 * time.Millisecond)
	// Another DevTools client closes it: pagemux's browser session stands in.
	if _, err := keep.Evaluate(t.Context(), "() => 1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(b.members[0].launch.rootCtx, target.CloseTarget, target.CloseTargetParams{TargetID: p.TargetID}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	want := fmt.Sprintf("page %d was closed (outside pagemux)", p.ID)
	for i, err := range errs {
		if err == nil || err.Error() != want || !errors.Is(err, ErrPageClosed) {
			t.Errorf("call %d: %v, want %q", i, err, want)
		}
	}
	if _, err := b.Page(p.ID); err == nil || err.Error() != want {
		t.Errorf("the page afterwards: %v", err)
	}
}

// Chrome can tell a session that it detached before it tells the browser
// that the tab is gone: a call that fails so says the page was closed
// outside, and the page is closed from then on.
func TestDetachedBeforeDestroyed(t *testing.T) {
	t.Parallel()
	b := sharedBrowser(t)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, b, p) // its tab stays: only pagemux's page was told it closed
	start := time.Now()
	err = p.explain(t.Context(), fmt.Errorf("target %s: %w: inspected target navigated or closed", p.TargetID, chromedp.ErrTargetDetached))
	if want := fmt.Sprintf("page %d was closed (outside pagemux)", p.ID); err == nil || err.Error() != want {
		t.Fatalf("a detached call: %v, want %q", err, want)
	}
	if !p.Closed() {
		t.Fatal("the page of a detached session stays open")
	}
	if d := time.Since(start); d > 2*closeNoticeWait {
		t.Errorf("took %s", d)
	}
}

// A call whose script awaited, then kept the renderer busy when it resumed,
// gives up: the script is stopped, and the page answers again.
func TestCancelStopsResumedScript(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err = p.Evaluate(ctx, "async () => { await new Promise(r => setTimeout(r, 100)); const t = Date.now(); while (Date.now() - t < 20000) {} }", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the busy call: %v", err)
	}
	start := time.Now()
	qctx, qcancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer qcancel()
	if v, err := p.Evaluate(qctx, "() => 1", nil); err != nil || string(v) != "1" {
		t.Fatalf("the page after the call gave up: %s %v", v, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the resumed script ran on for %s", d)
	}
}
