package browser

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// lostFence is a Fence that refuses once lost is set, counting its checks.
type lostFence struct {
	lost, checks atomic.Int64
}

func (f *lostFence) check() error {
	f.checks.Add(1)
	if f.lost.Load() != 0 {
		return errors.New("the lock of the page was lost")
	}
	return nil
}

// TestFencePage: on an attached Chrome, the commands of a fenced page ask
// the fence first; one it refuses fails at once with the fence's error and
// never reaches the page; other pages are not fenced; after release, the
// page is driven again.
func TestFencePage(t *testing.T) {
	t.Parallel()
	browserURL, _ := runningChrome(t)
	b := New(Config{BrowserURL: browserURL})
	t.Cleanup(func() { b.Close() })
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	const count = "() => (window.n = (window.n || 0) + 1)"
	var f lostFence
	release, err := b.FencePage(t.Context(), p, f.check)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Evaluate(t.Context(), count, nil); err != nil || string(got) != "1" {
		t.Fatalf("a fenced page whose fence holds: %s, %v", got, err)
	}
	if f.checks.Load() == 0 {
		t.Fatal("the command went out without asking the fence")
	}
	f.lost.Store(1)
	_, err = p.Evaluate(t.Context(), count, nil)
	if !IsFenced(err) || !strings.Contains(err.Error(), "the lock of the page was lost") {
		t.Fatalf("a command the fence refuses: %v, want the fence's error", err)
	}
	if got, err := q.Evaluate(t.Context(), "() => 'other'", nil); err != nil || string(got) != `"other"` {
		t.Fatalf("another page, not fenced: %s, %v", got, err)
	}
	release()
	release() // twice is fine
	if got, err := p.Evaluate(t.Context(), count, nil); err != nil || string(got) != "2" {
		t.Fatalf("after release: %s, %v; want 2 (the refused command never ran)", got, err)
	}
}

// TestFenceAll fences the browser's own commands too: no new page while
// its fence refuses. On a launched Chrome, which is pagemux's own, fences
// are not asked.
func TestFenceAll(t *testing.T) {
	t.Parallel()
	browserURL, _ := runningChrome(t)
	b := New(Config{BrowserURL: browserURL})
	t.Cleanup(func() { b.Close() })
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var f lostFence
	f.lost.Store(1)
	release := b.FenceAll(f.check)
	if _, err := b.NewPage(t.Context(), true); !IsFenced(err) {
		t.Fatalf("a new page while the global fence refuses: %v", err)
	}
	release()
	if _, err := b.NewPage(t.Context(), true); err != nil {
		t.Fatalf("after release: %v", err)
	}

	own := startBrowser(t, Config{})
	var g lostFence
	g.lost.Store(1)
	defer own.FenceAll(g.check)()
	p, err := own.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Evaluate(t.Context(), "() => 1", nil); err != nil || g.checks.Load() != 0 {
		t.Fatalf("a launched Chrome's commands: %v, %d fence checks; want none", err, g.checks.Load())
	}
}
