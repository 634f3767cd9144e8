package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/pagelock"
)

// TestMetrics feeds real locks through the Observer and scrapes the text.
func TestMetrics(t *testing.T) {
	m := New(pagelock.PerPage)
	locks := pagelock.New(pagelock.Options{Mode: pagelock.PerPage, Observer: m, Timeout: 20 * time.Millisecond})
	m.WatchLocks(locks)
	m.Gauge("pages_open", "Pages open.", func() float64 { return 3 })
	g, err := locks.Acquire(t.Context(), pagelock.PageKey(1), pagelock.Tracing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.Acquire(t.Context(), pagelock.PageKey(1)); err == nil {
		t.Fatal("the second call did not time out")
	}
	m.ToolCall("click", "ok", 70*time.Millisecond)
	text := scrape(t, m)
	for _, want := range []string{
		`pagemux_lock_wait_seconds_count{lock="page",mode="page"} 1`,
		`pagemux_lock_wait_seconds_count{lock="tracing",mode="page"} 1`,
		`pagemux_lock_failures_total{lock="page",mode="page",reason="timeout"} 1`,
		`pagemux_locks_held{lock="page",mode="page"} 1`,
		`pagemux_lock_queue_depth{lock="page",mode="page"} 0`,
		`pagemux_tool_call_seconds_count{outcome="ok",tool="click"} 1`,
		`pagemux_tool_call_seconds_bucket{outcome="ok",tool="click",le="0.001"} 0`,
		`pagemux_pages_open 3`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in the scrape", want)
		}
	}
	g.Release()
	if text := scrape(t, m); !strings.Contains(text, `pagemux_lock_hold_seconds_count{lock="page",mode="page"} 1`) {
		t.Error("the release was not recorded")
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}
