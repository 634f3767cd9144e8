//go:build unix

package lighthouse

import (
	"os/exec"
	"syscall"
)

// inGroup starts the runner in a process group of its own and makes
// cancellation kill the whole group, so nothing node started outlives it.
// On Linux the kernel also kills it when pagemux dies.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
