//go:build unix

package cdppipe

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"slices"

	"golang.org/x/sys/unix"
)

// pipeFlag is the flag that has Chrome speak DevTools on fds 3 and 4
// (chromedp adds it; pagemux asks for CBOR on it, package cdpcbor).
const pipeFlag = "remote-debugging-pipe"

// Interpose puts a Mux between chromedp and the Chrome that cmd
// starts; call it from chromedp's ModifyCmdFunc. chromedp has given cmd its
// pipe ends (ExtraFiles, Chrome's fds 3 and 4) by then; pagemux keeps
// copies of them, as the other end of chromedp's pipe, and gives Chrome a
// pipe of its own. chromedp closes its copies of the ends once Chrome
// started, as before. With opts.CBOR, Chrome is told to speak CBOR on its
// pipe (package cdpcbor). It starts the mux's goroutines, not Chrome; it
// fails, changing nothing, on a command that chromedp gave no pipe.
func Interpose(cmd *exec.Cmd, opts Options) (*Mux, error) {
	if len(cmd.ExtraFiles) != 2 || cmd.ExtraFiles[0] == nil || cmd.ExtraFiles[1] == nil {
		return nil, errors.New("chromedp gave chrome no pipe to take over")
	}
	pipeArg := slices.Index(cmd.Args, "--"+pipeFlag)
	if pipeArg < 0 {
		return nil, errors.New("chromedp gave chrome no --" + pipeFlag)
	}
	fromCDP, err := dupFile(cmd.ExtraFiles[0], "chromedp-commands")
	if err != nil {
		return nil, err
	}
	toCDP, err := dupFile(cmd.ExtraFiles[1], "chromedp-events")
	if err != nil {
		fromCDP.Close()
		return nil, err
	}
	chromeIn, toChrome, err := os.Pipe()
	if err != nil {
		fromCDP.Close()
		toCDP.Close()
		return nil, err
	}
	fromChrome, chromeOut, err := os.Pipe()
	if err != nil {
		fromCDP.Close()
		toCDP.Close()
		chromeIn.Close()
		toChrome.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{chromeIn, chromeOut}
	if opts.CBOR {
		cmd.Args[pipeArg] = "--" + pipeFlag + "=cbor"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := newMux(log, fromCDP, toCDP, toChrome, fromChrome, []*os.File{chromeIn, chromeOut}, opts.MaxMessage, opts.CBOR)
	cmd.Stdin = startSignal{m}
	return m, nil
}

// dupFile returns a copy of f's descriptor, closed on exec (no Chrome nor
// Lighthouse inherits it) and non-blocking, so that Close ends a read.
// It does not change f.
func dupFile(f *os.File, name string) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(old uintptr) { fd, dupErr = unix.FcntlInt(old, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}
