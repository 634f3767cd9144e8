package browser

import (
	"path/filepath"
)

// leftBehind lists what a Chrome pagemux launched could leave in the temp
// dir tmp: temporary profiles (pagemux's and chromedp's) and Chrome's
// singleton directories. TestMain fails the run when the list is not empty.
func leftBehind(tmp string) []string {
	var found []string
	for _, pattern := range []string{"pagemux-[0-9]*", "chromedp-runner*", "org.chromium.Chromium.*"} {
		m, _ := filepath.Glob(filepath.Join(tmp, pattern))
		found = append(found, m...)
	}
	return found
}
