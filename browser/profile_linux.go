//go:build linux

package browser

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// lockOwner creates the owner file of a new profile, locks it for as long as
// this process runs (the kernel drops the lock when the process dies, however
// it dies) and writes this process's pid and start time in it. The file is
// opened close-on-exec, so Chrome does not inherit the lock.
func lockOwner(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil && !flockUnsupported(err) {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	st, err := readStat(os.Getpid())
	if err == nil {
		_, err = f.WriteString(ownerLine(os.Getpid(), st.start))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return f, nil
}

// flockUnsupported says the file system has no flock; the pid and start time
// in the owner file then tell whether the owner runs.
func flockUnsupported(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL)
}

// ownerAlive reports whether the pagemux that made the profile dir, whose
// name says pid, may still run. It errs on the side of yes: a profile it
// cannot tell about is kept.
//
// The owner holds a lock on its owner file while it runs: a lock held means
// it runs, whatever pid namespace it is in. A lock not held means it is gone,
// unless it is just making the profile; then its pid runs with the start time
// the file names (or the file is still empty). A pid that runs with another
// start time is another process that got the pid after the owner died, and a
// zombie is a process that died.
func ownerAlive(dir string, pid int) bool {
	var start uint64
	haveStart := false
	f, err := os.Open(filepath.Join(dir, ownerFile))
	switch {
	case err == nil:
		defer f.Close()
		lerr := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if errors.Is(lerr, syscall.EWOULDBLOCK) {
			return true
		}
		if lerr != nil && !flockUnsupported(lerr) {
			return true
		}
		data, _ := io.ReadAll(io.LimitReader(f, 256))
		if p, s, ok := readOwner(data); ok && p == pid {
			start, haveStart = s, true
		}
		// Closing f drops the shared lock taken above.
	case !errors.Is(err, fs.ErrNotExist):
		return true
	}
	st, err := readStat(pid)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	if st.state == 'Z' || st.state == 'X' {
		return false
	}
	if haveStart {
		return st.start == start
	}
	return true
}

// ownedByMe reports whether dir is a directory of this process's user.
func ownedByMe(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// procStat is what pagemux reads of /proc/<pid>/stat.
type procStat struct {
	state byte
	pgrp  int
	start uint64 // clock ticks after boot: with the pid, it names one process
	cpu   uint64 // user and system time so far, in clock ticks (clockTick)
}

// clockTick is USER_HZ, the unit of /proc's times: 100 on every Linux
// pagemux runs on.
const clockTick = 100

// readStat reads /proc/<pid>/stat. An error wraps fs.ErrNotExist when no
// such process runs.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold spaces and parentheses
	// itself: the fields start after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	f := bytes.Fields(data[i+1:])
	// f[0] is field 3 of proc(5): state; f[2] is pgrp (5); f[11] and f[12]
	// utime and stime (14, 15); f[19] is starttime (22).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	utime, err3 := strconv.ParseUint(string(f[11]), 10, 64)
	stime, err4 := strconv.ParseUint(string(f[12]), 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q: %w", pid, data, err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start, cpu: utime + stime}, nil
}

// usesProfile reports whether the process pid runs with --user-data-dir=dir,
// as Chrome and each of its helpers do.
func usesProfile(pid int, dir string) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	want := "--user-data-dir=" + dir
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		if string(arg) == want {
			return true
		}
	}
	return false
}

// killProcessesUsing kills the processes that run with the profile dir, of
// the process group pgid when it is not 0, and returns how many it killed.
// Chrome passes --user-data-dir to every helper, so the command line finds
// those that outlive their browser. A helper can fork as its browser dies, so
// it looks again until it finds nothing three times in a row (at most a
// second). Then it waits, at most 5 s, for those it killed to be gone: one
// busy in the kernel (writing to the profile) finishes that first, and the
// profile's removal must not race it on a loaded machine.
func killProcessesUsing(dir string, pgid int) int {
	var killed []int
	deadline := time.Now().Add(time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); {
		n := 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if pgid != 0 {
				if st, err := readStat(pid); err != nil || st.pgrp != pgid {
					continue
				}
			}
			if usesProfile(pid, dir) && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
				n++
			}
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(10 * time.Millisecond) // bounded by the deadline; see above
	}
	waitGone(killed, 5*time.Second)
	return len(killed)
}

// waitGone waits, at most limit, until none of the processes pids runs:
// each has exited (a zombie counts as gone) or its pid is free.
func waitGone(pids []int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if st, err := readStat(pid); err != nil || st.state == 'Z' || st.state == 'X' {
				break
			}
			time.Sleep(5 * time.Millisecond) // bounded by the deadline; the kernel gives no sign
		}
	}
}

// killChromeGroup kills the process group of the Chrome pid that runs with
// the profile dir: the browser and every helper it started. It checks first
// that pid still is that Chrome and leads its group, so that it never kills
// a group that is not pagemux's.
func killChromeGroup(pid int, dir string) {
	if pid <= 0 {
		return
	}
	if st, err := readStat(pid); err != nil || st.pgrp != pid || !usesProfile(pid, dir) {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
