package lighthouse

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/pagemux/pagemux/internal/tail"
)

// A runner.mjs process serves audits one after another, each a request line
// on its stdin: node loading Lighthouse and puppeteer costs 2-3 CPU-s and,
// on a loaded machine, many seconds, which every audit would pay again. A
// worker that finished an audit well waits for the next one, at most
// workerIdle; past it, or past workerAudits audits, it is let go (its stdin
// closed, at which it exits). One that failed, hung or was cancelled is
// killed with its process group, never reused.
const (
	workerIdle   = 30 * time.Second
	workerAudits = 20
	maxIdle      = 4 // idle workers kept per runner directory and node
)

// worker is one runner.mjs process.
type worker struct {
	cmd    *exec.Cmd
	kill   context.CancelFunc // kills the process group
	stdin  io.WriteCloser
	lines  chan line // what it writes on stdout, closed at its end
	stderr *tail.Buffer
	exited chan struct{} // closed once it was waited for; then waitErr is set
	// waitErr is how it exited.
	waitErr error
	audits  int
	idle    *time.Timer // lets it go when it waited too long; nil while in use
}

// pools are the idle workers, by runner directory and node binary.
var pools = struct {
	sync.Mutex
	idle map[string][]*worker
}{idle: map[string][]*worker{}}

func (r *Runner) poolKey() string { return r.Node + "\x00" + r.Dir }

// worker returns an idle worker of r that is still running, or starts one.
func (r *Runner) worker() (*worker, error) {
	key := r.poolKey()
	pools.Lock()
	for len(pools.idle[key]) > 0 {
		ws := pools.idle[key]
		w := ws[len(ws)-1]
		pools.idle[key] = ws[:len(ws)-1]
		if !w.idle.Stop() {
			continue // being let go
		}
		w.idle = nil
		select {
		case <-w.exited:
			continue
		default:
			pools.Unlock()
			return w, nil
		}
	}
	pools.Unlock()
	return r.startWorker()
}

func (r *Runner) startWorker() (*worker, error) {
	ctx, kill := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, r.Node, filepath.Join(r.Dir, "runner.mjs"))
	cmd.Dir = r.Dir
	w := &worker{cmd: cmd, kill: kill, lines: make(chan line, 64), stderr: &tail.Buffer{Size: 2 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		kill()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		kill()
		return nil, err
	}
	w.stdin = stdin
	inGroup(cmd)
	// The pipes close when the group dies; this bounds the wait if a stray
	// process kept them open.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		kill()
		return nil, fmt.Errorf("start %s: %w", r.Node, err)
	}
	go w.read(stdout)
	return w, nil
}

// read relays the worker's lines until its stdout ends, then waits for it.
func (w *worker) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var m line
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // not ours: a dependency that printed to stdout
		}
		w.lines <- m
	}
	// A line over maxLine ends the scan: the rest is drained unread.
	_, _ = io.Copy(io.Discard, stdout)
	close(w.lines)
	w.waitErr = w.cmd.Wait()
	w.kill()
	close(w.exited)
}

// stop kills the worker's process group and waits for it.
func (w *worker) stop() {
	w.kill()
	for range w.lines {
	}
	<-w.exited
}

// letGo ends a worker that did its audits well: at the end of its stdin it
// exits; if it has not within a few seconds, it is killed.
func (w *worker) letGo() {
	go w.end()
}

// end closes the worker's stdin and waits for it to exit, killing it if it
// has not within a few seconds.
func (w *worker) end() {
	w.stdin.Close()
	t := time.AfterFunc(10*time.Second, w.kill)
	defer t.Stop()
	for range w.lines {
	}
	<-w.exited
}

// release keeps the worker for the next audit of r, or lets it go.
func (r *Runner) release(w *worker) {
	w.audits++
	key := r.poolKey()
	pools.Lock()
	defer pools.Unlock()
	if w.audits >= workerAudits || len(pools.idle[key]) >= maxIdle {
		w.letGo()
		return
	}
	w.idle = time.AfterFunc(workerIdle, func() {
		pools.Lock()
		ws := pools.idle[key]
		for i, o := range ws {
			if o == w {
				pools.idle[key] = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		pools.Unlock()
		w.letGo()
	})
	pools.idle[key] = append(pools.idle[key], w)
}

// CloseIdle ends the runners that wait for an audit, and returns once they
// have exited. Runs in progress go on; a later Run starts a runner anew. A
// program that audits calls it before it exits, so that no node process of
// its own outlives it by the moment it takes to see its stdin end.
func CloseIdle() {
	pools.Lock()
	var idle []*worker
	for key, ws := range pools.idle {
		for _, w := range ws {
			if w.idle.Stop() { // else its timer lets it go already
				idle = append(idle, w)
			}
		}
		delete(pools.idle, key)
	}
	pools.Unlock()
	for _, w := range idle {
		w.end()
	}
}
