// Package chromehost gives the tests of a package one Chrome to share: each
// browser a test makes attaches to it in a browser context of its own
// (browser.Config.OwnContext), so that it sees nothing of the others' tabs,
// cookies or storage, for the cost of a window instead of a Chrome. A
// launch and its end cost 1-1.5 CPU-s, on a machine whose 2 CPUs run every
// package's tests at once (issue 16).
//
// It is for tests only. A test that kills, freezes or restarts Chrome, or
// needs what only a Chrome pagemux launched has (its profile, its process,
// its flags, tabs that others open in its default context), launches one.
package chromehost

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// Host is a Chrome started on first use; its zero value is ready.
type Host struct {
	mu  sync.Mutex
	b   *browser.Browser
	url string // its DevTools bridge
	err error
}

// URL returns the websocket address of the host's Chrome, starting it on
// the first call, and fails t if it does not start.
func (h *Host) URL(t testing.TB) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.b == nil {
		h.b = browser.New(browser.Config{Logger: logger(), Headful: os.Getenv("PAGEMUX_TEST_HEADFUL") != ""})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		h.url, h.err = h.b.DevToolsURL(ctx)
		cancel()
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
	return browser.Config{WSEndpoint: h.URL(t), OwnContext: true}
}

// Close closes the host's Chrome, once every test is done with it.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.b != nil {
		h.b.Close()
	}
}

// logger writes the host's log to stderr when PAGEMUX_TEST_LOG asks for it.
func logger() *slog.Logger {
	if os.Getenv("PAGEMUX_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
