package smoke

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pagemux/pagemux/internal/typo"
)

// maxRuns bounds --lighthouse-runs: an audit costs seconds of CPU.
const maxRuns = 9

// parseAuditThresholds reads --lighthouse-audit: ID=MIN, repeatable and
// comma-separated, a score from 0 to 1 or a percent (parseScore). An id Lighthouse
// does not score is an error naming the nearest one it does.
func parseAuditThresholds(values []string) (map[string]float64, error) {
	var out map[string]float64
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			id, val, ok := strings.Cut(strings.TrimSpace(part), "=")
			id = strings.TrimSpace(id)
			if !ok || id == "" {
				return nil, fmt.Errorf("--lighthouse-audit %q: want AUDIT=SCORE, such as color-contrast=1 or largest-contentful-paint=0.9", part)
			}
			if _, known := lighthouseAudits[id]; !known {
				return nil, fmt.Errorf("--lighthouse-audit %s: Lighthouse 12 scores no audit of that id%s (the ids are the keys of \"audits\" in a Lighthouse JSON report, such as color-contrast or largest-contentful-paint)", id, didYouMean(id, slices.Sorted(maps.Keys(lighthouseAudits))))
			}
			f, err := parseScore(val)
			if err != nil {
				return nil, fmt.Errorf("--lighthouse-audit %s=%s: %v", id, val, err)
			}
			if out == nil {
				out = map[string]float64{}
			}
			out[id] = f
		}
	}
	return out, nil
}

// parseScore reads a threshold as a score from 0 to 1 (0.9), or as a
// percent with its sign (90%). A bare number above 1 is refused: 2 might
// mean 2 % or a score of 2 out of what the report shows as 100, and taking
// it as 2 % (as 0.9's 90 once was 90 %) passes nearly everything. The
// error names both spellings.
func parseScore(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || f < 0 || f > 100 {
			return 0, fmt.Errorf("want a percent from 0%% to 100%%, such as 90%%, or a score from 0 to 1, such as 0.9")
		}
		return f / 100, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && f > 1 && f <= 100:
		return 0, fmt.Errorf("ambiguous: %s is above 1, the top score; for %s percent write %s or %s%%", s, s, strconv.FormatFloat(f/100, 'f', -1, 64), s)
	case err != nil || f < 0 || f > 1 || math.IsNaN(f):
		return 0, fmt.Errorf("want a score from 0 to 1, such as 0.9, or a percent, such as 90%%")
	}
	return f, nil
}

// didYouMean is "; did you mean NAME?" for the name among names nearest
// to s (internal/typo), "" when none is near enough to be a typo of it.
func didYouMean(s string, names []string) string {
	if near := typo.Nearest(s, names, 0); near != "" {
		return "; did you mean " + near + "?"
	}
	return ""
}

// auditCategories are the categories Lighthouse runs: those of --lighthouse,
// one of each --lighthouse-audit's (one run already, else the first that is
// not performance, which would make the audits take turns), and
// performance for --lighthouse-budgets, whose figures it measures. They are
// in Lighthouse's order.
func (o *Options) auditCategories() []string {
	run := map[string]bool{}
	for c := range o.Lighthouse {
		run[c] = true
	}
	if o.LighthouseBudgets != nil {
		run["performance"] = true
	}
	for _, id := range slices.Sorted(maps.Keys(o.LighthouseAudits)) {
		cats := lighthouseAudits[id]
		if slices.ContainsFunc(cats, func(c string) bool { return run[c] }) {
			continue
		}
		pick := cats[0]
		for _, c := range cats {
			if c != "performance" {
				pick = c
				break
			}
		}
		run[pick] = true
	}
	var out []string
	for _, c := range Categories {
		if run[c] {
			out = append(out, c)
		}
	}
	return out
}

// audits says whether the run audits pages with Lighthouse at all.
func (o *Options) audits() bool { return len(o.auditCategories()) > 0 }

// Budget is one entry of a Lighthouse budget.json: the limits for the pages
// whose path matches Path. Lighthouse 12 dropped budgets (its
// performance-budget and timing-budget audits are gone, and
// settings.budgets with them), so pagemux checks them itself, from the
// report's network-requests and metrics audits.
type Budget struct {
	// Path is matched against the page's path and query, as Lighthouse did:
	// * matches any run of characters, a trailing $ anchors the end;
	// empty matches every page. The last budget that matches applies.
	Path    string `json:"path,omitempty"`
	Options struct {
		// FirstPartyHostnames are the hosts (*.example.com for subdomains
		// too) that are not third-party; the default is the page's own
		// host and its subdomains.
		FirstPartyHostnames []string `json:"firstPartyHostnames,omitempty"`
	} `json:"options,omitzero"`
	// ResourceSizes bound the transfer size in KiB, ResourceCounts the
	// number of requests, of a resource type: document, script,
	// stylesheet, image, media, font, other, third-party or total.
	ResourceSizes  []ResourceBudget `json:"resourceSizes,omitempty"`
	ResourceCounts []ResourceBudget `json:"resourceCounts,omitempty"`
	// Timings bound metrics, in milliseconds (cumulative-layout-shift has
	// no unit).
	Timings []TimingBudget `json:"timings,omitempty"`
}

// ResourceBudget is the limit for one resource type.
type ResourceBudget struct {
	ResourceType string  `json:"resourceType"`
	Budget       float64 `json:"budget"`
}

// TimingBudget is the limit for one metric.
type TimingBudget struct {
	Metric string  `json:"metric"`
	Budget float64 `json:"budget"`
}

// budgetResourceTypes and budgetMetrics are what a budget may name; the
// metrics map to the fields of Lighthouse's metrics audit.
var (
	budgetResourceTypes = []string{"document", "script", "stylesheet", "image", "media", "font", "other", "third-party", "total"}
	budgetMetrics       = map[string]string{
		"first-contentful-paint":   "firstContentfulPaint",
		"largest-contentful-paint": "largestContentfulPaint",
		"interactive":              "interactive",
		"speed-index":              "speedIndex",
		"total-blocking-time":      "totalBlockingTime",
		"max-potential-fid":        "maxPotentialFID",
		"cumulative-layout-shift":  "cumulativeLayoutShift",
		"time-to-first-byte":       "timeToFirstByte",
	}
)

// readBudgets reads --lighthouse-budgets, checking every name in it.
func readBudgets(path string) ([]Budget, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--lighthouse-budgets: %w", err)
	}
	var budgets []Budget
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&budgets); err != nil {
		why := strings.TrimPrefix(err.Error(), "json: ")
		if t := strings.TrimSpace(string(data)); strings.HasPrefix(t, "{") {
			why = "an object, not a list"
		} else if strings.Contains(why, "Go ") {
			why = "not a list of budgets" // "cannot unmarshal string into Go value of type []smoke.Budget"
		}
		return nil, fmt.Errorf("--lighthouse-budgets %s: %s; want Lighthouse's budget.json, a list such as [{\"path\": \"/*\", \"resourceSizes\": [{\"resourceType\": \"script\", \"budget\": 300}], \"timings\": [{\"metric\": \"interactive\", \"budget\": 3000}]}]", path, why)
	}
	if len(budgets) == 0 {
		return nil, fmt.Errorf("--lighthouse-budgets %s: no budget in the list; give at least one, such as {\"path\": \"/*\", \"resourceCounts\": [{\"resourceType\": \"total\", \"budget\": 50}]}", path)
	}
	for i, b := range budgets {
		if b.Path != "" && !strings.HasPrefix(b.Path, "/") {
			return nil, fmt.Errorf("--lighthouse-budgets %s: budget %d: path %q: want a path starting with /, such as /blog/*", path, i+1, b.Path)
		}
		for _, r := range slices.Concat(b.ResourceSizes, b.ResourceCounts) {
			if !slices.Contains(budgetResourceTypes, r.ResourceType) {
				return nil, fmt.Errorf("--lighthouse-budgets %s: budget %d: resourceType %q%s; want one of %s", path, i+1, r.ResourceType, didYouMean(r.ResourceType, budgetResourceTypes), strings.Join(budgetResourceTypes, ", "))
			}
			if r.Budget < 0 {
				return nil, fmt.Errorf("--lighthouse-budgets %s: budget %d: %s: want a budget of 0 or more", path, i+1, r.ResourceType)
			}
		}
		if len(b.ResourceSizes)+len(b.ResourceCounts)+len(b.Timings) == 0 {
			return nil, fmt.Errorf("--lighthouse-budgets %s: budget %d has no resourceSizes, resourceCounts or timings: nothing to check", path, i+1)
		}
		for _, t := range b.Timings {
			if t.Budget < 0 {
				return nil, fmt.Errorf("--lighthouse-budgets %s: budget %d: %s: want a budget of 0 or more", path, i+1, t.Metric)
			}
			if _, ok := budgetMetrics[t.Metric]; !ok {
				return nil, fmt.Errorf("--lighthouse-budgets %s: budget %d: metric %q%s; want one of %s", path, i+1, t.Metric, didYouMean(t.Metric, slices.Sorted(maps.Keys(budgetMetrics))), strings.Join(slices.Sorted(maps.Keys(budgetMetrics)), ", "))
			}
		}
	}
	return budgets, nil
}
