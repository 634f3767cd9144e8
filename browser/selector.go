package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// This file acts on elements named by a CSS selector rather than a snapshot
// uid, for scripted steps (pagemux smoke --steps) written before the page
// exists: the clicks and fills are those of Click and Fill, the waits those
// of WaitForText, so a step behaves as the MCP tool would.

// SelectorError is a selector that matched nothing usable in time, or that
// is not a valid selector; its message says which.
type SelectorError struct {
	Selector string
	Why      string
}

func (e *SelectorError) Error() string { return e.Selector + ": " + e.Why }

// waitSelectorJS resolves with "" once the main frame has an element that
// matches sel and has a box (is rendered), watching DOM mutations; with
// "missing" or "hidden" after ms; or with "invalid: …" for a selector the
// page cannot parse.
const waitSelectorJS = `(sel, ms) => new Promise(resolve => {
  const find = () => {
    let el;
    try { el = document.querySelector(sel); } catch (e) { return "invalid: " + e.message; }
    if (!el) return "missing";
    return el.getClientRects().length > 0 ? "" : "hidden";
  };
  let last = find();
  if (last === "" || last.startsWith("invalid")) return resolve(last);
  const done = v => { obs.disconnect(); clearInterval(poll); clearTimeout(cap); resolve(v); };
  const check = () => { last = find(); if (last === "") done(last); };
  const obs = new MutationObserver(check);
  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  const poll = setInterval(check, 100);
  const cap = setTimeout(() => done(last), ms);
})`

// WaitForSelector waits until an element of the main frame matches the CSS
// selector and is rendered (has a box), across navigations, for up to
// timeout. It fails with a *SelectorError saying whether nothing matched or
// the match stayed hidden.
func (p *Page) WaitForSelector(ctx context.Context, selector string, timeout time.Duration) error {
	if err := p.Ready(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(p.Scale(timeout))
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return &SelectorError{Selector: selector, Why: fmt.Sprintf("no element matches it after %v", timeout)}
		}
		var got json.RawMessage
		err := p.await(ctx, func(ctx context.Context) (err error) {
			got, err = p.callFunction(ctx, waitSelectorJS, "", selector, left.Milliseconds())
			return err
		})
		var why string
		if err == nil {
			_ = json.Unmarshal(got, &why)
		}
		switch {
		case err == nil && why == "":
			return nil
		case err == nil && why == "hidden":
			return &SelectorError{Selector: selector, Why: fmt.Sprintf("the element it matches is not rendered (no box: display none, or not attached) after %v", timeout)}
		case err == nil && strings.HasPrefix(why, "invalid"):
			return &SelectorError{Selector: selector, Why: "not a valid CSS selector (" + strings.TrimPrefix(why, "invalid: ") + ")"}
		case err == nil:
			return &SelectorError{Selector: selector, Why: fmt.Sprintf("no element matches it after %v", timeout)}
		case isNavigatedAway(err):
			if err := p.waitNavigation(ctx, navState{}, deadline); err != nil && !errors.Is(err, ErrNavigationTimeout) {
				return err
			}
		default:
			return err
		}
	}
}

// query resolves the first element of the main frame that matches selector.
func (p *Page) query(ctx context.Context, selector string) (*element, error) {
	sel, _ := json.Marshal(selector)
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.querySelector(" + string(sel) + ")"})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, exceptionError(res.ExceptionDetails)
	}
	if res.Result == nil || res.Result.ObjectID == "" {
		return nil, &SelectorError{Selector: selector, Why: "no element matches it"}
	}
	node, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		return nil, err
	}
	return &element{uid: selector, backend: node.Node.BackendNodeID, object: res.Result.ObjectID}, nil
}

// ClickSelector waits up to timeout for an element to match selector, as
// WaitForSelector does, then clicks it as Click clicks a uid's element, and
// waits for the page to settle (and for a navigation the click started).
func (in Input) ClickSelector(ctx context.Context, selector string, timeout time.Duration) error {
	p := in.p
	if err := p.WaitForSelector(ctx, selector, timeout); err != nil {
		return err
	}
	return p.Act(ctx, 0, func(ctx context.Context) error {
		el, err := p.query(ctx, selector)
		if err != nil {
			return err
		}
		if err := el.click(ctx, 1); err != nil && strings.Contains(err.Error(), "is not visible") {
			return &SelectorError{Selector: selector, Why: "the element it matches has no box to click"}
		} else if err != nil {
			return err
		}
		return nil
	})
}

// FillSelector waits up to timeout for an element to match selector, then
// fills it as Fill fills a uid's element (text typed in, a select's option
// picked, a checkbox set), and waits for the page to settle. Errors do not
// show the value.
func (in Input) FillSelector(ctx context.Context, selector, value string, timeout time.Duration) error {
	p := in.p
	if err := p.WaitForSelector(ctx, selector, timeout); err != nil {
		return err
	}
	return p.Act(ctx, 0, func(ctx context.Context) error {
		el, err := p.query(ctx, selector)
		if err != nil {
			return err
		}
		return in.fillElement(ctx, el, value)
	})
}

// WaitForURL waits until the main frame's URL satisfies match, for up to
// timeout, across navigations and history changes. It returns the URL last
// seen and whether it matched.
func (p *Page) WaitForURL(ctx context.Context, match func(string) bool, timeout time.Duration) (string, bool, error) {
	if err := p.Ready(ctx); err != nil {
		return "", false, err
	}
	deadline := time.NewTimer(p.Scale(timeout))
	defer deadline.Stop()
	// A same-document change (history.pushState) updates the URL without
	// waking state waiters, so look every 50 ms as well.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, _, changed := p.state()
		if u := p.URL(); match(u) {
			return u, true, nil
		}
		select {
		case <-ctx.Done():
			return p.URL(), false, ctx.Err()
		case <-p.Done():
			return p.URL(), false, p.closedErr()
		case <-deadline.C:
			return p.URL(), false, nil
		case <-changed:
		case <-tick.C:
		}
	}
}
