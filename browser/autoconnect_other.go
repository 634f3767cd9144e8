//go:build !unix

package browser

import (
	"os"
	"path/filepath"
)

// ProfileHolder reports whether a running Chrome holds the profile dir: off
// Unix, whether its lockfile is there (Chrome deletes it when it closes).
// The holder's pid is not known here (0).
func ProfileHolder(dir string) (pid int, held bool) {
	_, err := os.Stat(filepath.Join(dir, "lockfile"))
	return 0, err == nil
}
