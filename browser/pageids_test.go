package browser

import (
	"context"
	"github.com/pagemux/pagemux/internal/mcptest"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// memoryIDs is a PageIDs kept in memory, shared by the Browsers of a test
// as etcd is by processes.
type memoryIDs struct {
	mu      sync.Mutex
	ids     map[string]int
	last    int
	forgets int
}

func (m *memoryIDs) PageID(_ context.Context, browser, target string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.ids[browser+"/"+target]; ok {
		return id, nil
	}
	m.last++
	m.ids[browser+"/"+target] = m.last
	return m.last, nil
}

func (m *memoryIDs) ForgetPage(_ context.Context, browser, target string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ids, browser+"/"+target)
	m.forgets++
	return nil
}

func (m *memoryIDs) known(browser, target string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ids[browser+"/"+target]
	return ok
}

// gatedIDs holds one Browser's PageID calls while its gate is shut.
type gatedIDs struct {
	*memoryIDs
	mu   sync.Mutex
	gate chan struct{} // nil: open
}

func (g *gatedIDs) PageID(ctx context.Context, browser, target string) (int, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return g.memoryIDs.PageID(ctx, browser, target)
}

func (g *gatedIDs) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
}

func (g *gatedIDs) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = nil
}

// TestSharedPageIDs: two Browsers attached to one Chrome with shared
// PageIDs show a tab under one id, whichever of them opened it. The other
// registers it from outside chromedp's event loop, and the bad orders of
// that hold: a tab that navigates while its id is on its way is shown as it
// is now, and one that closes before its id came is never shown, and its
// id is forgotten.
func TestSharedPageIDs(t *testing.T) {
	t.Parallel()
	browserURL, _ := runningChrome(t)
	store := &memoryIDs{ids: map[string]int{}}
	a, b := New(Config{BrowserURL: browserURL}), New(Config{BrowserURL: browserURL})
	gated := &gatedIDs{memoryIDs: store}
	a.SetPageIDs(store)
	b.SetPageIDs(gated)
	for _, br := range []*Browser{a, b} {
		t.Cleanup(func() { br.Close() })
		if err := br.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	identity, err := a.Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	inB := func(p *Page) *Page {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.byTarget[p.TargetID]
	}
	p, err := a.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, "b to see a's tab", func() bool { return inB(p) != nil })
	if q := inB(p); q.ID != p.ID {
		t.Errorf("a's tab is page %d in a and %d in b", p.ID, q.ID)
	}

	// A tab that navigates while b waits for its id.
	gated.shut()
	p2, err := a.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>later"))
	}))
	defer site.Close()
	if err := p2.Navigate(t.Context(), site.URL, 0); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, "b to note the new address while the id is held", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		pend := b.pending[p2.TargetID]
		return pend != nil && pend.url == site.URL+"/"
	})
	gated.open()
	mcptest.WaitFor(t, "b to show the tab", func() bool { return inB(p2) != nil })
	if q := inB(p2); q.ID != p2.ID || q.URL() != site.URL+"/" {
		t.Errorf("b shows a's navigated tab as page %d on %s, want %d on %s/", q.ID, q.URL(), p2.ID, site.URL)
	}

	// A tab that closes before b has its id.
	gated.shut()
	p3, err := a.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ClosePage(t.Context(), p3); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, "b to see the tab close while its id is held", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		pend := b.pending[p3.TargetID]
		return pend != nil && pend.gone
	})
	gated.open()
	mcptest.WaitFor(t, "b to drop the closed tab", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		_, pending := b.pending[p3.TargetID]
		return !pending
	})
	if inB(p3) != nil {
		t.Error("b shows a tab that closed before it had its id")
	}
	mcptest.WaitFor(t, "the closed tab's id to be forgotten", func() bool { return !store.known(identity, string(p3.TargetID)) })
	for _, q := range b.Pages() {
		if q.ID == p3.ID {
			t.Errorf("b lists page %d, the closed tab's id", q.ID)
		}
	}
}
