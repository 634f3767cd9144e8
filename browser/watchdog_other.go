//go:build !linux

package browser

import "time"

// Off Linux pagemux does not ask the kernel what waits in a pipe (see
// cdppipe.Mux.Pending) or whether a process is stopped: a reader not
// scheduled for all of a check's time is taken for a silent Chrome, and a
// stopped Chrome is found after hangSilence, as a hung one is.

// processStopped is false off Linux.
func processStopped(int) bool { return false }

// processCPU is -1 (not known) off Linux: a busy Chrome gets no more time
// than a hung one.
func processCPU(int) time.Duration { return -1 }

// processState is "" off Linux.
func processState(int) string { return "" }
