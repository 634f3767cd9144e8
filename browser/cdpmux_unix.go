//go:build unix

package browser

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"slices"

	"golang.org/x/sys/unix"
)

// interposeMux puts a cdpMux between chromedp and the Chrome that cmd
// starts. chromedp has given cmd its pipe ends (ExtraFiles, Chrome's fds 3
// and 4) by the time its ModifyCmdFunc runs; pagemux keeps copies of them,
// as the other end of chromedp's pipe, and gives Chrome a pipe of its own.
// chromedp closes its copies of the ends once Chrome started, as before.
// With cbor, Chrome is told to speak CBOR on its pipe (package cdpcbor).
func interposeMux(cmd *exec.Cmd, log *slog.Logger, maxMessage int, cbor bool) (*cdpMux, error) {
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
	if cbor {
		cmd.Args[pipeArg] = "--" + pipeFlag + "=cbor"
	}
	m := newCDPMux(log, fromCDP, toCDP, toChrome, fromChrome, []*os.File{chromeIn, chromeOut}, maxMessage, cbor)
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
