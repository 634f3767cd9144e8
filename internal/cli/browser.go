package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pagemux/pagemux/browser"
)

// BrowserFlags are the flags that say which Chrome to launch or attach to:
// the server's and `pagemux smoke`'s. Finish turns them into the config.
type BrowserFlags struct {
	cfg        *browser.Config
	isolated   *bool
	headless   bool
	viewport   string
	chromeArgs Repeated
	// browserURLs and wsEndpoints are the Chromes to attach to: one, or a
	// pool (browser.Config.Pool).
	browserURLs, wsEndpoints Repeated
}

// AddBrowserFlags adds the browser flags to fs; they fill in cfg and
// isolated once Finish has run.
func AddBrowserFlags(fs *flag.FlagSet, cfg *browser.Config, isolated *bool) *BrowserFlags {
	f := &BrowserFlags{cfg: cfg, isolated: isolated}
	fs.StringVar(&cfg.ExecPath, "executable-path", "", "the Chrome binary at `PATH` (default $CHROME_PATH, else the first of "+strings.Join(browser.ExecCandidates, ", ")+" on PATH)")
	fs.BoolVar(&f.headless, "headless", true, "run Chrome without a window")
	fs.BoolVar(isolated, "isolated", true, "use a temporary profile, removed on exit; false keeps ~/.cache/pagemux/chrome-profile")
	fs.StringVar(&cfg.UserDataDir, "user-data-dir", "", "keep Chrome's profile in `DIR` (implies --isolated=false)")
	fs.StringVar(&f.viewport, "viewport", "", "window size as `WxH`, such as 1280x720")
	fs.Var(&f.browserURLs, "browser-url", "attach to a running Chrome at `URL` (http://127.0.0.1:9222) instead of launching one; that Chrome keeps its DevTools port, which every page it loads can reach (over --http: any agent's page can take the whole browser). Repeatable: a pool of Chromes, driven as one browser (a new page goes to the one with the fewest pages)")
	fs.Var(&f.wsEndpoints, "ws-endpoint", "attach to a running Chrome at its DevTools websocket `URL` (ws://…/devtools/browser/…); repeatable, as --browser-url")
	fs.BoolVar(&cfg.AutoConnect, "auto-connect", false, "attach to the Chrome you run with remote debugging on (allowed at chrome://inspect/#remote-debugging, or started with --remote-debugging-port), found through the DevToolsActivePort file in its profile: --user-data-dir, else the default profile of --channel (Linux: ~/.config/google-chrome, then ~/.config/chromium). pagemux then drives your Chrome, its profile and logged-in sessions, and leaves it running")
	fs.StringVar(&cfg.Channel, "channel", "", "with --auto-connect, the Chrome `CHANNEL` whose default profile to look in: stable (the default), beta, dev or canary; it does not choose the Chrome pagemux launches (--executable-path does)")
	fs.BoolVar(&cfg.OwnContext, "own-context", false, "with one --browser-url or --ws-endpoint: work in a browser context of pagemux's own in that Chrome, listing and driving only the tabs opened there, with cookies, storage and downloads of its own; Chrome disposes of it, closing its tabs, when pagemux exits. Several pagemux processes can so share one Chrome without seeing each other's pages (a performance trace still records the whole Chrome)")
	fs.IntVar(&cfg.RendererProcessLimit, "renderer-process-limit", 0, "cap Chrome's renderer processes at `N` (0: Chrome's default)")
	fs.BoolVar(&cfg.ProcessPerSite, "process-per-site", false, "share one renderer process between the tabs of a site")
	fs.BoolVar(&cfg.DisableSharedWorkers, "disable-shared-workers", false, "turn shared workers off")
	fs.BoolVar(&cfg.PipeJSON, "pipe-json", false, "speak JSON with a launched Chrome on its DevTools pipe instead of CBOR (CBOR spares Chrome converting big answers, a third of a big snapshot's time; this is the way back for a Chrome that does not speak it)")
	fs.StringVar(&cfg.SnapshotSource, "snapshot-source", browser.SourceAuto, "where a snapshot's tree comes from: `SOURCE` page (computed by a script in an isolated world of the page, with Chrome's own subtrees where the script cannot be sure of Chrome's rules: the same text, under half of Chrome's time on a big page), chrome (Chrome's accessibility tree, as chrome-devtools-mcp reads it) or auto (the quicker of the two for the page: chrome on a small one); a verbose snapshot is always Chrome's")
	fs.Var(&f.chromeArgs, "chrome-arg", "extra Chrome `flag`, such as --lang=de; repeatable")
	return f
}

// Finish checks the browser flags once parsed and completes the config.
func (f *BrowserFlags) Finish() error {
	f.cfg.Headful = !f.headless
	f.cfg.ChromeArgs = f.chromeArgs
	switch f.cfg.SnapshotSource {
	case browser.SourceChrome, browser.SourcePage, browser.SourceAuto:
	default:
		return fmt.Errorf("--snapshot-source %q: want auto, page or chrome", f.cfg.SnapshotSource)
	}
	if f.viewport != "" {
		w, h, ok := strings.Cut(f.viewport, "x")
		wi, err1 := strconv.Atoi(w)
		hi, err2 := strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil || wi <= 0 || hi <= 0 {
			return fmt.Errorf("--viewport %q: want WIDTHxHEIGHT, such as 1280x720", f.viewport)
		}
		f.cfg.ViewportWidth, f.cfg.ViewportHeight = wi, hi
	}
	if len(f.browserURLs) > 0 && len(f.wsEndpoints) > 0 {
		return errors.New("give --browser-url or --ws-endpoint, not both")
	}
	attach := append(slices.Clone(f.browserURLs), f.wsEndpoints...)
	if len(attach) > 0 {
		if len(f.browserURLs) > 0 {
			f.cfg.BrowserURL = attach[0]
		} else {
			f.cfg.WSEndpoint = attach[0]
		}
		f.cfg.Pool = attach[1:]
	}
	if i := duplicate(attach); i >= 0 {
		return fmt.Errorf("the browser %s is given twice: give each Chrome of a pool once", attach[i])
	}
	if !*f.isolated && f.cfg.UserDataDir == "" && !f.cfg.Attaches() && !f.cfg.AutoConnect {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("--isolated=false needs a cache directory: %w; give --user-data-dir", err)
		}
		f.cfg.UserDataDir = filepath.Join(dir, "pagemux", "chrome-profile")
	}
	// --auto-connect, or a --user-data-dir a running Chrome holds, become
	// a --ws-endpoint here (browser/autoconnect.go).
	if err := f.cfg.Connect(); err != nil {
		return err
	}
	switch {
	case f.cfg.OwnContext && !f.cfg.Attaches():
		return errors.New("--own-context is for a Chrome pagemux attaches to: give --browser-url or --ws-endpoint, or --auto-connect (a Chrome pagemux launches is its own already)")
	case f.cfg.OwnContext && len(f.cfg.Pool) > 0:
		return errors.New("--own-context takes one --browser-url or --ws-endpoint, not a pool")
	}
	return nil
}

// duplicate returns the index of the first string of ss given before, -1
// when none is.
func duplicate(ss []string) int {
	for i, s := range ss {
		if slices.Index(ss, s) < i {
			return i
		}
	}
	return -1
}
