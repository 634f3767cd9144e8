// Package lighthouse runs real Lighthouse (the npm package, pinned in
// package-lock.json beside this file) against one tab of a running Chrome.
//
// The Node side is runner.mjs in the same directory: it connects to the
// browser's DevTools endpoint with puppeteer-core, attaches to the one tab it
// is given by target id (no new tab, no other tab), runs Lighthouse there and
// writes the JSON and HTML reports. This package finds node and that
// directory, starts the runner in a process group of its own, relays its
// progress, kills the group when the caller gives up or the runner hangs,
// and reads the report. It knows nothing of MCP or of locks: callers make
// sure one audit runs at a time per browser.
//
// The directory is looked up at run time, first found wins:
//
//  1. $PAGEMUX_LIGHTHOUSE_DIR;
//  2. ../lighthouse and ./lighthouse next to the running binary (bin/pagemux
//     in a checkout finds the checkout's lighthouse/);
//  3. this package's source directory, as the build recorded it (go test,
//     go run).
//
// ./scripts/setup installs the Node dependencies (npm ci) there.
package lighthouse

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// EnvDir names the environment variable that points at the lighthouse
// directory, overriding the places searched.
const EnvDir = "PAGEMUX_LIGHTHOUSE_DIR"

// DefaultTimeout bounds one run when the Runner sets no Timeout: a page load
// (at most MaxWaitForLoad) and the audits fit well within it on two slow
// cores.
const DefaultTimeout = 3 * time.Minute

// Error is the type of the sentinel errors of this package.
type Error string

// Error satisfies the error interface.
func (e Error) Error() string { return string(e) }

const (
	// ErrNotInstalled means node, runner.mjs or Lighthouse's node_modules is
	// missing; the message names ./scripts/setup.
	ErrNotInstalled Error = "lighthouse is not installed"
	// ErrHung means the runner gave no result within the Runner's Timeout
	// and was killed.
	ErrHung Error = "lighthouse hung"
)

// Runner starts runner.mjs with node. Make one with Find. A Runner is safe
// for concurrent use, and audits of different tabs may run at once when
// none scores performance; one that does records a browser-wide trace and
// its timings suffer from another's load, so it must run alone. The Runner
// does not see to that: pagemux's audit lock does (tools.sharesAudit).
type Runner struct {
	// Dir holds runner.mjs and node_modules.
	Dir string
	// Node is the node binary.
	Node string
	// Timeout bounds a run: past it the runner's process group is killed
	// and Run fails with ErrHung. Zero means DefaultTimeout.
	Timeout time.Duration
}

// Find locates node and the lighthouse directory, and checks that
// Lighthouse is installed there. It does not run node. Its errors wrap
// ErrNotInstalled and say to run ./scripts/setup.
func Find() (*Runner, error) {
	dir, err := findDir()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "lighthouse", "package.json")); err != nil {
		return nil, fmt.Errorf("%w: no Lighthouse in %s; run ./scripts/setup (it runs npm ci there)", ErrNotInstalled, filepath.Join(dir, "node_modules"))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: Lighthouse needs Node.js and node is not on PATH; run ./scripts/setup (it installs Debian's nodejs)", ErrNotInstalled)
	}
	return &Runner{Dir: dir, Node: node}, nil
}

// findDir returns the first candidate directory that holds runner.mjs.
func findDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if !hasRunner(d) {
			return "", fmt.Errorf("%w: $%s=%s has no runner.mjs; point it at pagemux's lighthouse directory or unset it", ErrNotInstalled, EnvDir, d)
		}
		return filepath.Abs(d)
	}
	var tried []string
	for _, d := range candidateDirs() {
		if hasRunner(d) {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("%w: no runner.mjs in %s; set $%s to pagemux's lighthouse directory, or run pagemux from its checkout (./scripts/setup, then bin/pagemux)",
		ErrNotInstalled, strings.Join(tried, ", "), EnvDir)
}

func candidateDirs() []string {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		bin := filepath.Dir(exe)
		dirs = append(dirs, filepath.Join(bin, "..", "lighthouse"), filepath.Join(bin, "lighthouse"))
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Dir(file))
	}
	for i, d := range dirs {
		dirs[i] = filepath.Clean(d)
	}
	return dirs
}

func hasRunner(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "runner.mjs"))
	return err == nil && fi.Mode().IsRegular()
}

// Mode is how Lighthouse gathers.
type Mode string

const (
	// Navigation reloads the page and audits the load.
	Navigation Mode = "navigation"
	// Snapshot audits the page as it is now, without reloading it.
	Snapshot Mode = "snapshot"
)

// Request says what to audit and where the reports go.
type Request struct {
	// Endpoint is the browser's DevTools address: ws://…/devtools/browser/…
	// or http://HOST:PORT.
	Endpoint string
	// TargetID is the CDP target id of the tab to audit.
	TargetID string
	Mode     Mode
	// Device is "desktop" or "mobile": Lighthouse's screen, user agent and
	// form factor for it.
	Device string
	// Categories are Lighthouse category ids, such as "accessibility".
	Categories []string
	// JSONPath and HTMLPath are where the reports are written; their
	// directories must exist.
	JSONPath, HTMLPath string
	// MaxWaitForLoad bounds the page load in navigation mode; zero means
	// Lighthouse's 30 s.
	MaxWaitForLoad time.Duration
	// Progress, if set, is called with each status line Lighthouse logs, in
	// order, from one goroutine, while Run runs.
	Progress func(message string)
}

// request is what runner.mjs reads on stdin.
type request struct {
	Endpoint       string   `json:"endpoint"`
	TargetID       string   `json:"targetId"`
	Mode           Mode     `json:"mode"`
	Device         string   `json:"device"`
	Categories     []string `json:"categories"`
	JSONPath       string   `json:"jsonPath"`
	HTMLPath       string   `json:"htmlPath"`
	MaxWaitForLoad int64    `json:"maxWaitForLoad,omitempty"`
}

// line is one line runner.mjs writes on stdout.
type line struct {
	Progress string          `json:"progress"`
	Done     json.RawMessage `json:"done"`
	Error    string          `json:"error"`
}

// Run audits the tab and returns the report read back from JSONPath. It
// returns once the audit is over: when ctx ends or the Timeout passes, it
// kills the runner's whole process group first. The runner of an audit that
// ended well serves the next one (worker.go). It does not lock anything, and
// it does not check that the paths are safe to write.
func (r *Runner) Run(ctx context.Context, req Request) (*Report, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	in, err := json.Marshal(request{
		Endpoint: req.Endpoint, TargetID: req.TargetID, Mode: req.Mode, Device: req.Device,
		Categories: req.Categories, JSONPath: req.JSONPath, HTMLPath: req.HTMLPath,
		MaxWaitForLoad: req.MaxWaitForLoad.Milliseconds(),
	})
	if err != nil {
		return nil, err
	}
	in = append(in, '\n')
	w, err := r.worker()
	if err != nil {
		return nil, err
	}
	var writeErr error
	if _, err := w.stdin.Write(in); err != nil {
		// An idle worker that died since: a new one takes the request.
		w.stop()
		if w, err = r.startWorker(); err != nil {
			return nil, err
		}
		// A new worker that exits before it reads the request (one that
		// cannot start) may still have said why on its stdout or stderr:
		// what it wrote is read below, as for one that exits later.
		if _, writeErr = w.stdin.Write(in); writeErr != nil {
			w.kill() // it gets no request: it must not be waited on for one
		}
	}
	hung := time.NewTimer(timeout)
	defer hung.Stop()
	for {
		select {
		case <-ctx.Done():
			w.stop()
			return nil, ctx.Err()
		case <-hung.C:
			w.stop()
			return nil, fmt.Errorf("%w: no result after %s, so pagemux killed it; the page may never finish loading: reload it, or audit it with mode \"snapshot\"", ErrHung, timeout)
		case m, ok := <-w.lines:
			switch {
			case !ok:
				<-w.exited
				msg := w.stderr.String()
				if msg == "" {
					msg = "no output"
				}
				if writeErr != nil {
					return nil, fmt.Errorf("lighthouse runner exited without a result, before it read the request (%v; writing it: %w): %s", w.waitErr, writeErr, msg)
				}
				return nil, fmt.Errorf("lighthouse runner exited without a result (%v): %s", w.waitErr, msg)
			case m.Progress != "":
				if req.Progress != nil {
					req.Progress(m.Progress)
				}
			case m.Error != "":
				w.stop()
				return nil, fmt.Errorf("lighthouse failed: %s", m.Error)
			case m.Done != nil:
				r.release(w)
				data, err := os.ReadFile(req.JSONPath)
				if err != nil {
					return nil, fmt.Errorf("read the lighthouse report: %w", err)
				}
				return ParseReport(data)
			}
		}
	}
}

// maxLine bounds a line of the runner's; a longer one ends what is read of
// it.
const maxLine = 1 << 20
