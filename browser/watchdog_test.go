package browser

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/pagemux/pagemux/internal/tmpcheck"
)

// chromeTree returns the pid and the descendants of the Chrome that b
// launched: the processes pagemux started, found from its own handle.
func chromeTree(t *testing.T, b *Browser) []int {
	t.Helper()
	root := b.ChromePID()
	if root == 0 {
		t.Fatal("no Chrome runs")
	}
	return descendants(root)
}

// descendants returns pid and every process below it, from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		for p, pp := range parent {
			if pp == tree[i] {
				tree = append(tree, p)
			}
		}
	}
	return tree
}

// freeze stops the processes, and resumes them when the test ends, so no
// stopped Chrome outlives it (pagemux kills them; SIGCONT of a gone pid
// does nothing).
func freeze(t *testing.T, pids []int) {
	t.Helper()
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGSTOP)
	}
	t.Cleanup(func() { resume(pids) })
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st := processState(pid)
	return st != "" && st != "Z" && st != "X"
}

// supervised runs fn as a tool call would: watched by Supervise.
func supervised(b *Browser, ctx context.Context, fn func(ctx context.Context) error) <-chan error {
	ch := make(chan error, 1)
	go func() {
		w := b.Supervise(ctx)
		defer w.Stop()
		ch <- fn(ctx)
	}()
	return ch
}

// A Chrome whose processes are all stopped fails the calls in flight with
// ErrUnresponsive, is killed, and the next call starts a new one; old page
// ids then say the browser was restarted.
func TestFrozenChrome(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	p := newPageAnswers(t.Context(), t, b, "before")
	oldPID := b.ChromePID()
	tree := chromeTree(t, b)
	freeze(t, tree)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	onPage := supervised(b, ctx, func(ctx context.Context) error {
		_, err := p.Evaluate(ctx, "() => 2", nil)
		return err
	})
	onBrowser := supervised(b, ctx, func(ctx context.Context) error {
		_, err := b.NewPage(ctx, true)
		return err
	})
	for _, ch := range []<-chan error{onPage, onBrowser} {
		err := <-ch
		if !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), "Chrome stopped responding") {
			t.Fatalf("a call in flight on a frozen Chrome ended after %s with %v", time.Since(start), err)
		}
	}
	t.Logf("the calls in flight failed after %s", time.Since(start))
	if time.Since(start) > 40*time.Second {
		t.Errorf("detecting the freeze took %s", time.Since(start))
	}
	// Killed processes take a moment to exit on a busy machine.
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range tree {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			t.Errorf("process %d of the frozen Chrome (%d) still runs: %q", pid, oldPID, cmd)
		}
	}

	// The next call starts a new Chrome.
	np, err := b.Selected(ctx)
	if err != nil {
		t.Fatalf("no page after the restart: %v", err)
	}
	if v, err := np.Evaluate(ctx, "() => 3", nil); err != nil || string(v) != "3" {
		t.Fatalf("the new Chrome: %s %v", v, err)
	}
	if pid := b.ChromePID(); pid == oldPID || pid == 0 {
		t.Errorf("Chrome pid %d after the restart, was %d", pid, oldPID)
	}
	_, err = b.Page(p.ID)
	if want := "page " + strconv.Itoa(p.ID) + " is gone (the browser was restarted)"; err == nil || err.Error() != want {
		t.Fatalf("an old page id answers %v, want %q", err, want)
	}
	if !errors.Is(err, ErrPageClosed) {
		t.Errorf("%v is not ErrPageClosed", err)
	}
}

// A check that a call asks for (Watch.Check) starts at once, not at the
// watch's next round: on a frozen Chrome it says that Chrome did not answer
// while the check goes on; a call that starts meanwhile waits for the
// outcome and gets the new Chrome that pagemux started in place of the
// frozen one, and the check then says Chrome stopped responding.
func TestCheckFrozenChrome(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	newPageAnswers(t.Context(), t, b, "before")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	w := b.Supervise(ctx)
	defer w.Stop()
	if err := w.Check(ctx); err != nil {
		t.Fatalf("a check of a Chrome that answers: %v", err)
	}
	oldPID := b.ChromePID()
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	freeze(t, chromeTree(t, b))

	start := time.Now()
	gone, stop := context.WithCancel(ctx) // a caller that cannot wait at all
	stop()
	err := w.Check(gone)
	if !errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrUnresponsive) {
		t.Fatalf("a check of a frozen Chrome whose caller cannot wait: %v", err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatalf("a start while the check is open: %v", err)
	}
	t.Logf("a start during the check returned after %s", time.Since(start))
	if l.unresponsiveErr() == nil {
		t.Fatal("the start returned before the check found the frozen Chrome")
	}
	if pid := b.ChromePID(); pid == 0 || pid == oldPID {
		t.Fatalf("Chrome pid %d after the start, was %d", pid, oldPID)
	}
	if err := w.Check(ctx); !errors.Is(err, ErrUnresponsive) {
		t.Fatalf("the call's check after the freeze: %v", err)
	}
	newPageAnswers(ctx, t, b, "the new Chrome")
}

// A page busy with a long script is no frozen browser: the checks during
// the call go to the browser process, which answers them, and so does a
// check asked for meanwhile.
func TestBusyPageNotFrozen(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	pid := b.ChromePID()
	// Three rounds of checks (at 1, 3 and 5 s), the last given
	// stoppedSilence to go unanswered: the renderer spins all along, so
	// every second of it is a CPU-second.
	busyFor := superviseAfter + 2*superviseEvery + stoppedSilence
	busy := supervised(b, t.Context(), func(ctx context.Context) error {
		v, err := p.Evaluate(ctx, busyScript(int(busyFor/time.Millisecond)), nil)
		if err == nil && string(v) != `"done"` {
			err = errors.New("got " + string(v))
		}
		return err
	})
	deadline := time.Now().Add(30 * time.Second)
	for b.scriptsRunning.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the script tells pagemux when it starts
	}
	w := b.Supervise(t.Context())
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := w.Check(ctx); err != nil {
		t.Fatalf("a check while a page is busy: %v", err)
	}
	t.Logf("the check while the page was busy answered in %s", time.Since(start))
	if err := <-busy; err != nil {
		t.Fatalf("a busy script under the watch: %v", err)
	}
	if b.ChromePID() != pid {
		t.Fatal("Chrome was restarted under a busy page")
	}
}

// A call that is slow on a Chrome that answers is left alone.
func TestSlowCallNotFrozen(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	pid := b.ChromePID()
	err = <-supervised(b, t.Context(), func(ctx context.Context) error {
		v, err := p.Evaluate(ctx, "() => new Promise(r => setTimeout(() => r('slept'), 2 * 5000 + 500))", nil)
		if err == nil && string(v) != `"slept"` {
			err = errors.New("got " + string(v))
		}
		return err
	})
	if err != nil {
		t.Fatalf("a slow call on a Chrome that answers: %v", err)
	}
	if b.ChromePID() != pid {
		t.Fatal("Chrome was restarted under a slow call")
	}
}

// pauseProxy forwards TCP to an address until paused: then it holds what
// it reads, in both directions, so the connection stays open and silent.
type pauseProxy struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	cond     *sync.Cond
	paused   bool
	// below, while paused, is the first connection not paused: those made
	// after holdOpen go on.
	below, next int
}

func newPauseProxy(t *testing.T, upstream string) *pauseProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pp := &pauseProxy{ln: ln, upstream: upstream}
	pp.cond = sync.NewCond(&pp.mu)
	var conns sync.WaitGroup
	var open []net.Conn
	var openMu sync.Mutex
	track := func(c net.Conn) {
		openMu.Lock()
		open = append(open, c)
		openMu.Unlock()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(up)
			pp.mu.Lock()
			id := pp.next
			pp.next++
			pp.mu.Unlock()
			conns.Add(2)
			go func() { defer conns.Done(); pp.pipe(id, up, c) }()
			go func() { defer conns.Done(); pp.pipe(id, c, up) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		pp.set(false)
		openMu.Lock()
		for _, c := range open {
			c.Close()
		}
		openMu.Unlock()
		conns.Wait()
	})
	return pp
}

func (pp *pauseProxy) pipe(id int, dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		pp.mu.Lock()
		for pp.paused && id < pp.below {
			pp.cond.Wait()
		}
		pp.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				src.Close()
			}
			return
		}
	}
}

func (pp *pauseProxy) set(paused bool) {
	pp.mu.Lock()
	pp.paused, pp.below = paused, math.MaxInt
	pp.mu.Unlock()
	pp.cond.Broadcast()
}

// holdOpen pauses the connections open now, and not those made after.
func (pp *pauseProxy) holdOpen() {
	pp.mu.Lock()
	pp.paused, pp.below = true, pp.next
	pp.mu.Unlock()
}

// attachedThroughProxy attaches a Browser to a running Chrome through a
// pauseProxy; exited closes if that Chrome exits.
func attachedThroughProxy(t *testing.T) (*Browser, *pauseProxy, <-chan struct{}) {
	t.Helper()
	browserURL, exited := runningChrome(t)
	proxy := newPauseProxy(t, strings.TrimPrefix(browserURL, "http://"))
	b := New(Config{BrowserURL: "http://" + proxy.ln.Addr().String()})
	t.Cleanup(func() { b.Close() })
	return b, proxy, exited
}

// An attached Chrome whose connection goes silent: the calls in flight fail
// with ErrUnresponsive, pagemux does not kill it, later calls fail fast
// while it stays silent, and pagemux reconnects once it answers again.
func TestSilentAttachedChrome(t *testing.T) {
	t.Parallel()
	b, proxy, exited := attachedThroughProxy(t)
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	p := newPageAnswers(t.Context(), t, b, "before")
	proxy.set(true)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	err := <-supervised(b, ctx, func(ctx context.Context) error {
		_, err := p.Evaluate(ctx, "() => 2", nil)
		return err
	})
	if !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), "reconnects") {
		t.Fatalf("a call in flight on a silent attached Chrome ended after %s with %v", time.Since(start), err)
	}
	t.Logf("the call in flight failed after %s: %v", time.Since(start), err)
	select {
	case <-exited:
		t.Fatal("pagemux ended an attached Chrome")
	default:
	}

	// While it stays silent, a call fails fast and says why.
	start = time.Now()
	if err := b.Start(ctx); !errors.Is(err, ErrUnresponsive) {
		t.Fatalf("start while silent: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("start while silent took %s", d)
	}

	proxy.set(false)
	if err := b.Start(ctx); err != nil {
		t.Fatalf("no reconnect once Chrome answers again: %v", err)
	}
	if _, err := b.Page(p.ID); err == nil || !strings.Contains(err.Error(), "is gone (the Chrome it was on, which pagemux attached to, went away or stopped responding)") {
		t.Fatalf("the old page after the reconnect: %v", err)
	}
	newPageAnswers(ctx, t, b, "after the reconnect")
}

// newPageAnswers opens a page on b and returns it; it fails the test
// unless a script on it answers.
func newPageAnswers(ctx context.Context, t *testing.T, b *Browser, when string) *Page {
	t.Helper()
	p, err := b.NewPage(ctx, true)
	if err != nil {
		t.Fatalf("%s: new page: %v", when, err)
	}
	if v, err := p.Evaluate(ctx, "() => 6 * 7", nil); err != nil || string(v) != "42" {
		t.Fatalf("%s: a script answered %s %v", when, v, err)
	}
	return p
}

// A connection that is only backlogged, while a new one to the browser is
// answered at once (a flood of events read before the answer, on a starved
// machine), gets backlogGrace before Chrome is called unresponsive: the call
// in flight goes on once it flows again.
func TestBackloggedConnection(t *testing.T) {
	t.Parallel()
	b, proxy, _ := attachedThroughProxy(t)
	p, err := b.NewPage(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	proxy.holdOpen()
	// Past superviseAfter and the failed check, within backlogGrace.
	time.AfterFunc(superviseAfter+attachedSilence+backlogGrace/2, func() { proxy.set(false) })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	err = <-supervised(b, ctx, func(ctx context.Context) error {
		_, err := p.Evaluate(ctx, "() => 2", nil)
		return err
	})
	if err != nil {
		t.Fatalf("a call on a backlogged connection ended after %s with %v", time.Since(start), err)
	}
	if d := time.Since(start); d < superviseAfter+attachedSilence {
		t.Fatalf("the call ended after %s, before the connection was held long enough to be checked", d)
	}
	if _, err := p.Evaluate(ctx, "() => 3", nil); err != nil {
		t.Errorf("after the backlog cleared: %v", err)
	}
}

// Close while an attach waits on an endpoint that never answers ends the
// attach at once instead of waiting for its timeout.
func TestCloseWhileAttaching(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16) // held open, never answered
	t.Cleanup(func() {
		ln.Close()
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- c:
			default:
				c.Close()
			}
		}
	}()
	b := New(Config{BrowserURL: "http://" + ln.Addr().String()})
	errc := make(chan error, 1)
	go func() { errc <- b.Start(t.Context()) }()
	var first net.Conn
	select {
	case first = <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the attach did not connect")
	}
	defer first.Close()
	start := time.Now()
	b.Close()
	took := time.Since(start)
	err = <-errc
	t.Logf("Close during an attach took %s; Start: %v", took, err)
	if took > 5*time.Second {
		t.Fatalf("Close during an attach took %s", took)
	}
}

// A launched Chrome that leaves a check unanswered is hung only if its
// browser process did no work meanwhile: one at work (building a huge
// answer, on a starved machine) gets the window again while it works, up
// to its limit, and counts as answering once its answer comes. The Chrome
// here is frozen, so that it answers nothing until the test lets it; what
// the check reads of its process (stopped or not, its CPU time) is the
// test's, so that it can be idle, busy for ever, or busy and then answer.
func TestBusyChromeNotHung(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, Config{})
	newPageAnswers(t.Context(), t, b, "before")
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	tree := chromeTree(t, b)
	freeze(t, tree)
	anew := func(ctx context.Context) error { return b.answersAnew(ctx, l) }
	const window = 500 * time.Millisecond
	running := func() bool { return false } // never stopped: the hang path
	idle := func() time.Duration { return 0 }
	start := time.Now()
	working := func() time.Duration { return time.Since(start) } // a whole CPU
	check := func(pw procWatch, busy func(used, silent time.Duration)) error {
		return probe(l, window, anew, func() {}, busy, pw)
	}

	t.Run("idle", func(t *testing.T) {
		extended := 0
		err := check(procWatch{running, idle, time.Minute}, func(time.Duration, time.Duration) { extended++ })
		if err == nil || errors.Is(err, errStopped) || errors.Is(err, errBacklog) {
			t.Fatalf("a silent Chrome that does no work: %v", err)
		}
		if extended != 0 {
			t.Errorf("an idle Chrome was given more time %d times", extended)
		}
	})
	t.Run("busy past its limit", func(t *testing.T) {
		const limit = 4 * window
		from := time.Now()
		var extended int
		err := check(procWatch{running, working, limit}, func(time.Duration, time.Duration) { extended++ })
		if err == nil {
			t.Fatal("a Chrome silent past its limit counted as answering")
		}
		if took := time.Since(from); extended < 2 || took < limit-window {
			t.Errorf("a busy Chrome was given more time %d times and failed after %s; want at least twice, and not before %s", extended, took, limit-window)
		}
	})
	t.Run("busy, then answers", func(t *testing.T) {
		busy := make(chan time.Duration, 100)
		done := make(chan error, 1)
		go func() {
			done <- check(procWatch{running, working, time.Hour}, func(used, _ time.Duration) { busy <- used })
		}()
		for range 2 {
			select {
			case used := <-busy:
				if used < time.Duration(busyShare*float64(window)) {
					t.Errorf("more time for %s of CPU in a window of %s", used, window)
				}
			case err := <-done:
				t.Fatalf("the check of a busy Chrome ended before it was given more time twice: %v", err)
			}
		}
		resume(tree)
		if err := <-done; err != nil {
			t.Fatalf("a busy Chrome that answered in the end: %v", err)
		}
	})
	resume(tree) // also when a subtest failed before it resumed Chrome
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	newPageAnswers(ctx, t, b, "after")
}

// resume lets the processes that freeze stopped run again.
func resume(pids []int) {
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGCONT)
	}
}

// processCPU reads a process's CPU time as it grows, and -1 for none.
func TestProcessCPU(t *testing.T) {
	t.Parallel()
	before := processCPU(os.Getpid())
	if before < 0 {
		t.Fatal("no CPU time for this process")
	}
	deadline := time.Now().Add(time.Minute)
	x := 0
	for processCPU(os.Getpid()) < before+50*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("this process's CPU time stayed at %s while it spun for a minute", processCPU(os.Getpid()))
		}
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
	if got := processCPU(1 << 30); got != -1 {
		t.Errorf("no such process: %s, want -1", got)
	}
}

// In a pool, a call on no page (new_page, say) is watched on every Chrome:
// one that goes silent under it fails the call with ErrUnresponsive, as a
// call on one of its pages would, and a check at the call's end says so;
// the other Chrome is not let go of. Watched on the first Chrome only, the
// call would wait for its own end. SetCookies and SetDownloadDir reach both
// Chromes, and B, attached to again, gets the cookies set while it was
// silent, but not again those it had.
func TestSuperviseWatchesThePool(t *testing.T) {
	t.Parallel()
	urlA, _ := runningChrome(t)
	urlB, _ := runningChrome(t)
	proxy := newPauseProxy(t, strings.TrimPrefix(urlB, "http://"))
	b := New(Config{BrowserURL: urlA, Pool: []string{"http://" + proxy.ln.Addr().String()}})
	t.Cleanup(func() { b.Close() })
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	la, lb := b.members[0].launch, b.members[1].launch
	b.mu.Unlock()
	// Pages until one is on each Chrome: each goes to the one with fewer.
	var onA, onB *Page
	for onA == nil || onB == nil {
		p := newPageAnswers(t.Context(), t, b, "before")
		switch p.launch {
		case la:
			onA = p
		case lb:
			onB = p
		}
	}
	// Both Chromes get the cookies of SetCookies.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer site.Close()
	if err := b.SetCookies(t.Context(), []*network.CookieParam{{Name: "early", Value: "1", URL: site.URL}}); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*Page{"A": onA, "B": onB} {
		if err := p.Navigate(t.Context(), site.URL, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := evalString(t, p, "() => document.cookie"); got != `"early=1"` {
			t.Errorf("Chrome %s's page reads the cookies %s, want early=1", name, got)
		}
	}
	evalString(t, onB, `() => { document.cookie = "early=changed"; return 1 }`)
	// And SetDownloadDir's rule: a download on B goes where it says.
	dir := filepath.Join(t.TempDir(), "downloads")
	if err := b.SetDownloadDir(t.Context(), "", dir); err != nil {
		t.Fatal(err)
	}
	download(t, onB, downloadPage(t).URL)
	tmpcheck.WaitFile(t, filepath.Join(dir, "*escape.txt"))
	proxy.set(true)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	start := time.Now()
	w := b.Supervise(ctx)
	_, err := onB.Evaluate(ctx, "() => 2", nil) // as the work of a call on no page
	if !errors.Is(err, ErrUnresponsive) {
		t.Fatalf("a call on no page, at work on the pool's silent Chrome, ended after %s with %v", time.Since(start), err)
	}
	t.Logf("the call failed after %s: %v", time.Since(start), err)
	if err := w.Check(ctx); !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), proxy.ln.Addr().String()) {
		t.Errorf("the check at the call's end: %v; want Chrome B's ErrUnresponsive", err)
	}
	w.Stop()
	if err := la.health(); err != nil {
		t.Errorf("Chrome A after B went silent: %v", err)
	}
	if v, err := onA.Evaluate(ctx, "() => 6 * 7", nil); err != nil || string(v) != "42" {
		t.Errorf("Chrome A's page after B went silent: %s %v", v, err)
	}

	// Cookies set while B is silent go to A at once, and to B once pagemux
	// attaches to it again; the cookie B's page changed meanwhile stays
	// as the page left it.
	if err := b.SetCookies(ctx, []*network.CookieParam{{Name: "late", Value: "1", URL: site.URL}}); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, onA, "() => document.cookie"); got != `"early=1; late=1"` {
		t.Errorf("Chrome A's page reads %s, want early=1; late=1", got)
	}
	proxy.set(false)
	// Each Start tries B again in the background; new pages go to it once
	// it is up, as it has fewer.
	var again *Page
	for deadline := time.Now().Add(time.Minute); again == nil || again.launch == la; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Chrome B was not attached to again a minute after it answered")
		}
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		l := b.members[1].launch
		b.mu.Unlock()
		if l != lb && l.ready() && l.unresponsiveErr() == nil {
			again = newPageAnswers(ctx, t, b, "after B came back")
		}
	}
	if err := again.Navigate(ctx, site.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, again, "() => document.cookie"); got != `"early=changed; late=1"` {
		t.Errorf("Chrome B's page after the reattach reads %s, want early=changed; late=1", got)
	}
}
