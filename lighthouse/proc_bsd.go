//go:build unix && !linux

package lighthouse

import "syscall"

// dieWithParent does nothing: only Linux kills a child with its parent.
func dieWithParent(*syscall.SysProcAttr) {}
