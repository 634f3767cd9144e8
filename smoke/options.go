// Package smoke is pagemux's CI command: it loads a site's key pages in
// parallel tabs of a real Chrome, through the same MCP tools and per-page
// locks an agent uses, checks each page (HTTP status, uncaught exceptions and
// console errors, failed requests, DevTools issues, expected text and
// elements, accessibility with axe-core, links, Lighthouse scores) and
// reports which are broken. Steps (--steps, --login) act on pages before
// the checks; --crawl adds the pages their links lead to.
//
// Smoke reaches Chrome only through pagemux's tools, over an in-process
// MCP client, reading their typed answers (tools.StructuredMeta) rather
// than their text: the agents' tools, and for what only smoke does (steps
// by CSS selector, an audit's window of its own, a script in every
// document of a tab) the step tools that tools.Options.StepTools adds. The
// setup before any page exists (run.go: browser.New and Start, the
// --header rules, the cookies of --cookie and --storage-state) is
// the one place it calls browser/ itself.
//
// A check is a name in checkNames (page.go), in report order, and the code
// that adds its problems to p.check(name) as the page is checked (check,
// page.go), reading what it needs through the tools' typed answers
// (calls.go); its flag goes in options.go. Test it with options(t, flags…)
// and run(t, o, bc) (smoke_test.go) against a site of the test's own, and
// the binary's command line with smokeBinary in the root package.
//
// It does not parse pagemux's server flags: main adds the browser flags to
// the same flag set and hands over the browser.Config they make.
package smoke

import (
	"bufio"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Exit codes of a run.
const (
	// ExitPass means every check of every page passed.
	ExitPass = 0
	// ExitFail means a check failed.
	ExitFail = 1
	// ExitUsage means bad flags or URLs, or a browser that could not start:
	// nothing was checked.
	ExitUsage = 2
)

// Severity ranks a problem; --fail-on says which ones fail a page.
type Severity string

// The severities, lowest first.
const (
	Warning Severity = "warning"
	Error   Severity = "error"
)

// Options are what the smoke flags say.
type Options struct {
	// URLs are the pages to check, in report order. Empty means the demo site.
	URLs []string
	// URLsFile is --urls: one URL a line, # comments.
	URLsFile string
	// Sitemaps are --sitemap: sitemaps whose pages are checked after URLs.
	// SitemapBase, from --base-url, is the scheme and host their pages are
	// checked on; nil keeps the sitemap's.
	Sitemaps    []string
	SitemapBase *url.URL
	// MaxPages caps the pages checked, the first ones kept; 0 checks all.
	MaxPages int
	// Retries is how many more times a failing page is checked, in a new
	// tab, before it counts as failed.
	Retries int
	// Parallel is how many pages load at once.
	Parallel int
	// Timeout bounds the load of one page and the wait for its network to
	// go quiet.
	Timeout time.Duration
	// Idle is how long the network must be quiet (no request pending, none
	// new) before the checks run.
	Idle time.Duration
	// IgnoreRequest and IgnoreConsole drop failed requests (by URL) and
	// console messages (by text) that match.
	IgnoreRequest, IgnoreConsole *regexp.Regexp
	// ExpectText and ExpectSelector must each be on every page.
	ExpectText, ExpectSelector []string
	// Lighthouse maps a category to its lowest passing score (0 to 1);
	// empty, with no LighthouseAudits or LighthouseBudgets, runs no audit.
	Lighthouse map[string]float64
	// LighthouseAudits (--lighthouse-audit) maps an audit id to its lowest
	// passing score; its category is audited too.
	LighthouseAudits map[string]float64
	// LighthouseBudgets (--lighthouse-budgets) are budget.json's entries,
	// checked from each report (performance is audited for them).
	LighthouseBudgets []Budget
	// LighthouseRuns (--lighthouse-runs) is how many times each page is
	// audited; the median scores are judged. 0 counts as 1.
	LighthouseRuns int
	// FailOn is the lowest severity that fails a page.
	FailOn Severity
	// JSONPath, JUnitPath and ScreenshotDir are the optional outputs.
	JSONPath, JUnitPath, ScreenshotDir string
	// LogFile receives pagemux's and Chrome's logs; empty discards them.
	LogFile string
	// Live forces the live progress display on (true) or off (false);
	// nil means on when stderr is a terminal.
	Live *bool
	// Headers go with every request to the origins of the pages checked
	// (--header, --basic-auth), and to no other origin; never printed.
	Headers http.Header
	// Cookies (--cookie, NAME=VALUE) are set for the hosts of the pages
	// checked before the first loads; never printed.
	Cookies [][2]string
	// StorageState (--storage-state) is set before the first page loads:
	// its cookies browser-wide, its localStorage in each tab; never printed.
	StorageState *StorageState
	// Steps (--steps) run in each page after it loads, before its checks.
	Steps *StepsFile
	// Login (--login) runs once, before every page, in a tab of its own.
	Login []Step
	// Crawl (--crawl) is how many pages more to check, found by following
	// the same-origin links of those checked.
	Crawl int
	// CheckLinks (--check-links) requests every same-origin link of each
	// page.
	CheckLinks bool
	// A11y are the --a11y flags; no Tags, no a11y check.
	A11y A11yOptions
}

// flagValues holds the flags as typed, before Finish checks them.
type flagValues struct {
	o             *Options
	ignoreRequest string
	ignoreConsole string
	lighthouse    string
	lhAudits      listFlag
	lhBudgets     string
	failOn        string
	baseURL       string
	texts, sels   listFlag
	headers       listFlag
	cookies       listFlag
	basicAuth     string
	sitemaps      listFlag
	a11y          string
	a11yIgnore    listFlag
	a11yImpact    string
	storageState  string
	steps, login  string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Flags are the smoke flags registered on a flag set. Finish turns what they
// said, and the URLs given as arguments, into Options.
type Flags struct{ v *flagValues }

// AddFlags registers the smoke flags on fs. It does not add the browser flags
// (--executable-path, --browser-url, --headless …): main does, as the server
// has them too.
func AddFlags(fs *flag.FlagSet) *Flags {
	v := &flagValues{o: &Options{}}
	o := v.o
	fs.StringVar(&o.URLsFile, "urls", "", "read the URLs to check from `FILE`, one a line (# starts a comment), after those given as arguments")
	fs.StringVar(&v.baseURL, "base-url", "", "check the paths given (/pricing, in arguments or --urls) on `URL`, such as a preview deployment's, as a link there would lead; with no other URL, check URL itself")
	fs.Var(&v.sitemaps, "sitemap", "check every page of the sitemap at `URL` (a sitemap index's too), after the URLs given; a path is on --base-url, and so are the pages, whatever host the sitemap names; repeatable")
	fs.IntVar(&o.MaxPages, "max-pages", 0, "check the first `N` pages only (0: all)")
	fs.IntVar(&o.Retries, "retries", 0, "check a failing page up to `N` more times, in a new tab, before it fails; a page that passed only on a retry gets a warning saying so (which --fail-on warning fails)")
	fs.IntVar(&o.Parallel, "parallel", 4, "load `N` pages at once, each in its own tab")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "the longest time `D` a page may take to load and for its network to go quiet")
	fs.DurationVar(&o.Idle, "network-idle", 500*time.Millisecond, "the time `D` the network must be quiet for before a page is checked")
	fs.StringVar(&v.ignoreRequest, "ignore-request", "", "ignore failed requests whose URL matches `REGEX`")
	fs.StringVar(&v.ignoreConsole, "ignore-console", "", "ignore console messages (and DevTools issues) whose text matches `REGEX`")
	fs.Var(&v.texts, "expect-text", "every page must show `TEXT`; repeatable")
	fs.Var(&v.sels, "expect-selector", "every page must have an element matching `CSS`; repeatable")
	fs.StringVar(&v.lighthouse, "lighthouse", "", "audit every page with Lighthouse and require these `SCORES`, such as accessibility=0.9,seo=0.8 or accessibility=90% (a score is from 0 to 1, a percent has its sign: a bare 90 is refused as ambiguous; categories: "+strings.Join(Categories, ", ")+"); audits without performance run side by side, up to --parallel, each in a window of its own, while the other pages go on; with performance they run one at a time, as another audit's load would skew its timings")
	fs.Var(&v.lhAudits, "lighthouse-audit", "fail a page whose Lighthouse audit `ID=SCORE` scores below SCORE (0 to 1, or a percent such as 90%), such as color-contrast=1 or largest-contentful-paint=0.9; the ids are the keys of \"audits\" in Lighthouse's JSON report, and the audit's category is run too (performance makes the audits take turns); repeatable, or comma-separated")
	fs.StringVar(&v.lhBudgets, "lighthouse-budgets", "", "fail a page over the budgets of `FILE`, in Lighthouse's budget.json format (per path: resourceSizes in KiB, resourceCounts, timings in ms); Lighthouse 12 no longer checks budgets, so pagemux does, from the report's network requests and metrics; runs the performance category")
	fs.IntVar(&o.LighthouseRuns, "lighthouse-runs", 1, "audit each page `N` times (1 to 9) and judge the median score of each category and audit (the report says N), as scores vary from run to run")
	fs.StringVar(&v.a11y, "a11y", "", "check every page with axe-core (built in) for the rules of `LEVELS`, comma-separated: wcag2a, wcag2aa, wcag2aaa, wcag21a, wcag21aa, wcag22aa (each level includes those below it), best-practice, section508, EN-301-549; every violation is listed with its rule, impact, elements and help page")
	fs.Var(&v.a11yIgnore, "a11y-ignore", "do not run the axe `RULE`, such as color-contrast (a violation's first word in the report); repeatable, or comma-separated")
	fs.StringVar(&v.a11yImpact, "a11y-impact", "minor", "the lowest `IMPACT` of an axe violation that fails a page: minor, moderate, serious or critical; those below it are warnings")
	fs.StringVar(&v.failOn, "fail-on", "error", "`LEVEL` that fails a page: error, or warning (console warnings, DevTools issues, a network that never went quiet)")
	fs.StringVar(&o.JSONPath, "json", "", "write the full report as JSON to `FILE`")
	fs.StringVar(&o.JUnitPath, "junit", "", "write a JUnit XML report to `FILE`: one testcase per page and check")
	fs.StringVar(&o.ScreenshotDir, "screenshots", "", "save a full-page screenshot of every failing page in `DIR`, and keep there each audited page's Lighthouse reports (report.html and report.json in NN-PAGE-lighthouse/), named in the output")
	fs.Var(&v.headers, "header", "send `'NAME: VALUE'` with every request to the checked pages' origins (never to another origin), such as a preview deployment's token; $VAR or ${VAR} in VALUE is read from the environment, so that the secret stays off the command line; never printed; repeatable")
	fs.Var(&v.cookies, "cookie", "set the cookie `NAME=VALUE` for the checked pages' hosts before the first page loads, such as a logged-in session ($VAR read from the environment, as --header's); never printed; repeatable")
	fs.StringVar(&v.basicAuth, "basic-auth", "", "log in to the checked pages' origins with HTTP basic auth, `USER:PASSWORD` ($VAR read from the environment, as --header's); never printed")
	fs.BoolVar(&o.CheckLinks, "check-links", false, "request every link (<a href>) of each page to its own origin, HEAD then GET if HEAD fails, as the page would (its cookies and headers); a link answering 400 or more, or failing, fails the page; each link once per run; --ignore-request REGEX skips links, and with a session (--login, --cookie, --storage-state) sign-out links are skipped")
	fs.IntVar(&o.Crawl, "crawl", 0, "also check up to `N` pages found by following the same-origin links of the pages checked (and of those found, breadth first), each once; files (.pdf, images …) and, with a session, sign-out links are not followed")
	fs.StringVar(&v.storageState, "storage-state", "", "start logged in: set the cookies (scoped as the file says) and localStorage (before each page's scripts run) of `FILE`, as Playwright's storageState({path}) writes it; never printed")
	fs.StringVar(&v.steps, "steps", "", "before a page is checked, run the steps of `FILE` (JSON, or YAML for .yaml/.yml): navigate, click, fill, press, waitForSelector, waitForURL, waitForText; for every page, or by page URL or path ({\"all\": [...], \"pages\": {\"/checkout\": [...]}}); a fill's value may be $VAR, from the environment, never printed; a failed step fails the page, naming it")
	fs.StringVar(&v.login, "login", "", "log in first: run the steps of `FILE` (as --steps', a list, its first a navigate) once, before every page, in a tab of the same browser context, so that every page has its cookies; a failed step fails every page, naming it")
	fs.StringVar(&o.LogFile, "log-file", "", "append pagemux's logs to `FILE` (default: none)")
	return &Flags{v: v}
}

// Categories are the Lighthouse categories --lighthouse takes, in
// Lighthouse's order.
var Categories = []string{"performance", "accessibility", "best-practices", "seo"}

// Finish checks the flags and the URL arguments, reads --urls, and returns
// the options. Its errors say what to change.
func (f *Flags) Finish(args []string) (*Options, error) {
	v, o := f.v, f.v.o
	if o.Parallel < 1 || o.Parallel > 64 {
		return nil, fmt.Errorf("--parallel %d: want 1 to 64", o.Parallel)
	}
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("--timeout %v: want a positive duration, such as 30s", o.Timeout)
	}
	if o.Idle < 0 || o.Idle >= o.Timeout {
		return nil, fmt.Errorf("--network-idle %v: want 0 or more, and less than --timeout (%v)", o.Idle, o.Timeout)
	}
	var err error
	if o.IgnoreRequest, err = compile("--ignore-request", v.ignoreRequest); err != nil {
		return nil, err
	}
	if o.IgnoreConsole, err = compile("--ignore-console", v.ignoreConsole); err != nil {
		return nil, err
	}
	switch v.failOn {
	case "error":
		o.FailOn = Error
	case "warning", "warn":
		o.FailOn = Warning
	default:
		return nil, fmt.Errorf("--fail-on %q: want error or warning", v.failOn)
	}
	if o.Lighthouse, err = ParseThresholds(v.lighthouse); err != nil {
		return nil, err
	}
	if o.LighthouseAudits, err = parseAuditThresholds(v.lhAudits); err != nil {
		return nil, err
	}
	if v.lhBudgets != "" {
		if o.LighthouseBudgets, err = readBudgets(v.lhBudgets); err != nil {
			return nil, err
		}
	}
	if o.LighthouseRuns < 1 || o.LighthouseRuns > maxRuns {
		return nil, fmt.Errorf("--lighthouse-runs %d: want 1 to %d", o.LighthouseRuns, maxRuns)
	}
	if o.LighthouseRuns > 1 && !o.audits() {
		return nil, fmt.Errorf("--lighthouse-runs %d: nothing to audit; add --lighthouse CATEGORY=SCORE, --lighthouse-audit ID=SCORE or --lighthouse-budgets FILE", o.LighthouseRuns)
	}
	for _, t := range v.texts {
		if t == "" {
			return nil, errors.New("--expect-text: give the text to look for")
		}
	}
	for _, s := range v.sels {
		if s == "" {
			return nil, errors.New("--expect-selector: give a CSS selector, such as main h1")
		}
	}
	o.ExpectText, o.ExpectSelector = v.texts, v.sels
	if v.storageState != "" {
		if o.StorageState, err = readStorageState(v.storageState); err != nil {
			return nil, err
		}
	}
	if o.A11y, err = parseA11y(v.a11y, v.a11yIgnore, v.a11yImpact); err != nil {
		return nil, err
	}
	if o.Headers, err = v.requestHeaders(); err != nil {
		return nil, err
	}
	for _, raw := range v.cookies {
		name, value, ok := strings.Cut(raw, "=")
		if name = strings.TrimSpace(name); !ok || name == "" || strings.ContainsAny(name, " ;,\t") {
			return nil, fmt.Errorf("--cookie %q: want NAME=VALUE, such as 'session=$SESSION'", name)
		}
		value, err := fromEnv("--cookie "+name, value)
		if err != nil {
			return nil, err
		}
		o.Cookies = append(o.Cookies, [2]string{name, value})
	}
	urls := slices.Clone(args)
	if o.URLsFile != "" {
		more, err := readURLs(o.URLsFile)
		if err != nil {
			return nil, err
		}
		if len(more) == 0 {
			return nil, fmt.Errorf("--urls %s: no URL in the file; give one a line", o.URLsFile)
		}
		urls = append(urls, more...)
	}
	var base *url.URL
	if v.baseURL != "" {
		b, err := checkURL(v.baseURL)
		if err != nil {
			return nil, fmt.Errorf("--base-url: %w", err)
		}
		base, _ = url.Parse(b)
		if len(urls) == 0 && len(v.sitemaps) == 0 {
			urls = []string{b}
		}
	}
	if o.Retries < 0 || o.Retries > 10 {
		return nil, fmt.Errorf("--retries %d: want 0 to 10", o.Retries)
	}
	if o.Crawl < 0 || o.Crawl > 10000 {
		return nil, fmt.Errorf("--crawl %d: want 0 (no crawl) to 10000 pages", o.Crawl)
	}
	if o.MaxPages < 0 {
		return nil, fmt.Errorf("--max-pages %d: want 0 (all) or more", o.MaxPages)
	}
	for i, u := range urls {
		if urls[i], err = onBase(u, base); err != nil {
			return nil, err
		}
	}
	o.URLs = urls
	for _, sm := range v.sitemaps {
		u, err := onBase(sm, base)
		if err == nil && !strings.HasPrefix(u, "http") {
			err = fmt.Errorf("%q: want an http(s) URL", sm)
		}
		if err != nil {
			return nil, fmt.Errorf("--sitemap: %w", err)
		}
		o.Sitemaps = append(o.Sitemaps, u)
	}
	o.SitemapBase = base
	if v.steps != "" {
		if o.Steps, err = readStepsFile("--steps", v.steps, base, true); err != nil {
			return nil, err
		}
	}
	if v.login != "" {
		if o.Login, err = readLogin(v.login, base, o.URLs); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// readLogin reads --login: a list of steps whose first is a navigate, its
// path on --base-url, or on the first page's site.
func readLogin(file string, base *url.URL, urls []string) ([]Step, error) {
	sf, err := readStepsFile("--login", file, base, false)
	if err != nil {
		return nil, err
	}
	steps := sf.All
	if steps[0].Kind != stepNavigate {
		return nil, fmt.Errorf("--login %s: step 1 is %s: the first step is a navigate, to the login page, such as {\"navigate\": \"/login\"}", file, steps[0].describe())
	}
	for i, s := range steps {
		if s.Kind != stepNavigate || !strings.HasPrefix(s.Target, "/") {
			continue
		}
		on := base
		if on == nil && len(urls) > 0 {
			on, _ = url.Parse(urls[0])
		}
		if on == nil {
			return nil, fmt.Errorf("--login %s: step %d (%s) is a path: give --base-url, or the full URL", file, i+1, s.describe())
		}
		ref, err := url.Parse(s.Target)
		if err != nil {
			return nil, fmt.Errorf("--login %s: step %d (%s): %v", file, i+1, s.describe(), err)
		}
		steps[i].Target = on.ResolveReference(ref).String()
	}
	return steps, nil
}

func compile(flagName, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v (Go regexp syntax, as in regexp/syntax)", flagName, expr, err)
	}
	return re, nil
}

// ParseThresholds reads --lighthouse: category=score pairs, comma-separated,
// a score from 0 to 1 or a percent, 0.9 or 90% (parseScore).
func ParseThresholds(s string) (map[string]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		cat, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		cat = strings.TrimSpace(cat)
		if !ok || !slices.Contains(Categories, cat) {
			return nil, fmt.Errorf("--lighthouse %q: want CATEGORY=SCORE pairs, such as accessibility=0.9,seo=0.8, with categories among %s", s, strings.Join(Categories, ", "))
		}
		f, err := parseScore(val)
		if err != nil {
			return nil, fmt.Errorf("--lighthouse %s=%s: %v", cat, val, err)
		}
		out[cat] = f
	}
	return out, nil
}

// readURLs reads a --urls file.
func readURLs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--urls: %w", err)
	}
	defer f.Close()
	var urls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			line = line[:i] // a # inside a URL is its fragment
		}
		if line = strings.TrimSpace(line); line != "" {
			urls = append(urls, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--urls %s: %w", path, err)
	}
	return urls, nil
}

// onBase makes a path (/pricing) a URL on base, as a link there would, and
// checks the URL.
func onBase(u string, base *url.URL) (string, error) {
	if u = strings.TrimSpace(u); strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		if base == nil {
			return "", fmt.Errorf("%q is a path: give --base-url with the site to check it on, such as --base-url https://preview.example.com", u)
		}
		ref, err := url.Parse(u)
		if err != nil {
			return "", fmt.Errorf("%q is not a path to check: %v", u, err)
		}
		u = base.ResolveReference(ref).String()
	}
	return checkURL(u)
}

// checkURL refuses what Chrome could not load as a page to check; a URL
// without a scheme gets http:// when it names a loopback host, else https://.
func checkURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") && !strings.HasPrefix(s, "file:") && !strings.HasPrefix(s, "data:") && !strings.HasPrefix(s, "about:") {
		scheme := "https://"
		if host := strings.Split(strings.Split(s, "/")[0], ":")[0]; host == "localhost" || host == "127.0.0.1" || host == "[::1]" {
			scheme = "http://"
		}
		s = scheme + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") || (u.Scheme != "file" && u.Host == "") {
		return "", fmt.Errorf("%q is not a URL to check: want http(s)://host/path or file:///path", raw)
	}
	return u.String(), nil
}

// requestHeaders reads --header and --basic-auth. An error names the flag
// and the name of what is wrong, never a value.
func (v *flagValues) requestHeaders() (http.Header, error) {
	var h http.Header
	for _, raw := range v.headers {
		name, value, ok := strings.Cut(raw, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
			return nil, fmt.Errorf("--header %q: want 'NAME: VALUE', such as 'Authorization: Bearer $TOKEN'", strings.SplitN(raw, ":", 2)[0])
		}
		value, err := fromEnv("--header "+name, strings.TrimSpace(value))
		if err != nil {
			return nil, err
		}
		if h == nil {
			h = http.Header{}
		}
		h.Add(name, value)
	}
	if v.basicAuth != "" {
		cred, err := fromEnv("--basic-auth", v.basicAuth)
		if err != nil {
			return nil, err
		}
		if user, _, ok := strings.Cut(cred, ":"); !ok || user == "" {
			return nil, errors.New("--basic-auth: want USER:PASSWORD (a $VAR for the password keeps it off the command line)")
		}
		if h == nil {
			h = http.Header{}
		}
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	}
	return h, nil
}

// fromEnv expands $VAR and ${VAR} in value from the environment; a VAR
// that is not set is an error naming it.
func fromEnv(flagName, value string) (string, error) {
	var missing []string
	out := os.Expand(value, func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, "$"+name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s: %s is not set in the environment", flagName, strings.Join(missing, ", "))
	}
	return out, nil
}
