//go:build !linux

package browser

import "os/exec"

// setProcessOptions does nothing here: like chromedp, pagemux sets no
// process options off Linux.
func setProcessOptions(cmd *exec.Cmd) {}
