package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/etcdtest"
)

// BenchmarkAcquireRelease measures one Acquire plus Release of a lock in a
// real etcd of 1 and 3 members on loopback: uncontended (one call at a
// time), and 100 calls at once of one process, each on a lock of its own.
// It reports the latency's p50 and p99 in ms and calls per second.
// PAGEMUX_ETCD_FSYNC=1 runs etcd with fsync, as production does.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			c := etcdtest.Start(b, members)
			l := New(c.Client(b), Options{Prefix: "/bench/", Process: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			b.Cleanup(func() { _ = l.Close(b.Context()) })
			for _, calls := range []int{1, 100} {
				b.Run(fmt.Sprintf("concurrent=%d", calls), func(b *testing.B) {
					benchCalls(b, l, calls)
				})
			}
		})
	}
}

func benchCalls(b *testing.B, l *Locks, calls int) {
	var (
		n   atomic.Int64
		mu  sync.Mutex
		lat []time.Duration
		wg  sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for g := range calls {
		wg.Go(func() {
			names := []string{fmt.Sprintf("page-%d", g)}
			var mine []time.Duration
			for n.Add(1) <= int64(b.N) {
				t0 := time.Now()
				h, err := l.Acquire(b.Context(), names, Holder{Tool: "bench"})
				if err != nil {
					b.Error(err)
					return
				}
				if err := h.Release(b.Context()); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "calls/s")
}
