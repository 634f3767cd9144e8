package browser

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// This file says where a page's downloads go. Left to itself Chrome saves
// them in ~/Downloads, or wherever a script given the browser's DevTools
// asks; pagemux instead sends each browser context's downloads to a directory
// its caller names (the workspace of the agent that owns the context) or
// refuses them. It does not watch downloads, nor tell agents of them.

// DownloadDirFunc names the directory the downloads of a browser context go
// to: "" for Chrome's default context (asked at each launch, ctx then carries
// no call), else the name given to InContext (asked when the context is made,
// ctx is the call that opened its first page). It returns "" to refuse the
// context's downloads.
type DownloadDirFunc func(ctx context.Context, contextName string) (dir string)

// downloadRules is the DownloadDirFunc of a Browser.
type downloadRules struct {
	mu  sync.Mutex
	dir DownloadDirFunc
	set map[cdp.BrowserContextID]bool // named contexts whose rule was sent
	// made are the directories setDownloadDir made (they did not exist);
	// Close removes those still empty, so that runs leave no trace in $TMPDIR.
	made []string
}

// OnDownloads sets where downloads go, context by context; see
// DownloadDirFunc. Set it before the first Start. Without it Chrome keeps its
// own behaviour. A missing directory is made when its rule is sent; Close
// removes those it made that are still empty, and keeps every download.
func (b *Browser) OnDownloads(fn DownloadDirFunc) {
	b.downloads.mu.Lock()
	defer b.downloads.mu.Unlock()
	b.downloads.dir = fn
}

// SetDownloadDir sends the downloads of the browser context contextID (""
// for the default context, or pagemux's own with Config.OwnContext) to dir,
// made 0700 if missing; dir "" refuses them. Chrome keeps the name the page
// suggests, in dir, or adds " (1)" when the name is taken; a name cannot
// lead out of dir. In a pool, "" is the default context of every Chrome
// that runs, and a named context is on the Chrome that made it. It does
// not follow the context across a relaunch: OnDownloads does.
func (b *Browser) SetDownloadDir(ctx context.Context, contextID cdp.BrowserContextID, dir string) error {
	if err := b.Start(ctx); err != nil {
		return err
	}
	if contextID != "" {
		l := b.contexts.launchOfID(contextID)
		for _, own := range b.launches() {
			if l == nil && own.ownContext == contextID {
				l = own
			}
		}
		if l == nil {
			return fmt.Errorf("set where downloads go: no browser context %s of pagemux's", contextID)
		}
		return b.setDownloadDir(ctx, l, contextID, dir)
	}
	var errs []error
	for _, l := range b.launches() { // cookies.go
		if l.ready() && l.unresponsiveErr() == nil {
			errs = append(errs, b.setDownloadDir(ctx, l, "", dir))
		}
	}
	return errors.Join(errs...)
}

func (b *Browser) setDownloadDir(ctx context.Context, l *launch, contextID cdp.BrowserContextID, dir string) error {
	p := cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: cmp.Or(contextID, l.ownContext)}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("the download directory %s: %w", dir, err)
		}
		if err := b.downloads.mkdir(abs); err != nil {
			return fmt.Errorf("make the download directory: %w", err)
		}
		p.Behavior, p.DownloadPath = cdpbrowser.SetDownloadBehaviorBehaviorAllow, abs
		// Browser.downloadProgress on the browser's session: a file in the
		// directory may not be done yet (Chrome removes an unfinished one
		// when it closes), and only Chrome's "completed" says it is.
		p.EventsEnabled = new(true)
	}
	cctx, cancel := context.WithTimeout(l.rootCtx, startTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if _, err := chromedp.CallBrowser(cctx, cdpbrowser.SetDownloadBehavior, p); err != nil {
		return fmt.Errorf("set where downloads go: %w", l.explainBrowser(err))
	}
	return nil
}

// defaultDownloads applies the rule of the default context to a new launch.
// An attached Chrome is the user's: its default context keeps the user's
// download settings, and only a context of pagemux's own (OwnContext) gets
// the rule.
func (b *Browser) defaultDownloads(l *launch) {
	b.downloads.mu.Lock()
	fn := b.downloads.dir
	b.downloads.mu.Unlock()
	if fn == nil || b.cfg.Attaches() && l.ownContext == "" {
		return
	}
	if err := b.setDownloadDir(l.rootCtx, l, "", fn(l.rootCtx, "")); err != nil {
		b.log.Warn("downloads of the default browser context", "error", err)
	}
}

// contextDownloads applies the rule of a named context once, when its first
// page is opened; a context whose rule could not be sent gets no page.
func (b *Browser) contextDownloads(ctx context.Context, l *launch, nc *namedContext) error {
	b.downloads.mu.Lock()
	fn := b.downloads.dir
	if fn == nil || b.downloads.set[nc.id] {
		b.downloads.mu.Unlock()
		return nil
	}
	b.downloads.mu.Unlock()
	if err := b.setDownloadDir(ctx, l, nc.id, fn(ctx, nc.name)); err != nil {
		return err
	}
	b.downloads.mu.Lock()
	defer b.downloads.mu.Unlock()
	if b.downloads.set == nil {
		b.downloads.set = map[cdp.BrowserContextID]bool{}
	}
	b.downloads.set[nc.id] = true
	return nil
}

// mkdir makes dir (0700) if it is missing, and remembers that it did.
func (r *downloadRules) mkdir(dir string) error {
	if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.made = append(r.made, dir)
	return nil
}

// removeEmpty removes the directories mkdir made that hold nothing (a
// directory with a download in it stays).
func (r *downloadRules) removeEmpty() {
	r.mu.Lock()
	made := r.made
	r.made = nil
	r.mu.Unlock()
	for _, dir := range made {
		_ = os.Remove(dir) // fails, as it should, on a directory not empty
	}
}
