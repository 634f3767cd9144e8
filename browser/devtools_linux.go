//go:build linux

package browser

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessOptions makes the kernel kill Chrome when pagemux dies, as
// chromedp does for a command that no ModifyCmdFunc touched.
func setProcessOptions(cmd *exec.Cmd) {
	if _, ok := os.LookupEnv("LAMBDA_TASK_ROOT"); ok {
		return // chromedp leaves it off on AWS Lambda, which forbids it
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = new(syscall.SysProcAttr)
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
