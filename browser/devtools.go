package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// pagemux talks to the Chrome it launches over a pipe. A second DevTools
// client, such as Lighthouse, needs an address to connect to, so Chrome also
// serves DevTools on a port it picks itself, on the loopback interface only:
// the protocol has no authentication, so no other host may reach it. Chrome
// writes the port to DevToolsActivePort in its profile directory, where
// DevToolsURL reads it.

// devToolsFlags open the DevTools endpoint. Port 0 lets Chrome pick a free
// one. They are added to the command line behind chromedp's back (see
// prepareCommand): chromedp gives up its pipe when it sees a debugging port
// among its flags.
var devToolsFlags = []string{"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"}

// devToolsPortFile is the file in the profile directory that Chrome writes
// the port and the browser's websocket path to.
const devToolsPortFile = "DevToolsActivePort"

// devToolsWait bounds the wait for DevToolsActivePort. Chrome writes it as it
// starts listening, before it answers on the pipe, so the wait is short.
const devToolsWait = 10 * time.Second

// prepareCommand adds the DevTools flags to Chrome's command line, removes a
// port file that an earlier Chrome left in the profile, sets Chrome's
// process options (setProcessOptions), and returns the profile directory. chromedp calls it just before it starts Chrome.
func prepareCommand(cmd *exec.Cmd) (profileDir string) {
	for _, a := range cmd.Args {
		if v, ok := strings.CutPrefix(a, "--user-data-dir="); ok {
			profileDir = v
		}
	}
	if profileDir != "" {
		_ = os.Remove(filepath.Join(profileDir, devToolsPortFile))
	}
	// Before the last argument, the first page's URL.
	at := max(len(cmd.Args)-1, 1)
	cmd.Args = slices.Insert(cmd.Args, at, devToolsFlags...)
	setProcessOptions(cmd)
	return profileDir
}

// DevToolsURL returns the address another DevTools client connects to this
// browser with: for a Chrome that pagemux launched, the websocket address of
// its loopback endpoint (ws://127.0.0.1:PORT/devtools/browser/ID); for an
// attached one, the --browser-url or --ws-endpoint it was given. It starts
// Chrome if needed. It does not open the endpoint to other hosts, nor check
// that the address still answers.
func (b *Browser) DevToolsURL(ctx context.Context) (string, error) {
	if err := b.Start(ctx); err != nil {
		return "", err
	}
	b.mu.Lock()
	l := b.launch
	b.mu.Unlock()
	return b.endpoint(ctx, l)
}

// endpoint is the DevTools address of launch l: the one attached to, or the
// one Chrome wrote to its profile, read once.
func (b *Browser) endpoint(ctx context.Context, l *launch) (string, error) {
	if b.cfg.Attaches() {
		return b.cfg.attachURL()
	}
	if u, ok := l.devtools.Load().(string); ok {
		return u, nil
	}
	if l.profileDir == "" {
		return "", errors.New("devtools endpoint: chrome was started without a profile directory, so its port is unknown")
	}
	u, err := readDevToolsURL(ctx, filepath.Join(l.profileDir, devToolsPortFile), devToolsWait)
	if err != nil {
		return "", err
	}
	l.devtools.Store(u)
	return u, nil
}

// readDevToolsURL waits for Chrome to write the port file and returns the
// websocket address in it. It polls, since Chrome gives no other sign that the
// file is there; the wait is bounded by limit and ctx.
func readDevToolsURL(ctx context.Context, path string, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			if u, err := parseDevToolsPortFile(data); err == nil {
				return u, nil
			}
			// Half written: Chrome writes the port, then the path.
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("content %q", data)
			}
			return "", fmt.Errorf("devtools endpoint: chrome did not write %s within %s (%v); restart pagemux", path, limit, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// parseDevToolsPortFile reads "PORT\n/devtools/browser/ID\n".
func parseDevToolsPortFile(data []byte) (string, error) {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		return "", fmt.Errorf("want 2 lines, got %d", len(lines))
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || port <= 0 || port > 65535 {
		return "", fmt.Errorf("bad port %q", lines[0])
	}
	path := strings.TrimSpace(lines[1])
	if !strings.HasPrefix(path, "/devtools/browser/") {
		return "", fmt.Errorf("bad path %q", path)
	}
	u := url.URL{Scheme: "ws", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: path}
	return u.String(), nil
}
