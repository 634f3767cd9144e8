package record

import (
	"context"
	"encoding/json"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// captures are the tools after which a step keeps the page's snapshot and
// screenshot: the navigations and the inputs, what changes what a page
// shows (rules' "navigation" and "input" groups, less the ones that leave
// no page to show).
var captures = map[string]bool{
	"navigate_page": true, "new_page": true,
	"click": true, "hover": true, "fill": true, "fill_form": true, "type_text": true, "press_key": true,
	"drag": true, "handle_dialog": true, "upload_file": true,
}

// Bounds of what a Recorder does in the page of a call, which holds its
// locks meanwhile.
const (
	selectorWait = 2 * time.Second
	captureWait  = 10 * time.Second
)

// screenshotQuality is the JPEG quality of a step's screenshot: enough to
// read a page, a tenth of a PNG's bytes.
const screenshotQuality = 70

// elementUIDs are the uids of the elements a call names, in order, for the
// tools Export turns into steps: click and fill (uid), fill_form
// (elements[].uid).
func elementUIDs(tool string, args json.RawMessage) []string {
	var a struct {
		UID      string `json:"uid"`
		Elements []struct {
			UID string `json:"uid"`
		} `json:"elements"`
	}
	switch tool {
	case "click", "fill":
		if json.Unmarshal(args, &a) == nil && a.UID != "" {
			return []string{a.UID}
		}
	case "fill_form":
		if json.Unmarshal(args, &a) != nil {
			return nil
		}
		var out []string
		for _, e := range a.Elements {
			out = append(out, e.UID)
		}
		return out
	}
	return nil
}

// selectorJS returns a CSS selector for each element it is given, one
// that matches that element first in its document: its id where that is
// unique, else a unique name, data-testid, aria-label, placeholder or
// type on its tag, else the shortest path of tags (:nth-of-type where
// siblings share one) up from it that is unique, or that ends at an
// ancestor with a unique attribute. "" for an element in another document than the top
// one (a frame's), which a steps file cannot reach.
const selectorJS = `(...els) => {
  const unique = (sel, el) => { try { return document.querySelector(sel) === el; } catch { return false; } };
  const attrSel = (el) => {
    const tag = el.localName;
    if (el.id && unique('#' + CSS.escape(el.id), el)) return '#' + CSS.escape(el.id);
    for (const a of ['name', 'data-testid', 'aria-label', 'placeholder', 'type']) {
      const v = el.getAttribute(a);
      if (v) {
        const s = tag + '[' + a + '="' + CSS.escape(v) + '"]';
        if (unique(s, el)) return s;
      }
    }
    return '';
  };
  const step = (n) => {
    const same = n.parentElement ? [...n.parentElement.children].filter((s) => s.localName === n.localName) : [n];
    return same.length > 1 ? n.localName + ':nth-of-type(' + (same.indexOf(n) + 1) + ')' : n.localName;
  };
  const path = (el) => {
    let sel = '';
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const own = n === el ? '' : attrSel(n);
      sel = own ? own + ' ' + sel : step(n) + (sel ? ' > ' + sel : '');
      if (own || unique(sel, el)) break;
    }
    return sel;
  };
  return els.map((el) => {
    if (!el || el.ownerDocument !== document) return '';
    const s = attrSel(el) || path(el);
    return unique(s, el) ? s : '';
  });
}`

// findSelectors finds a selector for the element of each uid in p (see
// selectorJS), within selectorWait of ctx: "" each where it cannot.
func findSelectors(ctx context.Context, p *browser.Page, uids []string) []string {
	ctx, cancel := context.WithTimeout(ctx, selectorWait)
	defer cancel()
	out := make([]string, len(uids))
	raw, err := p.Evaluate(ctx, selectorJS, nil, uids...)
	if err != nil {
		return out
	}
	var got []string
	if json.Unmarshal(raw, &got) == nil && len(got) == len(uids) {
		return got
	}
	return out
}

// capture is what a step keeps of its page after an action.
type capture struct {
	snapshot   string // masked
	screenshot []byte
	note       string // why one is missing
	title, url string // masked; "" where the page did not say
}

// shownJS is what a screenshot of the page may show: its title, its body's
// text, the values of its fields but passwords (drawn as dots); and its URL.
const shownJS = `() => {
  const parts = [document.title, document.body ? document.body.innerText : ''];
  for (const el of document.querySelectorAll('input, textarea, select')) {
    if (el.type !== 'password' && el.type !== 'hidden') parts.push(el.value);
  }
  return {title: document.title, url: location.href, text: parts.join('\n')};
}`

// shown is shownJS's answer.
type shown struct{ Title, URL, Text string }

// capturePage takes p's snapshot text (masked) and a screenshot, which it
// withholds when the page shows a secret's value: no mask reaches into
// pixels. It reads the page's title and URL as its document has them (the
// page's own lag behind its events).
func capturePage(ctx context.Context, p *browser.Page, mask func(string) string) capture {
	var c capture
	if dlg := p.Dialog(); dlg != nil {
		// The page's scripts wait for the dialog's answer, and so would
		// ours: the next step (handle_dialog) shows the page.
		return capture{note: "no snapshot nor screenshot: a " + string(dlg.Type) + " dialog is open"}
	}
	ctx, cancel := context.WithTimeout(ctx, captureWait)
	defer cancel()
	snap, err := p.Snapshot(ctx, false)
	if err != nil {
		c.note = "no snapshot: " + mask(err.Error())
	} else {
		c.snapshot = mask(snap.Text)
	}
	raw, err := p.Evaluate(ctx, shownJS, nil)
	var on shown
	if err == nil {
		err = json.Unmarshal(raw, &on)
	}
	c.title, c.url = mask(on.Title), mask(on.URL)
	switch {
	case err != nil:
		c.note = join(c.note, "no screenshot: the page's text could not be checked for secrets: "+mask(err.Error()))
	case mask(on.Text) != on.Text:
		c.note = join(c.note, "no screenshot: the page shows the value of a secret")
	default:
		shot, err := p.Capture().Screenshot(ctx, browser.ScreenshotOptions{Format: "jpeg", Quality: screenshotQuality})
		if err != nil {
			c.note = join(c.note, "no screenshot: "+mask(err.Error()))
		}
		c.screenshot = shot
	}
	return c
}

// join joins two notes.
func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
