package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/soak"
)

// FloodHandler serves /flood?logs=N&reqs=M: a page that logs N console
// messages and starts M requests while it loads (to /flood/r).
func floodHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/flood", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("logs"))
		reqs, _ := strconv.Atoi(r.URL.Query().Get("reqs"))
		fmt.Fprintf(w, `<!doctype html><title>Flood</title><p>flood</p><script>
for (let i = 0; i < %d; i++) console.log('message', i);
for (let i = 0; i < %d; i++) fetch('/flood/r?i=' + i).catch(() => {});
</script>`, n, reqs)
	})
	mux.HandleFunc("/flood/r", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	return mux
}

// No event volume stalls a page or the connection: a page that logs many
// messages and makes many requests while it loads (past the 4,096 events
// that chromedp queues per tab) loads under the watchdog, answers at once
// afterwards, and so does another page; the collectors keep their bounds
// and count the rest.
func TestEventFlood(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	site := httptest.NewServer(floodHandler())
	t.Cleanup(site.Close)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	// Past the 4,096 events chromedp queues per tab either way, and past
	// the collectors' BucketCap: 4,500 messages, and 1,100 requests of 4 to
	// 6 events each; 20,000 and 5,000 with PAGEMUX_SOAK=1.
	logs, reqs := soak.N(4500, 20000), soak.N(1100, 5000)
	pid := b.ChromePID()
	start := time.Now()
	// Watched as a tool call is: a connection behind a flood is no frozen
	// Chrome.
	if err := <-supervised(b, ctx, func(ctx context.Context) error {
		return p.Navigate(ctx, fmt.Sprintf("%s/flood?logs=%d&reqs=%d", site.URL, logs, reqs), 60*time.Second)
	}); err != nil {
		t.Fatalf("navigate after %s: %v", time.Since(start), err)
	}
	t.Logf("the flooding page loaded in %s", time.Since(start))
	if b.ChromePID() != pid {
		t.Fatal("Chrome was restarted under the flood")
	}
	for _, q := range []*Page{p, other} {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		v, err := q.Evaluate(qctx, "() => 1 + 1", nil)
		cancel()
		if err != nil || string(v) != "2" {
			t.Fatalf("page %d after the flood: %s %v", q.ID, v, err)
		}
		t.Logf("page %d answered in %s", q.ID, time.Since(start))
	}
	msgs, info := p.Console().List(false)
	if len(msgs) != BucketCap || len(msgs)+info.Dropped < logs {
		t.Errorf("console kept %d and dropped %d of at least %d messages", len(msgs), info.Dropped, logs)
	}
	// Every request shows up once its document is the current one.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, ninfo := p.Network().List(false)
		if len(got) == BucketCap && len(got)+ninfo.Dropped >= reqs+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("network kept %d and dropped %d of %d requests", len(got), ninfo.Dropped, reqs+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
