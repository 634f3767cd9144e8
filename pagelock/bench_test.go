package pagelock

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkAcquireReleaseUncontended measures the fast path: one goroutine,
// one key, nobody waiting.
func BenchmarkAcquireReleaseUncontended(b *testing.B) {
	for _, m := range modes {
		b.Run(m.String(), func(b *testing.B) {
			l := New(Options{Mode: m})
			ctx := b.Context()
			key := PageKey(1)
			b.ReportAllocs()
			for b.Loop() {
				g, err := l.Acquire(ctx, Request{Keys: []Key{key}, Owner: "click"})
				if err != nil {
					b.Fatal(err)
				}
				g.Release()
			}
		})
	}
}

// BenchmarkHandoffContended measures several goroutines taking turns on one
// key, so that nearly every release hands the lock to a queued waiter.
func BenchmarkHandoffContended(b *testing.B) {
	for _, workers := range []int{2, 8} {
		b.Run("goroutines="+strconv.Itoa(workers), func(b *testing.B) {
			l := New(Options{Mode: PerPage})
			ctx := b.Context()
			key := PageKey(1)
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						g, err := l.Acquire(ctx, Request{Keys: []Key{key}, Owner: "click"})
						if err != nil {
							b.Error(err)
							return
						}
						g.Release()
					}
				})
			}
			wg.Wait()
		})
	}
}

// BenchmarkParallelDistinctPages measures PerPage mode with every goroutine on
// its own page: they should not slow each other down.
func BenchmarkParallelDistinctPages(b *testing.B) {
	l := New(Options{Mode: PerPage})
	ctx := b.Context()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := PageKey(int(next.Add(1)))
		for pb.Next() {
			g, err := l.Acquire(ctx, Request{Keys: []Key{key}, Owner: "click"})
			if err != nil {
				b.Error(err)
				return
			}
			g.Release()
		}
	})
}
