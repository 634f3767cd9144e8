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

// auditLimit bounds one page's audit; lighthouse_audit keeps 4 minutes of
// its own at most.
const auditLimit = 5 * time.Minute

func sortedCategories(m map[string]float64) []string {
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return slices.Index(Categories, a) - slices.Index(Categories, b)
	})
}

// audit runs Lighthouse on page n with lighthouse_audit and checks its
// scores against the thresholds. It opens a tab of its own, as Lighthouse's
// navigation mode loads the page anew anyway: the tab the other checks used
// is closed by then, so at most --parallel tabs plus this one are open.
// Audits run one at a time (the caller runs them in turn, and the tool holds
// the browser-wide audit key besides); other pages go on meanwhile.
func (k *checker) audit(ctx context.Context, n int, p *Page) {
	ctx, cancel := context.WithTimeout(ctx, auditLimit)
	defer cancel()
	cats := sortedCategories(k.o.Lighthouse)
	checks := map[string]*Check{}
	for _, c := range cats {
		checks[c] = p.check("lighthouse: " + c)
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
	k.prog.set(n, "opening a tab for Lighthouse")
	id, closeTab, err := k.open(ctx, fmt.Sprintf("smoke-lighthouse-%d", n))
	if err != nil {
		broken(err)
		return
	}
	defer closeTab()
	if _, err := k.a.call(ctx, "navigate_page", map[string]any{"pageId": id, "url": p.URL, "timeout": k.o.Timeout.Milliseconds()}); err != nil {
		broken(err)
		return
	}
	k.prog.set(n, "auditing with Lighthouse")
	dir := filepath.Join(k.tmp, fmt.Sprintf("lighthouse-%d", n))
	if _, err := k.a.call(ctx, "lighthouse_audit", map[string]any{"pageId": id, "mode": "navigation", "categories": cats, "outputDirPath": dir}); err != nil {
		broken(err)
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		broken(fmt.Errorf("lighthouse_audit wrote no report: %w", err))
		return
	}
	rep, err := lighthouse.ParseReport(data)
	if err != nil {
		broken(err)
		return
	}
	p.Scores = map[string]float64{}
	for _, cat := range rep.Categories {
		c, ok := checks[cat.ID]
		if !ok {
			continue
		}
		if cat.Score == nil {
			why := "no score"
			if e := rep.RuntimeError; e != nil {
				why = e.Code + ": " + oneLine(e.Message)
			}
			c.add(Error, "Lighthouse could not score %s (%s)", cat.ID, why)
			continue
		}
		p.Scores[cat.ID] = *cat.Score
		if min := k.o.Lighthouse[cat.ID]; *cat.Score < min {
			c.add(Error, "%s score %.2f is below %.2f%s", cat.ID, *cat.Score, min, failedAudits(rep, cat.ID))
		}
	}
	for cat, c := range checks {
		if _, ok := p.Scores[cat]; !ok && len(c.Problems) == 0 {
			c.add(Error, "the Lighthouse report has no %s category", cat)
		}
	}
	if e := rep.RuntimeError; e != nil && len(p.Scores) > 0 {
		// Scored anyway: what Lighthouse could not gather is missing from
		// the scores, which a user should know.
		checks[cats[0]].add(Warning, "Lighthouse reported %s: %s; the scores lack what it could not gather", e.Code, oneLine(e.Message))
	}
	p.judge(k.o.FailOn)
	if !p.Passed {
		k.screenshot(ctx, n, id, p)
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
