package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/cluster"
	"github.com/pagemux/pagemux/internal/etcdtest"
	"github.com/pagemux/pagemux/pagelock"
)

// TestMetrics feeds real locks through the Observer and scrapes the text.
func TestMetrics(t *testing.T) {
	m := New(pagelock.PerPage)
	locks := pagelock.New(pagelock.Options{Mode: pagelock.PerPage, Observer: m, Timeout: 20 * time.Millisecond})
	m.WatchLocks(locks)
	m.Gauge("pages_open", "Pages open.", func() float64 { return 3 })
	g, err := locks.Acquire(t.Context(), pagelock.For(pagelock.PageKey(1), pagelock.Tracing, pagelock.Tracing.Of("http://127.0.0.1:9222"))) // a pool's Chrome's counts as tracing too
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.Acquire(t.Context(), pagelock.For(pagelock.PageKey(1))); err == nil {
		t.Fatal("the second call did not time out")
	}
	m.ToolCall("click", "ok", 70*time.Millisecond)
	text := scrape(t, m)
	for _, want := range []string{
		`pagemux_lock_wait_seconds_count{lock="page",mode="page"} 1`,
		`pagemux_lock_wait_seconds_count{lock="tracing",mode="page"} 2`,
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

// TestRegistryMetric counts a real etcd's page registry: the page ids
// cluster.Locks hands out (of two browsers, on one counter as a pool's)
// and the agents of the replicas' set, as they come and go; with etcd
// stopped the metric is left out and the rest of the scrape still comes.
func TestRegistryMetric(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	locks := cluster.New(etcd.Client(t), cluster.Options{Prefix: "/test/registry/", TTL: 2 * time.Second, OneCounter: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = locks.Close(context.Background()) })
	m := New(pagelock.PerPage)
	m.WatchRegistry(locks.RegistrySize)
	m.Gauge("pages_open", "Pages open.", func() float64 { return 3 })
	want := func(pages, agents int) {
		t.Helper()
		text := scrape(t, m)
		for _, line := range []string{
			fmt.Sprintf(`pagemux_etcd_registry_entries{kind="pages"} %d`, pages),
			fmt.Sprintf(`pagemux_etcd_registry_entries{kind="agents"} %d`, agents),
		} {
			if !strings.Contains(text, line+"\n") {
				t.Errorf("no %s in the scrape:\n%s", line, grepLines(text, "registry"))
			}
		}
	}
	want(0, 0)
	ids := map[int]bool{}
	for _, tab := range []struct{ browser, target string }{{"A", "t1"}, {"A", "t2"}, {"B", "t1"}} {
		id, err := locks.PageID(t.Context(), tab.browser, tab.target)
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	if len(ids) != 3 {
		t.Errorf("three tabs of a pool's two browsers got ids %v, want three distinct", ids)
	}
	set := locks.Mirror(cluster.AgentsSet, func(key, value string) {})
	defer set.Close()
	for key, value := range map[string]string{"pool/owner/1": "alice", "pool/owner/2": "alice", "pool/selected/bob": "3", "pool/newest/carol": "s1"} {
		if err := set.Set(t.Context(), key, value); err != nil {
			t.Fatal(err)
		}
	}
	want(3, 3)
	if err := locks.ForgetPage(t.Context(), "A", "t2"); err != nil {
		t.Fatal(err)
	}
	if err := set.Set(t.Context(), "pool/newest/carol", ""); err != nil {
		t.Fatal(err)
	}
	want(2, 2)

	etcd.Members[0].Stop(t)
	text := scrape(t, m)
	if strings.Contains(text, "pagemux_etcd_registry_entries{") || !strings.Contains(text, "pagemux_pages_open 3") {
		t.Errorf("with etcd stopped, want the registry left out and the rest served:\n%s", grepLines(text, "pagemux_"))
	}
}

// grepLines returns the lines of text that hold s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
