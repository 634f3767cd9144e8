package browser

import "testing"

// TestCloseIdleLeaves: CloseIdle closes nothing of a browser pagemux
// attaches to, of a pool, or of one that never started (the close of a
// Chrome pagemux launched, and the start after it, is tools'
// TestBrowserIdle).
func TestCloseIdleLeaves(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"attached":    {BrowserURL: "http://127.0.0.1:9"},
		"pool":        {Pool: []string{"http://127.0.0.1:9", "http://127.0.0.1:10"}},
		"not started": {},
	} {
		b := New(cfg)
		if b.CloseIdle() {
			t.Errorf("%s: CloseIdle closed something", name)
		}
		if b.Running() {
			t.Errorf("%s: Running before any start", name)
		}
		b.Close()
	}
}
