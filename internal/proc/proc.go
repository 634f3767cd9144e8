// Package proc reads Linux's /proc for the tests and benchmarks that watch
// pagemux and the Chrome it starts: processes are found as descendants of
// a pid, never by name, so that no other Chrome on the machine counts.
package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Proc is one process as /proc/PID/stat shows it.
type Proc struct {
	PID, PPID int
	Comm      string // the executable's name, as the kernel keeps it
	State     byte   // R, S, D, Z (zombie), X (dead) …
	// Start is the start time in clock ticks: with the pid, it tells a
	// process from a later one that got the same pid.
	Start string
	// CPU is the user and system time so far, in clock ticks (ClockTick).
	CPU float64
}

// ClockTick is USER_HZ, 100 on every Linux this runs on.
const ClockTick = 100

// Read returns the process pid, false if there is none.
func Read(pid int) (Proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Proc{}, false
	}
	// Fields from the state on: state ppid pgrp … utime (14th of the line)
	// stime (15th) … starttime (22nd).
	f := strings.Fields(s[end+1:])
	if len(f) < 20 || f[0] == "" {
		return Proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return Proc{PID: pid, PPID: ppid, Comm: s[open+1 : end], State: f[0][0], Start: f[19], CPU: ut + st}, true
}

// All returns every process.
func All() []Proc {
	dirs, _ := os.ReadDir("/proc")
	var out []Proc
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil {
			if p, ok := Read(pid); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// Descendants returns the processes below pid, nearest first.
func Descendants(pid int) []Proc {
	kids := map[int][]Proc{}
	for _, p := range All() {
		kids[p.PPID] = append(kids[p.PPID], p)
	}
	var out []Proc
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, k := range kids[queue[0]] {
			out = append(out, k)
			queue = append(queue, k.PID)
		}
	}
	return out
}

// Alive reports whether p still runs: the same process (pid and start
// time), not a zombie.
func Alive(p Proc) bool {
	q, ok := Read(p.PID)
	return ok && q.Start == p.Start && q.State != 'Z' && q.State != 'X'
}

// Running returns the processes of ps that are Alive.
func Running(ps []Proc) []Proc {
	var out []Proc
	for _, p := range ps {
		if Alive(p) {
			out = append(out, p)
		}
	}
	return out
}
