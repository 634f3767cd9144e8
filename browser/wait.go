package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Timeouts of the waits after an action. Navigations get the caller's
// timeout; these bound the rest, so an action never hangs on a busy page.
const (
	// quietWindow is how long the DOM must see no mutation to count as
	// settled. Short, because every action pays it once.
	quietWindow = 50 * time.Millisecond
	// settleMax bounds the wait for a DOM that keeps changing (an animation,
	// a clock): the action then returns with the DOM as it is.
	settleMax = 2 * time.Second
	// requestWait bounds the wait for the fetch and XHR requests an action
	// sent (a long poll never ends): the action then goes on to the DOM.
	requestWait = 2 * time.Second
	// navStartGrace is how long a requested navigation may take to start
	// loading before the wait gives up on it (it may have been cancelled).
	navStartGrace = 1 * time.Second
	// fnExitWait bounds the wait for a cancelled call to return.
	fnExitWait = 10 * time.Second
	// DefaultNavigationTimeout bounds a navigation that has no timeout of its
	// own.
	DefaultNavigationTimeout = 30 * time.Second
)

// DialogOpenedError says an action opened a JavaScript dialog, which now
// blocks the page until handle_dialog answers it. The action itself may not
// have finished.
type DialogOpenedError struct {
	Dialog *page.EventJavascriptDialogOpening
}

func (e *DialogOpenedError) Error() string {
	return fmt.Sprintf("the action opened a dialog (%s: %q); call handle_dialog to accept or dismiss it", e.Dialog.Type, e.Dialog.Message)
}

// blockedError is the error of a call made while a dialog blocks the page.
func blockedError(d *page.EventJavascriptDialogOpening) error {
	return fmt.Errorf("%w (%s: %s). Call handle_dialog to accept or dismiss it first", ErrDialogOpen, d.Type, d.Message)
}

// await runs fn on the tab and returns its error, or ends early with a
// DialogOpenedError when a dialog opens meanwhile, or with the page's closed
// error. Ending early cancels fn's context and waits for fn to return, which
// does not undo what Chrome already started.
func (p *Page) await(ctx context.Context, fn func(ctx context.Context) error) error {
	return p.run(ctx, runOpts{}, fn)
}

// runOpts say how run treats dialogs and crashes.
type runOpts struct {
	answer  *DialogAnswer // answer dialogs so, instead of returning
	recover bool          // allowed on a crashed page: a navigation
}

// DialogAnswer says how to answer a dialog without asking the agent.
type DialogAnswer struct {
	Accept     bool
	PromptText string
	// Only, when set, limits the answer to dialogs of that type (such as
	// beforeunload); others end the wait as if there were no answer.
	Only page.DialogType
	// Answered, when set, is called with each dialog answered.
	Answered func(*page.EventJavascriptDialogOpening)
}

// run is await with options: it answers every dialog with o.answer, when
// set, and goes on waiting for fn; with o.recover it runs on a crashed page.
func (p *Page) run(ctx context.Context, o runOpts, fn func(ctx context.Context) error) error {
	answer := o.answer
	if err := p.usable(); err != nil && !o.recover {
		return err
	}
	cctx, cancel := p.Context(ctx)
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		errc <- fn(cctx)
	}()
	// fn writes its results into its caller's variables, so run must not
	// return while fn still runs: cancel it, and wait for it to return. Its
	// calls are bound to cctx and return at once; the bound only guards
	// against a fn that ignores its context.
	defer func() {
		cancel()
		t := time.NewTimer(fnExitWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			p.b.log.Error("a page call did not return after its context ended", "page", p.ID)
		}
	}()
	var answered *page.EventJavascriptDialogOpening // until Chrome says it closed
	for {
		if err := p.usable(); err != nil && !o.recover {
			return err
		}
		_, dlg, changed := p.state()
		if dlg != nil && (answer == nil || answer.Only != "" && dlg.Type != answer.Only) {
			return &DialogOpenedError{Dialog: dlg}
		}
		if dlg != nil && dlg != answered {
			if _, err := chromedp.Call(cctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: answer.Accept, PromptText: answer.PromptText}); err != nil {
				return p.explain(ctx, err)
			}
			answered = dlg
			if answer.Answered != nil {
				answer.Answered(dlg)
			}
		}
		select {
		case err := <-errc:
			return p.explain(ctx, err)
		case <-changed:
		case <-p.closed:
			return p.closedErr()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// explain turns the errors of a call whose tab closed, whose browser went
// away or stopped responding, or whose caller gave up into the errors the
// caller expects. A tab that Chrome detached from pagemux is closed: Chrome
// says so before it says the tab is destroyed, so the wait for that is short.
func (p *Page) explain(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case p.launch.unresponsiveErr() != nil:
		return p.closedErr()
	case p.Closed():
		return p.closedErr()
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, chromedp.ErrTargetDetached):
		if !p.awaitClosed(closeNoticeWait) {
			// The session is gone, so the page is of no more use.
			p.setWhy(ClosedOutside)
			p.b.pageGone(p)
		}
		return p.closedErr()
	case errors.Is(err, context.Canceled):
		// chromedp's error for a lost connection: Chrome went away.
		if p.awaitClosed(closeNoticeWait) {
			return p.closedErr()
		}
	}
	if msg := err.Error(); strings.Contains(msg, "Execution was terminated") {
		return &ScriptStoppedError{Detail: msg}
	}
	return err
}

// closeNoticeWait bounds the wait for the event that a tab or its browser
// went away, once a call learnt it from its own failure.
const closeNoticeWait = 2 * time.Second

// awaitClosed waits at most d for the page to go away and reports whether it
// did.
func (p *Page) awaitClosed(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.closed:
		return true
	case <-t.C:
		return false
	}
}

// Act runs an action that may start a navigation or open a dialog, then waits
// for that navigation and for the DOM to settle, so that what the caller reads
// next shows the action's result. A dialog ends the wait with a
// DialogOpenedError.
func (p *Page) Act(ctx context.Context, timeout time.Duration, fn func(ctx context.Context) error) error {
	return p.act(ctx, timeout, runOpts{}, fn)
}

func (p *Page) act(ctx context.Context, timeout time.Duration, o runOpts, fn func(ctx context.Context) error) error {
	if err := p.Ready(ctx); err != nil {
		return err
	}
	if dlg := p.Dialog(); dlg != nil {
		return blockedError(dlg)
	}
	before := p.NavMark()
	if err := p.run(ctx, o, fn); err != nil {
		return err
	}
	return p.settle(ctx, before, timeout)
}

// domWatchJS starts counting the DOM mutations of the page's document.
const domWatchJS = `() => {
  const w = {n: 0};
  w.o = new MutationObserver(r => { w.n += r.length; });
  w.o.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  Object.defineProperty(window, '__pagemuxDOMWatch', {value: w, configurable: true});
  return 0;
}`

// domChangedJS stops counting and says whether anything changed; a
// document that went away (a navigation) changed.
const domChangedJS = `() => {
  const w = window.__pagemuxDOMWatch;
  if (!w) return true;
  w.n += w.o.takeRecords().length;
  w.o.disconnect();
  delete window.__pagemuxDOMWatch;
  return w.n > 0;
}`

// WatchDOM starts noting whether the page's DOM changes, for DOMChanged.
func (p *Page) WatchDOM(ctx context.Context) error {
	if err := p.Ready(ctx); err != nil {
		return err
	}
	return p.await(ctx, func(ctx context.Context) error {
		_, err := p.callFunction(ctx, domWatchJS, "")
		return err
	})
}

// DOMChanged reports whether the DOM changed since WatchDOM, and stops
// watching. It says true when it cannot tell.
func (p *Page) DOMChanged(ctx context.Context) bool {
	if p.Ready(ctx) != nil {
		return true
	}
	var v json.RawMessage
	err := p.await(ctx, func(ctx context.Context) error {
		var err error
		v, err = p.callFunction(ctx, domChangedJS, "")
		return err
	})
	return err != nil || string(v) != "false"
}

// NavMark is where a page's navigations and requests stood at one moment,
// for Settle.
type NavMark struct {
	nav  navState
	reqs RequestMark
}

// NavMark returns where the page's navigations and requests stand now.
func (p *Page) NavMark() NavMark {
	nav, _, _ := p.state()
	return NavMark{nav, p.network.Mark()}
}

// Settle waits for a navigation started since m, then for the DOM to be
// quiet and the fetch and XHR requests sent since m to have ended (at most
// requestWait for them), as actions do (at most settleMax for each quiet
// part).
func (p *Page) Settle(ctx context.Context, m NavMark) error {
	return p.settle(ctx, m, 0)
}

// settle waits for a navigation started since before, then for a quiet DOM
// and the requests sent since before.
func (p *Page) settle(ctx context.Context, before NavMark, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultNavigationTimeout
	}
	deadline := time.Now().Add(p.Scale(timeout))
	// A fetch the action started is the action's result on its way (a
	// "load more" button): the DOM it changes is quiet until it lands. The
	// wait for requests is bounded from when it first begins, after any
	// navigation's load.
	var requestsUntil time.Time
	// Each round follows one more navigation (redirects by script), or the
	// requests' landing.
	for range 5 {
		if err := p.waitNavigation(ctx, before.nav, deadline); err != nil {
			return err
		}
		now, _, _ := p.state()
		// A renderer busy with a long script cannot run the probe: the action
		// is done, so stop waiting rather than hang with it.
		qctx, cancel := context.WithTimeout(ctx, p.Scale(settleMax)+time.Second)
		err := p.await(qctx, p.quiet)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil
		}
		after, _, _ := p.state()
		if err == nil && after.started == now.started {
			// Quiet, but a request the action sent may still be on its
			// way (Chrome's event for it may even come after the action's
			// answer): once it lands, the DOM again.
			if requestsUntil.IsZero() {
				requestsUntil = time.Now().Add(p.Scale(requestWait))
			}
			if p.network.WaitRequests(ctx, before.reqs, requestsUntil) {
				continue
			}
			return nil
		}
		if err != nil && !isNavigatedAway(err) {
			return err
		}
		before.nav = now
	}
	return nil
}

// waitNavigation waits until no main-frame navigation begun after before is
// pending.
func (p *Page) waitNavigation(ctx context.Context, before navState, deadline time.Time) error {
	grace := time.Now().Add(p.Scale(navStartGrace))
	for {
		st, dlg, changed := p.state()
		if dlg != nil {
			return &DialogOpenedError{Dialog: dlg}
		}
		requested := st.requested > before.requested && st.started == before.started
		if !st.loading && (!requested || time.Now().After(grace)) {
			return nil
		}
		until := deadline
		if !st.loading && grace.Before(until) {
			until = grace
		}
		wait := time.Until(until)
		if wait <= 0 {
			if st.loading {
				return ErrNavigationTimeout
			}
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-p.closed:
			t.Stop()
			return p.closedErr()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// quietJS resolves when the document saw no DOM mutation for quiet ms, or
// after max ms at the latest.
const quietJS = `(quiet, max) => new Promise(resolve => {
  let timer;
  const done = () => { obs.disconnect(); clearTimeout(timer); clearTimeout(cap); resolve(true); };
  const obs = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, quiet); });
  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  timer = setTimeout(done, quiet);
  const cap = setTimeout(done, max);
})`

// quiet waits until the DOM of the current document stops changing.
func (p *Page) quiet(ctx context.Context) error {
	_, err := p.callFunction(ctx, quietJS, "", p.Scale(quietWindow).Milliseconds(), p.Scale(settleMax).Milliseconds())
	return err
}

// isNavigatedAway reports an error of a script whose document went away.
func isNavigatedAway(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "Execution context was destroyed") ||
		strings.Contains(s, "Cannot find context with specified id") ||
		strings.Contains(s, "Inspected target navigated or closed") ||
		strings.Contains(s, "Promise was collected")
}

// ScriptError is an exception thrown by page script. Its message is what the
// DevTools console would print first, such as "Error: kaboom".
type ScriptError struct{ Message string }

func (e *ScriptError) Error() string { return e.Message }

func exceptionError(d *runtime.ExceptionDetails) error {
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
		if i := strings.Index(msg, "\n    at "); i >= 0 {
			msg = msg[:i]
		}
		msg = strings.TrimPrefix(msg, "Error: ")
	} else if d.Exception != nil && len(d.Exception.Value) > 0 {
		msg = "Uncaught " + string(d.Exception.Value)
	}
	return &ScriptError{Message: msg}
}
