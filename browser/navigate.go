package browser

import (
	"context"
	"errors"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// NavOption is an option of Navigate, Reload and History.
type NavOption func(*navOptions)

type navOptions struct {
	initScript   string
	beforeUnload *DialogAnswer
}

// InitScript runs src in every new document of this one navigation, before
// the document's own scripts; later navigations do not run it.
func InitScript(src string) NavOption {
	return func(o *navOptions) { o.initScript = src }
}

// HandleBeforeUnload accepts or dismisses a beforeunload dialog that the
// navigation triggers, and sets *answered when it did (answered may be nil).
// A dismissed dialog keeps the page where it is. Dialogs of other types still
// end the navigation's wait with a DialogOpenedError.
func HandleBeforeUnload(accept bool, answered *bool) NavOption {
	return func(o *navOptions) {
		o.beforeUnload = &DialogAnswer{Accept: accept, Only: page.DialogTypeBeforeunload, Answered: func(*page.EventJavascriptDialogOpening) {
			if answered != nil {
				*answered = true
			}
		}}
	}
}

// navigateWith is Act for a navigation, which may also bring back a crashed
// page. It runs the navigation with its options: the init script is
// added for it and removed after, a beforeunload dialog is answered, and
// the whole navigation, including the wait for the server's response, is
// bounded by timeout.
func (p *Page) navigateWith(ctx context.Context, timeout time.Duration, opts []NavOption, fn func(ctx context.Context) error) error {
	var o navOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := p.ready(ctx); err != nil {
		return err
	}
	ctx = context.WithValue(ctx, navigatingKey{}, true) // urlguard.go
	p.guard.mu.Lock()
	p.guard.lastBlocked = nil
	p.guard.mu.Unlock()
	if o.initScript != "" {
		remove, err := p.addInitScript(ctx, o.initScript)
		if err != nil {
			return err
		}
		defer remove()
	}
	if timeout <= 0 {
		timeout = DefaultNavigationTimeout
	}
	// settle bounds only the load after Page.navigate answers; a server that
	// is slow to answer holds Page.navigate itself, so bound it here too.
	nctx, cancel := context.WithTimeout(ctx, p.Scale(timeout))
	defer cancel()
	err := p.explainBlocked(p.act(nctx, timeout, runOpts{recover: true, answer: o.beforeUnload}, fn))
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		if st, _, _ := p.state(); !st.loading {
			return nil // loaded; only the wait for a quiet DOM was cut
		}
		return ErrNavigationTimeout
	}
	return err
}

// addInitScript adds src to the scripts that run in each new document, and
// returns a func that removes it again.
func (p *Page) addInitScript(ctx context.Context, src string) (func(), error) {
	cctx, cancel := p.Context(ctx)
	res, err := chromedp.Call(cctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
	cancel()
	if err != nil {
		return nil, p.explain(ctx, err)
	}
	return func() {
		if p.Closed() {
			return
		}
		// Also when the caller gave up: the script must not outlive this
		// navigation.
		rctx, cancel := p.Context(context.WithoutCancel(ctx))
		defer cancel()
		rctx, stop := context.WithTimeout(rctx, 5*time.Second)
		defer stop()
		_, _ = chromedp.Call(rctx, page.RemoveScriptToEvaluateOnNewDocument, page.RemoveScriptToEvaluateOnNewDocumentParams(res))
	}, nil
}
