package browser

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// URLPolicy says which URLs a tab may load; *policy.Policy is one.
type URLPolicy interface {
	// Check returns nil for a URL a tab may load, else an error that says
	// what is refused and what to do.
	Check(url string) error
	// Intercepts reports whether Check refuses any http: or https: URL,
	// so that document requests must be paused to be checked.
	Intercepts() bool
}

// SetURLPolicy makes every page keep to pol, whichever way it gets to a URL:
//
//   - with pol.Intercepts, each document request of every tab (navigation,
//     redirect hop, iframe, popup, whether pagemux attached to the tab yet
//     or not) is paused at the request stage, browser-wide, and failed as
//     blocked by the client when pol refuses it;
//   - a frame that commits a URL pol refuses anyway (a scheme Chrome's
//     interception does not see, such as file: or chrome:, or a tab that
//     loaded before pagemux attached) is navigated to about:blank;
//   - while a page's main frame is on a refused URL, every call that reads
//     the page (Ready) fails with the URL and the rule;
//   - Navigate, History and Reload refuse a refused target before they act.
//
// It does not stop a page's scripts from fetching subresources. Call it
// before the first Start; nil leaves every URL allowed.
func (b *Browser) SetURLPolicy(pol URLPolicy) {
	if pol == nil {
		return
	}
	b.urlPolicy = pol
	b.ObservePages(func(p *Page) func(ev any) {
		p.guard.pol = pol
		return p.guardEvent
	})
}

// CheckURL returns nil for a URL a tab may load under the policy, else
// why not and what to do. It opens and sends nothing.
func (b *Browser) CheckURL(url string) error {
	if b.urlPolicy == nil {
		return nil
	}
	return b.urlPolicy.Check(url)
}

// urlGuard is one page's side of the URL policy.
type urlGuard struct {
	pol URLPolicy // nil: no policy; set before attach

	mu sync.Mutex
	// mainRefused is why the main frame's committed URL is refused, until
	// it commits another; nil if it is not.
	mainRefused error
	// seen says the guard saw where the main frame is (attach, commit): an
	// error page's tab reports the failed URL, which it does not show.
	seen bool
	// lastBlocked is the latest document request refused, to explain
	// net::ERR_BLOCKED_BY_CLIENT to whoever navigated.
	lastBlocked error
}

// chromeErrorPage is the URL of Chrome's error pages, such as the one a
// refused request leaves: it shows the error, nothing of the refused URL.
const chromeErrorPage = "chrome-error://chromewebdata/"

// checkURL applies the policy to a URL a frame is on or goes to.
func (p *Page) checkURL(url string) error {
	if p.guard.pol == nil || url == "" || strings.HasPrefix(url, chromeErrorPage) {
		return nil
	}
	return p.guard.pol.Check(url)
}

// navigatingKey marks the context of a navigation, which may take a page
// off a refused URL.
type navigatingKey struct{}

// refusedErr fails while the page's main frame is on a refused URL, except
// for a navigation. Before the guard has seen the main frame commit, the
// URL Chrome reports for the tab stands for it.
func (p *Page) refusedErr(ctx context.Context) error {
	if p.guard.pol == nil || ctx.Value(navigatingKey{}) != nil {
		return nil
	}
	p.guard.mu.Lock()
	err, seen := p.guard.mainRefused, p.guard.seen
	p.guard.mu.Unlock()
	if err == nil && !seen {
		err = p.checkURL(p.URL())
	}
	if err != nil {
		return &RefusedPageError{Page: p.ID, Err: err}
	}
	return nil
}

// RefusedPageError is a call on a page whose main frame is on a URL the
// policy refuses; pagemux is taking it to about:blank.
type RefusedPageError struct {
	Page int
	Err  error
}

func (e *RefusedPageError) Error() string {
	return "page " + strconv.Itoa(e.Page) + " is on a refused URL and pagemux is taking it to about:blank: " + e.Err.Error() + "; navigate it elsewhere with navigate_page or close it with close_page"
}

func (e *RefusedPageError) Unwrap() error { return e.Err }

// guardEvent runs in the page's event loop: it must return fast and send
// no command, so what needs Chrome runs in a goroutine.
func (p *Page) guardEvent(ev any) {
	switch ev := ev.(type) {
	case *page.EventFrameNavigated:
		url := ev.Frame.URL + ev.Frame.URLFragment
		err := p.checkURL(url)
		if ev.Frame.UnreachableURL != "" {
			err = nil // an error page: it shows the error alone
		}
		if ev.Frame.ParentID == "" {
			p.guard.mu.Lock()
			p.guard.mainRefused, p.guard.seen = err, true
			p.guard.mu.Unlock()
		}
		if err != nil {
			go p.blankFrame(ev.Frame.ID, url, err)
		}
	}
}

// guardTimeout bounds one guard command: a page that does not answer in
// that time is stuck anyway, and its paused request fails with it.
const guardTimeout = 10 * time.Second

// blankFrame takes a frame that committed a refused URL to about:blank.
func (p *Page) blankFrame(frame cdp.FrameID, url string, why error) {
	p.b.log.Warn("a frame loaded a refused URL; taking it to about:blank", "page", p.ID, "url", url, "why", why)
	ctx, cancel := context.WithTimeout(p.ctx, guardTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: "about:blank", FrameID: frame}); err != nil && !p.Closed() {
		p.b.log.Warn("could not take a frame off a refused URL", "page", p.ID, "error", err)
	}
}

// guardAttached looks at where the frames of a page just attached are, for
// a tab that loaded before pagemux attached (an outside tab, a popup of a
// scheme interception does not see). It runs before the attach ends, so that no call sees the page
// unguarded.
func (p *Page) guardAttached(ctx context.Context) error {
	if p.guard.pol == nil {
		return nil
	}
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return errors.New("read the frames for the URL policy: " + err.Error())
	}
	p.guardFrames(tree.FrameTree, true)
	return nil
}

func (p *Page) guardFrames(t *page.FrameTree, main bool) {
	if t == nil || t.Frame == nil {
		return
	}
	url := t.Frame.URL + t.Frame.URLFragment
	err := p.checkURL(url)
	if t.Frame.UnreachableURL != "" {
		err = nil
	}
	if main {
		p.guard.mu.Lock()
		p.guard.mainRefused, p.guard.seen = err, true
		p.guard.mu.Unlock()
	}
	if err != nil {
		go p.blankFrame(t.Frame.ID, url, err)
		return
	}
	for _, c := range t.ChildFrames {
		p.guardFrames(c, false)
	}
}

// refuseTarget is the check of Navigate, History and Reload, before they
// act: the page stays where it is.
func (p *Page) refuseTarget(url string) error {
	if err := p.checkURL(url); err != nil {
		return err
	}
	return nil
}

// explainBlocked turns Chrome's net::ERR_BLOCKED_BY_CLIENT for a navigation
// into the policy's reason, when the guard refused one of its requests (a
// redirect hop, say).
func (p *Page) explainBlocked(err error) error {
	var ne *NavigationError
	if !errors.As(err, &ne) || !strings.Contains(ne.Text, "ERR_BLOCKED_BY_CLIENT") {
		return err
	}
	p.guard.mu.Lock()
	why := p.guard.lastBlocked
	p.guard.mu.Unlock()
	if why == nil {
		return err
	}
	return &NavigationError{URL: ne.URL, Text: "a document request on the way was refused: " + why.Error()}
}

// guardBrowser starts the browser-wide request interception of a launch,
// with the patterns of the policy, the origins' headers and the routes
// (routes.go; one that matches no URL when none needs any), and keeps it
// following the routes. Interception on the
// browser's own session sees the requests of every tab, also of those
// pagemux has not attached to, such as a popup that starts loading at once.
func (b *Browser) guardBrowser(l *launch) error {
	if err := chromedp.ListenBrowser(l.rootCtx, func(ev any) {
		if ev, ok := ev.(*fetch.EventRequestPaused); ok {
			go b.decide(l, ev)
		}
	}); err != nil {
		return err
	}
	return b.arm(l) // routes.go: Fetch.enable with fetchPatterns and the routes'
}

// fetchPatterns are the interception patterns of the URL policy and the
// origins' headers; none when neither needs a request to pause.
func (b *Browser) fetchPatterns() []*fetch.RequestPattern {
	intercepts := b.urlPolicy != nil && b.urlPolicy.Intercepts()
	var patterns []*fetch.RequestPattern
	if intercepts {
		patterns = append(patterns, &fetch.RequestPattern{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest})
	}
	// Every request to an origin that gets headers (headers.go).
	patterns = append(patterns, b.headerPatterns()...)
	if ep, ok := b.urlPolicy.(interface{ EndpointPatterns() []string }); ok && intercepts {
		// Every kind of request to pagemux's and Chrome's own endpoints,
		// such as a script's fetch of /json/close/ID, pauses too.
		for _, u := range ep.EndpointPatterns() {
			patterns = append(patterns, &fetch.RequestPattern{URLPattern: u, RequestStage: fetch.RequestStageRequest})
		}
	}
	return patterns
}

// decide continues or fails one paused request: a document (the URL
// policy's), a request to an endpoint of pagemux or Chrome, one to an
// origin that gets headers, which go on with them, or one a route's pattern
// matches. The policy judges first, and every request a route covers: a
// route never makes a refused URL load. A subresource that pauses only for
// a route's pattern is judged too (one of another page included, as
// Chrome's patterns cannot name a page); the policy does not judge the
// subresources that never pause.
func (b *Browser) decide(l *launch, ev *fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(l.rootCtx, guardTimeout)
	defer cancel()
	url := ev.Request.URL + ev.Request.URLFragment
	owner := b.ownsRequest(ctx, l, ev)
	if owner == notOurs {
		if _, err := chromedp.CallBrowser(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID}); err != nil {
			b.log.Debug("continue another context's request", "url", url, "error", err)
		}
		return
	}
	var headers []*fetch.HeaderEntry
	var rt *route // routes.go: the route that covers the request, if any
	if owner == ours {
		headers = b.headersFor(ev.Request.URL, ev.Request.Headers)
		rt = b.routes.match(b.pageOfFrame(ev.FrameID), ev.Request.URL)
	} else {
		b.log.Warn("a request of a frame pagemux could not place: judged by the URL policy, sent without origin headers nor routes", "url", url)
	}
	var err error
	if b.urlPolicy != nil && b.urlPolicy.Intercepts() && (headers == nil || rt != nil || ev.ResourceType == network.ResourceTypeDocument) {
		err = b.urlPolicy.Check(url)
	}
	if err == nil && rt != nil {
		cancel() // a delay may outlast guardTimeout: applyRoute bounds its own commands
		b.applyRoute(l, ev, rt, headers)
		return
	}
	if err == nil {
		if _, err := chromedp.CallBrowser(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID, Headers: headers}); err != nil {
			b.log.Debug("continue a request", "url", url, "error", err)
		}
		return
	}
	p := b.pageByTarget(target.ID(ev.FrameID))
	pageID := 0
	if p != nil && ev.ResourceType == network.ResourceTypeDocument {
		pageID = p.ID
		p.guard.mu.Lock()
		p.guard.lastBlocked = err
		p.guard.mu.Unlock()
	}
	b.log.Warn("refused a document request", "page", pageID, "url", url, "why", err)
	if _, cerr := chromedp.CallBrowser(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}); cerr != nil {
		b.log.Debug("fail a refused request", "url", url, "error", cerr)
	}
}
