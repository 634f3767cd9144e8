package browser

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/chromedp/chromedp"
	"github.com/pagemux/pagemux/cdppipe"
	"github.com/pagemux/pagemux/internal/tail"
)

// Config says which Chrome to launch, or which running one to attach to.
// The zero value launches a headless Chrome found on PATH with a temporary
// profile.
type Config struct {
	// ExecPath is the Chrome binary. Empty means $CHROME_PATH, else the first
	// of ExecCandidates found on PATH.
	ExecPath string
	// Headful shows a window; the default is headless.
	Headful bool
	// UserDataDir keeps the profile there. Empty means a temporary profile,
	// removed when the browser closes.
	UserDataDir string
	// ViewportWidth and ViewportHeight set the window size when both are set.
	ViewportWidth, ViewportHeight int

	// BrowserURL (http://127.0.0.1:9222) or WSEndpoint (ws://…) attach to a
	// running Chrome instead of launching one. pagemux never closes a browser
	// that it did not start.
	BrowserURL, WSEndpoint string
	// Pool adds running Chromes to attach to besides BrowserURL or
	// WSEndpoint, each an http://HOST:PORT or ws://… address: pagemux then
	// drives them all as one browser, a pool, whose pages share one list,
	// one id counter and one selection; a new page goes to the Chrome with
	// the fewest pages (NewPage), and one that dies takes only its own
	// pages with it.
	Pool []string
	// OwnContext keeps pagemux to a browser context of its own in the
	// Chrome it attaches to (BrowserURL or WSEndpoint, not a Pool): it opens
	// its pages there, lists and drives only those and the tabs they open,
	// keeps their cookies, storage and downloads apart from the others',
	// and Chrome disposes of the context, closing its tabs, when pagemux
	// detaches or its connection drops. Several pagemux processes can so
	// share one Chrome, each seeing none of the others' pages, for the cost
	// of a window instead of a Chrome each.
	OwnContext bool
	// AutoConnect attaches to the Chrome the user runs with remote
	// debugging on, found through the DevToolsActivePort file in its
	// profile: UserDataDir, or else the default profile of Channel (see
	// autoconnect.go). Connect reads it into WSEndpoint; nothing else reads
	// AutoConnect.
	AutoConnect bool
	// Channel is the Chrome channel whose default profile AutoConnect looks
	// in: ChannelStable ("" too), ChannelBeta, ChannelDev or ChannelCanary.
	// It does not choose the Chrome that pagemux launches (ExecPath does).
	Channel string
	// Profile is where Connect found WSEndpoint: the profile of the
	// running Chrome attached to; nil when pagemux launches Chrome or was
	// given its address.
	Profile *ProfileAttach

	// MaxMessage bounds one message from a launched Chrome (0:
	// cdppipe.DefaultMaxMessage); see cdppipe.DefaultMaxMessage for what
	// happens past it.
	// An attached Chrome's websocket is not bounded here.
	MaxMessage int
	// PipeJSON has a launched Chrome speak JSON on its DevTools pipe, as
	// chromedp asks, instead of CBOR. CBOR is the default: Chrome's browser
	// process then passes its renderers' messages on as they are instead
	// of converting each to JSON, which takes a third of a big answer's
	// time (a snapshot's tree); pagemux converts them itself (package cdpcbor).
	PipeJSON bool
	// SnapshotSource is where a non-verbose snapshot's tree comes from:
	// SourcePage computes it in the page, in under half of Chrome's time on
	// a big page, with Chrome's own subtrees where the page's script cannot
	// be sure of Chrome's rules, so that the text is Chrome's; SourceChrome
	// is Chrome's accessibility tree, as chrome-devtools-mcp shows it;
	// SourceAuto (the default, also for "") takes the quicker of the two for
	// the page. A verbose snapshot is always Chrome's.
	SnapshotSource string

	// RendererProcessLimit caps the renderer processes (0: Chrome's default).
	RendererProcessLimit int
	// ProcessPerSite shares one renderer between the tabs of a site.
	ProcessPerSite bool
	// DisableSharedWorkers turns shared workers off.
	DisableSharedWorkers bool
	// Tabs opens pages as tabs of one window instead of a window each, and
	// keeps every page it attaches to visible and focused with DevTools'
	// focus emulation, as a tab at the front is (a tab behind another is
	// otherwise hidden: no animation frames, visibilityState "hidden").
	// Chrome makes a tab in a fraction of a window's time, but a window's
	// size is shared by its tabs: resize_page resizes them all, and a
	// capture waits for its tab to be brought to the front (HoldFront).
	// Pages in a named context still get a window each, as a new context
	// has none to put a tab in.
	Tabs bool
	// ChromeArgs are extra command-line flags, such as "--lang=de".
	ChromeArgs []string

	// Logger receives what Chrome and pagemux have to say; nil discards it.
	Logger *slog.Logger
}

// ExecCandidates are the names looked up on PATH when no path is given.
var ExecCandidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Attaches reports whether the config attaches to a running browser.
func (c Config) Attaches() bool { return c.BrowserURL != "" || c.WSEndpoint != "" || len(c.Pool) > 0 }

// Local reports whether Chrome runs on this machine, so that its wall
// clock is this one's: pagemux launches it, or every address it attaches
// to is on loopback.
func (c Config) Local() bool {
	for _, raw := range c.attachURLs() {
		if raw == "" {
			continue // the one pagemux launches
		}
		u, err := url.Parse(raw)
		if err != nil {
			return false
		}
		host := u.Hostname()
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}

// attachURLs are the addresses of the Chromes to attach to, unchecked (see
// checkAttachURL), in the order given; one "" for a Chrome to launch.
func (c Config) attachURLs() []string {
	if !c.Attaches() {
		return []string{""}
	}
	var urls []string
	if first := cmp.Or(c.WSEndpoint, c.BrowserURL); first != "" {
		urls = append(urls, first)
	}
	return append(urls, c.Pool...)
}

// ResolveExecPath returns the Chrome binary to launch. It does not check that
// the binary runs; Start does.
func (c Config) ResolveExecPath() (string, error) {
	if c.ExecPath != "" {
		return c.ExecPath, nil
	}
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p, nil
	}
	for _, name := range ExecCandidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no Chrome found: looked for %s on PATH and $CHROME_PATH is unset; "+
		"install one (Debian: apt-get install -y chromium, or run ./scripts/setup) or pass --executable-path",
		ErrStart, strings.Join(ExecCandidates, ", "))
}

// chromeFlag is one command-line flag, value nil for a bare switch.
type chromeFlag struct {
	name  string
	value any
}

// flags returns the pagemux flags beyond chromedp's defaults, in the order
// they are given to Chrome.
func (c Config) flags() ([]chromeFlag, error) {
	fs := []chromeFlag{
		// Without these Chrome keeps trying hosts that a sandbox cannot reach.
		{"disable-component-update", true},
		{"disable-domain-reliability", true},
		{"disable-quic", true},
		{"no-default-browser-check", true},
		{"hide-scrollbars", true},
		{"mute-audio", true},
		// As chrome-devtools-mcp: no "restore pages?" bubble over the page.
		{"hide-crash-restore-bubble", true},
	}
	if c.Headful {
		fs = append(fs, chromeFlag{"headless", false})
	}
	if c.RendererProcessLimit > 0 {
		fs = append(fs, chromeFlag{"renderer-process-limit", strconv.Itoa(c.RendererProcessLimit)})
	}
	if c.ProcessPerSite {
		fs = append(fs, chromeFlag{"process-per-site", true})
	}
	if c.DisableSharedWorkers {
		fs = append(fs, chromeFlag{"disable-shared-workers", true})
	}
	if c.ViewportWidth > 0 && c.ViewportHeight > 0 {
		fs = append(fs, chromeFlag{"window-size", fmt.Sprintf("%d,%d", c.ViewportWidth, c.ViewportHeight)})
	}
	if !c.Headful {
		// chrome-devtools-mcp's screen: headless Chrome's own is 800x600, and
		// windows sized from it (780x437 inside) hide the navigation of
		// responsive sites. New windows then get 1905x2053 inside.
		fs = append(fs, chromeFlag{"screen-info", "{" + headlessScreen + "}"})
	}
	disabled := slices.Clone(chromedpDisabledFeatures)
	if !c.Headful {
		disabled = append(disabled, headlessDisabledFeatures...)
	}
	for _, a := range c.ChromeArgs {
		f, err := parseChromeArg(a)
		if err != nil {
			return nil, err
		}
		if v, ok := f.value.(string); ok && f.name == "disable-features" {
			// Chrome reads only the last --disable-features, and chromedp
			// keeps one flag per name: merge, so that no list is lost.
			disabled = append(disabled, strings.Split(v, ",")...)
			continue
		}
		fs = append(fs, f)
	}
	fs = append(fs, chromeFlag{"disable-features", strings.Join(compactFeatures(disabled), ",")})
	return fs, nil
}

// chromedpDisabledFeatures are the features chromedp's default flags turn
// off; the --disable-features that pagemux gives replaces chromedp's, so it
// names them again.
var chromedpDisabledFeatures = []string{"Translate", "BlinkGenPropertyTrees"}

// headlessDisabledFeatures are turned off in headless Chrome, where no one
// can see them. Each window otherwise loads two WebUI pages for its address
// bar's popup (chrome://omnibox-popup.top-chrome/) in Chrome's WebUI
// renderer: opening 16 windows at once took 1.45 s with them and 0.72 s without
// (2026-12-01, 2 CPUs), and 16 pages checked at once cost 3.7 CPU-s of Chrome
// instead of 7.4.
var headlessDisabledFeatures = []string{"WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup"}

// compactFeatures drops empty and repeated names, keeping the first of each.
func compactFeatures(names []string) []string {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// parseChromeArg turns "--name=value" or "--name" into a flag.
func parseChromeArg(a string) (chromeFlag, error) {
	s, ok := strings.CutPrefix(a, "--")
	if !ok || s == "" || strings.HasPrefix(s, "remote-debugging-") {
		return chromeFlag{}, fmt.Errorf("--chrome-arg %q: want --name or --name=value, and not a remote-debugging flag (pagemux owns the DevTools connection)", a)
	}
	if name, value, ok := strings.Cut(s, "="); ok {
		return chromeFlag{name, value}, nil
	}
	return chromeFlag{s, true}, nil
}

// allocatorOptions builds the chromedp options that launch Chrome with the
// profile in tempProfile (a temporary profile pagemux made, see profile.go),
// or in UserDataDir when tempProfile is "". Chrome speaks DevTools over
// chromedp's pipe only, with a cdppipe.Mux in the middle (see devtools.go);
// started is told the profile directory and the mux just before Chrome
// starts. Chrome runs in a process group of its own and dies with pagemux
// (Linux).
func (c Config) allocatorOptions(out *tail.Buffer, tempProfile string, log *slog.Logger, started func(profileDir string, mux *cdppipe.Mux)) ([]chromedp.ExecAllocatorOption, error) {
	path, err := c.ResolveExecPath()
	if err != nil {
		return nil, err
	}
	fs, err := c.flags()
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.CombinedOutput(out),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) { started(prepareCommand(cmd, log, c.MaxMessage, !c.PipeJSON)) }))
	for _, f := range fs {
		opts = append(opts, chromedp.Flag(f.name, f.value))
	}
	switch {
	case tempProfile != "":
		opts = append(opts, chromedp.UserDataDir(tempProfile))
		if tmp := chromeTempDir(tempProfile); tmp != "" {
			// Chrome's singleton socket directory then goes with the profile.
			opts = append(opts, chromedp.Env("TMPDIR="+tmp))
		}
	case c.UserDataDir != "":
		opts = append(opts, chromedp.UserDataDir(c.UserDataDir))
	}
	if os.Getuid() == 0 {
		// Chrome refuses to run as root with its sandbox on.
		opts = append(opts, chromedp.NoSandbox)
		if c.Logger != nil {
			c.Logger.Warn("running as root: Chrome starts with --no-sandbox; run pagemux as a normal user to keep Chrome's sandbox")
		}
	}
	return opts, nil
}

// attachURL returns the address of the first Chrome to attach to, checked.
func (c Config) attachURL() (string, error) {
	return checkAttachURL(c.attachURLs()[0])
}

// checkAttachURL returns u if it is an address to attach to: a websocket
// ws://… or Chrome's http://HOST:PORT.
func checkAttachURL(u string) (string, error) {
	if strings.HasPrefix(u, "ws://") || strings.HasPrefix(u, "wss://") {
		return u, nil
	}
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u, nil
	}
	if strings.Contains(u, "/devtools/browser/") {
		return "", fmt.Errorf("--ws-endpoint %q: want ws://HOST:PORT/devtools/browser/ID", u)
	}
	return "", fmt.Errorf("--browser-url %q: want http://HOST:PORT, as Chrome's --remote-debugging-port serves it", u)
}

// headlessScreen is the screen a headless Chrome gets, as chrome-devtools-mcp
// gives it.
const headlessScreen = "3840x2160"
