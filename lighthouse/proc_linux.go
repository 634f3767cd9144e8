package lighthouse

import "syscall"

// dieWithParent has the kernel kill the runner when pagemux dies, even by
// SIGKILL, when no cancellation runs.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
