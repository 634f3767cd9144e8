package smoke

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/pagemux/pagemux/lighthouse"
	"golang.org/x/net/publicsuffix"
)

// BudgetResult is one limit of the budget that applied to a page, and what
// the page measured: the median of its runs.
type BudgetResult struct {
	// Kind is resourceSizes, resourceCounts or timings; Name the resource
	// type or the metric.
	Kind   string  `json:"kind"`
	Name   string  `json:"name"`
	Budget float64 `json:"budget"`
	// Value is in the budget's unit: KiB, requests, milliseconds (none
	// for cumulative-layout-shift).
	Value float64 `json:"value"`
	Over  bool    `json:"over"`
}

// networkRequest is what a budget reads of one row of Lighthouse's
// network-requests audit.
type networkRequest struct {
	URL          string  `json:"url"`
	ResourceType string  `json:"resourceType"`
	TransferSize float64 `json:"transferSize"`
}

// budgetFor returns the budget that applies to pageURL: the last one whose
// path matches, as Lighthouse chose; nil if none does.
func budgetFor(budgets []Budget, pageURL string) *Budget {
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	var match *Budget
	for i := range budgets {
		if pathMatches(budgets[i].Path, path) {
			match = &budgets[i]
		}
	}
	return match
}

// pathMatches reports whether pattern, Lighthouse's budget path, matches
// path: a prefix match where * matches any run of characters and a
// trailing $ anchors the end; an empty pattern matches everything.
func pathMatches(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	pattern = strings.TrimSuffix(pattern, "$")
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	expr := "^" + strings.Join(parts, ".*")
	if anchored {
		expr += "$"
	}
	re, err := regexp.Compile(expr)
	return err == nil && re.MatchString(path)
}

// budgetType is the budget resource type of a request of Lighthouse's (CDP)
// resource type.
func budgetType(cdpType string) string {
	switch cdpType {
	case "Document", "Script", "Stylesheet", "Image", "Media", "Font":
		return strings.ToLower(cdpType)
	}
	return "other"
}

// firstParty reports whether host is first-party for a page on pageHost:
// one of hostnames (*.example.com covers its subdomains and itself) or,
// with none given, of the page's registrable domain, as Lighthouse
// counted.
func firstParty(host, pageHost string, hostnames []string) bool {
	if len(hostnames) == 0 {
		root, err := publicsuffix.EffectiveTLDPlusOne(pageHost)
		if err != nil {
			root = pageHost // an IP address or localhost
		}
		hostnames = []string{"*." + root}
	}
	for _, h := range hostnames {
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			if host == rest || strings.HasSuffix(host, "."+rest) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// measureBudget returns the figures b limits, measured in one run's report,
// keyed "kind/name"; a figure the report lacks (no metrics: Lighthouse
// could not measure the page) is missing.
func measureBudget(b *Budget, pageURL string, audits map[string]lighthouse.AuditResult) (map[string]float64, error) {
	out := map[string]float64{}
	if len(b.ResourceSizes)+len(b.ResourceCounts) > 0 {
		reqs, err := networkRequests(audits)
		if err != nil {
			return nil, err
		}
		pu, _ := url.Parse(pageURL)
		sizes, counts := map[string]float64{}, map[string]float64{}
		for _, r := range reqs {
			u, err := url.Parse(r.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				continue // data: and blob: load nothing over the network
			}
			types := []string{budgetType(r.ResourceType), "total"}
			if pu != nil && !firstParty(u.Hostname(), pu.Hostname(), b.Options.FirstPartyHostnames) {
				types = append(types, "third-party")
			}
			for _, t := range types {
				sizes[t] += r.TransferSize / 1024
				counts[t]++
			}
		}
		for _, r := range b.ResourceSizes {
			out["resourceSizes/"+r.ResourceType] = sizes[r.ResourceType]
		}
		for _, r := range b.ResourceCounts {
			out["resourceCounts/"+r.ResourceType] = counts[r.ResourceType]
		}
	}
	if len(b.Timings) > 0 {
		metrics, err := metricValues(audits)
		if err != nil {
			return nil, err
		}
		for _, t := range b.Timings {
			if v, ok := metrics[budgetMetrics[t.Metric]]; ok {
				out["timings/"+t.Metric] = v
			}
		}
	}
	return out, nil
}

// networkRequests reads the rows of the network-requests audit.
func networkRequests(audits map[string]lighthouse.AuditResult) ([]networkRequest, error) {
	a, ok := audits["network-requests"]
	if !ok || len(a.Details) == 0 {
		return nil, fmt.Errorf("the Lighthouse report has no network-requests audit to check the budgets' resources against")
	}
	var d struct {
		Items []networkRequest `json:"items"`
	}
	if err := json.Unmarshal(a.Details, &d); err != nil {
		return nil, fmt.Errorf("parse the lighthouse report's network requests: %w", err)
	}
	return d.Items, nil
}

// metricValues reads the metrics audit's figures, by Lighthouse's names
// (largestContentfulPaint …); none when Lighthouse could not measure.
func metricValues(audits map[string]lighthouse.AuditResult) (map[string]float64, error) {
	a, ok := audits["metrics"]
	if !ok {
		return nil, fmt.Errorf("the Lighthouse report has no metrics audit to check the budgets' timings against")
	}
	if len(a.Details) == 0 {
		return map[string]float64{}, nil
	}
	var d struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(a.Details, &d); err != nil {
		return nil, fmt.Errorf("parse the lighthouse report's metrics: %w", err)
	}
	out := map[string]float64{}
	if len(d.Items) > 0 {
		for k, v := range d.Items[0] {
			if f, ok := v.(float64); ok {
				out[k] = f
			}
		}
	}
	return out, nil
}

// judgeBudgets checks the page's runs against the budget for its URL: each
// figure the median of the runs that measured it.
func (k *checker) judgeBudgets(p *Page, runs []*lhRun, c *Check) {
	b := budgetFor(k.o.LighthouseBudgets, p.URL)
	if b == nil {
		c.Note = "no budget's path matches this page"
		return
	}
	measured := map[string][]float64{}
	for _, r := range runs {
		m, err := measureBudget(b, p.URL, r.rep.Audits)
		if err != nil {
			c.add(Error, "%v", err)
			return
		}
		for key, v := range m {
			measured[key] = append(measured[key], v)
		}
	}
	of := ofRuns(len(runs))
	check := func(kind, name string, budget float64, what, unit string) {
		vs := measured[kind+"/"+name]
		if len(vs) == 0 {
			c.add(Error, "%s%s: Lighthouse measured nothing to check the budget of %g%s against", name, what, budget, unit)
			return
		}
		res := BudgetResult{Kind: kind, Name: name, Budget: budget, Value: median(vs)}
		res.Over = res.Value > budget
		p.Lighthouse.Budgets = append(p.Lighthouse.Budgets, res)
		if res.Over {
			c.add(Error, "%s%s: %s%s%s, over the budget of %g%s", name, what, fmtFigure(res.Value), unit, of, budget, unit)
		}
	}
	for _, r := range b.ResourceSizes {
		check("resourceSizes", r.ResourceType, r.Budget, " transfer size", " KiB")
	}
	for _, r := range b.ResourceCounts {
		check("resourceCounts", r.ResourceType, r.Budget, " requests", "")
	}
	for _, t := range b.Timings {
		unit := " ms"
		if t.Metric == "cumulative-layout-shift" {
			unit = ""
		}
		check("timings", t.Metric, t.Budget, "", unit)
	}
}

// fmtFigure shows a measured figure: whole numbers as such, else two
// decimals.
func fmtFigure(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}
