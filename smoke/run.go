package smoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/lighthouse"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/tools"
)

// UsageError is a run that could not begin: bad options, a browser that
// did not start, Lighthouse missing. Its message says what to do.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// startLimit bounds Chrome's start (it takes about a second).
const startLimit = time.Minute

// lockWait bounds a call's wait in a lock queue. Audits queue behind each
// other on the browser's audit key, a few seconds each, so it is long.
const lockWait = time.Hour

// Run checks the pages, writes the summary to stdout, progress to stderr and
// the files asked for, and returns the exit code: ExitPass, ExitFail or
// ExitUsage, with a message on stderr that says what to do.
func Run(ctx context.Context, o *Options, bc browser.Config, stdout, stderr io.Writer) int {
	live := isTerminal(stderr)
	if o.Live != nil {
		live = *o.Live
	}
	if len(o.Sitemaps) > 0 {
		pages, err := readSitemaps(ctx, o.Sitemaps, o.SitemapBase, o.Timeout, o.Headers)
		if err != nil {
			fmt.Fprintf(stderr, "pagemux smoke: %v\nGive a sitemap that answers with <urlset> or <sitemapindex> XML, or the pages themselves as URLs.\n", err)
			return ExitUsage
		}
		given := map[string]bool{}
		for _, u := range o.URLs {
			given[u] = true
		}
		for _, p := range pages {
			if !given[p] {
				o.URLs = append(o.URLs, p)
			}
		}
	}
	if o.MaxPages > 0 && len(o.URLs) > o.MaxPages {
		fmt.Fprintf(stderr, "Checking the first %d of %d pages (--max-pages).\n", o.MaxPages, len(o.URLs))
		o.URLs = o.URLs[:o.MaxPages]
	}
	var demo *demoSite
	if len(o.URLs) == 0 {
		var err error
		if demo, err = startDemo(); err != nil {
			fmt.Fprintln(stderr, "pagemux smoke: the demo site:", err)
			return ExitUsage
		}
		defer demo.close()
		o.URLs = demo.urls
		fmt.Fprintf(stderr, "No URL given: checking pagemux's demo site at %s (pagemux smoke --help for yours).\n", demo.origin)
	}
	names, origin := displayNames(o.URLs)
	prog := newProgress(stderr, live, names)
	prog.origin = origin
	r, err := runChecks(ctx, o, bc, prog)
	prog.close()
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "pagemux smoke:", err)
		return ExitUsage
	case err != nil:
		fmt.Fprintln(stderr, "pagemux smoke:", err)
		return ExitUsage
	}
	r.Demo = demo != nil
	var checked []string // --crawl's pages too
	for _, p := range r.Pages {
		checked = append(checked, p.URL)
	}
	names, origin = displayNames(checked)
	writeSummary(stdout, r, names, origin)
	code := ExitPass
	if !r.Passed {
		code = ExitFail
	}
	if o.JSONPath != "" {
		if err := r.writeJSON(o.JSONPath); err != nil {
			fmt.Fprintln(stderr, "pagemux smoke:", err)
			code = ExitUsage
		}
	}
	if o.JUnitPath != "" {
		if err := r.writeJUnit(o.JUnitPath); err != nil {
			fmt.Fprintln(stderr, "pagemux smoke:", err)
			code = ExitUsage
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "pagemux smoke: interrupted; the report above is incomplete")
		code = ExitUsage
	}
	return code
}

// runChecks starts Chrome as bc says, checks every page of o through pagemux's
// tools (page lock mode, an in-process MCP client), closes Chrome and
// returns the report. A run that could not begin is a *UsageError; a page
// that fails is in the report, not an error. prog may be nil.
func runChecks(ctx context.Context, o *Options, bc browser.Config, prog *progress) (*Report, error) {
	r := &Report{Version: tools.Version, Started: time.Now(), Parallel: o.Parallel, FailOn: o.FailOn}
	if o.audits() {
		if _, err := lighthouse.Find(); err != nil {
			return nil, &UsageError{fmt.Sprintf("--lighthouse: %v", err)}
		}
	}
	// A key may name a page --crawl is yet to find.
	if keys := o.Steps.unmatched(o.URLs); len(keys) > 0 && o.Crawl == 0 {
		return nil, &UsageError{fmt.Sprintf("--steps: the pages %q are none of the pages checked; key a page's steps by its URL as checked (such as %s) or by its path", keys, o.URLs[0])}
	}
	log, closeLog, err := logger(o.LogFile)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	tmp, err := os.MkdirTemp("", "pagemux-smoke-")
	if err != nil {
		return nil, fmt.Errorf("a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	workspaces := []string{tmp}
	shots := ""
	if o.ScreenshotDir != "" {
		if shots, err = filepath.Abs(o.ScreenshotDir); err == nil {
			err = os.MkdirAll(shots, 0o755)
		}
		if err != nil {
			return nil, &UsageError{fmt.Sprintf("--screenshots %s: %v", o.ScreenshotDir, err)}
		}
		workspaces = append(workspaces, shots)
	}

	bc.Logger = log
	// Tabs, each kept visible and focused as the tab at the front is:
	// Chrome makes windows one after another, a tab in a fraction of the
	// time. Smoke never resizes a page, so sharing a window's size costs
	// nothing.
	bc.Tabs = true
	prog.status("starting Chrome")
	b := browser.New(bc)
	defer b.Close()
	defer lighthouse.CloseIdle() // the audits' node runners, before Chrome closes
	if len(o.Headers) > 0 {
		var rules []browser.OriginHeaders
		for _, origin := range siteOrigins(o) {
			rules = append(rules, browser.OriginHeaders{Origin: origin, Headers: o.Headers})
		}
		if err := b.SetOriginHeaders(rules); err != nil {
			return nil, &UsageError{err.Error()}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, startLimit)
	err = b.Start(sctx)
	cancel()
	r.BrowserStart = Millis(time.Since(r.Started))
	prog.status("")
	if err != nil {
		return nil, &UsageError{startAdvice(err, bc)}
	}
	if len(o.Cookies) > 0 {
		var cookies []*network.CookieParam
		for _, origin := range siteOrigins(o) {
			for _, c := range o.Cookies {
				cookies = append(cookies, &network.CookieParam{Name: c[0], Value: c[1], URL: origin + "/"})
			}
		}
		if err := b.SetCookies(ctx, cookies); err != nil {
			return nil, fmt.Errorf("--cookie: %w", err)
		}
	}
	if st := o.StorageState; st != nil && len(st.Cookies) > 0 {
		if err := b.SetCookies(ctx, st.CookieParams()); err != nil {
			return nil, &UsageError{fmt.Sprintf("--storage-state: Chrome refused its cookies: %v; check their domain, path and sameSite", err)}
		}
	}
	locks := pagelock.New(pagelock.Options{Mode: pagelock.PerPage, Timeout: lockWait})
	// A load may take --timeout, and a step its own, past the tools'
	// default bound.
	toolTimeout := max(tools.DefaultToolTimeout, max(o.Timeout, o.longestStep())+afterLoad)
	// The step tools are smoke's alone: steps by CSS selector, a window
	// of its own for an audit, a script in every document of a tab.
	srv := tools.New(b, locks, tools.Options{Log: log, Workspaces: workspaces, MaxOutput: 0, ToolTimeout: toolTimeout, StepTools: true})
	c := client.NewClient(transport.NewInProcessTransport(srv.MCP()))
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the MCP client: %w", err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "pagemux-smoke", Version: tools.Version},
	}}); err != nil {
		return nil, fmt.Errorf("initialize the MCP session: %w", err)
	}

	k := &checker{a: &agent{c: c}, o: o, tmp: tmp, shots: shots, prog: prog, secrets: secretsOf(o), sharedClock: bc.Local()}
	if !bc.Attaches() {
		// The tab Chrome starts with is attached already: the first page
		// needs no new_page, which costs a tab's attach (0.3 s and more).
		k.spare = firstTab(ctx, k.a)
	}
	if o.StorageState != nil {
		k.initScript = o.StorageState.LocalStorageScript()
	}
	if len(o.A11y.Tags) > 0 {
		if k.axePath, err = writeAxeRunner(tmp, o.A11y); err != nil {
			return nil, err
		}
	}
	r.Pages = make([]*Page, len(o.URLs))
	for i, u := range o.URLs {
		r.Pages[i] = k.newPage(u)
	}
	if len(o.Login) == 0 || k.loginFirst(ctx, r.Pages) {
		k.runAll(ctx, r)
	}
	if o.audits() {
		r.Lighthouse = &LighthouseRun{Categories: o.auditCategories(), Runs: max(o.LighthouseRuns, 1)}
		for _, st := range locks.Stats() {
			if st.Key.Resource() == pagelock.Audit { // one per Chrome of a pool
				r.Lighthouse.Audits += int(st.Acquired)
				r.Lighthouse.AtOnce = max(r.Lighthouse.AtOnce, st.MaxHolders)
			}
		}
	}
	r.Passed = true
	for _, p := range r.Pages {
		r.Passed = r.Passed && p.Passed
	}
	r.Duration = Millis(time.Since(r.Started))
	return r, nil
}

// runAll checks the pages of r, o.Parallel at a time, and audits those
// that loaded on the side: up to o.Parallel at once without performance,
// one after another with it (auditors). With --crawl, the pages their
// links lead to join r.Pages as they are found, and are checked in turn.
func (k *checker) runAll(ctx context.Context, r *Report) {
	type job struct {
		n int
		p *Page
	}
	audits := make(chan job, len(r.Pages)+k.o.Crawl)
	var auditor sync.WaitGroup
	for range k.auditors() {
		auditor.Go(func() {
			for j := range audits {
				if ctx.Err() == nil {
					k.audit(ctx, j.n, j.p)
				}
				k.done(j.n, j.p)
			}
		})
	}
	sem := make(chan struct{}, k.o.Parallel)
	var workers sync.WaitGroup
	// found guards r.Pages, which the workers add crawled pages to; busy
	// counts the pages whose links are not in yet, so that the loop waits
	// for more pages while any may come.
	var mu sync.Mutex
	found := sync.NewCond(&mu)
	busy := 0
	for n := 0; ; n++ {
		mu.Lock()
		for n >= len(r.Pages) && busy > 0 {
			found.Wait()
		}
		if n >= len(r.Pages) {
			mu.Unlock()
			break
		}
		p := r.Pages[n]
		busy++
		mu.Unlock()
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			p.check(checkLoad).broken(ctx.Err())
			p.judge(k.o.FailOn)
			mu.Lock()
			busy--
			mu.Unlock()
			continue
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			p.started = time.Now()
			k.prog.set(n, "starting")
			audit := k.checkWithRetries(ctx, n, p)
			mu.Lock()
			k.crawl(ctx, r, p)
			busy--
			found.Broadcast()
			mu.Unlock()
			<-sem
			if audit && k.o.audits() {
				k.prog.set(n, "waiting for Lighthouse")
				audits <- job{n, p}
				return
			}
			k.done(n, p)
		}()
	}
	workers.Wait()
	close(audits)
	auditor.Wait()
	k.closing.Wait()
}

// firstTab is the blank tab a launched Chrome starts with, as list_pages
// shows it; none if there is no such tab.
func firstTab(ctx context.Context, a *agent) []int {
	ans, err := a.call(ctx, "list_pages", nil)
	if err != nil {
		return nil
	}
	for _, p := range ans.Pages {
		if p.URL == "about:blank" {
			return []int{p.ID}
		}
	}
	return nil
}

// auditors is how many audits run at once: none without Lighthouse; one
// when they score performance, which lighthouse_audit runs alone anyway
// (an auditor more would only hold a window open while it waits); else
// --parallel, each in a window of its own.
func (k *checker) auditors() int {
	switch {
	case !k.o.audits():
		return 0
	case !k.o.sharesAudits():
		return 1
	}
	return k.o.Parallel
}

// newPage is a page to check, its checks in report order.
func (k *checker) newPage(url string) *Page {
	p := &Page{URL: url}
	for _, name := range k.checkNames(url) {
		p.check(name)
	}
	return p
}

// checkWithRetries checks page n and, while it fails, up to --retries more
// times afresh. A pass on a retry is noted as a warning on the load check,
// with what failed the attempt before.
func (k *checker) checkWithRetries(ctx context.Context, n int, p *Page) (audit bool) {
	audit = k.check(ctx, n, p)
	for try := 1; !p.Passed && try <= k.o.Retries && ctx.Err() == nil; try++ {
		failed, shot := problemSummary(p, ""), p.Screenshot
		started, foundOn := p.started, p.FoundOn
		*p = *k.newPage(p.URL)
		p.started, p.Attempts, p.FoundOn = started, try+1, foundOn
		k.prog.set(n, fmt.Sprintf("failed (%s); retry %d of %d", failed, try, k.o.Retries))
		if audit = k.check(ctx, n, p); p.Passed {
			p.check(checkLoad).add(Warning, "passed on attempt %d of %d (--retries); attempt %d failed: %s", try+1, k.o.Retries+1, try, failed)
			p.Screenshot = shot
			p.judge(k.o.FailOn) // at --fail-on warning, the page fails now
			return audit
		}
	}
	return audit
}

// done settles page n's verdict and reports it.
func (k *checker) done(n int, p *Page) {
	if k.o.audits() && !p.Passed {
		for _, name := range k.o.lighthouseChecks() {
			if c := p.check(name); c.Result == Pass && len(c.Problems) == 0 && p.Scores == nil {
				c.skip("the page did not load")
			}
		}
	}
	p.judge(k.o.FailOn)
	k.redact(p)
	p.Time = Millis(time.Since(p.started))
	k.prog.finish(n, p)
}

// startAdvice is a failed start's message, with what to do about it.
func startAdvice(err error, bc browser.Config) string {
	if bc.Attaches() {
		return fmt.Sprintf("%v\nIs Chrome running with --remote-debugging-port at that address? Start it so, or drop --browser-url/--ws-endpoint to let pagemux launch one.", err)
	}
	return fmt.Sprintf("%v\nInstall Chromium (./scripts/setup, or apt-get install -y chromium), pass --executable-path PATH, or attach to a running Chrome with --browser-url http://127.0.0.1:9222.", err)
}

// logger writes pagemux's logs to file, or nowhere.
func logger(file string) (*slog.Logger, func(), error) {
	if file == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil)), func() {}, nil
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, &UsageError{fmt.Sprintf("--log-file: %v", err)}
	}
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})), func() { f.Close() }, nil
}

// siteOrigins are the origins of the pages checked: the URLs', the
// sitemaps' and --base-url's (where sitemap pages are checked). Headers and
// cookies go to them alone.
func siteOrigins(o *Options) []string {
	var origins []string
	add := func(raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return
		}
		if origin := u.Scheme + "://" + u.Host; !slices.Contains(origins, origin) {
			origins = append(origins, origin)
		}
	}
	for _, u := range o.URLs {
		add(u)
	}
	for _, u := range o.Sitemaps {
		add(u)
	}
	if o.SitemapBase != nil {
		add(o.SitemapBase.String())
	}
	return origins
}
