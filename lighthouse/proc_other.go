//go:build !unix

package lighthouse

import "os/exec"

// inGroup leaves the command as it is: without process groups, cancellation
// kills node alone (exec.CommandContext's default).
func inGroup(cmd *exec.Cmd) {}
