package smoke

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/lighthouse"
)

// finish parses smoke's flags as the command does.
func finish(args ...string) (*Options, error) {
	fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return f.Finish(fs.Args())
}

// The Lighthouse flags: what they run, and errors that say what to change
// (a misspelt audit id or budget name names the nearest one).
func TestSmokeLighthouseFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good.json", `[{"path": "/*", "resourceSizes": [{"resourceType": "script", "budget": 300}], "timings": [{"metric": "interactive", "budget": 3000}]},
		{"path": "/blog/*", "options": {"firstPartyHostnames": ["*.example.com"]}, "resourceCounts": [{"resourceType": "third-party", "budget": 10}]}]`)
	tests := []struct {
		args []string
		err  string // a regexp; "" for none
		cats []string
		ok   func(*Options) bool
	}{
		{args: []string{"--lighthouse", "seo=0.8"}, cats: []string{"seo"}, ok: func(o *Options) bool { return o.sharesAudits() && o.LighthouseRuns == 1 }},
		// An audit runs its category; one in two categories runs one that
		// is already run, else the first.
		{args: []string{"--lighthouse", "seo=0.8", "--lighthouse-audit", "color-contrast=1,document-title=90%"}, cats: []string{"accessibility", "seo"},
			ok: func(o *Options) bool {
				return maps.Equal(o.LighthouseAudits, map[string]float64{"color-contrast": 1, "document-title": 0.9}) &&
					slices.Equal(o.lighthouseChecks(), []string{"lighthouse: seo", "lighthouse audit: color-contrast", "lighthouse audit: document-title"})
			}},
		{args: []string{"--lighthouse-audit", "document-title=1"}, cats: []string{"accessibility"}},
		// viewport counts in performance and best-practices: the one that
		// lets audits share.
		{args: []string{"--lighthouse-audit", "viewport=1"}, cats: []string{"best-practices"}, ok: (*Options).sharesAudits},
		{args: []string{"--lighthouse-audit", "largest-contentful-paint=0.9", "--lighthouse-runs", "3"}, cats: []string{"performance"},
			ok: func(o *Options) bool { return !o.sharesAudits() && o.LighthouseRuns == 3 }},
		// Budgets are measured by the performance category.
		{args: []string{"--lighthouse", "accessibility=1", "--lighthouse-budgets", good}, cats: []string{"performance", "accessibility"},
			ok: func(o *Options) bool {
				return len(o.LighthouseBudgets) == 2 && o.LighthouseBudgets[1].Options.FirstPartyHostnames[0] == "*.example.com" &&
					slices.Contains(o.lighthouseChecks(), "lighthouse budgets")
			}},
		{args: nil, cats: nil, ok: func(o *Options) bool { return !o.audits() }},

		{args: []string{"--lighthouse-audit", "color-contrats=1"}, err: `^--lighthouse-audit color-contrats: Lighthouse 12 scores no audit of that id; did you mean color-contrast\? \(the ids are the keys of "audits"`},
		{args: []string{"--lighthouse-audit", "zzz=1"}, err: `^--lighthouse-audit zzz: Lighthouse 12 scores no audit of that id \(the ids`},
		{args: []string{"--lighthouse-audit", "color-contrast"}, err: `want AUDIT=SCORE`},
		{args: []string{"--lighthouse-audit", "color-contrast=120"}, err: `^--lighthouse-audit color-contrast=120: want a score from 0 to 1, such as 0.9, or a percent, such as 90%$`},
		// A bare number above 1 was a percent (2 passed a score of 0.02):
		// now it is refused, naming both spellings, for both flags.
		{args: []string{"--lighthouse-audit", "color-contrast=2"}, err: `^--lighthouse-audit color-contrast=2: ambiguous: 2 is above 1, the top score; for 2 percent write 0.02 or 2%$`},
		{args: []string{"--lighthouse", "seo=90"}, err: `^--lighthouse seo=90: ambiguous: 90 is above 1, the top score; for 90 percent write 0.9 or 90%$`},
		{args: []string{"--lighthouse", "seo=101%"}, err: `^--lighthouse seo=101%: want a percent from 0% to 100%`},
		{args: []string{"--lighthouse", "seo=-0.1"}, err: `^--lighthouse seo=-0.1: want a score from 0 to 1`},
		{args: []string{"--lighthouse", "seo=high"}, err: `^--lighthouse seo=high: want a score from 0 to 1, such as 0.9, or a percent, such as 90%$`},
		{args: []string{"--lighthouse", "seo=90%,accessibility=1", "--lighthouse-audit", "color-contrast=0.5,document-title=100%"}, cats: []string{"accessibility", "seo"},
			ok: func(o *Options) bool {
				return maps.Equal(o.Lighthouse, map[string]float64{"seo": 0.9, "accessibility": 1}) &&
					maps.Equal(o.LighthouseAudits, map[string]float64{"color-contrast": 0.5, "document-title": 1})
			}},
		{args: []string{"--lighthouse", "seo=1", "--lighthouse-runs", "0"}, err: `^--lighthouse-runs 0: want 1 to 9$`},
		{args: []string{"--lighthouse", "seo=1", "--lighthouse-runs", "10"}, err: `^--lighthouse-runs 10: want 1 to 9$`},
		{args: []string{"--lighthouse-runs", "2"}, err: `^--lighthouse-runs 2: nothing to audit; add --lighthouse`},
		{args: []string{"--lighthouse-budgets", filepath.Join(dir, "missing.json")}, err: `^--lighthouse-budgets: open .*missing.json: no such file`},
		{args: []string{"--lighthouse-budgets", file("obj.json", `{"path": "/*", "timings": []}`)}, err: `^--lighthouse-budgets .*obj.json: an object, not a list; want Lighthouse's budget.json, a list such as \[`},
		{args: []string{"--lighthouse-budgets", file("str.json", `"x"`)}, err: `str.json: not a list of budgets; want`},
		{args: []string{"--lighthouse-budgets", file("bad.json", `[{"path": "/*",`)}, err: `bad.json: unexpected EOF; want Lighthouse's budget.json`},
		{args: []string{"--lighthouse-budgets", file("unknown.json", `[{"path": "/*", "resourceSize": []}]`)}, err: `unknown.json: unknown field "resourceSize"; want`},
		{args: []string{"--lighthouse-budgets", file("empty.json", `[]`)}, err: `empty.json: no budget in the list`},
		{args: []string{"--lighthouse-budgets", file("nothing.json", `[{"path": "/*"}]`)}, err: `nothing.json: budget 1 has no resourceSizes, resourceCounts or timings`},
		{args: []string{"--lighthouse-budgets", file("path.json", `[{"path": "blog/*", "timings": [{"metric": "interactive", "budget": 1}]}]`)}, err: `path.json: budget 1: path "blog/\*": want a path starting with /`},
		{args: []string{"--lighthouse-budgets", file("type.json", `[{"resourceSizes": [{"resourceType": "scripts", "budget": 1}]}]`)}, err: `type.json: budget 1: resourceType "scripts"; did you mean script\?; want one of document, script,`},
		{args: []string{"--lighthouse-budgets", file("metric.json", `[{}, {"timings": [{"metric": "interactiv", "budget": 1}]}]`)}, err: `metric.json: budget 1 has no`},
		{args: []string{"--lighthouse-budgets", file("metric2.json", `[{"timings": [{"metric": "interactiv", "budget": 1}]}]`)}, err: `metric2.json: budget 1: metric "interactiv"; did you mean interactive\?; want one of cumulative-layout-shift,`},
		{args: []string{"--lighthouse-budgets", file("neg.json", `[{"resourceCounts": [{"resourceType": "total", "budget": -1}]}]`)}, err: `neg.json: budget 1: total: want a budget of 0 or more`},
	}
	for _, tt := range tests {
		o, err := finish(tt.args...)
		if tt.err != "" {
			if err == nil || !regexp.MustCompile(tt.err).MatchString(err.Error()) {
				t.Errorf("%q: error %v, want %s", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got := o.auditCategories(); !slices.Equal(got, tt.cats) {
			t.Errorf("%q: categories %q, want %q", tt.args, got, tt.cats)
		}
		if tt.ok != nil && !tt.ok(o) {
			t.Errorf("%q: options %+v", tt.args, o)
		}
	}
}

// Budgets apply by path as Lighthouse's did, and their figures come from
// the report's network-requests and metrics audits.
func TestSmokeBudgets(t *testing.T) {
	t.Parallel()
	budgets := []Budget{{Path: "/*"}, {Path: "/blog/*"}, {Path: "/blog/draft$"}, {Path: "/?q=*"}}
	for url, want := range map[string]int{
		"https://a.test/":            0,
		"https://a.test/about":       0,
		"https://a.test/blog/x":      1,
		"https://a.test/blog/draft":  2,
		"https://a.test/blog/draft2": 1,
		"https://a.test/?q=1":        3,
	} {
		if got := budgetFor(budgets, url); got != &budgets[want] {
			t.Errorf("%s: budget %v, want %d", url, got, want)
		}
	}
	if budgetFor([]Budget{{Path: "/blog/*"}}, "https://a.test/") != nil {
		t.Error("a budget for another path applied")
	}

	rows := `{"items": [
		{"url": "https://www.a.test/", "resourceType": "Document", "transferSize": 2048},
		{"url": "https://cdn.a.test/app.js", "resourceType": "Script", "transferSize": 10240},
		{"url": "https://tracker.test/t.js", "resourceType": "Script", "transferSize": 1024},
		{"url": "https://www.a.test/x", "resourceType": "XHR", "transferSize": 512},
		{"url": "data:image/png;base64,AAAA", "resourceType": "Image", "transferSize": 0}]}`
	audits := map[string]lighthouse.AuditResult{
		"network-requests": {Details: json.RawMessage(rows)},
		"metrics":          {Details: json.RawMessage(`{"items": [{"interactive": 1234.5, "cumulativeLayoutShift": 0.01}]}`)},
	}
	b := &Budget{
		ResourceSizes:  []ResourceBudget{{"script", 0}, {"total", 0}, {"third-party", 0}},
		ResourceCounts: []ResourceBudget{{"document", 0}, {"other", 0}, {"third-party", 0}, {"image", 0}},
		Timings:        []TimingBudget{{"interactive", 0}, {"cumulative-layout-shift", 0}},
	}
	got, err := measureBudget(b, "https://www.a.test/", audits)
	want := map[string]float64{
		"resourceSizes/script": 11, "resourceSizes/total": 13.5, "resourceSizes/third-party": 1,
		"resourceCounts/document": 1, "resourceCounts/other": 1, "resourceCounts/third-party": 1, "resourceCounts/image": 0,
		"timings/interactive": 1234.5, "timings/cumulative-layout-shift": 0.01,
	}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("measured %v, %v; want %v", got, err, want)
	}
	b.Options.FirstPartyHostnames = []string{"www.a.test"}
	if got, _ := measureBudget(b, "https://www.a.test/", audits); got["resourceCounts/third-party"] != 2 {
		t.Errorf("with firstPartyHostnames www.a.test: third-party %v, want cdn.a.test counted too", got["resourceCounts/third-party"])
	}
	if _, err := measureBudget(b, "https://www.a.test/", map[string]lighthouse.AuditResult{}); err == nil || !strings.Contains(err.Error(), "no network-requests audit") {
		t.Errorf("a report without network requests: %v", err)
	}

	for _, tt := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{0.9, 0.5}, 0.7}, {[]float64{0.9, 0.1, 0.5}, 0.5}} {
		if got := median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

// listAudits prints, as JSON, the id of every audit Lighthouse's default
// config scores in navigation mode, with its categories in config order.
const listAudits = `
import c from 'lighthouse/core/config/default-config.js';
const modes = {};
for (const a of c.audits) {
  const path = typeof a === 'string' ? a : a.path;
  const m = (await import('lighthouse/core/audits/' + path + '.js')).default;
  modes[m.meta.id] = m.meta.supportedModes;
}
const out = {};
for (const [cat, def] of Object.entries(c.categories)) {
  for (const r of def.auditRefs) {
    if (modes[r.id] && !modes[r.id].includes('navigation')) continue;
    (out[r.id] ??= []).push(cat);
  }
}
console.log(JSON.stringify(out));
`

// lighthouse_audits.go is of the Lighthouse installed: without Node, the
// test compares versions; PAGEMUX_UPDATE_AUDITS=1 writes it anew from
// Lighthouse's default config (1.5 CPU-s of node).
func TestLighthouseAuditList(t *testing.T) {
	t.Parallel()
	r, err := lighthouse.Find()
	if err != nil {
		t.Fatalf("this test needs Lighthouse: %v", err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(r.Dir, "node_modules", "lighthouse", "package.json"))
	if err != nil || json.Unmarshal(data, &pkg) != nil {
		t.Fatalf("Lighthouse's package.json: %v", err)
	}
	header := fmt.Sprintf("// Code generated by TestLighthouseAuditList from Lighthouse %s's default config; DO NOT EDIT.\n", pkg.Version)
	if os.Getenv("PAGEMUX_UPDATE_AUDITS") == "" {
		src, err := os.ReadFile("lighthouse_audits.go")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(src, []byte(header)) {
			t.Fatalf("lighthouse_audits.go is not of Lighthouse %s: run PAGEMUX_UPDATE_AUDITS=1 go test -run TestLighthouseAuditList ./smoke/", pkg.Version)
		}
		return
	}
	cmd := exec.Command(r.Node, "--input-type=module", "-e", listAudits)
	cmd.Dir = r.Dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var audits map[string][]string
	if err := json.Unmarshal(out, &audits); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("// Regenerate with PAGEMUX_UPDATE_AUDITS=1 go test -run TestLighthouseAuditList ./smoke/.\n\npackage smoke\n\n")
	b.WriteString("// lighthouseAudits maps the id of each audit Lighthouse scores to the\n// categories it counts in, in Lighthouse's order, so that --lighthouse-audit\n// can check an id and run its category without starting Node.\n")
	b.WriteString("var lighthouseAudits = map[string][]string{\n")
	for _, id := range slices.Sorted(maps.Keys(audits)) {
		var cats []string
		for _, c := range audits[id] {
			cats = append(cats, fmt.Sprintf("%q", c))
		}
		fmt.Fprintf(&b, "\t%q: {%s},\n", id, strings.Join(cats, ", "))
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("lighthouse_audits.go", src, 0o644); err != nil {
		t.Fatal(err)
	}
}
