package smoke

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Report is the outcome of a run, as --json writes it.
type Report struct {
	// Version is pagemux's.
	Version string `json:"pagemux"`
	// Started is when the run began; Duration is its wall time, Chrome's
	// start included.
	Started  time.Time `json:"started"`
	Duration Millis    `json:"durationMs"`
	// BrowserStart is how long Chrome took to start (or to attach).
	BrowserStart Millis `json:"browserStartMs"`
	// Parallel and FailOn are the settings the verdict was made with.
	Parallel int      `json:"parallel"`
	FailOn   Severity `json:"failOn"`
	// Demo says the run checked the embedded demo site.
	Demo bool `json:"demo,omitempty"`
	// Passed says every page passed.
	Passed bool    `json:"passed"`
	Pages  []*Page `json:"pages"`
	// Lighthouse says how the pages were audited, when they were.
	Lighthouse *LighthouseRun `json:"lighthouseRun,omitempty"`
}

// LighthouseRun is how a run audited its pages, from the browser's audit
// lock (pagelock.Audit): audits without performance share it, one with
// performance holds it alone.
type LighthouseRun struct {
	// Categories are those audited; Runs the audits of each page.
	Categories []string `json:"categories"`
	Runs       int      `json:"runs"`
	// Audits counts the audits run; AtOnce is the most that ran at once.
	Audits int `json:"audits"`
	AtOnce int `json:"atOnce"`
}

// Page is one URL's outcome.
type Page struct {
	URL string `json:"url"`
	// FoundOn is the page whose link --crawl followed here.
	FoundOn string `json:"foundOn,omitempty"`
	// FinalURL is where the page ended up, when redirects moved it.
	FinalURL string `json:"finalUrl,omitempty"`
	// Passed says no check failed at the run's --fail-on level.
	Passed bool `json:"passed"`
	// Status is the main document's HTTP status; 0 when there was none
	// (a network error, a timeout before the response).
	Status int `json:"status"`
	// Load is how long the navigation took, to the load event; Time is the
	// whole check of the page, its Lighthouse audit included.
	Load Millis `json:"loadMs"`
	Time Millis `json:"timeMs"`
	// Checks are the checks run, in a fixed order (checkNames).
	Checks []*Check `json:"checks"`
	// A11y is what axe-core found, with --a11y.
	A11y *A11yResult `json:"a11y,omitempty"`
	// Scores are the Lighthouse category scores, 0 to 1.
	Scores map[string]float64 `json:"lighthouse,omitempty"`
	// Lighthouse is the rest of what the audits found: runs, audit scores,
	// budgets, the reports kept.
	Lighthouse *LighthouseResult `json:"lighthouseAudits,omitempty"`
	// Screenshot is the file of a failing page's screenshot (or of the
	// last failed attempt of a page that passed on a retry).
	Screenshot string `json:"screenshot,omitempty"`
	// Attempts is how many times the page was checked, when --retries
	// made it more than once.
	Attempts int `json:"attempts,omitempty"`
	// Phases are where the page's check spent its time, in order (of its
	// last attempt): open, navigate, settle, document, console, requests,
	// expect, and a11y, links, screenshot, audit when they run. Its tab
	// closes after, off its time. The bench reads them to say where a
	// page's time goes.
	Phases []Phase `json:"phases,omitempty"`

	started time.Time
	links   []string // same-origin links, read for --check-links and --crawl
}

// Phase is one step of a page's check and how long it took.
type Phase struct {
	Name string `json:"name"`
	Time Millis `json:"timeMs"`
}

// Phase names, in the order a check goes through them.
const (
	PhaseOpen       = "open"       // a new tab (or Chrome's first), and --storage-state's script
	PhaseNavigate   = "navigate"   // navigate_page: to the load event and a quiet DOM
	PhaseSettle     = "settle"     // the wait for a quiet network (--network-idle)
	PhaseDocument   = "document"   // the main document's request, for its status
	PhaseSteps      = "steps"      // --steps
	PhaseConsole    = "console"    // list_console_messages, and where its errors came from
	PhaseRequests   = "requests"   // list_network_requests, for failed requests
	PhaseExpect     = "expect"     // --expect-text, --expect-selector and the final URL
	PhaseA11y       = "a11y"       // --a11y
	PhaseLinks      = "links"      // --check-links, --crawl
	PhaseScreenshot = "screenshot" // a failing page's
	PhaseAudit      = "audit"      // Lighthouse, its wait for the audit lock included
)

// timed starts phase name of the page's check; the func it returns ends
// it. The phases of one page are timed one after another, by one goroutine.
func (p *Page) timed(name string) func() {
	start := time.Now()
	return func() { p.Phases = append(p.Phases, Phase{Name: name, Time: Millis(time.Since(start))}) }
}

// Check is one check of a page.
type Check struct {
	Name string `json:"name"`
	// Result is pass, fail (a problem at the --fail-on level), skip (an
	// earlier failure made the check meaningless) or error (the check
	// itself could not run: Chrome or a tool failed).
	Result   string    `json:"result"`
	Problems []Problem `json:"problems,omitempty"`
	// Note says why a check was skipped or could not run.
	Note string `json:"note,omitempty"`
	// Summary, when set, is a failed check's one line in JUnit, for a check
	// whose problems each matter (the a11y check's violations): else the
	// first failing problem is.
	Summary string `json:"summary,omitempty"`
	// Started is when the check began: the load for load, the audit's tab
	// for lighthouse; zero for checks that read what the load gathered.
	Started time.Time `json:"started,omitzero"`
	Time    Millis    `json:"timeMs"`
}

// Check results.
const (
	Pass   = "pass"
	Fail   = "fail"
	Skip   = "skip"
	Broken = "error"
)

// Problem is one thing wrong with a page.
type Problem struct {
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// Millis is a duration that JSON shows in milliseconds.
type Millis time.Duration

// MarshalJSON writes whole milliseconds.
func (m Millis) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprint(time.Duration(m).Milliseconds())), nil
}

// UnmarshalJSON reads milliseconds.
func (m *Millis) UnmarshalJSON(b []byte) error {
	var ms int64
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*m = Millis(time.Duration(ms) * time.Millisecond)
	return nil
}

// D is the duration.
func (m Millis) D() time.Duration { return time.Duration(m) }

// check returns the page's check of that name, adding it if new.
func (p *Page) check(name string) *Check {
	for _, c := range p.Checks {
		if c.Name == name {
			return c
		}
	}
	c := &Check{Name: name, Result: Pass}
	p.Checks = append(p.Checks, c)
	return c
}

// add records a problem on a check.
func (c *Check) add(sev Severity, format string, args ...any) {
	c.Problems = append(c.Problems, Problem{Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// broken marks a check that could not run.
func (c *Check) broken(err error) {
	c.Result, c.Note = Broken, err.Error()
}

// skip marks a check an earlier failure made meaningless.
func (c *Check) skip(why string) {
	c.Result, c.Note = Skip, why
}

// judge sets the results of the checks and the page from their problems.
func (p *Page) judge(failOn Severity) {
	p.Passed = true
	for _, c := range p.Checks {
		if c.Result == Pass || c.Result == Fail {
			c.Result = Pass
			for _, pr := range c.Problems {
				if fails(pr.Severity, failOn) {
					c.Result = Fail
				}
			}
		}
		if c.Result == Fail || c.Result == Broken {
			p.Passed = false
		}
	}
}

// fails says whether a problem of severity s fails a page at level failOn.
func fails(s, failOn Severity) bool { return s == Error || failOn == Warning }

// Problems lists every problem of the page, check by check.
func (p *Page) Problems() []Problem {
	var out []Problem
	for _, c := range p.Checks {
		out = append(out, c.Problems...)
		if c.Result == Broken {
			out = append(out, Problem{Severity: Error, Message: c.Name + " check could not run: " + c.Note})
		}
	}
	return out
}

// writeJSON writes the report to path.
func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
