package cdppipe

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipePending returns how many bytes wait in the pipe f to be read: what
// Chrome sent that pagemux's reader has not read yet (it was not scheduled,
// on a starved machine). 0 when it cannot tell.
func pipePending(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return n
}
