//go:build unix

package tools

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByUs reports whether this process's user owns the file.
func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Getuid()
}
