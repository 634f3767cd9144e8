package browser

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// Network routes (issue 41): what pagemux does with the requests of some
// pages whose URL matches a pattern — answer them itself (fulfil), fail
// them (abort), hold them a while (delay), or send them on with changed
// headers. They ride on the browser-wide request interception of the URL
// policy (urlguard.go): decide judges a paused request by the policy first,
// so a route never makes a refused URL load, and only then lets the newest
// route that covers the request's page act on it.
//
// Interception (Fetch.enable on the browser's session) is on from launch,
// as Chrome gives it only to the frames made while it is on, with the
// patterns of the routes, the URL policy and the origins' headers, or one
// that matches no URL (noURL) when none needs it: a request no pattern
// matches never pauses, so pages without routes pay nothing for them. A
// request of another page that matches a route's pattern pauses and goes
// on untouched: Chrome's patterns cannot name a page.
//
// A route is kept for one page or for a set of pages (Route.Covers, such as
// an agent's, popups opened later included). A page's route goes with the
// page: when the page closes, or its Chrome goes away (a crash, a
// relaunch), the route is dropped; it is not re-armed on the new page that
// takes its place. A route for a set of pages outlives its pages and, after
// a relaunch, is armed on the new Chrome before the first page opens.

// Route says what to do with the requests of some pages that match a URL
// pattern.
type Route struct {
	// Pattern is the URL pattern, as CompileURLPattern reads it.
	Pattern string
	// Page, if set, is the one page the route covers.
	Page *Page
	// Covers, when Page is nil, says whether the route covers the page with
	// the id; nil covers every page.
	Covers func(page int) bool
	// Owner names who made the route, for Routes and RemoveRoutes: an
	// agent's identity, "" for none.
	Owner string
	// Action is what is done with a request the route covers.
	Action RouteAction
}

// RouteAction is what a route does with a request: after Delay, it fails
// it with Abort, or answers it when Fulfil, or else sends it on with
// Headers set and RemoveHeaders removed.
type RouteAction struct {
	// Delay holds the request this long first; at most MaxRouteDelay.
	Delay time.Duration
	// Abort, if set, fails the request with this reason.
	Abort network.ErrorReason
	// Fulfil answers the request with Status, Headers and Body; it is
	// never sent.
	Fulfil bool
	// Status is the answer's HTTP status, 100 to 599 (200 when 0).
	Status int
	// Body is the answer's body, at most MaxRouteBody bytes.
	Body []byte
	// Headers are the answer's headers, or the request's headers to set
	// (replacing one of the same name) when it is sent on.
	Headers http.Header
	// RemoveHeaders are request headers to leave out when it is sent on.
	RemoveHeaders []string
}

// Limits on routes, so that an agent cannot fill pagemux's memory or hold
// requests forever.
const (
	// MaxRouteBody bounds the body of a fulfilled answer.
	MaxRouteBody = 10 << 20
	// MaxRouteDelay bounds a route's delay.
	MaxRouteDelay = 60 * time.Second
	// MaxRoutes bounds the routes of one owner.
	MaxRoutes = 100
	// MaxRouteBodies bounds the bodies of one owner's routes together.
	MaxRouteBodies = 4 * MaxRouteBody
	// maxPattern bounds a pattern's length.
	maxPattern = 2048
)

// RouteInfo is a route as Routes lists it.
type RouteInfo struct {
	ID      int
	Pattern string
	// Page is the page the route covers; 0 for a route for a set of pages.
	Page  int
	Owner string
	// Action says what the route does, such as "fulfil 200 (17 bytes)".
	Action string
	// Hits counts the requests the route acted on.
	Hits int64
}

// URLPattern is a route's pattern, compiled.
type URLPattern struct {
	re *regexp.Regexp
	// fetch is the Fetch domain's pattern (* and ? wildcards) that every
	// URL the pattern matches matches, no wider than the pattern allows.
	fetch string
}

// Match reports whether the URL (without its #fragment) matches.
func (p URLPattern) Match(url string) bool {
	if i := strings.IndexByte(url, '#'); i >= 0 {
		url = url[:i]
	}
	return p.re.MatchString(url)
}

// FetchPattern is the interception pattern for Chrome (Fetch.enable) that
// matches at least every URL p matches.
func (p URLPattern) FetchPattern() string { return p.fetch }

// PatternError is a route pattern that cannot be read, and how to write it.
type PatternError struct {
	Pattern string
	Why     string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("pattern %.80q: %s", e.Pattern, e.Why)
}

// regexFlags are the flags of a /regex/flags pattern Go's regexp reads.
const regexFlags = "ims"

// CompileURLPattern reads a route's pattern, as Playwright's page.route
// does:
//
//   - /source/flags is a regular expression (Go's RE2 syntax: no
//     lookarounds or backreferences; a / in it escaped as \/; flags among
//     i, m, s), found anywhere in the URL;
//   - anything else is a glob matched against the whole URL: ** matches any
//     characters, * any but /, {a,b} either of a and b, \ makes the next
//     character plain; ? and [ are plain characters. A glob names whole
//     URLs, so it starts with a scheme (https://…) or a * (**/api/*).
func CompileURLPattern(pattern string) (URLPattern, error) {
	switch {
	case strings.TrimSpace(pattern) == "":
		return URLPattern{}, &PatternError{pattern, "empty; give a glob such as **/api/* or a regex such as /api\\/v\\d+/"}
	case len(pattern) > maxPattern:
		return URLPattern{}, &PatternError{pattern, fmt.Sprintf("longer than %d characters", maxPattern)}
	case isRegex(pattern):
		return compileRegex(pattern)
	}
	return compileGlob(pattern)
}

// jsFlags are the flags of a JavaScript regex literal.
const jsFlags = "dgimsuvy"

// isRegex reports whether a pattern is written as a JavaScript regex
// literal: /source/flags, the source not empty and every / in it escaped,
// the flags JavaScript's. /api/users is a path, not a regex.
func isRegex(pattern string) bool {
	end := strings.LastIndexByte(pattern, '/')
	if len(pattern) < 3 || pattern[0] != '/' || end < 2 {
		return false
	}
	if strings.Trim(pattern[end+1:], jsFlags) != "" {
		return false
	}
	source := pattern[1:end]
	for i := 0; i < len(source); i++ {
		switch source[i] {
		case '\\':
			i++
		case '/':
			return false
		}
	}
	return true
}

func compileRegex(pattern string) (URLPattern, error) {
	end := strings.LastIndexByte(pattern, '/')
	source, flags := pattern[1:end], pattern[end+1:]
	for _, f := range flags {
		if !strings.ContainsRune(regexFlags, f) {
			return URLPattern{}, &PatternError{pattern, fmt.Sprintf("regex flag %q: pagemux reads i, m and s", f)}
		}
	}
	if flags != "" {
		source = "(?" + flags + ")" + source
	}
	re, err := regexp.Compile(source)
	if err != nil {
		return URLPattern{}, &PatternError{pattern, "not a regex Go reads (RE2 syntax: no lookarounds or backreferences): " + err.Error()}
	}
	return URLPattern{re: re, fetch: "*"}, nil
}

func compileGlob(pattern string) (URLPattern, error) {
	if !strings.Contains(pattern, "://") && pattern[0] != '*' {
		return URLPattern{}, &PatternError{pattern, "a glob is matched against whole URLs; start it with a scheme (http://localhost:8080/api/*) or with ** (**" + ensureSlash(pattern) + ")"}
	}
	var re, fp strings.Builder
	re.WriteString("^")
	inBrace := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			i++
			re.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
			fp.WriteString(fetchLiteral(pattern[i]))
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			for i+1 < len(pattern) && pattern[i+1] == '*' {
				i++
			}
			re.WriteString(".*")
			fp.WriteString("*")
		case c == '*':
			re.WriteString("[^/]*")
			fp.WriteString("*")
		case c == '{' && !inBrace:
			inBrace = true
			re.WriteString("(?:")
			fp.WriteString("*")
		case c == ',' && inBrace:
			re.WriteString("|")
		case c == '}' && inBrace:
			inBrace = false
			re.WriteString(")")
		case inBrace:
			re.WriteString(regexp.QuoteMeta(string(c)))
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
			fp.WriteString(fetchLiteral(c))
		}
	}
	if inBrace {
		return URLPattern{}, &PatternError{pattern, "a { without its }; write alternatives as {png,jpg}, or \\{ for a plain {"}
	}
	re.WriteString("$")
	compiled, err := regexp.Compile(re.String())
	if err != nil {
		return URLPattern{}, &PatternError{pattern, err.Error()}
	}
	return URLPattern{re: compiled, fetch: collapseStars(fp.String())}, nil
}

// ensureSlash is a path as a glob after ** would write it.
func ensureSlash(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return "/" + p
}

// fetchLiteral writes a plain character in Fetch's pattern syntax, where
// *, ? and \ are special.
func fetchLiteral(c byte) string {
	if c == '*' || c == '?' || c == '\\' {
		return `\` + string(c)
	}
	return string(c)
}

// collapseStars makes runs of unescaped * one.
func collapseStars(p string) string {
	var b strings.Builder
	star := false // the last thing written is an unescaped *
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			b.WriteString(p[i : i+2])
			i++
			star = false
		case p[i] == '*' && star:
		default:
			b.WriteByte(p[i])
			star = p[i] == '*'
		}
	}
	return b.String()
}

// AbortReasons are the reasons a route may fail a request with, as
// Playwright's route.abort names them (Chrome's network.ErrorReason in
// lower case).
var AbortReasons = []string{"aborted", "accessdenied", "addressunreachable", "blockedbyclient", "blockedbyresponse",
	"connectionaborted", "connectionclosed", "connectionfailed", "connectionrefused", "connectionreset",
	"failed", "internetdisconnected", "namenotresolved", "timedout"}

// ParseAbortReason returns Chrome's error reason for one of AbortReasons,
// in any case.
func ParseAbortReason(s string) (network.ErrorReason, error) {
	for _, r := range []network.ErrorReason{network.ErrorReasonFailed, network.ErrorReasonAborted, network.ErrorReasonTimedOut,
		network.ErrorReasonAccessDenied, network.ErrorReasonConnectionClosed, network.ErrorReasonConnectionReset,
		network.ErrorReasonConnectionRefused, network.ErrorReasonConnectionAborted, network.ErrorReasonConnectionFailed,
		network.ErrorReasonNameNotResolved, network.ErrorReasonInternetDisconnected, network.ErrorReasonAddressUnreachable,
		network.ErrorReasonBlockedByClient, network.ErrorReasonBlockedByResponse} {
		if strings.EqualFold(s, string(r)) {
			return r, nil
		}
	}
	return "", fmt.Errorf("abort reason %.40q: want one of %s", s, strings.Join(AbortReasons, ", "))
}

// check says what is wrong with an action, nil if nothing.
func (a RouteAction) check() error {
	switch {
	case a.Delay < 0 || a.Delay > MaxRouteDelay:
		return fmt.Errorf("delay %v: want 0 to %v", a.Delay, MaxRouteDelay)
	case a.Abort != "" && (a.Fulfil || len(a.Headers) > 0 || len(a.RemoveHeaders) > 0):
		return errors.New("an aborted request gets no answer and is not sent: give abort alone (with a delay if you like)")
	case a.Fulfil && len(a.RemoveHeaders) > 0:
		return errors.New("removeHeaders changes the headers of a request sent on, and a fulfilled one is never sent: leave it out, and give the answer's headers in headers")
	case a.Fulfil && a.Status != 0 && (a.Status < 100 || a.Status > 599):
		return fmt.Errorf("status %d: want an HTTP status from 100 to 599", a.Status)
	case len(a.Body) > MaxRouteBody:
		return fmt.Errorf("body of %d bytes: at most %d", len(a.Body), MaxRouteBody)
	case a.Abort == "" && !a.Fulfil && a.Delay == 0 && len(a.Headers) == 0 && len(a.RemoveHeaders) == 0:
		return errors.New("the route does nothing: give status, body or bodyFile to answer, abort to fail, delayMs to delay, or headers/removeHeaders to change the request")
	}
	return checkHeaders(a.Headers, a.RemoveHeaders)
}

// checkHeaders refuses header names and values Chrome would refuse, or
// that would split a header.
func checkHeaders(set http.Header, remove []string) error {
	for name, vs := range set {
		if !validHeaderName(name) {
			return fmt.Errorf("header name %.40q: want letters, digits and !#$%%&'*+-.^_`|~", name)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				return fmt.Errorf("header %s: a value may not hold a line break or NUL", name)
			}
		}
	}
	for _, name := range remove {
		if !validHeaderName(name) {
			return fmt.Errorf("header name %.40q in removeHeaders: want letters, digits and !#$%%&'*+-.^_`|~", name)
		}
	}
	return nil
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// describe says what an action does, for RouteInfo.
func (a RouteAction) describe() string {
	var parts []string
	if a.Delay > 0 {
		parts = append(parts, "delay "+a.Delay.String())
	}
	switch {
	case a.Abort != "":
		parts = append(parts, "abort "+strings.ToLower(string(a.Abort)))
	case a.Fulfil:
		parts = append(parts, fmt.Sprintf("fulfil %d (%d bytes)", a.status(), len(a.Body)))
	case len(a.Headers) > 0 || len(a.RemoveHeaders) > 0:
		var names []string
		for n := range a.Headers {
			names = append(names, "set "+n)
		}
		slices.Sort(names)
		for _, n := range a.RemoveHeaders {
			names = append(names, "remove "+n)
		}
		parts = append(parts, "continue with headers changed: "+strings.Join(names, ", "))
	default:
		parts = append(parts, "then continue")
	}
	return strings.Join(parts, ", ")
}

func (a RouteAction) status() int {
	if a.Status == 0 {
		return http.StatusOK
	}
	return a.Status
}

// route is a Route as the set keeps it.
type route struct {
	Route
	id      int
	pattern URLPattern
	hits    atomic.Int64
	removed chan struct{} // closed when the route is dropped
}

func (r *route) info() RouteInfo {
	ri := RouteInfo{ID: r.id, Pattern: r.Pattern, Owner: r.Owner, Action: r.Action.describe(), Hits: r.hits.Load()}
	if r.Page != nil {
		ri.Page = r.Page.ID
	}
	return ri
}

// covers reports whether the route acts on the requests of page p.
func (r *route) covers(p *Page) bool {
	switch {
	case p == nil:
		return false
	case r.Page != nil:
		return r.Page == p
	}
	return r.Covers == nil || r.Covers(p.ID)
}

// routeSet is a browser's routes and the launches whose interception
// follows them. Its zero value is ready.
type routeSet struct {
	mu     sync.Mutex
	nextID int
	list   []*route // oldest first

	// armMu orders the changes of interception (Fetch.enable), so that the
	// last one Chrome gets has the patterns of the routes now.
	armMu sync.Mutex
	// armed are the launches whose interception guardBrowser turned on.
	armed map[*launch]bool
}

// match returns the newest route that covers page p and matches url.
func (rs *routeSet) match(p *Page, url string) *route {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range slices.Backward(rs.list) {
		if r.covers(p) && r.pattern.Match(url) {
			return r
		}
	}
	return nil
}

// fetchPatterns are the interception patterns of the routes, each once.
func (rs *routeSet) fetchPatterns() []*fetch.RequestPattern {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var ps []*fetch.RequestPattern
	seen := map[string]bool{}
	for _, r := range rs.list {
		if fp := r.pattern.FetchPattern(); !seen[fp] {
			seen[fp] = true
			ps = append(ps, &fetch.RequestPattern{URLPattern: fp, RequestStage: fetch.RequestStageRequest})
		}
	}
	return ps
}

// remove drops the routes del says, and returns them.
func (rs *routeSet) remove(del func(*route) bool) []*route {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var gone []*route
	rs.list = slices.DeleteFunc(rs.list, func(r *route) bool {
		if del(r) {
			gone = append(gone, r)
			close(r.removed)
			return true
		}
		return false
	})
	return gone
}

// ErrTooManyRoutes is a route past MaxRoutes of its owner.
var ErrTooManyRoutes = fmt.Errorf("too many routes: at most %d each; remove some with unroute", MaxRoutes)

// AddRoute checks r, adds it, and turns interception on for its pattern
// before it returns, on each Chrome of the browser. A route for one page
// is dropped when the page closes. It fails for a closed page, a bad
// pattern or action, an owner with MaxRoutes routes, or a Chrome that
// refused the interception (the route is not added then).
func (b *Browser) AddRoute(ctx context.Context, r Route) (RouteInfo, error) {
	pat, err := CompileURLPattern(r.Pattern)
	if err != nil {
		return RouteInfo{}, err
	}
	if err := r.Action.check(); err != nil {
		return RouteInfo{}, err
	}
	if r.Page != nil && r.Page.Closed() {
		return RouteInfo{}, r.Page.Err()
	}
	nr := &route{Route: r, pattern: pat, removed: make(chan struct{})}
	rs := &b.routes
	rs.mu.Lock()
	if err := rs.roomFor(r); err != nil {
		rs.mu.Unlock()
		return RouteInfo{}, err
	}
	rs.nextID++
	nr.id = rs.nextID
	rs.list = append(rs.list, nr)
	rs.mu.Unlock()
	if err := b.rearm(ctx); err != nil {
		rs.remove(func(x *route) bool { return x == nr })
		b.rearm(context.WithoutCancel(ctx)) // back to the patterns without it
		return RouteInfo{}, err
	}
	if r.Page != nil {
		go b.dropWithPage(nr)
	}
	b.log.Info("route added", "route", nr.id, "page", nr.info().Page, "action", r.Action.describe())
	return nr.info(), nil
}

// roomFor fails when r would take its owner past MaxRoutes routes or
// MaxRouteBodies bytes of bodies. Under mu.
func (rs *routeSet) roomFor(r Route) error {
	n, bytes := 0, len(r.Action.Body)
	for _, x := range rs.list {
		if x.Owner == r.Owner {
			n++
			bytes += len(x.Action.Body)
		}
	}
	switch {
	case n >= MaxRoutes:
		return ErrTooManyRoutes
	case bytes > MaxRouteBodies:
		return fmt.Errorf("the bodies of your routes would take %d bytes, past %d: remove some with unroute", bytes, MaxRouteBodies)
	}
	return nil
}

// dropWithPage removes the route of one page when the page closes or its
// Chrome goes away, whichever comes first, unless the route went before.
func (b *Browser) dropWithPage(r *route) {
	select {
	case <-r.removed:
		return
	case <-r.Page.Done():
	case <-r.Page.launch.dead:
	}
	if gone := b.routes.remove(func(x *route) bool { return x == r }); len(gone) > 0 {
		b.log.Info("route dropped with its page", "route", r.id, "page", r.Page.ID)
		ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
		defer cancel()
		if err := b.rearm(ctx); err != nil {
			b.log.Debug("narrow the interception after a page's routes went", "error", err)
		}
	}
}

// Routes lists the routes of owner, oldest first. A route of a page that
// closed is not listed, even before dropWithPage has removed it.
func (b *Browser) Routes(owner string) []RouteInfo {
	b.routes.mu.Lock()
	defer b.routes.mu.Unlock()
	var out []RouteInfo
	for _, r := range b.routes.list {
		if r.Owner == owner && (r.Page == nil || !r.Page.Closed()) {
			out = append(out, r.info())
		}
	}
	return out
}

// RemoveRoutes removes the routes of owner that del says (every one when
// del is nil), narrows the interception to the routes left, and returns
// what it removed. A request a removed route holds (a delay) still gets
// its action.
func (b *Browser) RemoveRoutes(ctx context.Context, owner string, del func(RouteInfo) bool) ([]RouteInfo, error) {
	gone := b.routes.remove(func(r *route) bool { return r.Owner == owner && (del == nil || del(r.info())) })
	out := make([]RouteInfo, len(gone))
	for i, r := range gone {
		out[i] = r.info()
	}
	if len(gone) == 0 {
		return nil, nil
	}
	b.log.Info("routes removed", "routes", len(gone))
	return out, b.rearm(ctx)
}

// rearm sets the interception of every Chrome that guardBrowser armed to
// the patterns needed now.
func (b *Browser) rearm(ctx context.Context) error {
	rs := &b.routes
	rs.armMu.Lock()
	defer rs.armMu.Unlock()
	var errs []error
	for l := range rs.armed {
		if l.gone() {
			delete(rs.armed, l)
			continue
		}
		if err := b.armLocked(ctx, l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// arm sets up the interception of a new launch (guardBrowser), and keeps
// it following the routes from now on.
func (b *Browser) arm(l *launch) error {
	rs := &b.routes
	rs.armMu.Lock()
	defer rs.armMu.Unlock()
	if rs.armed == nil {
		rs.armed = map[*launch]bool{}
	}
	// The launches before this one (a relaunch after a crash or an idle
	// close) are gone: forget them here too, not only when a route changes.
	maps.DeleteFunc(rs.armed, func(old *launch, _ bool) bool { return old.gone() })
	rs.armed[l] = true
	return b.armLocked(l.rootCtx, l)
}

// armLocked enables Fetch on l's browser session with the patterns needed
// now, noURL when none are. Under armMu.
func (b *Browser) armLocked(ctx context.Context, l *launch) error {
	patterns := append(b.fetchPatterns(), b.routes.fetchPatterns()...)
	if len(patterns) == 0 {
		patterns = []*fetch.RequestPattern{{URLPattern: noURL, RequestStage: fetch.RequestStageRequest}}
	}
	// A command on the browser's session needs its chromedp context; the
	// caller's bounds the wait.
	cctx, cancel := context.WithTimeout(l.rootCtx, guardTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	if _, err := chromedp.CallBrowser(cctx, fetch.Enable, fetch.EnableParams{Patterns: patterns}); err != nil {
		return errors.New("turn on request interception (for the URL policy, the headers of an origin, or a route): " + err.Error())
	}
	return nil
}

// pageOfFrame is the page a frame is of: the page whose main frame it is,
// or one of whose frames it is; nil if none pagemux knows.
func (b *Browser) pageOfFrame(id cdp.FrameID) *Page {
	if p := b.pageByTarget(target.ID(id)); p != nil {
		return p
	}
	b.frames.mu.Lock()
	defer b.frames.mu.Unlock()
	if p := b.frames.ids[id]; p != nil && !p.Closed() {
		return p
	}
	return nil
}

// applyRoute does what route r says with a paused request that the URL
// policy let through; headers are those it would go on with (an origin's
// added), nil for its own.
func (b *Browser) applyRoute(l *launch, ev *fetch.EventRequestPaused, r *route, headers []*fetch.HeaderEntry) {
	r.hits.Add(1)
	a := r.Action
	if a.Delay > 0 {
		t := time.NewTimer(a.Delay)
		select {
		case <-t.C:
		case <-l.rootCtx.Done():
			t.Stop()
			return
		}
	}
	ctx, cancel := context.WithTimeout(l.rootCtx, guardTimeout)
	defer cancel()
	var err error
	switch {
	case a.Abort != "":
		_, err = chromedp.CallBrowser(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: a.Abort})
	case a.Fulfil && isPreflight(ev):
		_, err = chromedp.CallBrowser(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: http.StatusNoContent, ResponseHeaders: headerEntries(preflightHeaders(ev.Request.Headers))})
	case a.Fulfil:
		_, err = chromedp.CallBrowser(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: int64(a.status()), ResponseHeaders: headerEntries(withCORS(a.Headers, ev.Request.Headers)), Body: a.Body})
	default:
		_, err = chromedp.CallBrowser(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID, Headers: a.requestHeaders(ev.Request.Headers, headers)})
	}
	if err != nil {
		b.log.Debug("a route's action", "route", r.id, "url", ev.Request.URL, "error", err)
	}
}

// A route that answers a request of another origin answers as that
// origin's server would have to for the page to read it, as Playwright's
// route.fulfill does: its CORS preflight is answered yes for what it asks,
// and the answer allows the page's origin, unless the route's headers say
// otherwise.

// isPreflight reports whether a paused request is a CORS preflight, which
// Chrome may give the type of the request it asks for (XHR, Fetch).
func isPreflight(ev *fetch.EventRequestPaused) bool {
	return ev.ResourceType == network.ResourceTypePreflight ||
		ev.Request.Method == http.MethodOptions && sentHeader(ev.Request.Headers, "Access-Control-Request-Method") != ""
}

// preflightHeaders allow what a CORS preflight with request headers sent
// asks for.
func preflightHeaders(sent network.Headers) http.Header {
	h := http.Header{}
	h.Set("Access-Control-Allow-Origin", cmp.Or(sentHeader(sent, "Origin"), "*"))
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Allow-Methods", cmp.Or(sentHeader(sent, "Access-Control-Request-Method"), "GET, POST, PUT, PATCH, DELETE, OPTIONS"))
	if asked := sentHeader(sent, "Access-Control-Request-Headers"); asked != "" {
		h.Set("Access-Control-Allow-Headers", asked)
	}
	h.Set("Vary", "Origin")
	return h
}

// withCORS adds to an answer's headers those that let a page of another
// origin read it, when the request came with an Origin and the route set
// no Access-Control-Allow-Origin.
func withCORS(headers http.Header, sent network.Headers) http.Header {
	origin := sentHeader(sent, "Origin")
	if origin == "" || headers.Get("Access-Control-Allow-Origin") != "" {
		return headers
	}
	h := headers.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Add("Vary", "Origin")
	return h
}

// headerEntries are h as Fetch takes them.
func headerEntries(h http.Header) []*fetch.HeaderEntry {
	var out []*fetch.HeaderEntry
	for name, vs := range h {
		for _, v := range vs {
			out = append(out, &fetch.HeaderEntry{Name: name, Value: v})
		}
	}
	return out
}

// requestHeaders are the headers a request goes on with: those it was
// sent with (or, when an origin's were added, those), with a's set and
// removed; nil, its own, when a changes none and no origin's were added.
func (a RouteAction) requestHeaders(sent network.Headers, added []*fetch.HeaderEntry) []*fetch.HeaderEntry {
	if len(a.Headers) == 0 && len(a.RemoveHeaders) == 0 {
		return added
	}
	base := added
	if base == nil {
		base = sentEntries(sent)
	}
	return mergeHeaders(base, a.Headers, a.RemoveHeaders)
}

// String names a route in logs.
func (r RouteInfo) String() string {
	scope := "every page of its owner"
	if r.Page != 0 {
		scope = "page " + strconv.Itoa(r.Page)
	}
	return fmt.Sprintf("route %d %s on %s: %s", r.ID, r.Pattern, scope, r.Action)
}

// noURL is an interception pattern no URL matches: Fetch stays enabled
// with it while nothing needs a request to pause. Chrome gives Fetch's
// interception only to the frames (their loader factories) made while it
// is enabled, so it stays on from launch: a route added later then reaches
// the requests of the documents loaded before it.
const noURL = "pagemux-intercepts-nothing:"
