// Package chromehost gives the tests of a package one Chrome to share: each
// browser a test makes attaches to it in a browser context of its own
// (browser.Config.OwnContext), so that it sees nothing of the others' tabs,
// cookies or storage, for the cost of a window instead of a Chrome. A
// launch and its end cost 1-1.5 CPU-s, on a machine whose 2 CPUs run every
// package's tests at once (issue 16).
//
// The host runs with the flags pagemux launches Chrome with, but speaks
// DevTools on a port of loopback, so that each browser has a websocket of
// its own to it: through one pipe and the cdpMux of a -race test binary,
// one test's flood of events held up every other browser's answers for
// seconds, and their watchdogs let go of Chrome.
//
// It is for tests only. A test that kills, freezes or restarts Chrome, or
// needs what only a Chrome pagemux launched has (its profile, its process,
// its flags, tabs that others open in its default context), launches one.
package chromehost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// Host is a Chrome started on first use; its zero value is ready.
type Host struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	dir  string        // its profile, and its TMPDIR inside
	done chan struct{} // closed when it exited
	url  string        // http://127.0.0.1:PORT
	err  error
}

// startTimeout bounds the host's start on a loaded machine.
const startTimeout = time.Minute

// URL returns the DevTools address of the host's Chrome, starting it on
// the first call, and fails t if it does not start.
func (h *Host) URL(t testing.TB) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil && h.err == nil {
		h.err = h.start()
	}
	if h.err != nil {
		t.Fatalf("the tests' Chrome did not start: %v", h.err)
	}
	return h.url
}

// Config returns the config of a browser in a context of its own on the
// host.
func (h *Host) Config(t testing.TB) browser.Config {
	t.Helper()
	return browser.Config{BrowserURL: h.URL(t), OwnContext: true}
}

// start asks a Chrome that pagemux launches for its command line, and
// starts the host with it, its DevTools pipe and profile replaced.
func (h *Host) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	probe := browser.New(browser.Config{Headful: os.Getenv("PAGEMUX_TEST_HEADFUL") != ""})
	argv, err := probe.CommandLine(ctx)
	probe.Close()
	if err != nil {
		return fmt.Errorf("ask a launched Chrome for its flags: %w", err)
	}
	if len(argv) == 0 {
		return errors.New("a launched Chrome gave no command line")
	}
	h.dir, err = os.MkdirTemp("", "chromehost-")
	if err != nil {
		return err
	}
	tmp := filepath.Join(h.dir, "tmp") // Chrome's singleton socket goes with the profile
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	args := []string{"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--user-data-dir=" + filepath.Join(h.dir, "profile")}
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "--") || strings.HasPrefix(a, "--remote-debugging-") || strings.HasPrefix(a, "--user-data-dir") {
			continue
		}
		args = append(args, a)
	}
	h.cmd = exec.Command(argv[0], append(args, "about:blank")...)
	h.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		return err
	}
	h.done = make(chan struct{})
	go func() { h.cmd.Wait(); close(h.done) }()
	port, err := h.port(ctx)
	if err != nil {
		return err
	}
	h.url = "http://127.0.0.1:" + port
	return nil
}

// port reads the port Chrome chose from its profile. It polls: Chrome
// tells no one when it wrote the file.
func (h *Host) port(ctx context.Context) (string, error) {
	file := filepath.Join(h.dir, "profile", "DevToolsActivePort")
	for {
		if f, err := os.Open(file); err == nil {
			s := bufio.NewScanner(f)
			s.Scan()
			f.Close()
			if port := strings.TrimSpace(s.Text()); port != "" {
				return port, nil
			}
		}
		select {
		case <-h.done:
			return "", errors.New("Chrome exited before it opened its DevTools port")
		case <-ctx.Done():
			return "", errors.New("Chrome wrote no DevToolsActivePort in " + startTimeout.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close ends the host's Chrome and removes its profile, once every test is
// done with it.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil && h.cmd.Process != nil {
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL) // its whole process group
		<-h.done
	}
	if h.dir != "" {
		for range 50 { // Chrome's helpers may still be writing as they go
			if os.RemoveAll(h.dir) == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
