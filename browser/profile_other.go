//go:build !linux

package browser

import (
	"os"
)

// Off Linux pagemux cannot read who runs (no /proc): temporary profiles are
// removed when pagemux closes Chrome, and never swept.

// lockOwner creates the owner file of a new profile with this process's pid.
func lockOwner(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(ownerLine(os.Getpid(), 0)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ownerAlive says yes: off Linux, pagemux cannot tell.
func ownerAlive(dir string, pid int) bool { return true }

// ownedByMe says no: off Linux, no profile is swept.
func ownedByMe(dir string) bool { return false }

// killProcessesUsing does nothing off Linux.
func killProcessesUsing(dir string, pgid int) int { return 0 }

// killChromeGroup does nothing off Linux; cancelling the allocator kills
// Chrome's main process.
func killChromeGroup(pid int, dir string) {}
