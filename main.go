// Command pagemux is an MCP server that drives a real headless Chrome over the
// DevTools protocol, with per-page FIFO locks so that agents working on
// different tabs do not wait for each other.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/pagemux/pagemux/smoke"
	"github.com/pagemux/pagemux/tools"
)

func main() {
	// A write to a closed stdout (the client died) then fails with EPIPE,
	// which ends pagemux cleanly, instead of the runtime killing it by
	// SIGPIPE with Chrome and its profile left behind. Notify, unlike
	// Ignore, leaves SIGPIPE at its default in the processes pagemux starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), exitSignals()...)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "rules" {
		stop()
		os.Exit(runRules(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "record" {
		stop()
		os.Exit(runRecord(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "smoke" {
		code := smoke.Main(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagemux:", err)
		os.Exit(2)
	}
	if c.version {
		fmt.Println("pagemux", tools.Version)
		return
	}
	if err := run(ctx, c, os.Stdin, os.Stdout, os.Stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "pagemux:", err)
		os.Exit(1)
	}
}

// isTerminal reports whether r is a terminal: not merely a character
// device, as /dev/null is, which a service manager or a script gives as
// stdin.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return "pagemux"
	}
	return p
}

// exitSignals are the signals that stop pagemux cleanly: SIGTERM, and SIGINT
// and SIGHUP unless pagemux started with them ignored (nohup, a background
// job of a script), which catching them would undo.
func exitSignals() []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM}
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}
