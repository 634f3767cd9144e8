//go:build !linux

package cdppipe

import "os"

// pipePending is 0 off Linux, where pagemux does not ask the kernel what
// waits in a pipe: a reader not scheduled for all of a check's time is
// taken for a silent Chrome.
func pipePending(*os.File) int { return 0 }
