package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/pagemux/pagemux/internal/etcdtest"
)

// TestPageIDs: two processes asking at once for the ids of the same tabs
// get one id per tab, the same in both, each id once; asking again gives
// the same id; another browser counts from 1 on its own; a forgotten tab's
// id is not given again.
func TestPageIDs(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	procs := []*Locks{newLocks(t, c.Client(t), "a", DefaultTTL), newLocks(t, c.Client(t), "b", DefaultTTL)}
	const tabs = 12
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	got := make([][tabs]int, len(procs))
	var wg sync.WaitGroup
	for p, l := range procs {
		for i := range tabs {
			wg.Go(func() {
				id, err := l.PageID(ctx, "B1", fmt.Sprintf("TARGET%d", i))
				if err != nil {
					t.Error(err)
				}
				got[p][i] = id
			})
		}
	}
	wg.Wait()
	seen := map[int]int{}
	for i := range tabs {
		if got[0][i] != got[1][i] {
			t.Errorf("tab %d is page %d in one process and %d in the other", i, got[0][i], got[1][i])
		}
		if j, dup := seen[got[0][i]]; dup {
			t.Errorf("tabs %d and %d are both page %d", j, i, got[0][i])
		}
		seen[got[0][i]] = i
	}
	for id := 1; id <= tabs; id++ {
		if _, ok := seen[id]; !ok {
			t.Errorf("no tab got id %d; ids: %v", id, got[0])
		}
	}
	if id, err := procs[1].PageID(ctx, "B1", "TARGET3"); err != nil || id != got[0][3] {
		t.Errorf("asked again, tab 3 is page %d (%v), want %d", id, err, got[0][3])
	}
	if id, err := procs[0].PageID(ctx, "B2", "TARGET3"); err != nil || id != 1 {
		t.Errorf("the first tab of another browser is page %d (%v), want 1", id, err)
	}
	if err := procs[0].ForgetPage(ctx, "B1", "TARGET3"); err != nil {
		t.Fatal(err)
	}
	if id, err := procs[1].PageID(ctx, "B1", "TARGET3"); err != nil || id != tabs+1 {
		t.Errorf("a forgotten tab seen again is page %d (%v), want the next, %d", id, err, tabs+1)
	}
}

// TestBrowserContext: processes asking at once for one key's context all
// get the one that was kept first, and each context made and not kept is
// dropped; a kept context Chrome no longer has is replaced; forgetting a
// context that is no longer the key's leaves the key.
func TestBrowserContext(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	procs := []*Locks{newLocks(t, c.Client(t), "a", DefaultTTL), newLocks(t, c.Client(t), "b", DefaultTTL)}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	var mu sync.Mutex
	made, dropped, alive := 0, map[string]bool{}, map[string]bool{}
	create := func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		made++
		id := fmt.Sprintf("CTX%d", made)
		alive[id] = true
		return id, nil
	}
	exists := func(_ context.Context, id string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return alive[id], nil
	}
	drop := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		dropped[id], alive[id] = true, false
	}
	got := make([]string, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			id, err := procs[i%2].BrowserContext(ctx, "B1", "agent/x", create, exists, drop)
			if err != nil {
				t.Error(err)
			}
			got[i] = id
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] || dropped[id] {
			t.Fatalf("contexts given: %v (dropped %v); want one, kept", got, dropped)
		}
	}
	if len(dropped) != made-1 {
		t.Errorf("%d contexts made, %d dropped; want all but the kept one dropped", made, len(dropped))
	}
	mu.Lock()
	alive[got[0]] = false // Chrome lost it (disposed of by a process that saw no page)
	mu.Unlock()
	next, err := procs[1].BrowserContext(ctx, "B1", "agent/x", create, exists, drop)
	if err != nil || next == got[0] {
		t.Fatalf("after Chrome lost %s: %s, %v; want a new one", got[0], next, err)
	}
	if err := procs[0].ForgetBrowserContext(ctx, "B1", "agent/x", got[0]); err != nil {
		t.Fatal(err)
	}
	if again, err := procs[0].BrowserContext(ctx, "B1", "agent/x", create, exists, drop); err != nil || again != next {
		t.Errorf("forgetting the old context dropped the new one's key: %s, %v; want %s", again, err, next)
	}
}
