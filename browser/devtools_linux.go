//go:build linux

package browser

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessOptions starts Chrome in a process group of its own, which
// killChromeGroup ends at once, helpers included. (A signal a terminal sends
// to pagemux's group, such as Ctrl-C, then reaches pagemux only, which closes
// Chrome itself.) It also makes the kernel kill Chrome when pagemux dies, as
// chromedp does for a command that no ModifyCmdFunc touched.
func setProcessOptions(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = new(syscall.SysProcAttr)
	}
	cmd.SysProcAttr.Setpgid = true
	if _, ok := os.LookupEnv("LAMBDA_TASK_ROOT"); !ok {
		// chromedp leaves it off on AWS Lambda, which forbids it.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
}
