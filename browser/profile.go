package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// pagemux makes the temporary profile of a Chrome it launches itself, instead
// of leaving it to chromedp (whose chromedp-runner* names say nothing of
// their owner): $TMPDIR/pagemux-<pid>-<random>, holding an owner file with the
// owner's pid and start time that the owner keeps locked while it runs. So the
// profile of a pagemux that was killed (SIGKILL leaves it no time to clean up)
// is removed by the next pagemux that starts (SweepProfiles), and the profile
// of one that runs is never touched.
//
// Chrome also makes a directory for its singleton socket in its TMPDIR
// (org.chromium.Chromium.XXXXXX) and leaves it behind when it is killed.
// pagemux gives Chrome the profile directory as TMPDIR when the socket's path
// fits there, so that the directory goes with the profile; when it does not
// fit, the directory is found from the profile's SingletonSocket link and
// removed on its own.

const (
	// profilePrefix starts the name of every temporary profile.
	profilePrefix = "pagemux-"
	// ownerFile, in a temporary profile, names and is locked by its owner.
	ownerFile = "pagemux.owner"
	// singletonLink is the link in a profile to Chrome's singleton socket.
	singletonLink = "SingletonSocket"
)

// profileName matches the temporary profiles of pagemux: pagemux-<pid>-<hex>.
// Other pagemux temporary files (pagemux-trace-…, pagemux-lighthouse-…) do
// not match.
var profileName = regexp.MustCompile(`^pagemux-([0-9]+)-[0-9a-f]{8}$`)

// singletonName matches the directories Chrome makes for its singleton
// socket: org.chromium.Chromium.XXXXXX, com.google.Chrome.XXXXXX and the like.
var singletonName = regexp.MustCompile(`^[a-z]+(\.[A-Za-z]+)+\.[A-Za-z0-9]{6}$`)

// maxSocketPath is the longest path of a Unix socket (sun_path holds 108
// bytes with the final NUL). Chrome aborts at start when the path of its
// singleton socket is longer.
const maxSocketPath = 107

// longestSingleton is the longest path of the singleton socket under its
// TMPDIR, for the Chromes pagemux knows: Chromium makes
// org.chromium.Chromium.XXXXXX, Google Chrome com.google.Chrome.XXXXXX, and
// Chrome for Testing this one.
const longestSingleton = len("/com.google.chrome.for.testing.XXXXXX/") + len(singletonLink)

// profile is the temporary profile of one Chrome that pagemux launched. It
// does not start or stop Chrome.
type profile struct {
	dir   string
	owner *os.File // the owner file, locked while the profile is in use
}

// newProfile makes a temporary profile in the OS temp dir, named for this
// process, with its owner file written and locked.
func newProfile() (*profile, error) {
	tmp := os.TempDir()
	var dir string
	for tries := 0; ; tries++ {
		var b [4]byte
		_, _ = rand.Read(b[:])
		dir = filepath.Join(tmp, fmt.Sprintf("%s%d-%s", profilePrefix, os.Getpid(), hex.EncodeToString(b[:])))
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || tries == 10 {
			return nil, fmt.Errorf("temporary profile: %w", err)
		}
	}
	owner, err := lockOwner(filepath.Join(dir, ownerFile))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("temporary profile: %w", err)
	}
	return &profile{dir: dir, owner: owner}, nil
}

// remove removes the profile and what Chrome left in it. Chrome must be gone.
func (p *profile) remove() error {
	err := removeProfileDir(p.dir)
	p.owner.Close() // after: while it is locked, no sweep takes the profile
	return err
}

// removeProfileDir removes dir like os.RemoveAll, trying again for up to 5 s:
// a Chrome helper that has not seen its browser die yet can still write in
// it, and on a loaded machine that takes more than a second. It returns at
// once when the first try removes it, as it nearly always does.
func removeProfileDir(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.RemoveAll(dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // bounded, above; Chrome gives no sign when its helpers are done
	}
}

// chromeTempDir returns the TMPDIR to give a Chrome that runs with the
// temporary profile dir: the profile itself, so that the singleton directory
// Chrome makes there goes with it, unless the socket's path would be too long
// (then "": Chrome keeps the TMPDIR of pagemux).
func chromeTempDir(dir string) string {
	if len(dir)+longestSingleton > maxSocketPath {
		return ""
	}
	return dir
}

// singletonDir returns the directory of the singleton socket of the Chrome
// that runs, or ran, with the profile dir, when that directory lies outside
// the profile (it then outlives the profile); otherwise "".
func singletonDir(dir string) string {
	target, err := os.Readlink(filepath.Join(dir, singletonLink))
	if err != nil || !filepath.IsAbs(target) || filepath.Base(target) != singletonLink {
		return ""
	}
	sd := filepath.Dir(target)
	if !singletonName.MatchString(filepath.Base(sd)) || strings.HasPrefix(sd, dir+string(filepath.Separator)) {
		return ""
	}
	return sd
}

// removeSingletonDir removes a singleton directory that singletonDir found,
// once its Chrome is gone: the socket and the cookie Chrome keeps there, then
// the directory, which must then be empty (so that nothing else is removed).
func removeSingletonDir(sd string) error {
	if sd == "" {
		return nil
	}
	for _, name := range []string{singletonLink, "SingletonCookie"} {
		_ = os.Remove(filepath.Join(sd, name))
	}
	if err := os.Remove(sd); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// SweepProfiles removes the temporary profiles in the OS temp dir that
// belong to a pagemux that is gone (killed, so that it could not clean up),
// and ends the Chrome processes still using them. It never touches the
// profile of a pagemux that runs, nor a profile of another user, nor
// anything not named like a pagemux profile; a profile it cannot tell about
// stays. It returns the profiles it removed. It takes a moment per profile;
// ctx stops it between two.
func SweepProfiles(ctx context.Context, log *slog.Logger) []string {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return sweep(ctx, os.TempDir(), log)
}

// sweep is SweepProfiles in the directory tmp.
func sweep(ctx context.Context, tmp string, log *slog.Logger) []string {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		log.Debug("profile sweep: cannot read the temp dir", "dir", tmp, "err", err)
		return nil
	}
	var removed []string
	for _, e := range entries {
		m := profileName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() || ctx.Err() != nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		dir := filepath.Join(tmp, e.Name())
		if err != nil || pid == os.Getpid() || !ownedByMe(dir) || ownerAlive(dir, pid) {
			continue
		}
		if n := killProcessesUsing(dir, 0); n > 0 {
			log.Info("profile sweep: killed Chrome processes of a pagemux that is gone", "profile", dir, "processes", n)
		}
		sd := singletonDir(dir)
		if err := removeProfileDir(dir); err != nil {
			log.Warn("profile sweep: cannot remove the profile of a pagemux that is gone", "profile", dir, "err", err)
			continue
		}
		_ = removeSingletonDir(sd)
		log.Info("profile sweep: removed the profile of a pagemux that is gone", "profile", dir, "owner_pid", pid)
		removed = append(removed, dir)
	}
	return removed
}

// readOwner reads the pid and start time an owner file holds.
func readOwner(data []byte) (pid int, start uint64, ok bool) {
	f := strings.Fields(string(data))
	if len(f) != 3 || f[0] != "pagemux" {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	return pid, start, err1 == nil && err2 == nil
}

// ownerLine is what an owner file holds: "pagemux <pid> <start time>".
func ownerLine(pid int, start uint64) string {
	return fmt.Sprintf("pagemux %d %d\n", pid, start)
}

// politeClose is how long a Chrome gets to exit after Browser.close before
// its process group is killed. A temporary profile holds nothing to save, so
// it gets only what a healthy Chrome needs (closing takes it 80–170 ms on a
// busy 2-core machine, a script still running or not); a kept profile gets
// longer to write its state, still short enough for pagemux to exit within a
// second of a signal.
const (
	politeClose     = 300 * time.Millisecond
	politeCloseKept = 700 * time.Millisecond
)

// chromeProc is one Chrome that pagemux launched, and what it leaves behind
// when it exits: helpers that outlive it, its temporary profile, its
// singleton directory. stop removes all of that, once.
type chromeProc struct {
	log       *slog.Logger
	profile   *profile // nil for a profile given by --user-data-dir, which stays
	dir       string   // the profile Chrome runs with
	l         *launch  // the launch that starts it
	stopAlloc context.CancelFunc

	mu        sync.Mutex
	noted     bool
	pid       int    // the browser process, which leads its process group
	singleton string // Chrome's singleton directory, when outside the profile
	once      sync.Once
}

// newChromeProc makes the temporary profile of a Chrome to launch, unless cfg
// names a profile to keep.
func newChromeProc(cfg Config, l *launch, log *slog.Logger) (*chromeProc, error) {
	c := &chromeProc{log: log, dir: cfg.UserDataDir, l: l, stopAlloc: func() {}}
	if c.dir == "" {
		p, err := newProfile()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStart, err)
		}
		c.profile, c.dir = p, p.dir
	}
	return c, nil
}

// tempDir returns the temporary profile, "" for a kept one.
func (c *chromeProc) tempDir() string {
	if c.profile == nil {
		return ""
	}
	return c.dir
}

// noteStarted records, once Chrome runs, its pid and where its singleton
// socket is. Before the start is done, and after a failed one, it does
// nothing.
func (c *chromeProc) noteStarted() {
	select {
	case <-c.l.done:
		if c.l.err != nil {
			return
		}
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.noted {
		return
	}
	c.noted = true
	if cc := chromedp.FromContext(c.l.rootCtx); cc != nil && cc.Browser != nil && cc.Browser.Process() != nil {
		c.pid = cc.Browser.Process().Pid
	}
	c.singleton = singletonDir(c.dir)
}

// kill kills Chrome's process group at once: the browser and its helpers.
// It does not wait for them to exit, nor remove anything. It does nothing
// while Chrome is still starting: cancelling the launch's contexts ends that.
func (c *chromeProc) kill() {
	c.noteStarted()
	c.mu.Lock()
	pid := c.pid
	c.mu.Unlock()
	killChromeGroup(pid, c.dir)
}

// quit asks Chrome to close (Browser.close) and waits for it to exit, at most
// politeClose; past that it kills Chrome's process group. Call it once, after
// a successful start. It does not remove the profile: stop does.
func (c *chromeProc) quit() {
	c.noteStarted()
	root := c.l.rootCtx
	limit := politeClose
	if c.profile == nil {
		limit = politeCloseKept
	}
	if root.Err() != nil {
		c.log.Debug("chrome was gone before close", "cause", context.Cause(root))
		c.kill()
		return
	}
	ctx, cancel := context.WithTimeout(root, limit)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// It returns once Chrome exited, or at ctx's end. Only once: a
		// second Cancel of a root context panics.
		_ = chromedp.Cancel(ctx)
	}()
	// Not ctx.Done: Cancel cancels root, and so ctx, as Chrome exits.
	start := time.Now()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	polite := true
	select {
	case <-done:
	case <-timer.C:
		polite = false
	}
	c.log.Debug("chrome closed", "polite", polite, "took", time.Since(start))
	// Whatever Cancel made of it: helpers of a Chrome that did exit would
	// hold its output pipe, and chromedp waits a second for that.
	c.kill()
	<-done
}

// stop kills Chrome if it still runs (through the allocator), waits for it,
// then kills the helpers that outlived it and removes the temporary profile
// and Chrome's singleton directory. Only the first call does the work; the
// others wait for it.
func (c *chromeProc) stop() {
	c.once.Do(func() {
		c.stopAlloc()
		c.mu.Lock()
		pid, sd := c.pid, c.singleton
		c.mu.Unlock()
		if c.profile == nil && pid == 0 {
			return // a kept profile's Chrome that never ran: nothing to find
		}
		if n := killProcessesUsing(c.dir, pid); n > 0 {
			c.log.Debug("killed Chrome helpers that outlived their browser", "processes", n, "profile", c.dir)
		}
		if c.profile != nil {
			if sd == "" {
				sd = singletonDir(c.dir)
			}
			if err := c.profile.remove(); err != nil {
				c.log.Warn("cannot remove Chrome's temporary profile", "profile", c.dir, "err", err)
			}
		}
		if err := removeSingletonDir(sd); err != nil {
			c.log.Warn("cannot remove Chrome's singleton directory", "dir", sd, "err", err)
		}
	})
}

// quitContext returns the parent context of the allocators: Close cancels
// it, so that a launch in progress ends at once.
func (b *Browser) quitContext() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quit == nil {
		b.quit, b.quitNow = context.WithCancel(context.Background())
		if b.closed {
			b.quitNow()
		}
	}
	return b.quit
}

// stopLaunches cancels the context quitContext returns.
func (b *Browser) stopLaunches() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quitNow != nil {
		b.quitNow()
	}
}
