// Package tmpcheck finds what a pagemux and its Chrome could leave behind
// in a temporary directory, for the tests that fail a run which leaves any.
package tmpcheck

import (
	"path/filepath"
	"testing"
	"time"
)

// Patterns name what is left behind: temporary profiles (pagemux's, and
// chromedp's of old) and Chrome's singleton directories.
var Patterns = []string{"pagemux-[0-9]*", "chromedp-runner*", "org.chromium.Chromium.*"}

// LeftBehind lists the entries of dir that match Patterns, or more.
func LeftBehind(dir string, more ...string) []string {
	var found []string
	for _, pattern := range append(more, Patterns...) {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		found = append(found, m...)
	}
	return found
}

// WaitFile waits until a file matches pattern, failing t after 20 s. It
// polls: Chrome tells no one when it wrote a file, such as a download.
func WaitFile(t testing.TB, pattern string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing matches %s", pattern)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
