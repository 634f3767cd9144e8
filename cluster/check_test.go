package cluster

import (
	"context"
	"math"
	"testing"
	"time"
)

// BenchmarkCheck measures Held.Check, which pagemux calls before every CDP
// command: a clock read and atomic loads, no request.
func BenchmarkCheck(b *testing.B) {
	l := &Locks{epoch: time.Now()}
	s := &lease{l: l}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	defer s.cancel()
	s.liveUntil.Store(math.MaxInt64)
	h := &Held{l: l, s: s, keys: []heldKey{{name: "page", key: "k", rev: 1}}}
	for b.Loop() {
		if err := h.Check(); err != nil {
			b.Fatal(err)
		}
	}
}
