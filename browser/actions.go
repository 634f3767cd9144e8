package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// NavigationError is a navigation that Chrome refused or that failed to load,
// such as net::ERR_CONNECTION_REFUSED.
type NavigationError struct {
	URL  string
	Text string
}

func (e *NavigationError) Error() string {
	return fmt.Sprintf("navigating to %s failed: %s", e.URL, e.Text)
}

// Navigate loads url in the main frame and waits for it to load and settle,
// within timeout from the start.
func (p *Page) Navigate(ctx context.Context, url string, timeout time.Duration, opts ...NavOption) error {
	if err := p.refuseTarget(url); err != nil {
		return err
	}
	return p.navigateWith(ctx, timeout, opts, func(ctx context.Context) error {
		res, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: url})
		if err != nil {
			if strings.Contains(err.Error(), "invalid URL") {
				return &NavigationError{URL: url, Text: "not a valid URL; give an absolute URL such as https://example.com/"}
			}
			return err
		}
		if res.ErrorText != "" {
			return &NavigationError{URL: url, Text: res.ErrorText}
		}
		return nil
	})
}

// Reload reloads the page and waits for it to load and settle.
func (p *Page) Reload(ctx context.Context, ignoreCache bool, timeout time.Duration, opts ...NavOption) error {
	if err := p.refuseTarget(p.URL()); err != nil {
		return err
	}
	return p.navigateWith(ctx, timeout, opts, func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, page.Reload, page.ReloadParams{IgnoreCache: new(ignoreCache)})
		return err
	})
}

// History goes delta entries back (-1) or forward (+1) in the session history
// and waits for the page to load and settle.
func (p *Page) History(ctx context.Context, delta int, timeout time.Duration, opts ...NavOption) error {
	if err := p.ready(ctx); err != nil {
		return err
	}
	cctx, cancel := p.Context(ctx)
	h, err := chromedp.Call(cctx, page.GetNavigationHistory, cdp.Empty{})
	cancel()
	if err != nil {
		return p.explain(ctx, err)
	}
	i := int(h.CurrentIndex) + delta
	if i < 0 || i >= len(h.Entries) {
		dir := "back"
		if delta > 0 {
			dir = "forward"
		}
		return fmt.Errorf("cannot navigate %s: no %s entry in the page's history", dir, map[bool]string{true: "next", false: "previous"}[delta > 0])
	}
	if err := p.refuseTarget(h.Entries[i].URL); err != nil {
		return err
	}
	return p.navigateWith(ctx, timeout, opts, func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[i].ID})
		return err
	})
}

// Evaluate calls a JavaScript function declaration, such as
// "() => document.title", with the elements of uids as its arguments, awaits
// a promise it returns, and returns the JSON of the value. An exception is a
// *ScriptError; a script that Chrome terminated is a *ScriptStoppedError. A
// call that gives up stops its own script, never another call's on a page
// that shares the renderer (scriptstop.go), and fails with an
// *AbandonedScriptError that says what became of it. It does not settle the
// page: the caller decides.
func (p *Page) Evaluate(ctx context.Context, function string, answer *DialogAnswer, uids ...string) (json.RawMessage, error) {
	function = strings.TrimRight(strings.TrimSpace(function), ";")
	return p.evaluateRun(ctx, answer, func(ctx context.Context, run *scriptRun) (json.RawMessage, error) {
		if len(uids) > 0 {
			return p.callWithElements(ctx, run.declaration(function), uids)
		}
		return evaluate(ctx, run.expression(function))
	})
}

// EvaluateClassic runs source as a classic script, not a function, and
// returns the JSON of its completion value (the value of its last
// expression statement), awaiting it if it is a promise. Errors are those
// of Evaluate. Its top-level let, const and class declarations stay in the
// script, as in a block.
//
// With onValue set (a function declaration), a value that is an object
// does not cross as it is: onValue is called with it as this, in the page,
// and its result comes back instead, so that it can cut a huge value
// before it crosses CDP. Chrome sends a primitive (a string) along with
// the completion value itself, whatever is asked, so onValue never sees
// one.
func (p *Page) EvaluateClassic(ctx context.Context, source string, answer *DialogAnswer, onValue string) (json.RawMessage, error) {
	return p.evaluateRun(ctx, answer, func(ctx context.Context, run *scriptRun) (json.RawMessage, error) {
		if onValue == "" {
			return evaluate(ctx, run.script(source))
		}
		res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
			Expression:   run.script(source),
			AwaitPromise: new(true),
			UserGesture:  new(true),
			ObjectGroup:  classicGroup,
		})
		if err != nil {
			return nil, err
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			_, _ = chromedp.Call(rctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: classicGroup})
		}()
		if res.ExceptionDetails != nil {
			return nil, exceptionError(res.ExceptionDetails)
		}
		if res.Result.ObjectID == "" {
			return remoteValue(res.Result), nil
		}
		return callOn(ctx, onValue, res.Result.ObjectID, nil)
	})
}

// classicGroup holds the completion value of a classic script until
// EvaluateClassic has called onValue on it.
const classicGroup = "pagemux-classic"

// evaluateRun runs one script of evaluate_script: it stops the script if the
// call gives up, and says so when Chrome terminated it.
func (p *Page) evaluateRun(ctx context.Context, answer *DialogAnswer, body func(context.Context, *scriptRun) (json.RawMessage, error)) (json.RawMessage, error) {
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	run := p.newScriptRun(ctx)
	var out json.RawMessage
	err := p.run(ctx, runOpts{answer: answer}, func(ctx context.Context) error {
		v, err := body(ctx, run)
		out = v
		return err
	})
	if fate := p.endScript(run, err != nil && ctx.Err() != nil && !p.Closed()); fate != 0 {
		return nil, &AbandonedScriptError{Page: p.ID, Fate: fate, err: err}
	}
	var cerr *cdproto.Error
	if errors.As(err, &cerr) && cerr.Code == -32603 && ctx.Err() == nil {
		// What Chrome answers for a script whose execution was terminated.
		return nil, &ScriptStoppedError{Detail: fmt.Sprintf("it answered %q (%d) before the script returned", cerr.Message, cerr.Code)}
	}
	return out, err
}

// callWithElements calls function with the elements of uids as arguments.
// It runs in the world of the first element, so every element must be in the
// same document.
func (p *Page) callWithElements(ctx context.Context, function string, uids []string) (json.RawMessage, error) {
	args := make([]*runtime.CallArgument, len(uids))
	var first runtime.RemoteObjectID
	for i, uid := range uids {
		el, err := p.resolve(ctx, uid)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first, ctx = el.object, el.on(ctx)
		}
		args[i] = &runtime.CallArgument{ObjectID: el.object}
	}
	// Compiled in the global scope: an arrow function sees the window as
	// this, as it does when called without elements.
	v, err := callOn(ctx, function, first, args)
	if err != nil && strings.Contains(err.Error(), "same JavaScript world") {
		return nil, fmt.Errorf("the elements %s are in different frames; pass elements of one frame: %w", strings.Join(uids, ", "), err)
	}
	return v, err
}

// evaluate runs a JavaScript expression in the page's main world, awaits a
// promise it gives, and returns the JSON of its value; an exception is a
// *ScriptError.
func evaluate(ctx context.Context, expression string) (json.RawMessage, error) {
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expression,
		ReturnByValue: new(true),
		AwaitPromise:  new(true),
		UserGesture:   new(true),
	})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, exceptionError(res.ExceptionDetails)
	}
	return remoteValue(res.Result), nil
}

// callOn calls the function declaration fn with this set to the object and
// with args, awaits a promise it gives, and returns the JSON of its value;
// an exception is a *ScriptError.
func callOn(ctx context.Context, fn string, object runtime.RemoteObjectID, args []*runtime.CallArgument) (json.RawMessage, error) {
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn,
		ObjectID:            object,
		Arguments:           args,
		ReturnByValue:       new(true),
		AwaitPromise:        new(true),
		UserGesture:         new(true),
	})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, exceptionError(res.ExceptionDetails)
	}
	return remoteValue(res.Result), nil
}

// remoteValue returns the JSON of a value returned by value; undefined and
// values JSON cannot hold come back as their description.
func remoteValue(o *runtime.RemoteObject) json.RawMessage {
	switch {
	case o == nil || o.Type == runtime.RemoteObjectTypeUndefined:
		return nil
	case len(o.Value) > 0:
		return json.RawMessage(o.Value)
	case o.UnserializableValue != "":
		b, _ := json.Marshal(string(o.UnserializableValue))
		return b
	}
	return json.RawMessage("null")
}

// callFunction calls fn with the JSON args, on the element objectID when it
// is set, else in the page's main world.
func (p *Page) callFunction(ctx context.Context, fn string, objectID runtime.RemoteObjectID, args ...any) (json.RawMessage, error) {
	parts := make([]string, len(args))
	callArgs := make([]*runtime.CallArgument, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		parts[i], callArgs[i] = string(b), &runtime.CallArgument{Value: b}
	}
	if objectID == "" {
		// One round trip: call the function in an expression.
		return evaluate(ctx, "("+fn+")("+strings.Join(parts, ",")+")")
	}
	return callOn(ctx, fn, objectID, callArgs)
}

// element is a node an agent named by uid, resolved in the current document.
type element struct {
	uid     string
	backend cdp.BackendNodeID
	object  runtime.RemoteObjectID
	// in is a call context of the session of the element's document: an
	// out-of-process frame's, whose viewport begins at frameOffset of
	// frame in the tab's (snapshot_frames.go); nil for the tab's (see on).
	in     context.Context
	frame  *frameTarget
	frames *pageFrames
}

// resolve finds the element of a uid of the current document, in any of
// its frames.
func (p *Page) resolve(ctx context.Context, uid string) (*element, error) {
	n, err := p.locateUID(ctx, uid)
	if err != nil {
		return nil, err
	}
	res, err := chromedp.Call(n.ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: n.backend})
	if err != nil || res.Object == nil {
		return nil, goneErr(uid)
	}
	el := &element{uid: uid, backend: n.backend, object: res.Object.ObjectID, frame: n.in, frames: &p.frames}
	if n.in != nil {
		el.in = n.ctx
	}
	return el, nil
}

// center scrolls the element into view and returns the middle of its first
// box in viewport coordinates. ctx is a call context of the tab.
func (e *element) center(ctx context.Context) (x, y float64, err error) {
	// Not every node can scroll (text in a hidden parent); the quads decide.
	_, _ = chromedp.Call(e.on(ctx), dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: e.backend})
	e.painted()
	q, err := e.quad(ctx)
	if err != nil {
		return 0, 0, err
	}
	return (q[0] + q[2] + q[4] + q[6]) / 4, (q[1] + q[3] + q[5] + q[7]) / 4, nil
}

// on is the context to ask Chrome about the element in: its frame's
// session, or ctx, a call context of the tab.
func (e *element) on(ctx context.Context) context.Context {
	if e.in != nil {
		return e.in
	}
	return ctx
}

// paintWait bounds painted: a frame Chrome does not render (throttled,
// hidden) never gives an animation frame.
const paintWait = 500 * time.Millisecond

// painted waits, for an element of an out-of-process frame, until the
// frame has drawn twice: Chrome routes the mouse to such a frame by what it
// last drew, and a frame just loaded or scrolled into view may not have
// drawn yet, so that the event would go to the page around it.
func (e *element) painted() {
	if e.frame == nil {
		return
	}
	wctx, cancel := context.WithTimeout(e.in, paintWait)
	defer cancel()
	_, _ = chromedp.Call(wctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: `function() { return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); }`,
		ObjectID:            e.object, AwaitPromise: new(true),
	})
}

// quad is the element's first content quad in the tab's viewport.
func (e *element) quad(ctx context.Context) ([]float64, error) {
	res, err := chromedp.Call(e.on(ctx), dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: e.backend})
	if err != nil || len(res.Quads) == 0 || len(res.Quads[0]) < 8 {
		return nil, fmt.Errorf("the element with uid %s is not visible (it has no box to click); take a new snapshot or make it visible first", e.uid)
	}
	return e.toTab(ctx, res.Quads[0])
}

// toTab moves the points of q, in the viewport of the element's frame, to
// the tab's viewport.
func (e *element) toTab(ctx context.Context, q []float64) ([]float64, error) {
	if e.frame == nil {
		return q, nil
	}
	dx, dy, err := e.frames.frameOffset(ctx, e.frame)
	if err != nil {
		return nil, fmt.Errorf("the element with uid %s is in a frame that went away or is hidden; take a new snapshot: %w", e.uid, err)
	}
	out := make([]float64, len(q))
	for i := range q {
		out[i] = q[i] + dx
		if i%2 == 1 {
			out[i] = q[i] + dy
		}
	}
	return out, nil
}

// Input is a page's input: clicks, hovers, keys, typing, form filling,
// drags and file uploads, by snapshot uid or by CSS selector, each as a
// user's events (CDP Input), waiting for the element to be actionable.
// Take it with Page.Input; call it holding the page's lock.
type Input struct{ p *Page }

// Input returns the page's input.
func (p *Page) Input() Input { return Input{p} }

// Click clicks the element of uid in its middle, twice for a double click,
// then waits for the page to settle.
func (in Input) Click(ctx context.Context, uid string, double bool) error {
	p := in.p
	return p.Act(ctx, 0, func(ctx context.Context) error {
		el, err := p.resolve(ctx, uid)
		if err != nil {
			return err
		}
		clicks := 1
		if double {
			clicks = 2
		}
		return el.click(ctx, clicks)
	})
}

// click moves the mouse to the middle of the element and clicks it with the
// left button, clicks times.
func (e *element) click(ctx context.Context, clicks int) error {
	x, y, err := e.center(ctx)
	if err != nil {
		return err
	}
	if err := mouse(ctx, input.DispatchMouseEventTypeMouseMoved, x, y, 0); err != nil {
		return err
	}
	for n := 1; n <= clicks; n++ {
		if err := mouse(ctx, input.DispatchMouseEventTypeMousePressed, x, y, n); err != nil {
			return err
		}
		if err := mouse(ctx, input.DispatchMouseEventTypeMouseReleased, x, y, n); err != nil {
			return err
		}
	}
	return nil
}

func mouse(ctx context.Context, typ input.DispatchMouseEventType, x, y float64, clicks int) error {
	params := input.DispatchMouseEventParams{Type: typ, X: x, Y: y}
	if typ != input.DispatchMouseEventTypeMouseMoved {
		params.Button = input.MouseButtonLeft
		params.ClickCount = int64(clicks)
		if typ == input.DispatchMouseEventTypeMousePressed {
			params.Buttons = 1
		}
	}
	_, err := chromedp.Call(ctx, input.DispatchMouseEvent, params)
	return err
}

// Hover moves the mouse over the middle of the element of uid.
func (in Input) Hover(ctx context.Context, uid string) error {
	p := in.p
	return p.Act(ctx, 0, func(ctx context.Context) error {
		el, err := p.resolve(ctx, uid)
		if err != nil {
			return err
		}
		x, y, err := el.center(ctx)
		if err != nil {
			return err
		}
		return mouse(ctx, input.DispatchMouseEventTypeMouseMoved, x, y, 0)
	})
}

// prepareFillJS sets a select's option, or a value that typing cannot enter,
// directly; for text it focuses the field and selects its content, so the
// typing that follows replaces it. It returns "done" or "type".
const prepareFillJS = `function(value) {
  const el = this.nodeType === Node.ELEMENT_NODE ? this : this.parentElement;
  const fire = () => { el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); };
  if (el instanceof HTMLSelectElement) {
    const opts = [...el.options];
    const opt = opts.find(o => o.value === value) || opts.find(o => o.label.trim() === value.trim() || o.text.trim() === value.trim());
    if (!opt) throw new Error('the select has no option "' + value + '"; its options are: ' + opts.map(o => JSON.stringify(o.label || o.value)).join(', '));
    el.value = opt.value; opt.selected = true; fire();
    return 'done';
  }
  const direct = ['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range'];
  if (el instanceof HTMLInputElement && direct.includes(el.type)) {
    el.value = value; fire();
    return 'done';
  }
  if (el instanceof HTMLInputElement && (el.type === 'checkbox' || el.type === 'radio')) {
    const want = !['false', 'off', '0', 'unchecked', ''].includes(String(value).toLowerCase());
    if (el.checked !== want) el.click();
    return 'done';
  }
  if (!(el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el.isContentEditable)) {
    throw new Error('the element is a ' + el.tagName.toLowerCase() + ', not a text field, select or checkbox; fill one of those');
  }
  el.focus();
  if (el.isContentEditable) {
    const r = document.createRange(); r.selectNodeContents(el);
    const s = getSelection(); s.removeAllRanges(); s.addRange(r);
  } else {
    try { el.select(); } catch (e) { el.value = ''; }
  }
  return 'type';
}`

// Fill replaces the value of a text field, picks a select's option by value
// or label, or sets a checkbox, then waits for the page to settle.
func (in Input) Fill(ctx context.Context, uid, value string) error {
	p := in.p
	return p.Act(ctx, 0, func(ctx context.Context) error { return in.fill(ctx, uid, value) })
}

// fill is Fill without the wait for the page.
func (in Input) fill(ctx context.Context, uid, value string) error {
	p := in.p
	el, err := p.resolve(ctx, uid)
	if err != nil {
		return err
	}
	return in.fillElement(ctx, el, value)
}

// fillElement fills el as Fill does, without the wait for the page: a
// select's option or a checkbox is set in the page, text is typed in.
func (in Input) fillElement(ctx context.Context, el *element, value string) error {
	p := in.p
	how, err := p.callFunction(el.on(ctx), prepareFillJS, el.object, value)
	if err != nil || string(how) != `"type"` {
		return err
	}
	if value == "" {
		return pressKey(ctx, Key{Name: "Backspace"})
	}
	_, err = chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: value})
	return err
}

// TypeText types text into the focused element, then presses submit if
// set, and waits for the page to settle. It types key by key where the page
// listens for key events, else inserts the text in one step (keys.go); the
// Typing says which and why.
func (in Input) TypeText(ctx context.Context, text string, submit *Key) (Typing, error) {
	p := in.p
	var how Typing
	err := p.Act(ctx, 0, func(ctx context.Context) error {
		var err error
		if how, err = typeText(ctx, text); err != nil {
			return err
		}
		if submit != nil {
			return pressKey(ctx, *submit)
		}
		return nil
	})
	return how, err
}

// PressKey presses a key combination such as "Control+Shift+R" and waits for
// the page to settle.
func (in Input) PressKey(ctx context.Context, k Key) error {
	p := in.p
	return p.Act(ctx, 0, func(ctx context.Context) error { return pressKey(ctx, k) })
}

// BringToFront makes the page the front tab of its window and activates the
// window.
func (p *Page) BringToFront(ctx context.Context) error {
	if err := p.Ready(ctx); err != nil {
		return err
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	if _, err := chromedp.Call(cctx, page.BringToFront, cdp.Empty{}); err != nil {
		return fmt.Errorf("bring page %d to front: %w", p.ID, p.explain(ctx, err))
	}
	return nil
}

// HoldFront brings the page to the front of its window and keeps it there,
// against other HoldFronts, until release. With Config.Tabs, Chrome makes a
// capture of a tab behind others (a screenshot, Lighthouse's) only after
// seconds, or never, beyond the viewport: it waits for a frame that such a
// tab does not draw (2026-12-01). Without Tabs each page is the front of its
// own window, and so is a page NewPage opened in a window of its own
// (InOwnWindow, a named context): HoldFront does nothing for them.
func (p *Page) HoldFront(ctx context.Context) (release func(), err error) {
	if !p.b.cfg.Tabs || p.ownWindow.Load() {
		return func() {}, nil
	}
	if err := p.b.front.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	if err := p.BringToFront(ctx); err != nil {
		p.b.front.Release(1)
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { p.b.front.Release(1) }) }, nil
}

// HandleDialog accepts or dismisses the open dialog, typing promptText into a
// prompt, and waits for the page to settle.
func (p *Page) HandleDialog(ctx context.Context, accept bool, promptText string) (*page.EventJavascriptDialogOpening, error) {
	if err := p.Ready(ctx); err != nil {
		return nil, err
	}
	dlg := p.Dialog()
	if dlg == nil {
		return nil, ErrNoDialog
	}
	before := p.NavMark()
	cctx, cancel := p.Context(ctx)
	_, err := chromedp.Call(cctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept, PromptText: promptText})
	cancel()
	if err != nil {
		return dlg, p.explain(ctx, err)
	}
	return dlg, p.settle(ctx, before, 0)
}

// waitTextJS resolves with the first of texts that the page shows, as text or
// as an accessible label, watching DOM mutations; or with null after ms.
const waitTextJS = `(texts, ms) => new Promise(resolve => {
  const find = () => {
    const seen = [document.body ? document.body.innerText : '', document.title];
    for (const el of document.querySelectorAll('[aria-label],[title],[alt],[placeholder],input,textarea,select')) {
      for (const a of ['aria-label', 'title', 'alt', 'placeholder']) { const v = el.getAttribute(a); if (v) seen.push(v); }
      if ('value' in el && typeof el.value === 'string') seen.push(el.value);
    }
    const all = seen.join('\n');
    return texts.find(t => all.includes(t)) ?? null;
  };
  let hit = find();
  if (hit !== null) return resolve(hit);
  const done = v => { obs.disconnect(); clearInterval(poll); clearTimeout(cap); resolve(v); };
  const check = () => { const h = find(); if (h !== null) done(h); };
  const obs = new MutationObserver(check);
  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  const poll = setInterval(check, 100);
  const cap = setTimeout(() => done(null), ms);
})`

// WaitForText waits until the page shows one of texts, across navigations,
// and returns the one found. It fails with a timeout error naming the wait.
func (p *Page) WaitForText(ctx context.Context, texts []string, timeout time.Duration) (string, error) {
	if err := p.Ready(ctx); err != nil {
		return "", err
	}
	deadline := time.Now().Add(p.Scale(timeout))
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return "", &WaitTimeoutError{Waited: timeout}
		}
		var found json.RawMessage
		err := p.await(ctx, func(ctx context.Context) (err error) {
			found, err = p.callFunction(ctx, waitTextJS, "", texts, left.Milliseconds())
			return err
		})
		switch {
		case err == nil && string(found) != "null" && len(found) > 0:
			var s string
			_ = json.Unmarshal(found, &s)
			return s, nil
		case err == nil:
			return "", &WaitTimeoutError{Waited: timeout}
		case isNavigatedAway(err):
			if err := p.waitNavigation(ctx, navState{}, deadline); err != nil && !errors.Is(err, ErrNavigationTimeout) {
				return "", err
			}
		default:
			return "", err
		}
	}
}

// WaitTimeoutError is a wait_for that found none of its texts in time.
type WaitTimeoutError struct{ Waited time.Duration }

func (e *WaitTimeoutError) Error() string {
	return fmt.Sprintf("Timed out after waiting %dms", e.Waited.Milliseconds())
}
