package main

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/internal/etcdtest"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// BenchmarkEtcdCallCost is what --etcd adds to a tool call (issue 17's
// goal: at most 2 ms at p50 for evaluate_script). Two pagemux --http
// servers attach to one debuggable Chrome in --lock-mode=page, one on
// in-process locks, one also taking each call's page lock in a real etcd
// (a key put under the process's lease, its deletion after the answer);
// each has a page of its own. Every iteration makes one evaluate_script
// "() => 1" on each, in turn (which goes first alternates), so that both
// see the same machine; it reports each side's p50 and p99 of the client's
// round trip and the difference of the p50s.
//
// The etcd is $PAGEMUX_ETCD, else bin/etcd (a -race build, two to three
// times slower than a plain one: ./scripts/bench gives bin/etcd-plain), run
// without fsync unless PAGEMUX_ETCD_FSYNC=1 (etcdtest). Run it without
// -race, as ./scripts/bench does: go test -run '^$' -bench EtcdCallCost -benchtime 400x .
func BenchmarkEtcdCallCost(b *testing.B) {
	etcd := etcdtest.Start(b, 1)
	chrome := debuggableChrome(b)
	bin := pagemuxBinary(b)
	url := logSite(b).URL + "/bench"
	common := []string{"--browser-url=" + chrome, "--lock-mode=page", "--log-level=warn"}
	local, _ := startHTTPServer(b, bin, common...)
	shared, _ := startHTTPServer(b, bin, append(common, "--etcd="+strings.Join(etcd.Endpoints(), ","))...)
	sides := []*benchSide{{name: "local", base: local}, {name: "etcd", base: shared}}
	for _, s := range sides {
		s.open(b, url)
	}
	for i := 0; b.Loop(); i++ {
		for j := range sides {
			sides[(i+j)%2].call(b)
		}
	}
	p50 := make([]float64, len(sides))
	for i, s := range sides {
		p50[i] = s.percentile(0.50)
		b.ReportMetric(p50[i], s.name+"-p50-ms")
		b.ReportMetric(s.percentile(0.99), s.name+"-p99-ms")
	}
	b.ReportMetric(p50[1]-p50[0], "added-p50-ms")
	b.ReportMetric(0, "ns/op") // two calls an iteration: the figures above say more
	b.Logf("etcd: %s (fsync: %v), %d calls each", etcdtest.Binary(b), os.Getenv("PAGEMUX_ETCD_FSYNC") != "", len(sides[0].took))
}

// benchSide is one server of BenchmarkEtcdCallCost with its page and the
// round trips of its calls.
type benchSide struct {
	name, base string
	c          *client.Client
	page       int
	took       []time.Duration
}

// open connects, opens a page on url, and warms the path up.
func (s *benchSide) open(b *testing.B, url string) {
	s.c = mcptest.HTTPClient(b, s.base+"/mcp", nil, "2025-06-18") // a session: an agent of its own
	text := s.tool(b, "new_page", map[string]any{"url": url})
	m := regexp.MustCompile(`(?m)^(\d+): .*` + regexp.QuoteMeta(url)).FindStringSubmatch(text)
	if m == nil {
		b.Fatalf("%s: new_page lists no page on %s: %s", s.name, url, text)
	}
	s.page, _ = strconv.Atoi(m[1])
	for range 20 {
		s.tool(b, "evaluate_script", map[string]any{"pageId": s.page, "function": "() => 1"})
	}
}

// call times one evaluate_script "() => 1".
func (s *benchSide) call(b *testing.B) {
	start := time.Now()
	text := s.tool(b, "evaluate_script", map[string]any{"pageId": s.page, "function": "() => 1"})
	s.took = append(s.took, time.Since(start))
	if !strings.Contains(text, "```json\n1\n```") {
		b.Fatalf("%s: evaluate_script answered %s", s.name, text)
	}
}

func (s *benchSide) tool(b *testing.B, name string, args map[string]any) string {
	ctx, cancel := context.WithTimeout(b.Context(), 30*time.Second)
	defer cancel()
	r := mcptest.Call(ctx, s.c, name, args)
	if r.Err != nil {
		b.Fatalf("%s: %s: %v", s.name, name, r.Err)
	}
	if r.IsError {
		b.Fatalf("%s: %s: %s", s.name, name, r.Text)
	}
	return r.Text
}

// percentile is the p-th quantile of the round trips, in milliseconds
// (nearest rank).
func (s *benchSide) percentile(p float64) float64 {
	if len(s.took) == 0 {
		return 0
	}
	sorted := slices.Clone(s.took)
	slices.Sort(sorted)
	i := min(len(sorted)-1, max(0, int(p*float64(len(sorted))+0.5)-1))
	return float64(sorted[i].Microseconds()) / 1000
}
