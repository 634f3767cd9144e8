//go:build unix

package browser

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// singletonLock is the link Chrome makes in the profile it runs on, to
// "HOST-PID", so that a second Chrome on the profile hands its command line
// to the first instead of running.
const singletonLock = "SingletonLock"

// ProfileHolder reports whether a running Chrome holds the profile dir, and
// its pid when it runs on this host (0 for another host's, which Chrome
// counts as held too: a profile on a shared disk). A lock whose process is
// gone, left by a Chrome that crashed, holds nothing.
func ProfileHolder(dir string) (pid int, held bool) {
	target, err := os.Readlink(filepath.Join(dir, singletonLock))
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(target, '-')
	if i < 0 {
		return 0, false
	}
	pid, err = strconv.Atoi(target[i+1:])
	if err != nil || pid <= 0 {
		return 0, false
	}
	if host, err := os.Hostname(); err == nil && host != target[:i] {
		return 0, true
	}
	err = syscall.Kill(pid, 0)
	return pid, err == nil || errors.Is(err, syscall.EPERM)
}
