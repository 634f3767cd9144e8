package cluster

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"testing"

	"github.com/pagemux/pagemux/internal/etcdtest"
)

// mirrored is what a Mirror applied, for a test to read.
type mirrored struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *mirrored) apply(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if value == "" {
		delete(s.m, key)
		return
	}
	s.m[key] = value
}

func (s *mirrored) get() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m)
}

// TestMirror: what one process sets, another sees after CatchUp, with no
// wait of its own: puts, deletes, many at once; a mirror made later loads
// what is there; and after etcd restarts, the watch goes on.
func TestMirror(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	a, b := newLocks(t, c.Client(t), "a", DefaultTTL), newLocks(t, c.Client(t), "b", DefaultTTL)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	sa, sb := &mirrored{m: map[string]string{}}, &mirrored{m: map[string]string{}}
	ma, mb := a.Mirror("set", sa.apply), b.Mirror("set", sb.apply)
	t.Cleanup(ma.Close)
	t.Cleanup(mb.Close)
	if err := ma.Set(ctx, "k1", "v1"); err != nil {
		t.Fatal(err)
	}
	if err := mb.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sb.get(); got["k1"] != "v1" {
		t.Errorf("after CatchUp, b has %v; want k1=v1", got)
	}
	if err := ma.Set(ctx, "k1", ""); err != nil {
		t.Fatal(err)
	}
	if err := mb.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sb.get(); len(got) != 0 {
		t.Errorf("after a delete and CatchUp, b has %v", got)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		m := ma
		if i%2 == 1 {
			m = mb
		}
		wg.Go(func() {
			if err := m.Set(ctx, "p"+strconv.Itoa(i%5), strconv.Itoa(i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := ma.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mb.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if ga, gb := sa.get(), sb.get(); !maps.Equal(ga, gb) || len(ga) != 5 {
		t.Errorf("after concurrent sets, a has %v and b %v; want the same 5 keys", ga, gb)
	}
	sl := &mirrored{m: map[string]string{}}
	late := b.Mirror("set", sl.apply)
	t.Cleanup(late.Close)
	if err := late.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sl.get(); !maps.Equal(got, sa.get()) {
		t.Errorf("a mirror made later loaded %v, want %v", got, sa.get())
	}

	c.Members[0].Stop(t)
	c.Members[0].Start(t)
	if err := ma.Set(ctx, "after", "restart"); err != nil {
		t.Fatal(err)
	}
	if err := mb.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sb.get(); got["after"] != "restart" {
		t.Errorf("after etcd restarted, b has %v", got)
	}
}
