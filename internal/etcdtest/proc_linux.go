//go:build linux

package etcdtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill etcd when the test binary dies, so that
// a test killed by its timeout leaves no etcd behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
