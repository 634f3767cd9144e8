package browser

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pagemux/pagemux/cdppipe"
)

// pagemux talks to the Chrome it launches over a pipe, and Chrome opens no
// DevTools port: a port on loopback can be reached by every page the browser
// loads (a tab on http://127.0.0.1:PORT/json/list, then the websocket), and
// whoever reaches it owns the browser. A second DevTools client, such as
// Lighthouse, connects to pagemux's own bridge instead (cdppipe.Bridge),
// which a cdppipe.Mux joins to the pipe.

// devToolsPortFile is the file in which a Chrome with a debugging port
// writes it. pagemux's Chrome has none; a kept profile can hold one from an
// older run.
const devToolsPortFile = "DevToolsActivePort"

// prepareCommand removes a port file that an earlier Chrome left in the
// profile, puts a cdppipe.Mux between chromedp and Chrome (nil, with an error
// logged, where it cannot), sets Chrome's process options
// (setProcessOptions), and returns the profile directory. chromedp calls it
// just before it starts Chrome. It adds no debugging port. maxMessage is
// the mux's bound on one message (Config.MaxMessage); cbor has Chrome speak
// CBOR on its pipe (not Config.PipeJSON).
func prepareCommand(cmd *exec.Cmd, log *slog.Logger, maxMessage int, cbor bool) (profileDir string, mux *cdppipe.Mux) {
	for _, a := range cmd.Args {
		if v, ok := strings.CutPrefix(a, "--user-data-dir="); ok {
			profileDir = v
		}
	}
	if profileDir != "" {
		_ = os.Remove(filepath.Join(profileDir, devToolsPortFile))
	}
	mux, err := cdppipe.Interpose(cmd, cdppipe.Options{Logger: log, MaxMessage: maxMessage, CBOR: cbor})
	if err != nil {
		log.Error("devtools pipe: no second connection to chrome (lighthouse and the streamed snapshot need one)", "error", err)
	}
	setProcessOptions(cmd)
	return profileDir, mux
}

// DevToolsURL returns the address another DevTools client connects to this
// browser with: for a Chrome that pagemux launched, its bridge
// (ws://127.0.0.1:PORT/devtools/browser/ID, a new unguessable ID for each
// launch, started on the first call); for an attached one, the --browser-url
// or --ws-endpoint it was given (in a pool, the first; a page's own is
// Page.DevToolsURL). It starts Chrome if needed. Each client on
// the bridge has a browser session of its own; it does not check that an
// attached Chrome still answers.
func (b *Browser) DevToolsURL(ctx context.Context) (string, error) {
	if err := b.Start(ctx); err != nil {
		return "", err
	}
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	return b.endpoint(l)
}

// endpoint is the DevTools address of launch l: the one attached to, or
// its bridge.
func (b *Browser) endpoint(l *launch) (string, error) {
	if b.cfg.Attaches() {
		return checkAttachURL(l.url)
	}
	br, err := l.devToolsBridge()
	if err != nil {
		return "", err
	}
	return br.URL(), nil
}

// devToolsBridge returns l's bridge, starting it on the first call; it
// stops when Chrome's pipe closes.
func (l *launch) devToolsBridge() (*cdppipe.Bridge, error) {
	l.bridgeMu.Lock()
	defer l.bridgeMu.Unlock()
	if l.bridge != nil {
		return l.bridge, nil
	}
	if l.mux == nil {
		return nil, errNoMux
	}
	br, err := cdppipe.StartBridge(l.mux)
	if err != nil {
		return nil, err
	}
	l.bridge = br
	return br, nil
}

// OwnEndpoints returns the host:port addresses that pagemux's browser side
// serves or attaches to now: the DevTools bridge of a launched Chrome
// (127.0.0.1:PORT, once started: see DevToolsURL), or the host:port of an
// attached Chrome, whose port every page of that Chrome can reach. Pages
// must not be sent there. It does not start Chrome, and it does not list
// pagemux's own MCP listener.
func (b *Browser) OwnEndpoints() []string {
	if b.cfg.Attaches() {
		var hosts []string
		for _, m := range b.members {
			if h := HostPort(m.url); h != "" {
				hosts = append(hosts, h)
			}
		}
		return hosts
	}
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	if l == nil {
		return nil
	}
	l.bridgeMu.Lock()
	defer l.bridgeMu.Unlock()
	if l.bridge == nil {
		return nil
	}
	return []string{l.bridge.Addr()}
}

// HostPort is the host:port of the address raw (http://HOST:PORT, ws://…),
// with its scheme's default port if it gives none; "" when raw is no
// address.
func HostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" || u.Scheme == "wss" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// DevToolsURL returns the address another DevTools client connects to the
// page's Chrome with, as Browser.DevToolsURL does for the first Chrome; in
// a pool (Config.Pool), that of the page's own. It does not start Chrome.
func (p *Page) DevToolsURL() (string, error) {
	return p.b.endpoint(p.launch)
}

// errNoMux says a launched Chrome has no second connection.
var errNoMux = errors.New("devtools endpoint: this chrome has no second devtools connection (see the log at its start); restart pagemux")
