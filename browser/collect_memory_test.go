package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/pagemux/pagemux/internal/soak"
)

// busyPageSite serves /page?n=N&pad=P, which makes N requests as it loads
// and says "done" when they all answered, and /r, a small response with a
// header of P bytes: the padding makes each record big, so that a few
// hundred requests grow the heap well past its noise.
func busyPageSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><title>busy</title><p id=s>loading</p><script>
(async () => {
  const n = %s, pad = %s, all = [];
  for (let i = 0; i < n; i++) all.push(fetch('/r?i=' + i + '&h=' + pad + '&pad=' + 'p'.repeat(200)).then(r => r.text()));
  await Promise.all(all);
  console.log('fetched', n);
  document.getElementById('s').textContent = 'done';
})();
</script>`, r.URL.Query().Get("n"), r.URL.Query().Get("pad"))
			return
		}
		h, _ := strconv.Atoi(r.URL.Query().Get("h"))
		w.Header().Set("X-Pad", strings.Repeat("h", h))
		w.Write([]byte(strings.Repeat("body ", 200)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestClosedPagesFreeTheirRecords: pages (3, 10 with PAGEMUX_SOAK=1) that
// made many requests (100 with a 12 kB header each, 500 with 300 bytes with
// PAGEMUX_SOAK=1), took a snapshot and logged, then closed, give their
// memory back. Each record of theirs must be collected (weak pointers), and
// the heap must shrink back by most of what the pages added. Not parallel:
// it reads the heap of the whole test binary, and no parallel test runs on
// the shared Chrome meanwhile.
func TestClosedPagesFreeTheirRecords(t *testing.T) {
	pages, requests, pad := soak.N(3, 10), soak.N(100, 500), soak.N(12000, 300)
	site := busyPageSite(t)
	b := sharedBrowser(t)
	ctx := t.Context()
	before := heapInuse()

	var records []weak.Pointer[Request]
	var messages []weak.Pointer[ConsoleMessage]
	var open []*Page
	t.Cleanup(func() { // the pages a failure left open; nil once they closed
		for _, p := range open {
			b.ClosePage(context.Background(), p)
		}
	})
	for range pages {
		p, err := b.NewPage(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Navigate(ctx, fmt.Sprintf("%s/page?n=%d&pad=%d", site.URL, requests, pad), time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := p.WaitForText(ctx, []string{"done"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Snapshot(ctx, true); err != nil {
			t.Fatal(err)
		}
		// The collectors' own records, not the copies they hand out.
		p.network.mu.Lock()
		for _, bk := range p.network.ring.buckets {
			for _, it := range bk.items {
				records = append(records, weak.Make(it.v))
			}
		}
		p.network.mu.Unlock()
		p.console.mu.Lock()
		for _, bk := range p.console.ring.buckets {
			for _, it := range bk.items {
				messages = append(messages, weak.Make(it.v))
			}
		}
		p.console.mu.Unlock()
		open = append(open, p)
	}
	if len(records) < pages*requests {
		t.Fatalf("the collectors hold %d requests, want at least %d", len(records), pages*requests)
	}
	if len(messages) < pages {
		t.Fatalf("the collectors hold %d console messages, want at least %d", len(messages), pages)
	}
	loaded := heapInuse()
	for _, p := range open {
		if err := b.ClosePage(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// ClosePage returns when the page is closed; it frees its records just
	// after.
	for _, p := range open {
		released := func() bool {
			p.network.mu.Lock()
			defer p.network.mu.Unlock()
			return p.UIDs.Len() == 0 && len(p.network.flights) == 0
		}
		for deadline := time.Now().Add(10 * time.Second); !released(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("closed page %d still holds its uids or requests after 10 s", p.ID)
			}
		}
	}
	open = nil
	after := heapInuse()

	alive := 0
	for _, w := range records {
		if w.Value() != nil {
			alive++
		}
	}
	for _, w := range messages {
		if w.Value() != nil {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of %d records of closed pages are still reachable", alive, len(records)+len(messages))
	}
	mb := func(n uint64) float64 { return float64(n) / (1 << 20) }
	t.Logf("heap in use: %.1f MB before, %.1f MB with %d pages of %d requests, %.1f MB after they closed", mb(before), mb(loaded), pages, requests, mb(after))
	// Closed pages keep a few kilobytes each (the Page and its chromedp
	// target); everything they collected must be gone.
	if grown := int64(loaded) - int64(before); grown < 4<<20 || int64(after)-int64(before) > grown/4 {
		t.Errorf("heap in use: %.1f MB before, %.1f MB with the pages, %.1f MB after they closed: want most of it back", mb(before), mb(loaded), mb(after))
	}
}
