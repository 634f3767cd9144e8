package smoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pagemux/pagemux/tools"
)

// Check names, in report order; expect and lighthouse checks add their
// argument: "expect-text: Welcome", "lighthouse: seo".
const (
	checkLoad     = "load"
	checkConsole  = "console"
	checkRequests = "requests"
	checkIssues   = "issues"
)

// checker checks pages through the tools, one tab each: the agents' tools,
// and the step tools (tools.Options.StepTools) for what only smoke does, a
// script in every document of a tab (prepareTab), an audit's own window
// (openWindow) and steps on CSS selectors (selectorStep).
type checker struct {
	a     *agent
	o     *Options
	tmp   string // a workspace of the run's own, for Lighthouse reports
	shots string // --screenshots, absolute
	prog  *progress
	// initScript runs in every document of the tabs before the page's
	// own scripts (--storage-state's localStorage); "" for none.
	initScript string
	// axePath is the axe-core runner in tmp, when --a11y is given.
	axePath string
	// secrets are the values no message may show (redact.go).
	secrets []string
	// linkResults are --check-links' outcomes, shared by the pages.
	linkResults linkResults
	// seen are the URLs of the run's pages, crawled the pages --crawl
	// added; both guarded as the report's pages are (runAll).
	seen    map[string]bool
	crawled int
	// sharedClock says Chrome runs on this machine (launched, or attached
	// on loopback), so that its wall times are this clock's (settle).
	sharedClock bool
	// spare are tabs ready for a check, taken before open makes one:
	// the tab a launched Chrome starts with, attached already.
	spareMu sync.Mutex
	spare   []int
	// closing are the closes of checked pages' tabs, which run off the
	// pages' time; runAll waits for them.
	closing sync.WaitGroup
}

// checkNames are the checks the page of url gets, in order.
func (k *checker) checkNames(url string) []string {
	var names []string
	if len(k.o.Login) > 0 {
		names = append(names, checkLogin)
	}
	names = append(names, checkLoad)
	if len(k.o.Steps.stepsFor(url)) > 0 {
		names = append(names, checkSteps)
	}
	names = append(names, checkConsole, checkRequests, checkIssues)
	for _, t := range k.o.ExpectText {
		names = append(names, "expect-text: "+t)
	}
	for _, s := range k.o.ExpectSelector {
		names = append(names, "expect-selector: "+s)
	}
	if len(k.o.A11y.Tags) > 0 {
		names = append(names, checkA11y)
	}
	if k.o.CheckLinks {
		names = append(names, checkLinks)
	}
	return append(names, k.o.lighthouseChecks()...)
}

// pollEvery is how often the network is looked at while a request is
// pending: the collector has no news to wait on, and a look costs a copy
// of the page's requests.
const pollEvery = 25 * time.Millisecond

// afterLoad bounds the checks after the load and the settling.
const afterLoad = 30 * time.Second

// check loads page n in a tab of its own and runs the checks but
// Lighthouse's; it reports whether the page loaded well enough to audit.
func (k *checker) check(ctx context.Context, n int, p *Page) (audit bool) {
	steps := k.o.Steps.stepsFor(p.URL)
	limit := k.o.Timeout + afterLoad + k.stepsTime(steps)
	if k.o.CheckLinks {
		limit += afterLoad // a page's links are fetched in its time
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	defer k.redact(p) // before a retry's line shows the problems
	k.prog.set(n, "opening a tab")
	opened := p.timed(PhaseOpen)
	id, closeTab, err := k.open(ctx, fmt.Sprintf("smoke-%d", n))
	opened()
	if err != nil {
		p.check(checkLoad).broken(err)
		k.skipRest(p, "no tab could be opened")
		return false
	}
	defer k.closing.Go(closeTab) // the verdict need not wait for it
	ok, docID := k.load(ctx, n, id, p)
	if !ok {
		k.skipRest(p, "the page did not load")
		p.judge(k.o.FailOn)
		k.screenshot(ctx, n, id, p)
		return false
	}
	if len(steps) > 0 {
		k.prog.set(n, "running its steps")
		stepped := p.timed(PhaseSteps)
		k.runSteps(ctx, id, steps, p.check(checkSteps))
		stepped()
	}
	k.prog.set(n, "checking")
	consoled := p.timed(PhaseConsole)
	k.console(ctx, id, p)
	consoled()
	requested := p.timed(PhaseRequests)
	k.requests(ctx, id, docID, p)
	requested()
	expected := p.timed(PhaseExpect)
	k.expectations(ctx, id, p)
	expected()
	if k.axePath != "" {
		k.prog.set(n, "checking accessibility")
		axed := p.timed(PhaseA11y)
		k.a11y(ctx, id, p)
		axed()
	}
	if k.o.CheckLinks || k.o.Crawl > 0 {
		k.prog.set(n, "reading its links")
		linked := p.timed(PhaseLinks)
		links, err := k.pageLinks(ctx, id)
		p.links = links
		if k.o.CheckLinks {
			k.prog.set(n, "checking its links")
			k.links(ctx, id, p, links, err)
		}
		linked()
	}
	p.judge(k.o.FailOn)
	if !p.Passed {
		k.screenshot(ctx, n, id, p)
	}
	return p.Status > 0 && p.Status < 400 && p.check(checkLoad).Result == Pass
}

// open makes a tab in the browser's profile, shared as one user's tabs
// share it, or takes a spare one, and returns its page id and a func that
// closes it. In one profile Chrome opens at most six connections to a host:
// past six pages of a slow site loading at once, the others wait for one.
//
// new_page opens it on about:blank, which a new tab shows already: no
// load to wait for before the page's own navigation.
func (k *checker) open(ctx context.Context, name string) (int, func(), error) {
	k.spareMu.Lock()
	if n := len(k.spare); n > 0 {
		id := k.spare[n-1]
		k.spare = k.spare[:n-1]
		k.spareMu.Unlock()
		return k.prepareTab(ctx, id)
	}
	k.spareMu.Unlock()
	ans, err := k.a.call(ctx, "new_page", map[string]any{"url": "about:blank", "background": true})
	if err != nil {
		return 0, nil, fmt.Errorf("open a tab for %s: %w", name, err)
	}
	return k.prepareTab(ctx, ans.PageID)
}

// prepareTab readies tab id for the checks (--storage-state's
// localStorage) and returns it with a func that closes it.
func (k *checker) prepareTab(ctx context.Context, id int) (int, func(), error) {
	closeTab := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = k.a.call(cctx, "close_page", map[string]any{"pageId": id})
	}
	if k.initScript != "" {
		// add_init_script, not navigate_page's initScript, which is for
		// its one navigation (and steps navigate too); not
		// set_storage_state either, which would set the items again in
		// the other tabs of the context, whose checks are under way.
		_, err := k.a.call(ctx, "add_init_script", map[string]any{"pageId": id, "script": k.initScript})
		if err != nil {
			closeTab()
			return 0, nil, fmt.Errorf("set the storage state's localStorage in tab %d: %w", id, err)
		}
	}
	return id, closeTab, nil
}

// authHint tells what to do about a page behind HTTP authentication.
const authHint = "the site asks for HTTP authentication (401) and Chrome had no credentials it took: give --basic-auth USER:$PASSWORD, or the header it wants with --header ('Authorization: Bearer $TOKEN')"

// load navigates, waits for the network to go quiet, and checks the main
// document. It reports whether there is a page to check, and the reqid of
// its document.
func (k *checker) load(ctx context.Context, n, id int, p *Page) (ok bool, docID int) {
	c := p.check(checkLoad)
	start := time.Now()
	c.Started = start
	deadline := start.Add(k.o.Timeout)
	k.prog.set(n, "loading")
	navigated := p.timed(PhaseNavigate)
	ans, err := k.a.call(ctx, "navigate_page", map[string]any{"pageId": id, "url": p.URL, "timeout": k.o.Timeout.Milliseconds()})
	p.Load = Millis(time.Since(start))
	c.Time = p.Load
	if err == nil {
		err = k.answerDialogs(ctx, id, ans.Dialog, c)
	}
	navigated()
	timedOut := false
	if err != nil {
		var te *ToolError
		var failed *tools.NavigationFailure
		if errors.As(err, &te) {
			failed = te.Answer.NavigationFailure
		}
		switch {
		case te == nil:
			c.broken(err)
			return false, 0
		case failed != nil && failed.TimedOut:
			timedOut = true
		case failed != nil && failed.Error == "net::ERR_INVALID_AUTH_CREDENTIALS":
			// Headless Chrome shows no login prompt: a 401 with a
			// WWW-Authenticate challenge fails the navigation itself.
			c.add(Error, "could not load: %s (%s)", authHint, oneLine(strings.TrimPrefix(te.Text, "Error: ")))
			return false, 0
		default:
			c.add(Error, "could not load: %s", oneLine(strings.TrimPrefix(te.Text, "Error: ")))
			return false, 0
		}
	}
	var quiet bool
	var pending []tools.RequestInfo
	if !timedOut {
		k.prog.set(n, "waiting for the network to go quiet")
		settled := p.timed(PhaseSettle)
		quiet, pending, err = k.settle(ctx, id, deadline)
		settled()
		if err != nil {
			c.broken(err)
			return false, 0
		}
	}
	documented := p.timed(PhaseDocument)
	docs, err := k.requestList(ctx, id, "document")
	documented()
	if err != nil {
		c.broken(err)
		return false, 0
	}
	doc, found := mainDocument(docs.Requests)
	if found {
		docID = doc.ID
		p.Status = doc.HTTPStatus
	}
	switch {
	case timedOut:
		var all []tools.RequestInfo
		if list, err := k.requestList(ctx, id); err == nil {
			all = list.Requests
		}
		c.add(Error, "did not finish loading within %v (--timeout)%s", k.o.Timeout, waitingFor(all))
		// Stop the load, as the stop button does: the checks after, and a
		// screenshot, see the page as it is instead of waiting on it.
		_, _ = k.a.call(ctx, "evaluate_script", map[string]any{"pageId": id, "function": "() => { window.stop(); return true; }"})
	case !found:
		c.add(Error, "no document request was seen")
	case p.Status == http.StatusUnauthorized:
		// Chrome's headless shell, unlike the full headless Chrome, shows
		// the 401's own page instead of failing the navigation.
		c.add(Error, "HTTP 401 Unauthorized: %s", authHint)
	case p.Status >= 400:
		c.add(Error, "HTTP %d %s", p.Status, http.StatusText(p.Status))
	case p.Status == 0:
		c.add(Error, "the document failed: %s", doc.Status)
	}
	if !quiet && !timedOut {
		p.check(checkRequests).add(Warning, "the network was still busy after %v (--timeout)%s", k.o.Timeout, waitingFor(pending))
	}
	return true, docID
}

// maxDialogs bounds the dialogs accepted in a row, for a page that opens
// one after another.
const maxDialogs = 5

// answerDialogs accepts the dialogs a page opened while loading, as a user
// would click OK, and notes each: a dialog on load is rarely wanted. Without
// an answer the page would block every check after. dlg is the dialog the
// navigation's answer shows, nil for none.
func (k *checker) answerDialogs(ctx context.Context, id int, dlg *tools.Dialog, c *Check) error {
	for range maxDialogs {
		if dlg == nil {
			return nil
		}
		article := "a"
		if dlg.Type == "alert" {
			article = "an"
		}
		c.add(Warning, "the page opened %s %s dialog: %q (accepted)", article, dlg.Type, dlg.Message)
		ans, err := k.a.call(ctx, "handle_dialog", map[string]any{"pageId": id, "action": "accept"})
		if err != nil {
			return err
		}
		dlg = ans.Dialog
	}
	return fmt.Errorf("the page keeps opening dialogs (%d accepted)", maxDialogs)
}

// settle waits until no request is pending and none changed for the idle
// window, or the deadline. Long-lived connections (websockets, event
// streams) and Chrome's own requests do not count. It returns the pending
// requests when the network did not go quiet.
//
// It looks at list_network_requests every pollEvery while a request is
// pending, and the moment the window would end when none is. With a
// Chrome on this machine (sharedClock), the window starts at the
// network's last change by Chrome's own timestamps (RequestInfo.ChangedAt),
// not when settle first looked: the load's requests often ended during
// navigate_page's wait for a quiet DOM.
func (k *checker) settle(ctx context.Context, id int, deadline time.Time) (quiet bool, pending []tools.RequestInfo, err error) {
	last, changed := "", time.Now()
	var looked time.Time // the look before: a change seen now came after it
	for {
		list, err := k.requestList(ctx, id)
		if err != nil {
			return false, nil, err
		}
		reqs, latest := settlingRequests(list.Requests)
		now := time.Now()
		if seen := fmt.Sprint(reqs); seen != last {
			last, changed = seen, now
			if k.sharedClock && !latest.IsZero() && latest.Before(now) {
				changed = maxTime(latest, looked)
			}
		}
		looked = now
		pending = pending[:0]
		for _, r := range reqs {
			if r.Pending {
				pending = append(pending, r)
			}
		}
		if len(pending) == 0 && now.Sub(changed) >= k.o.Idle {
			return true, nil, nil
		}
		if !now.Before(deadline) {
			return false, pending, nil
		}
		wait := pollEvery
		if len(pending) == 0 {
			wait = changed.Add(k.o.Idle).Sub(now) // the window ends then, unless a request starts
		}
		select {
		case <-ctx.Done():
			return false, nil, ctx.Err()
		case <-time.After(min(wait, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// settlingRequests are those of all that keep a network busy, and the
// latest change among them (RequestInfo.ChangedAt); zero when there is
// none. Chrome's look for a favicon is not the page's: it may wait behind
// the page loads of other tabs for one of the six connections to a host.
func settlingRequests(all []tools.RequestInfo) ([]tools.RequestInfo, time.Time) {
	var out []tools.RequestInfo
	var latest time.Time
	for _, r := range all {
		if r.ResourceType == "websocket" || r.ResourceType == "eventsource" || chromeOwn(r) {
			continue // open by design, or not the page's
		}
		out = append(out, r)
		if r.ChangedAt.After(latest) {
			latest = r.ChangedAt
		}
	}
	return out, latest
}

// requestList lists the page's requests, of the given types or all.
func (k *checker) requestList(ctx context.Context, id int, types ...string) (*tools.RequestList, error) {
	args := map[string]any{"pageId": id}
	if len(types) > 0 {
		args["resourceTypes"] = types
	}
	ans, err := k.a.call(ctx, "list_network_requests", args)
	if err != nil {
		return nil, err
	}
	if ans.Requests == nil {
		return nil, errors.New("list_network_requests: no list in its answer")
	}
	return ans.Requests, nil
}

// mainDocument is the first document request that is not a redirect: the
// hops of a redirect chain come first, frames' documents after.
func mainDocument(docs []tools.RequestInfo) (tools.RequestInfo, bool) {
	for _, d := range docs {
		if s := d.HTTPStatus; s < 300 || s >= 400 {
			return d, true
		}
	}
	return tools.RequestInfo{}, false
}

// waitingFor names up to three pending requests: "; still waiting for …".
func waitingFor(reqs []tools.RequestInfo) string {
	var names []string
	for _, r := range reqs {
		if r.Pending {
			names = append(names, r.Method+" "+r.URL)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; still waiting for " + firstThree(names, ", ")
}

// firstThree joins up to three names with sep, saying how many more there
// are.
func firstThree(names []string, sep string) string {
	if len(names) <= 3 {
		return strings.Join(names, sep)
	}
	return strings.Join(names[:3], sep) + fmt.Sprintf(" and %d more", len(names)-3)
}

// resourceFailure is the console's echo of a failed request, which the
// requests check reports with its URL (and --ignore-request applies to).
var resourceFailure = regexp.MustCompile(`^Failed to load resource\b`)

// maxLocated bounds the console errors whose source is looked up.
const maxLocated = 10

// console checks uncaught exceptions, console.error and console.assert
// (errors), console.warn (warnings) and DevTools issues (warnings), as
// list_console_messages reports them.
func (k *checker) console(ctx context.Context, id int, p *Page) {
	cc, ic := p.check(checkConsole), p.check(checkIssues)
	start := time.Now()
	defer func() { cc.Time, ic.Time = Millis(time.Since(start)), Millis(time.Since(start)) }()
	ans, err := k.a.call(ctx, "list_console_messages", map[string]any{"pageId": id})
	if err == nil && ans.Messages == nil {
		err = errors.New("list_console_messages: no list in its answer")
	}
	if err != nil {
		cc.broken(err)
		ic.broken(err)
		return
	}
	if n := ans.Messages.Dropped; n > 0 {
		cc.add(Warning, "%d more console messages and DevTools issues than pagemux keeps of a page were logged, and not checked; the counts are of those kept", n)
	}
	located := 0
	for _, m := range ans.Messages.Messages {
		if resourceFailure.MatchString(m.Text) || (k.o.IgnoreConsole != nil && k.o.IgnoreConsole.MatchString(m.Text)) {
			continue
		}
		times := ""
		if m.Count > 1 {
			times = fmt.Sprintf(" [%d times]", m.Count)
		}
		switch m.Type {
		case "error", "assert":
			where := ""
			if located < maxLocated {
				located++
				if src := k.messageSource(ctx, id, m.ID); src != "" {
					where = " (" + src + ")"
				}
			}
			cc.add(Error, "%s%s%s", oneLine(m.Text), where, times)
		case "warn", "warning":
			cc.add(Warning, "%s%s", oneLine(m.Text), times)
		case "issue":
			ic.add(Warning, "%s%s", oneLine(m.Text), times)
		}
	}
}

// messageSource is where get_console_message says message msgid came
// from (tools.ConsoleMessage.Location); "" when it does not say, or fails.
func (k *checker) messageSource(ctx context.Context, id, msgid int) string {
	ans, err := k.a.call(ctx, "get_console_message", map[string]any{"pageId": id, "msgid": msgid})
	if err != nil || ans.Message == nil {
		return ""
	}
	return ans.Message.Location
}

// requests checks the page's requests besides its document: HTTP errors
// and network failures. Aborted requests (net::ERR_ABORTED: the page or
// Chrome cancelled them) are not failures.
func (k *checker) requests(ctx context.Context, id, docID int, p *Page) {
	c := p.check(checkRequests)
	start := time.Now()
	defer func() { c.Time = Millis(time.Since(start)) }()
	list, err := k.requestList(ctx, id)
	if err != nil {
		c.broken(err)
		return
	}
	if n := list.Dropped; n > 0 {
		c.add(Warning, "%d more requests than pagemux keeps of a page were made, and not checked", n)
	}
	for _, r := range list.Requests {
		if r.ID == docID || chromeOwn(r) || (k.o.IgnoreRequest != nil && k.o.IgnoreRequest.MatchString(r.URL)) {
			continue
		}
		switch s := r.HTTPStatus; {
		case s >= 400:
			c.add(Error, "%s %s: HTTP %d %s", r.Method, r.URL, s, http.StatusText(s))
		case r.Failure != "" && r.Failure != "net::ERR_ABORTED":
			c.add(Error, "%s %s: %s", r.Method, r.URL, r.Failure)
		}
	}
}

// chromeOwn says whether Chrome made the request for itself rather than for
// the page: its look for /favicon.ico, which it makes or not depending on
// timing, so a site without one would fail by chance.
func chromeOwn(r tools.RequestInfo) bool {
	u, err := url.Parse(r.URL)
	return err == nil && u.Path == "/favicon.ico" && r.Method == "GET"
}

// expectScript reads the page's URL and looks for the expected texts (in
// what the page shows, innerText) and selectors.
const expectScript = `() => {
  const texts = %s, sels = %s;
  const shown = document.body ? document.body.innerText : "";
  return {
    href: location.href,
    texts: texts.map(t => shown.includes(t)),
    sels: sels.map(s => { try { return document.querySelector(s) ? "" : "missing"; } catch (e) { return "invalid selector: " + e.message; } }),
  };
}`

func (k *checker) expectations(ctx context.Context, id int, p *Page) {
	texts, _ := json.Marshal(k.o.ExpectText)
	sels, _ := json.Marshal(k.o.ExpectSelector)
	if k.o.ExpectText == nil {
		texts = []byte("[]")
	}
	if k.o.ExpectSelector == nil {
		sels = []byte("[]")
	}
	var checks []*Check
	for _, t := range k.o.ExpectText {
		checks = append(checks, p.check("expect-text: "+t))
	}
	for _, s := range k.o.ExpectSelector {
		checks = append(checks, p.check("expect-selector: "+s))
	}
	var got struct {
		Href  string   `json:"href"`
		Texts []bool   `json:"texts"`
		Sels  []string `json:"sels"`
	}
	err := k.a.scriptValue(ctx, map[string]any{"pageId": id, "function": fmt.Sprintf(expectScript, texts, sels)}, &got)
	if err == nil && (len(got.Texts) != len(k.o.ExpectText) || len(got.Sels) != len(k.o.ExpectSelector)) {
		err = fmt.Errorf("evaluate_script: unexpected answer %+v", got)
	}
	if err != nil {
		for _, c := range checks {
			c.broken(err)
		}
		return
	}
	if got.Href != "" && got.Href != p.URL {
		p.FinalURL = got.Href
	}
	for i, t := range k.o.ExpectText {
		if !got.Texts[i] {
			checks[i].add(Error, "the page does not show %q", t)
		}
	}
	for i, s := range k.o.ExpectSelector {
		switch r := got.Sels[i]; r {
		case "":
		case "missing":
			checks[len(k.o.ExpectText)+i].add(Error, "no element matches %s", s)
		default:
			checks[len(k.o.ExpectText)+i].add(Error, "%s: %s", s, r)
		}
	}
}

// skipRest marks every check but load (and login) as skipped.
func (k *checker) skipRest(p *Page, why string) {
	for _, name := range k.checkNames(p.URL) {
		if c := p.check(name); name != checkLoad && name != checkLogin && c.Result == Pass && len(c.Problems) == 0 {
			c.skip(why)
		}
	}
}

// screenshotLimit bounds a screenshot, which Chrome may not take while a
// page is busy: the report matters more.
const screenshotLimit = 15 * time.Second

// screenshot saves a full-page screenshot of a failing page, once.
func (k *checker) screenshot(ctx context.Context, n, id int, p *Page) {
	if k.shots == "" || p.Screenshot != "" {
		return
	}
	defer p.timed(PhaseScreenshot)()
	path := filepath.Join(k.shots, shotName(n, p.URL))
	// A capture waits for its tab to be at the front of the run's window
	// (browser.Page.HoldFront), for other captures only: an audit has a
	// window of its own.
	ctx, cancel := context.WithTimeout(ctx, screenshotLimit)
	defer cancel()
	defer k.redact(p) // before a retry's line shows the problems
	if _, err := k.a.call(ctx, "take_screenshot", map[string]any{"pageId": id, "fullPage": true, "filePath": path}); err != nil {
		k.prog.note(fmt.Sprintf("no screenshot of %s: %v", p.URL, err))
		return
	}
	p.Screenshot = path
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// shotName is a file name for page n's screenshot: "03-example.com-pricing.png".
func shotName(n int, u string) string {
	s := u
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	s = strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-")
	if len(s) > 80 {
		s = s[:80]
	}
	return fmt.Sprintf("%02d-%s.png", n+1, s)
}

// oneLine keeps the first line of a text, noting that there is more.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if first, _, ok := strings.Cut(s, "\n"); ok {
		return first + " …"
	}
	return s
}
