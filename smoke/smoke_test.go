package smoke

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joshdk/go-junit"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/testchrome"
	"github.com/pagemux/pagemux/internal/tmpcheck"
)

// The tests run real smoke checks: a real Chrome (one per run, as the
// command starts it) against a testdata site on loopback.

var (
	site     *httptest.Server
	siteQuit = make(chan struct{})
)

func TestMain(m *testing.M) {
	if _, err := (browser.Config{}).ResolveExecPath(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the smoke tests need Chrome:", err)
		os.Exit(1)
	}
	// Profiles and reports go to a directory of this test binary's own, so
	// that what a run leaves behind is seen.
	tmp, err := os.MkdirTemp("", "pagemux-smoke-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("TMPDIR", tmp)
	site = httptest.NewServer(siteHandler())
	code := m.Run()
	close(siteQuit)
	site.Close()
	if leaked := tmpcheck.LeftBehind(tmp, "pagemux-*"); len(leaked) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: left behind in TMPDIR:", leaked)
		code = 1
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

// siteHandler serves testdata/site, plus a page that answers after ?ms=
// milliseconds and a request that never gets an answer.
func siteHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("testdata/site")))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		d, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(d) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Slow</title><main><h1>Slow page</h1><p>after %d ms</p></main></html>`, d)
	})
	var flakyMu sync.Mutex
	flaky := map[string]int{}
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		// ?fail=N answers 503 to the first N loads of each ?key.
		fail, _ := strconv.Atoi(r.URL.Query().Get("fail"))
		flakyMu.Lock()
		flaky[r.URL.Query().Get("key")]++
		n := flaky[r.URL.Query().Get("key")]
		flakyMu.Unlock()
		if n <= fail {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Flaky</title><main><h1>Up now</h1></main></html>`)
	})
	mux.HandleFunc("/lighthouse-gate/", lighthouseGates.serve)
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-siteQuit:
		}
	})
	return mux
}

func siteURL(path string) string { return site.URL + path }

// lighthouseGates serves /lighthouse-gate/NAME?key=K&n=N, testdata/site's
// NAME; Lighthouse's own load of it (by its desktop user agent, a Mac's)
// waits until Lighthouse has asked for N pages of key K, or 20 s, which
// audits run one at a time would wait: it proves the audits ran side by
// side, and state says whether they did.
var lighthouseGates = &gates{m: map[string]*gateState{}}

type gates struct {
	mu sync.Mutex
	m  map[string]*gateState
}

type gateState struct {
	pages    map[string]bool
	open     chan struct{}
	timedOut bool
}

func (g *gates) serve(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/lighthouse-gate/")
	if strings.Contains(r.UserAgent(), "Macintosh") {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		g.mu.Lock()
		st := g.m[r.URL.Query().Get("key")]
		if st == nil {
			st = &gateState{pages: map[string]bool{}, open: make(chan struct{})}
			g.m[r.URL.Query().Get("key")] = st
		}
		if st.pages[name] = true; len(st.pages) == n {
			close(st.open)
		}
		g.mu.Unlock()
		select {
		case <-st.open:
		case <-time.After(20 * time.Second):
			g.mu.Lock()
			st.timedOut = true
			g.mu.Unlock()
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	http.ServeFile(w, r, filepath.Join("testdata/site", filepath.Base(name)))
}

// state says how many pages of key Lighthouse asked for, and whether one
// of them gave up waiting for the others.
func (g *gates) state(key string) (pages int, timedOut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.m[key]; st != nil {
		return len(st.pages), st.timedOut
	}
	return 0, false
}

// options are the options of a run, as the flags would make them.
func options(t *testing.T, args ...string) *Options {
	t.Helper()
	fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
	f := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o, err := f.Finish(fs.Args())
	if err != nil {
		t.Fatal(err)
	}
	off := false
	o.Live = &off
	return o
}

// run runs the command and returns its exit code, stdout and stderr.
func run(t *testing.T, o *Options, bc browser.Config) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := Run(ctx, o, bc, &stdout, &stderr)
	if testing.Verbose() {
		t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	return code, stdout.String(), stderr.String()
}

// readReport reads a --json report.
func readReport(t *testing.T, path string) *Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, b)
	}
	return &r
}

// problems lists a page's problems as "check: severity: message".
func problems(p *Page) []string {
	var out []string
	for _, c := range p.Checks {
		for _, pr := range c.Problems {
			out = append(out, fmt.Sprintf("%s: %s: %s", c.Name, pr.Severity, pr.Message))
		}
		if c.Result == Broken {
			out = append(out, fmt.Sprintf("%s: could not run: %s", c.Name, c.Note))
		}
	}
	return out
}

// The testdata site: each page has the one problem it was made with, and
// the report names exactly those; the JSON, JUnit, summary, screenshots and
// exit code all say so.
func TestSmokeSite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pages := []struct {
		path string
		want []string // regexps, one per problem, in check order
	}{
		{"/clean.html", nil},
		{"/missing.html", []string{`^load: error: HTTP 404 Not Found$`}},
		{"/console-error.html", []string{`^console: error: broken widget \(http://127\.0\.0\.1:\d+/console-error\.html:\d+:\d+\)$`}},
		{"/exception.html", []string{`^console: error: Uncaught Error: kaboom \(http://127\.0\.0\.1:\d+/exception\.html:\d+:\d+\)$`}},
		{"/failed-image.html", []string{`^requests: error: GET http://127\.0\.0\.1:\d+/images/nope\.png: HTTP 404 Not Found$`}},
		{"/slow?ms=1500", nil},
		{"/never-loads.html", []string{`^load: error: did not finish loading within 4s \(--timeout\); still waiting for GET http://127\.0\.0\.1:\d+/hang$`}},
	}
	var urls []string
	for _, p := range pages {
		urls = append(urls, siteURL(p.path))
	}
	jsonPath, junitPath, shots := filepath.Join(dir, "report.json"), filepath.Join(dir, "report.xml"), filepath.Join(dir, "shots")
	o := options(t, append([]string{"--timeout=4s", "--json", jsonPath, "--junit", junitPath, "--screenshots", shots}, urls...)...)
	start := time.Now()
	code, stdout, stderr := run(t, o, browser.Config{})
	took := time.Since(start)
	if code != ExitFail {
		t.Fatalf("exit %d, want %d (a check failed)\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	r := readReport(t, jsonPath)
	if len(r.Pages) != len(pages) || r.Passed {
		t.Fatalf("report: %d pages, passed %v", len(r.Pages), r.Passed)
	}
	failing := 0
	for i, want := range pages {
		p := r.Pages[i]
		t.Logf("%s: load %v, whole check %v", want.path, p.Load.D(), p.Time.D())
		for _, c := range p.Checks {
			t.Logf("  %s %s %v", c.Name, c.Result, c.Time.D())
		}
		got := problems(p)
		ok := len(got) == len(want.want)
		for j := 0; ok && j < len(got); j++ {
			ok = regexp.MustCompile(want.want[j]).MatchString(got[j])
		}
		if !ok {
			t.Errorf("%s: problems\n  %s\nwant\n  %s", want.path, strings.Join(got, "\n  "), strings.Join(want.want, "\n  "))
		}
		if p.Passed != (len(want.want) == 0) {
			t.Errorf("%s: passed %v", want.path, p.Passed)
		}
		if !p.Passed {
			failing++
			if p.Screenshot == "" {
				t.Errorf("%s: failed without a screenshot", want.path)
			} else if b, err := os.ReadFile(p.Screenshot); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("%s: screenshot %s: %v", want.path, p.Screenshot, err)
			}
		} else if p.Screenshot != "" {
			t.Errorf("%s: passed, yet has a screenshot", want.path)
		}
		wantStatus := 200
		switch want.path {
		case "/missing.html":
			wantStatus = 404
		case "/never-loads.html":
			wantStatus = 200 // the document came; its image did not
		}
		if p.Status != wantStatus {
			t.Errorf("%s: status %d, want %d", want.path, p.Status, wantStatus)
		}
	}
	if slow := r.Pages[5]; slow.Load.D() < 1500*time.Millisecond {
		t.Errorf("the slow page loaded in %v, before its server answered", slow.Load.D())
	}
	if never := r.Pages[6]; never.Load.D() < 4*time.Second || never.Load.D() > 8*time.Second {
		t.Errorf("the page that never loads took %v, want about the 4s timeout", never.Load.D())
	}
	if took > 40*time.Second {
		t.Errorf("the run took %v", took)
	}
	shotFiles, _ := filepath.Glob(filepath.Join(shots, "*.png"))
	if len(shotFiles) != failing {
		t.Errorf("%d screenshots for %d failing pages: %v", len(shotFiles), failing, shotFiles)
	}

	// The summary names each page, its verdict and its problem.
	for _, want := range []string{"7 pages on " + site.URL, "2 passed, 5 failed", "PASS    /clean.html", "FAIL    /missing.html", "404",
		"Uncaught Error: kaboom", "images/nope.png", "did not finish loading", "--ignore-console"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	// Plain progress lines on stderr (not a terminal): one per page.
	if n := strings.Count(stderr, "\nFAIL ") + strings.Count(stderr, "\nPASS "); n != len(pages) && !strings.HasPrefix(stderr, "FAIL ") && !strings.HasPrefix(stderr, "PASS ") {
		t.Errorf("%d progress lines on stderr, want %d:\n%s", n, len(pages), stderr)
	}
	if strings.Contains(stderr, "\x1b[") {
		t.Errorf("terminal escapes in plain progress:\n%q", stderr)
	}

	// JUnit: one testsuite per page, one testcase per check, the failures
	// where the problems are.
	b, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var ju JUnitSuites
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b)
	}
	checks := len(pages) * 4 // load, console, requests, issues
	if ju.Tests != checks || len(ju.Suites) != len(pages) || ju.Failures != 5 || ju.Errors != 0 {
		t.Errorf("JUnit: %d tests, %d suites, %d failures, %d errors; want %d, %d, 5, 0\n%s", ju.Tests, len(ju.Suites), ju.Failures, ju.Errors, checks, len(pages), b)
	}
	var failed []string
	sum := 0
	for _, s := range ju.Suites {
		sum += s.Tests
		for _, c := range s.Cases {
			if c.Classname != s.Name {
				t.Errorf("testcase %s has classname %s in suite %s", c.Name, c.Classname, s.Name)
			}
			if c.Failure != nil {
				failed = append(failed, strings.TrimPrefix(c.Classname, site.URL)+" "+c.Name)
			}
		}
	}
	want := []string{"/missing.html load", "/console-error.html console", "/exception.html console", "/failed-image.html requests", "/never-loads.html load"}
	if !slices.Equal(failed, want) || sum != ju.Tests {
		t.Errorf("JUnit failures %q (of %d cases), want %q", failed, sum, want)
	}

	// The same, as a JUnit reader pagemux did not write sees it.
	suites, err := junit.IngestFile(junitPath)
	if err != nil {
		t.Fatalf("go-junit: %v", err)
	}
	failed, sum = nil, 0
	for _, s := range suites {
		sum += s.Totals.Tests
		for _, c := range s.Tests {
			switch {
			case c.Status == junit.StatusFailed && c.Message != "":
				failed = append(failed, strings.TrimPrefix(c.Classname, site.URL)+" "+c.Name)
			case c.Status != junit.StatusPassed:
				t.Errorf("go-junit: %s %s is %s %q", c.Classname, c.Name, c.Status, c.Message)
			}
		}
	}
	if !slices.Equal(failed, want) || sum != checks || len(suites) != len(pages) {
		t.Errorf("go-junit: %d suites, %d tests, failures %q; want %d, %d, %q", len(suites), sum, failed, len(pages), checks, want)
	}
}

// Expectations, the ignore flags and --fail-on: a page passes with what
// it must show, fails without it, and known noise is ignored.
func TestSmokeExpectAndIgnore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	o := options(t, "--expect-text", "Hello from", "--expect-selector", "main p.lead", "--ignore-console", "^known noise", "--ignore-request", "/tracker/",
		"--json", jsonPath, "--parallel", "2", siteURL("/clean.html"), siteURL("/noisy.html"))
	code, stdout, _ := run(t, o, browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFail, stdout)
	}
	r := readReport(t, jsonPath)
	clean, noisy := r.Pages[0], r.Pages[1]
	if !clean.Passed || len(problems(clean)) != 0 {
		t.Errorf("clean page: passed %v, %q", clean.Passed, problems(clean))
	}
	want := []string{"console: warning: deprecated thing", `expect-text: Hello from: error: the page does not show "Hello from"`, "expect-selector: main p.lead: error: no element matches main p.lead"}
	if got := problems(noisy); !slices.Equal(got, want) {
		t.Errorf("noisy page: %q, want %q", got, want)
	}
	names := []string{}
	for _, c := range clean.Checks {
		names = append(names, c.Name)
	}
	if want := []string{"load", "console", "requests", "issues", "expect-text: Hello from", "expect-selector: main p.lead"}; !slices.Equal(names, want) {
		t.Errorf("checks %q, want %q", names, want)
	}

	// With nothing expected, the noisy page passes with a warning at
	// --fail-on=error, and fails at --fail-on=warning.
	for _, level := range []string{"error", "warning"} {
		o := options(t, "--ignore-console", "^known noise", "--ignore-request", "/tracker/", "--fail-on", level, siteURL("/noisy.html"), siteURL("/clean.html"))
		code, stdout, _ := run(t, o, browser.Config{})
		want := map[string]int{"error": ExitPass, "warning": ExitFail}[level]
		if code != want {
			t.Errorf("--fail-on=%s: exit %d, want %d\n%s", level, code, want, stdout)
		}
		if !strings.Contains(stdout, "deprecated thing") {
			t.Errorf("--fail-on=%s: the warning is not reported:\n%s", level, stdout)
		}
	}
}

// --parallel 4 checks four pages at once: each page's server waits until
// all four were asked for, which a run one page at a time never does (its
// first page would wait for the others in vain, and fail to show "together").
func TestSmokeParallel(t *testing.T) {
	t.Parallel()
	const pages = 4
	var mu sync.Mutex
	asked := 0
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/page" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		if asked++; asked == pages {
			close(all)
		}
		mu.Unlock()
		word := "together"
		select {
		case <-all:
		case <-time.After(30 * time.Second):
			word = "alone"
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><link rel="icon" href="data:,"><title>Gate</title><main class=%s><h1>%s</h1></main></html>`, word, word)
	}))
	t.Cleanup(srv.Close)
	var urls []string
	for i := range pages {
		urls = append(urls, fmt.Sprintf("%s/page?n=%d", srv.URL, i))
	}
	dir := t.TempDir()
	o := options(t, append([]string{"--parallel", fmt.Sprint(pages), "--network-idle", "100ms", "--expect-selector", "main.together", "--json", filepath.Join(dir, "r.json")}, urls...)...)
	if code, stdout, _ := run(t, o, browser.Config{}); code != ExitPass {
		t.Fatalf("--parallel %d: exit %d, want every page asked for while the others were\n%s", pages, code, stdout)
	}
	if r := readReport(t, filepath.Join(dir, "r.json")); len(r.Pages) != pages {
		t.Errorf("the report has %d pages, want %d", len(r.Pages), pages)
	}
}

// Pages checked at once are each checked as the tab a user looks at:
// visible and painting, though all but one are behind another tab.
func TestSmokePagesAreShown(t *testing.T) {
	t.Parallel()
	var urls []string
	for i := range 4 {
		urls = append(urls, siteURL(fmt.Sprintf("/seen.html?n=%d", i)))
	}
	o := options(t, append([]string{"--parallel", "4", "--expect-selector", "body[data-painted=yes]"}, urls...)...)
	if code, stdout, _ := run(t, o, browser.Config{}); code != ExitPass {
		t.Fatalf("exit %d, want every page seen and painted\n%s", code, stdout)
	}
}

// Attached to a running Chrome (--browser-url, or its websocket), smoke
// checks its pages in tabs there as in a Chrome of its own, closes every tab
// it opened and leaves the browser running.
func TestSmokeAttached(t *testing.T) {
	t.Parallel()
	b := browser.New(browser.Config{})
	defer b.Close()
	ws, err := b.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b.Refresh(t.Context())
	before := len(b.Pages())
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	o := options(t, "--parallel", "3", "--json", jsonPath, "--screenshots", filepath.Join(dir, "shots"), "--expect-selector", "main",
		siteURL("/clean.html"), siteURL("/console-error.html"), siteURL("/seen.html"))
	code, stdout, _ := run(t, o, browser.Config{WSEndpoint: ws})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFail, stdout)
	}
	for _, p := range readReport(t, jsonPath).Pages {
		got := problems(p)
		switch failing := strings.HasSuffix(p.URL, "/console-error.html"); {
		case failing && (len(got) != 1 || !strings.HasPrefix(got[0], "console: error: broken widget")):
			t.Errorf("%s: %q, want its console error only", p.URL, got)
		case failing && p.Screenshot == "":
			t.Errorf("%s: no screenshot", p.URL)
		case !failing && !p.Passed:
			t.Errorf("%s: %q, want a pass", p.URL, got)
		}
	}
	b.Refresh(t.Context())
	if after := len(b.Pages()); after != before {
		var urls []string
		for _, p := range b.Pages() {
			urls = append(urls, p.URL())
		}
		t.Errorf("%d tabs in the browser after the run (%q), %d before: smoke left some", after, urls, before)
	}
	if _, err := b.CommandLine(t.Context()); err != nil {
		t.Errorf("the browser smoke attached to: %v", err)
	}
}

// A page that logs more than pagemux keeps says so: what was not kept was
// not checked.
func TestSmokeMoreThanKept(t *testing.T) {
	t.Parallel()
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	o := options(t, "--json", jsonPath, siteURL("/chatty.html"))
	if code, stdout, _ := run(t, o, browser.Config{}); code != ExitPass {
		t.Fatalf("exit %d, want a pass with warnings\n%s", code, stdout)
	}
	// Of the 1,500, the latest 1,000 records of the page are kept (one of
	// them may be Chrome's own).
	got := problems(readReport(t, jsonPath).Pages[0])
	var dropped, kept int
	if len(got) == 2 {
		fmt.Sscanf(got[0], "console: warning: %d more console messages and DevTools issues than pagemux keeps of a page were logged, and not checked; the counts are of those kept", &dropped)
		fmt.Sscanf(got[1], "console: warning: same thing again [%d times]", &kept)
	}
	if dropped < 500 || kept < 990 || dropped+kept != 1500 {
		t.Errorf("problems %q: want the dropped and the kept warnings, 1,500 in all", got)
	}
}

// Chrome's own look for /favicon.ico is not the page's request: one that
// never gets an answer neither fails the page nor keeps its network busy.
// On the full Chrome, which pagemux's users run: the headless shell asks
// for no favicon.
func TestSmokeFaviconNotWaitedFor(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-siteQuit:
		}
	})
	mux.Handle("/", http.FileServer(http.Dir("testdata/site")))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	o := options(t, "--timeout", "5s", "--fail-on", "warning", srv.URL+"/clean.html")
	code, stdout, _ := run(t, o, browser.Config{ExecPath: testchrome.Full()})
	select {
	case <-asked:
	default:
		t.Fatal("Chrome never asked for /favicon.ico: the test shows nothing")
	}
	if code != ExitPass {
		t.Fatalf("exit %d, want a pass with no warning\n%s", code, stdout)
	}
}

// The quiet-network window starts when the network last changed, not when
// smoke first looks: on a page whose DOM keeps changing for a second after
// its only request answered, navigate_page returns late, and the settle
// phase waits out only the rest of --network-idle (it waited all of it,
// 3 s, from its first look). The report says where the page's time went.
func TestSmokeSettleFromLastRequest(t *testing.T) {
	t.Parallel()
	const idle = 3 * time.Second
	mux := http.NewServeMux()
	mux.HandleFunc("/busy-dom.html", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Busy DOM</title><link rel="icon" href="data:,"><main><h1>Busy</h1><p id="n">0</p></main>
<script>let n = 0; const t = setInterval(() => { document.getElementById("n").textContent = ++n; if (n >= 60) clearInterval(t); }, 25);</script></html>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	o := options(t, "--network-idle", idle.String(), "--json", jsonPath, srv.URL+"/busy-dom.html")
	if code, stdout, _ := run(t, o, browser.Config{}); code != ExitPass {
		t.Fatalf("exit %d, want a pass\n%s", code, stdout)
	}
	p := readReport(t, jsonPath).Pages[0]
	times := map[string]time.Duration{}
	for _, ph := range p.Phases {
		times[ph.Name] = ph.Time.D()
	}
	t.Logf("phases %v, page %v", times, p.Time.D())
	for _, name := range []string{PhaseOpen, PhaseNavigate, PhaseSettle, PhaseDocument, PhaseConsole, PhaseRequests, PhaseExpect} {
		if _, ok := times[name]; !ok {
			t.Errorf("no %s phase in the report: %v", name, p.Phases)
		}
	}
	if times[PhaseNavigate] < time.Second {
		t.Fatalf("navigate_page took %v, under the DOM's second of changes: the test shows nothing", times[PhaseNavigate])
	}
	if times[PhaseSettle] > idle-500*time.Millisecond {
		t.Errorf("settle took %v after a navigation of %v: it waited the whole %v from its first look, not from the document's answer", times[PhaseSettle], times[PhaseNavigate], idle)
	}
}

// A performance audit gathers everything: Lighthouse reports no runtime
// error, which smoke would warn of. One run proves the rest of a
// performance audit too: --lighthouse-runs 2 audits the page twice, one
// audit at a time, and judges the medians; --lighthouse-audit checks an
// audit's score; --lighthouse-budgets applies the last budget whose path
// matches and fails a figure over it, naming it; both reports are kept.
func TestSmokeLighthousePerformance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonPath, shots, budgets := filepath.Join(dir, "r.json"), filepath.Join(dir, "shots"), filepath.Join(dir, "budget.json")
	os.WriteFile(budgets, []byte(`[
		{"path": "/*", "resourceCounts": [{"resourceType": "total", "budget": 0}, {"resourceType": "third-party", "budget": 0}],
		 "resourceSizes": [{"resourceType": "document", "budget": 100}], "timings": [{"metric": "interactive", "budget": 600000}]},
		{"path": "/elsewhere/*", "resourceCounts": [{"resourceType": "total", "budget": 1000}]}]`), 0o644)
	o := options(t, "--lighthouse", "performance=0", "--lighthouse-audit", "first-contentful-paint=0", "--lighthouse-budgets", budgets,
		"--lighthouse-runs", "2", "--fail-on", "warning", "--json", jsonPath, "--screenshots", shots, siteURL("/lighthouse-good.html"))
	code, stdout, _ := run(t, o, browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want a failure of the budget alone\n%s", code, stdout)
	}
	r := readReport(t, jsonPath)
	p := r.Pages[0]
	got := problems(p)
	if len(got) != 1 || !regexp.MustCompile(`^lighthouse budgets: error: total requests: \d+ \(median of 2 runs\), over the budget of 0$`).MatchString(got[0]) {
		t.Errorf("problems %q, want the total request count over its budget alone", got)
	}
	if p.Scores["performance"] <= 0 || p.Lighthouse == nil || p.Lighthouse.Runs != 2 || p.Lighthouse.Audits["first-contentful-paint"] <= 0 {
		t.Fatalf("scores %v, audits %+v", p.Scores, p.Lighthouse)
	}
	figures := map[string]BudgetResult{}
	for _, b := range p.Lighthouse.Budgets {
		figures[b.Kind+"/"+b.Name] = b
	}
	if f := figures["resourceCounts/total"]; !f.Over || f.Value < 1 {
		t.Errorf("total requests: %+v", f)
	}
	if f := figures["resourceCounts/third-party"]; f.Over || f.Value != 0 {
		t.Errorf("third-party requests of a page on loopback: %+v", f)
	}
	if f := figures["resourceSizes/document"]; f.Over || f.Value <= 0 {
		t.Errorf("document size: %+v", f)
	}
	if f := figures["timings/interactive"]; f.Over || f.Value <= 0 || len(figures) != 4 {
		t.Errorf("interactive: %+v; figures %v", f, figures)
	}
	// The two runs: one after another, a report each.
	if lr := r.Lighthouse; lr == nil || lr.Audits != 2 || lr.AtOnce != 1 || lr.Runs != 2 || !slices.Equal(lr.Categories, []string{"performance"}) {
		t.Errorf("the run's audits: %+v", r.Lighthouse)
	}
	if len(p.Lighthouse.Reports) != 2 {
		t.Fatalf("reports %+v, want one a run", p.Lighthouse.Reports)
	}
	for i, rep := range p.Lighthouse.Reports {
		if want := fmt.Sprintf("-lighthouse-%d", i+1); filepath.Dir(filepath.Dir(rep.HTML)) != shots || !strings.HasSuffix(filepath.Dir(rep.HTML), want) {
			t.Errorf("report %d at %s, want in %s/…%s", i+1, rep.HTML, shots, want)
		}
		checkReports(t, rep)
		mustContainStr(t, stdout, "report: "+rep.HTML)
	}
	mustContainStr(t, stdout, "Lighthouse (performance; 2 runs a page, median scores judged; 2 audits, at most 1 at once)")
}

// checkReports checks that a page's kept Lighthouse reports are there:
// HTML, and JSON that parses.
func checkReports(t *testing.T, rep LighthouseReport) {
	t.Helper()
	var lhr struct {
		LighthouseVersion string `json:"lighthouseVersion"`
	}
	if b, err := os.ReadFile(rep.JSON); err != nil || json.Unmarshal(b, &lhr) != nil || lhr.LighthouseVersion == "" {
		t.Errorf("JSON report %s: %v", rep.JSON, err)
	}
	if b, err := os.ReadFile(rep.HTML); err != nil || !bytes.Contains(bytes.ToLower(b[:min(len(b), 200)]), []byte("<!doctype html>")) {
		t.Errorf("HTML report %s: %v", rep.HTML, err)
	}
}

func mustContainStr(t *testing.T, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Errorf("output lacks %q:\n%s", want, s)
	}
}

// --retries checks a failing page again: one that passes on a retry passes
// with a warning that says what failed before (and fails at --fail-on
// warning); one that keeps failing fails with its own problems only.
func TestSmokeRetries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, path string
		args       []string
		code       int
		attempts   int
		problems   []string // regexps, in check order
	}{
		{"passes on a retry", "/flaky?fail=1&key=a", []string{"--retries", "2"}, ExitPass, 2,
			[]string{`^load: warning: passed on attempt 2 of 3 \(--retries\); attempt 1 failed: 1 error: HTTP 503 Service Unavailable$`}},
		{"strict", "/flaky?fail=1&key=b", []string{"--retries", "2", "--fail-on", "warning"}, ExitFail, 2,
			[]string{`^load: warning: passed on attempt 2 of 3`}},
		{"no retries", "/flaky?fail=1&key=c", nil, ExitFail, 0,
			[]string{`^load: error: HTTP 503 Service Unavailable$`}},
		{"keeps failing", "/missing.html", []string{"--retries", "1"}, ExitFail, 2,
			[]string{`^load: error: HTTP 404 Not Found$`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			jsonPath, shots := filepath.Join(dir, "r.json"), filepath.Join(dir, "shots")
			o := options(t, append(tt.args, "--json", jsonPath, "--screenshots", shots, siteURL(tt.path))...)
			code, stdout, _ := run(t, o, browser.Config{})
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, stdout)
			}
			p := readReport(t, jsonPath).Pages[0]
			got := problems(p)
			ok := len(got) == len(tt.problems)
			for i := 0; ok && i < len(got); i++ {
				ok = regexp.MustCompile(tt.problems[i]).MatchString(got[i])
			}
			if !ok || p.Attempts != tt.attempts {
				t.Errorf("attempts %d, problems %q; want %d, %q", p.Attempts, got, tt.attempts, tt.problems)
			}
			if p.Screenshot == "" {
				t.Error("no screenshot of the failed attempt")
			} else if _, err := os.Stat(p.Screenshot); err != nil {
				t.Error(err)
			}
		})
	}
}

// Lighthouse thresholds pass and fail as set: an accessible page passes
// accessibility=0.9 and its audits, a page full of accessibility faults
// fails the category and the audits it misses, naming its score, its failed
// audits and the audit's title; an audit Lighthouse does not score on a page
// (not applicable) passes with a note. Audits without performance run side
// by side: the site answers Lighthouse's load of either page only once it
// has been asked for both (lighthouseGate), which audits one at a time
// never do. The reports are kept beside the screenshots, named in the
// summary and attached to the JUnit testcases.
func TestSmokeLighthouse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonPath, junitPath, shots := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "shots")
	gate := "smoke-lighthouse"
	o := options(t, "--lighthouse", "accessibility=0.9,seo=0.5", "--lighthouse-audit", "color-contrast=1,document-title=1", "--lighthouse-audit", "video-caption=1",
		"--json", jsonPath, "--junit", junitPath, "--screenshots", shots, "--parallel", "2",
		siteURL("/lighthouse-gate/lighthouse-good.html?n=2&key="+gate), siteURL("/lighthouse-gate/lighthouse-bad.html?n=2&key="+gate))
	code, stdout, stderr := run(t, o, browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	if arrived, timedOut := lighthouseGates.state(gate); arrived != 2 || timedOut {
		t.Errorf("Lighthouse asked for %d of the 2 pages, and gave up waiting for the other: %v; the audits did not run side by side", arrived, timedOut)
	}
	r := readReport(t, jsonPath)
	if lr := r.Lighthouse; lr == nil || lr.Audits != 2 || lr.AtOnce != 2 || lr.Runs != 1 || !slices.Equal(lr.Categories, []string{"accessibility", "seo"}) {
		t.Errorf("the run's audits: %+v, want 2 at once", r.Lighthouse)
	}
	good, bad := r.Pages[0], r.Pages[1]
	if !good.Passed || good.Scores["accessibility"] < 0.9 || good.Scores["seo"] < 0.5 || good.Lighthouse == nil ||
		!maps.Equal(good.Lighthouse.Audits, map[string]float64{"color-contrast": 1, "document-title": 1}) {
		t.Errorf("good page: passed %v, scores %v, audits %+v, problems %q", good.Passed, good.Scores, good.Lighthouse, problems(good))
	}
	if c := good.check("lighthouse audit: video-caption"); c.Result != Pass || c.Note != "video-caption: Lighthouse gave no score (notApplicable), so nothing failed" {
		t.Errorf("an audit not applicable: %+v", c)
	}
	// Its input without a label is also a DevTools issue (a warning).
	got := slices.DeleteFunc(problems(bad), func(s string) bool { return !strings.HasPrefix(s, "lighthouse") })
	want := []string{
		`^lighthouse: accessibility: error: accessibility score 0\.\d\d is below 0\.90; failed: .+`,
		`^lighthouse audit: color-contrast: error: color-contrast score 0\.00 is below 1\.00: Background and foreground colors do not have a sufficient contrast ratio$`,
		`^lighthouse audit: document-title: error: document-title score 0\.00 is below 1\.00: Document doesn't have a ` + "`<title>`" + ` element$`,
	}
	ok := !bad.Passed && len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = regexp.MustCompile(want[i]).MatchString(got[i])
	}
	if !ok || bad.Scores["accessibility"] >= 0.9 {
		t.Errorf("bad page: passed %v, scores %v, problems %q; want %q", bad.Passed, bad.Scores, got, want)
	}
	// The reports, beside the failing page's screenshot.
	if bad.Screenshot == "" || filepath.Dir(bad.Screenshot) != shots {
		t.Errorf("bad page's screenshot: %q", bad.Screenshot)
	}
	for _, p := range r.Pages {
		if p.Lighthouse == nil || len(p.Lighthouse.Reports) != 1 {
			t.Fatalf("%s: reports %+v", p.URL, p.Lighthouse)
		}
		rep := p.Lighthouse.Reports[0]
		if filepath.Dir(filepath.Dir(rep.HTML)) != shots || !strings.HasSuffix(filepath.Dir(rep.HTML), "-lighthouse") {
			t.Errorf("report at %s, want in %s", rep.HTML, shots)
		}
		checkReports(t, rep)
		mustContainStr(t, stdout, "report: "+rep.HTML)
	}
	b, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var ju JUnitSuites
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatal(err)
	}
	// load, console, network, issues, 2 categories, 3 audits.
	if ju.Tests != 2*9 || ju.Failures != 3 {
		t.Errorf("JUnit: %d tests, %d failures; want 18, 3", ju.Tests, ju.Failures)
	}
	for _, s := range ju.Suites {
		for _, tc := range s.Cases {
			if isLighthouseCheck(tc.Name) && !strings.Contains(tc.SystemOut, "report.html]]") {
				t.Errorf("JUnit testcase %s attaches no report: %q", tc.Name, tc.SystemOut)
			}
		}
	}
}

// Lighthouse skips a page that did not load.
func TestSmokeLighthouseSkipsBrokenPage(t *testing.T) {
	t.Parallel()
	r := runReport(t, "--lighthouse", "seo=0.1", siteURL("/missing.html"))
	p := r.Pages[0]
	if c := p.check("lighthouse: seo"); c.Result != Skip || p.Scores != nil {
		t.Errorf("lighthouse on a 404: %+v, scores %v", c, p.Scores)
	}
}

// runReport runs with the args and returns the report.
func runReport(t *testing.T, args ...string) *Report {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.json")
	run(t, options(t, append([]string{"--json", path}, args...)...), browser.Config{})
	return readReport(t, path)
}

// A Chrome that cannot start: exit 2, and a message that says what to do.
func TestSmokeChromeCannotStart(t *testing.T) {
	t.Parallel()
	o := options(t, siteURL("/clean.html"))
	code, stdout, stderr := run(t, o, browser.Config{ExecPath: "/nonexistent/chromium"})
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d", code, ExitUsage)
	}
	for _, want := range []string{"chrome could not start", "/nonexistent/chromium", "--executable-path", "--browser-url"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("message lacks %q:\n%s", want, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("stdout: %q", stdout)
	}
	code, _, stderr = run(t, options(t, siteURL("/clean.html")), browser.Config{BrowserURL: "http://127.0.0.1:1"})
	if code != ExitUsage || !strings.Contains(stderr, "--remote-debugging-port") {
		t.Errorf("attach to nothing: exit %d:\n%s", code, stderr)
	}
}

// With no URL, the embedded demo site: one page broken on purpose.
func TestSmokeDemo(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.json")
	o := options(t, "--json", path)
	code, stdout, stderr := run(t, o, browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	r := readReport(t, path)
	if !r.Demo || len(r.Pages) != len(demoPages) {
		t.Fatalf("demo %v, %d pages", r.Demo, len(r.Pages))
	}
	for _, p := range r.Pages {
		broken := strings.HasSuffix(p.URL, "/blog.html")
		if p.Passed == broken {
			t.Errorf("%s: passed %v: %q", p.URL, p.Passed, problems(p))
		}
		if broken && len(problems(p)) != 2 {
			t.Errorf("blog: %q, want its exception and its missing image", problems(p))
		}
	}
	for _, want := range []string{"demo site", "blog.html", "pagemux smoke https://"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// The flags: what they accept and the errors that say what to change.
func TestSmokeFlags(t *testing.T) {
	t.Parallel()
	list := filepath.Join(t.TempDir(), "urls.txt")
	os.WriteFile(list, []byte("# key pages\nhttps://example.com/  # home\n\n  example.com/pricing\nhttp://localhost:8080/a#frag\n"), 0o644)
	tests := []struct {
		args []string
		err  string
		chk  func(*Options) string
	}{
		{nil, "", func(o *Options) string {
			if o.Parallel != 4 || o.Timeout != 30*time.Second || o.FailOn != Error || len(o.URLs) != 0 {
				return fmt.Sprintf("defaults: %+v", o)
			}
			return ""
		}},
		{[]string{"--urls", list, "https://a.test/x"}, "", func(o *Options) string {
			want := []string{"https://a.test/x", "https://example.com/", "https://example.com/pricing", "http://localhost:8080/a#frag"}
			if !slices.Equal(o.URLs, want) {
				return fmt.Sprintf("urls %q, want %q", o.URLs, want)
			}
			return ""
		}},
		{[]string{"--lighthouse", "accessibility=0.9, seo=80%"}, "", func(o *Options) string {
			if o.Lighthouse["accessibility"] != 0.9 || o.Lighthouse["seo"] != 0.8 {
				return fmt.Sprint(o.Lighthouse)
			}
			return ""
		}},
		{[]string{"--parallel", "0"}, "--parallel 0: want 1 to 64", nil},
		{[]string{"--timeout", "0s"}, "--timeout", nil},
		{[]string{"--lighthouse", "speed=0.9"}, "categories among performance", nil},
		{[]string{"--lighthouse", "seo=120"}, "want a score from 0 to 1", nil},
		{[]string{"--lighthouse", "seo=-1"}, "want a score from 0 to 1", nil},
		{[]string{"--fail-on", "info"}, "want error or warning", nil},
		{[]string{"--ignore-request", "("}, "--ignore-request", nil},
		{[]string{"ftp://x/"}, "is not a URL to check", nil},
		{[]string{"--urls", "/nonexistent/urls.txt"}, "--urls", nil},
		{[]string{"--base-url", "https://pr-7.preview.test/app/", "--urls", list, "/", "/pricing?x=1", "https://other.test/"}, "", func(o *Options) string {
			want := []string{"https://pr-7.preview.test/", "https://pr-7.preview.test/pricing?x=1", "https://other.test/",
				"https://example.com/", "https://example.com/pricing", "http://localhost:8080/a#frag"}
			if !slices.Equal(o.URLs, want) {
				return fmt.Sprintf("urls %q, want %q", o.URLs, want)
			}
			return ""
		}},
		{[]string{"--base-url", "localhost:3000"}, "", func(o *Options) string {
			if want := []string{"http://localhost:3000"}; !slices.Equal(o.URLs, want) {
				return fmt.Sprintf("urls %q, want %q: the base alone", o.URLs, want)
			}
			return ""
		}},
		{[]string{"--base-url", "https://pr-7.preview.test", "--sitemap", "/sitemap.xml"}, "", func(o *Options) string {
			if len(o.URLs) != 0 || !slices.Equal(o.Sitemaps, []string{"https://pr-7.preview.test/sitemap.xml"}) || o.SitemapBase.Host != "pr-7.preview.test" {
				return fmt.Sprintf("urls %q, sitemaps %q, base %v: want the sitemap's pages only, on the base", o.URLs, o.Sitemaps, o.SitemapBase)
			}
			return ""
		}},
		{[]string{"--sitemap", "/sitemap.xml"}, "--sitemap: \"/sitemap.xml\" is a path: give --base-url", nil},
		{[]string{"--sitemap", "file:///tmp/sitemap.xml"}, "want an http(s) URL", nil},
		{[]string{"--max-pages", "-1"}, "--max-pages -1", nil},
		{[]string{"/pricing"}, "give --base-url", nil},
		{[]string{"--base-url", "ftp://x/", "/a"}, "--base-url", nil},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := AddFlags(fs)
		err := fs.Parse(tt.args)
		var o *Options
		if err == nil {
			o, err = f.Finish(fs.Args())
		}
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
		} else if msg := tt.chk(o); msg != "" {
			t.Errorf("%q: %s", tt.args, msg)
		}
	}
}

// The live display on a terminal redraws its block in place, and its last
// state leaves only the finished lines.
func TestSmokeLiveProgress(t *testing.T) {
	t.Parallel()
	var b mcptest.LockedBuffer
	p := newProgress(&b, true, []string{"/a", "/b"})
	p.set(0, "loading")
	p.set(1, "checking")
	time.Sleep(250 * time.Millisecond)
	pg := &Page{URL: "/a", Passed: true, Status: 200}
	p.finish(0, pg)
	p.close()
	out := b.String()
	for _, want := range []string{"\x1b[J", "loading", "checking", "PASS /a  200", "of 2 pages checked"} {
		if !strings.Contains(out, want) {
			t.Errorf("live output lacks %q:\n%q", want, out)
		}
	}
	if !strings.HasSuffix(out, "\r\x1b[J") {
		t.Errorf("the live block is not cleared at the end: %q", out[max(0, len(out)-40):])
	}
}

// A dialog on load is accepted and noted, and the checks go on.
func TestSmokeDialog(t *testing.T) {
	t.Parallel()
	r := runReport(t, siteURL("/dialog.html"))
	p := r.Pages[0]
	want := []string{`load: warning: the page opened an alert dialog: "Welcome!" (accepted)`, "console: error: after the dialog"}
	if got := problems(p); !slices.Equal(got[:min(len(got), 1)], want[:1]) || len(got) != 2 || !strings.HasPrefix(got[1], want[1]) {
		t.Errorf("problems %q, want %q", got, want)
	}
}
