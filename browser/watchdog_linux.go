package browser

import "time"

// processStopped reports whether the process pid is stopped: by a signal
// (SIGSTOP, SIGTSTP) or by a debugger. A process that runs, sleeps or waits
// on the disk is not.
func processStopped(pid int) bool {
	st := processState(pid)
	return st == "T" || st == "t"
}

// processState is the state of the process pid as /proc/PID/stat gives it
// (R, S, D, T, t, Z, …), "" when there is no such process.
func processState(pid int) string {
	st, err := readStat(pid)
	if err != nil {
		return ""
	}
	return string(st.state)
}

// processCPU is the CPU time the process pid has used so far, in all its
// threads; -1 when there is no such process.
func processCPU(pid int) time.Duration {
	st, err := readStat(pid)
	if err != nil {
		return -1
	}
	return time.Duration(st.cpu) * time.Second / clockTick
}
