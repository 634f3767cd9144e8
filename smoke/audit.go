package smoke

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pagemux/pagemux/lighthouse"
)

// auditLimit bounds one audit of a page; lighthouse_audit keeps 4 minutes
// of its own at most. --lighthouse-runs multiplies it.
const auditLimit = 5 * time.Minute

// Check names of the Lighthouse checks, before their argument:
// "lighthouse: seo", "lighthouse audit: color-contrast".
const (
	checkLighthouse      = "lighthouse: "
	checkLighthouseAudit = "lighthouse audit: "
	checkBudgets         = "lighthouse budgets"
)

// LighthouseResult is what the audits of a page came to besides the
// category scores (Page.Scores).
type LighthouseResult struct {
	// Runs is how many times the page was audited (--lighthouse-runs); the
	// scores are the medians of the runs that scored.
	Runs int `json:"runs"`
	// Audits are the median scores of the --lighthouse-audit audits.
	Audits map[string]float64 `json:"audits,omitempty"`
	// Budgets are the --lighthouse-budgets figures, each the median of the
	// runs.
	Budgets []BudgetResult `json:"budgets,omitempty"`
	// Reports are Lighthouse's own reports, one per run, kept in the
	// --screenshots directory.
	Reports []LighthouseReport `json:"reports,omitempty"`
}

// LighthouseReport names the files of one run's report.
type LighthouseReport struct {
	HTML string `json:"html"`
	JSON string `json:"json"`
}

// sortedCategories are the categories of m, in Lighthouse's order.
func sortedCategories(m map[string]float64) []string {
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return slices.Index(Categories, a) - slices.Index(Categories, b)
	})
}

// lighthouseChecks are the names of the Lighthouse checks, in report order:
// the categories, the audits, the budgets.
func (o *Options) lighthouseChecks() []string {
	var names []string
	for _, c := range sortedCategories(o.Lighthouse) {
		names = append(names, checkLighthouse+c)
	}
	for _, id := range slices.Sorted(maps.Keys(o.LighthouseAudits)) {
		names = append(names, checkLighthouseAudit+id)
	}
	if o.LighthouseBudgets != nil {
		names = append(names, checkBudgets)
	}
	return names
}

// isLighthouseCheck says whether the check of that name is one of
// lighthouseChecks'.
func isLighthouseCheck(name string) bool {
	return strings.HasPrefix(name, checkLighthouse) || strings.HasPrefix(name, checkLighthouseAudit) || name == checkBudgets
}

// sharesAudits says whether audits run side by side: lighthouse_audit
// holds the browser's audit resource alone for performance.
func (o *Options) sharesAudits() bool {
	return !slices.Contains(o.auditCategories(), "performance")
}

// lhRun is one Lighthouse run of a page: its report, and where it is kept.
type lhRun struct {
	rep   *lighthouse.Report
	files LighthouseReport
}

// audit runs Lighthouse on page n with lighthouse_audit, --lighthouse-runs
// times, and checks the median scores against the thresholds. It opens a
// tab of its own, in a window of its own, as Lighthouse's navigation mode
// loads the page anew anyway and a tab that shares a window draws only at
// its front: audits without performance then run side by side, as many as
// the caller starts (--parallel), and the tool holds the browser-wide audit
// resource alone for one with performance.
func (k *checker) audit(ctx context.Context, n int, p *Page) {
	defer p.timed(PhaseAudit)()
	runs := max(k.o.LighthouseRuns, 1)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(runs)*auditLimit)
	defer cancel()
	checks := map[string]*Check{}
	for _, name := range k.o.lighthouseChecks() {
		checks[name] = p.check(name)
	}
	broken := func(err error) {
		for _, c := range checks {
			c.broken(err)
		}
	}
	start := time.Now()
	defer func() {
		for _, c := range checks {
			c.Started, c.Time = start, Millis(time.Since(start))
		}
	}()
	k.prog.set(n, "opening a window for Lighthouse")
	id, closeTab, err := k.openWindow(ctx, fmt.Sprintf("smoke-lighthouse-%d", n))
	if err != nil {
		broken(err)
		return
	}
	defer closeTab()
	if _, err := k.a.call(ctx, "navigate_page", map[string]any{"pageId": id, "url": p.URL, "timeout": k.o.Timeout.Milliseconds()}); err != nil {
		broken(err)
		return
	}
	p.Lighthouse = &LighthouseResult{Runs: runs}
	var done []*lhRun
	for i := range runs {
		if runs > 1 {
			k.prog.set(n, fmt.Sprintf("auditing with Lighthouse, run %d of %d", i+1, runs))
		} else {
			k.prog.set(n, "auditing with Lighthouse")
		}
		r, err := k.auditOnce(ctx, n, i, id, p)
		if err != nil {
			broken(err)
			return
		}
		if r.files.HTML != "" {
			p.Lighthouse.Reports = append(p.Lighthouse.Reports, r.files)
		}
		done = append(done, r)
	}
	k.judgeAudits(p, done, checks)
	p.judge(k.o.FailOn)
	if !p.Passed {
		k.screenshot(ctx, n, id, p)
	}
}

// auditOnce runs lighthouse_audit once on tab id and reads its report,
// which it keeps in the --screenshots directory if there is one.
func (k *checker) auditOnce(ctx context.Context, n, i, id int, p *Page) (*lhRun, error) {
	dir := filepath.Join(k.tmp, fmt.Sprintf("lighthouse-%d-%d", n, i+1))
	if k.shots != "" {
		dir = filepath.Join(k.shots, reportDirName(n, p.URL, i, k.o.LighthouseRuns))
	}
	args := map[string]any{"pageId": id, "mode": "navigation", "categories": k.o.auditCategories(), "outputDirPath": dir}
	if _, err := k.a.call(ctx, "lighthouse_audit", args); err != nil {
		return nil, err
	}
	r := &lhRun{files: LighthouseReport{HTML: filepath.Join(dir, "report.html"), JSON: filepath.Join(dir, "report.json")}}
	data, err := os.ReadFile(r.files.JSON)
	if err != nil {
		return nil, fmt.Errorf("lighthouse_audit wrote no report: %w", err)
	}
	if r.rep, err = lighthouse.ParseReport(data); err != nil {
		return nil, err
	}
	if k.shots == "" {
		r.files = LighthouseReport{} // in the run's temporary directory, gone at its end
	}
	return r, nil
}

// reportDirName is the directory of page n's report beside its screenshot:
// "03-example.com-pricing-lighthouse", "-lighthouse-2" for the second of
// several runs.
func reportDirName(n int, u string, i, runs int) string {
	base := strings.TrimSuffix(shotName(n, u), ".png") + "-lighthouse"
	if runs > 1 {
		base += fmt.Sprintf("-%d", i+1)
	}
	return base
}

// judgeAudits sets the page's median scores from the runs and adds the
// problems of the thresholds and budgets they miss.
func (k *checker) judgeAudits(p *Page, runs []*lhRun, checks map[string]*Check) {
	last := runs[len(runs)-1].rep
	of := ofRuns(len(runs))
	p.Scores = map[string]float64{}
	for _, cat := range k.o.auditCategories() {
		var scores []float64
		why := "no score"
		for _, r := range runs {
			if s := categoryScore(r.rep, cat); s != nil {
				scores = append(scores, *s)
			} else if e := r.rep.RuntimeError; e != nil {
				why = e.Code + ": " + oneLine(e.Message)
			}
		}
		c, judged := checks[checkLighthouse+cat]
		if len(scores) == 0 {
			if judged {
				c.add(Error, "Lighthouse could not score %s (%s)", cat, why)
			}
			continue
		}
		score := median(scores)
		p.Scores[cat] = score
		if min := k.o.Lighthouse[cat]; judged && score < min {
			c.add(Error, "%s score %.2f%s is below %.2f%s", cat, score, of, min, failedAudits(last, cat))
		}
	}
	for id, min := range k.o.LighthouseAudits {
		k.judgeAudit(p, runs, id, min, checks[checkLighthouseAudit+id])
	}
	if k.o.LighthouseBudgets != nil {
		k.judgeBudgets(p, runs, checks[checkBudgets])
	}
	if e := last.RuntimeError; e != nil && len(p.Scores) > 0 {
		// Scored anyway: what Lighthouse could not gather is missing from
		// the scores, which a user should know.
		first := k.o.lighthouseChecks()[0]
		checks[first].add(Warning, "Lighthouse reported %s: %s; the scores lack what it could not gather", e.Code, oneLine(e.Message))
	}
}

// judgeAudit checks the median score of audit id against min. An audit
// Lighthouse did not score in any run (not applicable: no such element on
// the page; informative) passes with a note, as it failed nothing.
func (k *checker) judgeAudit(p *Page, runs []*lhRun, id string, min float64, c *Check) {
	var scores []float64
	mode, title, value := "", id, ""
	for _, r := range runs {
		a, ok := r.rep.Audits[id]
		if !ok {
			continue
		}
		title, mode, value = strings.TrimSuffix(a.Title, "."), a.ScoreDisplayMode, a.DisplayValue
		if a.Score != nil {
			scores = append(scores, *a.Score)
		}
	}
	if len(scores) == 0 {
		if mode == "" {
			c.add(Error, "the Lighthouse report has no audit %s", id)
			return
		}
		c.Note = fmt.Sprintf("%s: Lighthouse gave no score (%s), so nothing failed", id, mode)
		return
	}
	score := median(scores)
	if p.Lighthouse.Audits == nil {
		p.Lighthouse.Audits = map[string]float64{}
	}
	p.Lighthouse.Audits[id] = score
	if score < min {
		if value != "" {
			value = " (" + value + ")"
		}
		c.add(Error, "%s score %.2f%s is below %.2f: %s%s", id, score, ofRuns(len(runs)), min, title, value)
	}
}

// categoryScore is the score of category cat in rep, nil if none.
func categoryScore(rep *lighthouse.Report, cat string) *float64 {
	for _, c := range rep.Categories {
		if c.ID == cat {
			return c.Score
		}
	}
	return nil
}

// ofRuns says, after a median, how many runs it is of: "" for one.
func ofRuns(n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" (median of %d runs)", n)
}

// median is the middle of xs, the mean of the two middle ones for an even
// count; xs is not changed. It is 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if m := len(s) / 2; len(s)%2 == 1 {
		return s[m]
	} else {
		return (s[m-1] + s[m]) / 2
	}
}

// failedAudits names the first three failed audits of a category.
func failedAudits(rep *lighthouse.Report, cat string) string {
	var titles []string
	for _, a := range rep.Failed {
		if slices.Contains(a.Categories, cat) {
			titles = append(titles, strings.TrimSuffix(a.Title, "."))
		}
	}
	if len(titles) == 0 {
		return ""
	}
	return "; failed: " + firstThree(titles, "; ")
}

// openWindow opens a tab for an audit in a window of its own (the step
// tool new_window), where it draws and is captured without taking turns at
// the front of the run's shared window: new_page's tabs share it. Like
// open, it returns its page id and a func that closes it.
func (k *checker) openWindow(ctx context.Context, name string) (int, func(), error) {
	ans, err := k.a.call(ctx, "new_window", nil)
	if err != nil {
		return 0, nil, fmt.Errorf("open a window for %s: %w", name, err)
	}
	return k.prepareTab(ctx, ans.PageID)
}
