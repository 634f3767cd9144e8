//go:build linux

package browser

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/testchrome"
)

// A launched Chrome runs with a profile named for its owner, locked by it,
// and Close removes it with Chrome's singleton directory, which lies outside
// the profile here: the test binary's TMPDIR is too long for Chrome's
// socket to fit under the profile. The singleton tests run the full Chrome:
// the headless shell makes no singleton.
func TestProfileNamedAndRemoved(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{ExecPath: testchrome.Full()})
	l := b.members[0].launch
	dir := l.profileDir
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("pagemux-%d-", os.Getpid())) ||
		!profileName.MatchString(filepath.Base(dir)) {
		t.Fatalf("profile %s: want %s/pagemux-%d-<hex>", dir, os.TempDir(), os.Getpid())
	}
	if !ownerAlive(dir, os.Getpid()) {
		t.Fatal("the profile of a running pagemux is not seen as alive")
	}
	if chromeTempDir(dir) != "" {
		t.Fatalf("TMPDIR %s is short enough for the socket: this test wants it outside the profile", os.TempDir())
	}
	sd := singletonDir(dir)
	if sd == "" {
		t.Fatalf("no singleton directory outside the profile: %v", readlink(filepath.Join(dir, singletonLink)))
	}
	b.Close()
	for _, p := range []string{dir, sd} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left after Close: %v", p, err)
		}
	}
}

func readlink(path string) string {
	s, err := os.Readlink(path)
	if err != nil {
		return err.Error()
	}
	return s
}

// With a short TMPDIR, Chrome keeps its singleton socket in the profile, so
// that it goes with the profile. (Not parallel: it sets TMPDIR, while no
// parallel test runs yet.)
func TestSingletonInsideProfile(t *testing.T) {
	tmp, err := os.MkdirTemp("/tmp", "pm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	t.Setenv("TMPDIR", tmp)
	b := startBrowser(t, Config{ExecPath: testchrome.Full()})
	dir := b.members[0].launch.profileDir
	if chromeTempDir(dir) != dir {
		t.Fatalf("profile %s is too long for the socket", dir)
	}
	if link := readlink(filepath.Join(dir, singletonLink)); !strings.HasPrefix(link, dir+"/org.chromium.Chromium.") {
		t.Fatalf("singleton socket at %s, want it in the profile", link)
	}
	b.Close()
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("left in TMPDIR after Close: %v", left)
	}
}

// A kept profile (--user-data-dir) stays; Chrome's singleton directory goes.
func TestKeptProfileStays(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "kept-profile")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b := startBrowser(t, Config{ExecPath: testchrome.Full(), UserDataDir: dir})
	sd := singletonDir(dir)
	if sd == "" {
		t.Fatalf("no singleton directory: %v", readlink(filepath.Join(dir, singletonLink)))
	}
	b.Close()
	if _, err := os.Stat(filepath.Join(dir, "Default")); err != nil {
		t.Fatalf("kept profile: %v", err)
	}
	if _, err := os.Lstat(sd); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("singleton directory %s left after Close: %v", sd, err)
	}
}

// A Chrome that dies by itself leaves nothing either: its profile goes when
// it is gone, and the next call starts a new one with a new profile.
func TestProfileOfDeadChromeRemoved(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	first := b.members[0].launch
	first.chrome.kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Lstat(first.profileDir)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("profile %s of a killed Chrome still there after 30 s", first.profileDir)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := b.Selected(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b.members[0].launch == first || b.members[0].launch.profileDir == first.profileDir {
		t.Fatalf("no new launch with a new profile: %s", b.members[0].launch.profileDir)
	}
}

// Close during a launch ends it at once and removes its profile.
//
// Not parallel: it finds the profile of its Chrome among those of this
// process, so no other test may start one meanwhile. The sign that Chrome
// runs is its singleton link, which only the full Chrome makes: on the
// headless shell the wait ran to its end and the Close came after the start.
func TestCloseWhileStarting(t *testing.T) {
	needChrome(t)
	mine := filepath.Join(os.TempDir(), fmt.Sprintf("pagemux-%d-*", os.Getpid()), singletonLink)
	before, _ := filepath.Glob(mine)
	b := New(Config{ExecPath: testchrome.Full()})
	errc := make(chan error, 1)
	go func() { errc <- b.Start(t.Context()) }()
	// Wait until Chrome runs (its profile has its singleton link), not until
	// the start is done.
	deadline := time.Now().Add(30 * time.Second)
	var dir string
	for dir == "" && time.Now().Before(deadline) {
		now, _ := filepath.Glob(mine)
		for _, m := range now {
			if !slices.Contains(before, m) {
				dir = filepath.Dir(m)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	if dir == "" {
		b.Close()
		t.Fatal("Chrome made no singleton link in 30 s: no sign that it runs, so no Close during its start")
	}
	start := time.Now()
	b.Close()
	took := time.Since(start)
	err := <-errc
	t.Logf("Close during a start took %s; Start: %v", took, err)
	if took > 10*time.Second {
		t.Fatalf("Close during a start took %s", took)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("profile %s left: %v", dir, err)
	}
}

var fakes atomic.Int64

// fakeProfile makes a profile directory in tmp for the owner pid, with an
// owner file naming start (no owner file when start is 0).
func fakeProfile(t *testing.T, tmp string, pid int, start uint64) string {
	t.Helper()
	dir := filepath.Join(tmp, fmt.Sprintf("pagemux-%d-%08x", pid, fakes.Add(1)))
	if err := os.MkdirAll(filepath.Join(dir, "Default"), 0o700); err != nil {
		t.Fatal(err)
	}
	if start != 0 {
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(ownerLine(pid, start)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startProcess starts a process that the test kills at its end.
func startProcess(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func startTime(t *testing.T, pid int) uint64 {
	t.Helper()
	st, err := readStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.start
}

// The sweep removes exactly the profiles whose owner is gone, and never one
// whose owner runs or may run.
func TestSweepProfiles(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()

	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := exited.Process.Pid
	sleeper := startProcess(t, "sleep", "60")
	livePID, liveStart := sleeper.Process.Pid, startTime(t, sleeper.Process.Pid)

	// A live owner that holds its lock, as a pagemux does (flock(1) takes
	// the same flock(2) lock), in a pid namespace of its own, say: the pid
	// its name gives runs no more here. The lock says it runs.
	holderDir := fakeProfile(t, tmp, deadPID, 0)
	lockFile := filepath.Join(holderDir, ownerFile)
	if err := os.WriteFile(lockFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// -o: the lock stays with flock, not with the sleep it runs.
	holder := startProcess(t, "flock", "-o", lockFile, "sleep", "60")
	mcptest.WaitFor(t, "flock holds the lock", func() bool { return lockHeld(t, lockFile) })

	// A zombie: exited, not reaped yet.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	zombieStart := startTime(t, zombie.Process.Pid)
	mcptest.WaitFor(t, "the child is a zombie", func() bool {
		st, err := readStat(zombie.Process.Pid)
		return err == nil && st.state == 'Z'
	})
	defer zombie.Wait()

	// A Chrome helper that outlived its dead pagemux, still using its profile.
	orphanDir := fakeProfile(t, tmp, deadPID, 12345)
	orphan := startProcess(t, "sh", "-c", "while :; do sleep 0.1; done", "--user-data-dir="+orphanDir)

	// A dead profile whose singleton socket lies outside it.
	singletonOwner := fakeProfile(t, tmp, deadPID, 23456)
	sd := filepath.Join(tmp, "org.chromium.Chromium.AbC123")
	if err := os.Mkdir(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sd, singletonLink), nil, 0o600)
	os.Symlink(filepath.Join(sd, singletonLink), filepath.Join(singletonOwner, singletonLink))

	gone := []string{
		fakeProfile(t, tmp, deadPID, 1),           // owner exited
		fakeProfile(t, tmp, deadPID, 0),           // owner exited before writing its file
		fakeProfile(t, tmp, livePID, liveStart+1), // the pid is another process's now
		fakeProfile(t, tmp, zombie.Process.Pid, zombieStart),
		orphanDir,
		singletonOwner,
	}
	kept := []string{
		holderDir,
		fakeProfile(t, tmp, livePID, liveStart), // its owner runs, lock not taken yet (or no flock)
		fakeProfile(t, tmp, livePID, 0),         // its owner runs, file not written yet
		fakeProfile(t, tmp, os.Getpid(), 0),     // this process's own
	}
	for _, name := range []string{"pagemux-trace-1.json", "pagemux-lighthouse-1234", "pagemux-12-nothex!", "pagemux-bin"} {
		p := filepath.Join(tmp, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, p)
	}
	if os.Getuid() == 0 {
		// Another user's, owner gone: not ours to remove.
		other := fakeProfile(t, tmp, deadPID, 2)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, other)
	}

	removed := sweep(t.Context(), tmp, slog.New(slog.DiscardHandler))
	slices.Sort(removed)
	slices.Sort(gone)
	if !slices.Equal(removed, gone) {
		t.Errorf("swept %v\nwant %v", removed, gone)
	}
	for _, p := range append(gone, sd) {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	mcptest.WaitFor(t, "the orphan helper is killed", func() bool {
		st, err := readStat(orphan.Process.Pid)
		return err != nil || st.state == 'Z'
	})
	if ws := orphanState(orphan); ws != "" && ws != "signal: killed" {
		t.Errorf("orphan helper: %s", ws)
	}

	// Once the lock holder dies, however it dies, its profile goes.
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	if removed := sweep(t.Context(), tmp, slog.New(slog.DiscardHandler)); !slices.Equal(removed, []string{holderDir}) {
		t.Errorf("after the owner died: swept %v, want %v", removed, holderDir)
	}
}

// lockHeld reports whether another open file holds a flock on path.
func lockHeld(t *testing.T, path string) bool {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return errors.Is(syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB), syscall.EWOULDBLOCK)
}

// orphanState reaps the orphan helper and says how it ended.
func orphanState(cmd *exec.Cmd) string {
	err := cmd.Wait()
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestReadStat(t *testing.T) {
	t.Parallel()
	st, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.state != 'R' && st.state != 'S' || st.start == 0 {
		t.Fatalf("own stat: %+v", st)
	}
	if _, err := readStat(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no such pid: %v", err)
	}
}

// waitGone waits for a killed process up to its exit, not for its reaping
// (a zombie is gone), and gives up on a live one at its limit.
func TestWaitGone(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	start := time.Now()
	waitGone([]int{pid}, 50*time.Millisecond)
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("waitGone returned after %v for a live process, before its limit", took)
	}
	if st, err := readStat(pid); err != nil || st.state == 'Z' {
		t.Fatalf("the live process: %+v, %v", st, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitGone([]int{pid}, time.Minute) // not reaped: cmd.Wait comes at cleanup
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("waitGone took %v for a killed process: it waited for its limit", took)
	}
	if st, err := readStat(pid); err != nil || st.state != 'Z' {
		t.Fatalf("after waitGone the killed process is %+v (%v), want a zombie", st, err)
	}
}

// groupMembers lists the processes of the process group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.pgrp == pgid && st.state != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A Chrome that does not answer Browser.close (here: stopped) is killed,
// every process of its group, and Close still returns at once.
func TestCloseKillsFrozenChrome(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	c := b.members[0].launch.chrome
	c.noteStarted()
	pgid := c.pid
	members := groupMembers(pgid)
	if len(members) < 2 {
		t.Fatalf("Chrome's group %d has %v", pgid, members)
	}
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b.Close()
	took := time.Since(start)
	t.Logf("Close of a stopped Chrome (%d processes) took %s", len(members), took)
	if took > 10*time.Second {
		t.Fatalf("Close of a stopped Chrome took %s", took)
	}
	mcptest.WaitFor(t, "Chrome's processes are gone", func() bool { return len(groupMembers(pgid)) == 0 })
	if _, err := os.Lstat(b.members[0].launch.profileDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("profile left: %v", err)
	}
}
