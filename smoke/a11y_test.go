package smoke

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/browser"
)

// TestSmokeA11y: axe-core, embedded, finds the three violations a page was
// made with (low contrast, an image without alt, a button without a name)
// and none on a clean page; each is listed with its rule, impact, element
// and help page in the summary, the JSON and JUnit; --a11y-impact makes the
// serious one a warning, and the critical ones fail the page. The bad page
// has an AMD loader that throws, which axe must not register with. One run,
// one Chrome.
func TestSmokeA11y(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	// A page whose CSP allows no inline script and no eval: axe runs anyway.
	strict := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'")
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Strict</title><main><h1>Strict</h1><input type="text"></main></html>`)
	}))
	defer strict.Close()
	o := options(t, "--a11y", "wcag2aa", "--a11y-impact", "critical", "--json", jsonPath, "--junit", junitPath,
		siteURL("/a11y-bad.html"), siteURL("/clean.html"), strict.URL+"/")
	code, stdout, stderr := run(t, o, browser.Config{})
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	r := readReport(t, jsonPath)
	bad, clean := r.Pages[0], r.Pages[1]
	if p := r.Pages[2]; p.A11y == nil || len(p.A11y.Violations) != 1 || p.A11y.Violations[0].Rule != "label" {
		t.Errorf("the page with a strict CSP: a11y %+v, problems %q; want its input without a label", p.A11y, problems(p))
	}
	if !clean.Passed || clean.A11y == nil || len(clean.A11y.Violations) != 0 || clean.check(checkA11y).Result != Pass {
		t.Errorf("the clean page: passed %v, a11y %+v, problems %q", clean.Passed, clean.A11y, problems(clean))
	}
	if bad.Passed || bad.A11y == nil || bad.A11y.Axe != axeVersion() || !slices.Equal(bad.A11y.Levels, []string{"wcag2aa"}) {
		t.Fatalf("the bad page: passed %v, a11y %+v", bad.Passed, bad.A11y)
	}
	want := map[string]struct{ impact, selector, sev string }{
		"button-name":    {"critical", "#icon", "error"},
		"image-alt":      {"critical", "img", "error"},
		"color-contrast": {"serious", "p", "warning"},
	}
	var rules []string
	for _, v := range bad.A11y.Violations {
		rules = append(rules, v.Rule)
		w, ok := want[v.Rule]
		if !ok {
			continue
		}
		if v.Impact != w.impact || v.Count != 1 || !slices.Equal(v.Selectors, []string{w.selector}) || v.HelpURL != "https://dequeuniversity.com/rules/axe/4.14/"+v.Rule || v.Help == "" {
			t.Errorf("violation %+v, want impact %s on %s with its help page", v, w.impact, w.selector)
		}
	}
	slices.Sort(rules)
	if !slices.Equal(rules, []string{"button-name", "color-contrast", "image-alt"}) {
		t.Errorf("violations %q, want button-name, color-contrast, image-alt", rules)
	}
	got := problems(bad)
	for rule, w := range want {
		re := regexp.MustCompile(`^a11y: ` + w.sev + `: ` + regexp.QuoteMeta(rule) + ` \(` + w.impact + `\): .+; 1 element: ` + regexp.QuoteMeta(w.selector) + `; see https://dequeuniversity\.com/rules/axe/4\.14/` + regexp.QuoteMeta(rule) + `$`)
		if !slices.ContainsFunc(got, re.MatchString) {
			t.Errorf("no problem matches %s in\n  %s", re, strings.Join(got, "\n  "))
		}
	}
	for _, w := range []string{"error    a11y: button-name (critical)", "warning  a11y: color-contrast (serious)", "FAIL    " + siteURL("/a11y-bad.html"), "PASS    " + siteURL("/clean.html")} {
		if !strings.Contains(stdout, w) {
			t.Errorf("summary lacks %q:\n%s", w, stdout)
		}
	}

	// JUnit: one a11y testcase per page; the bad page's is one failure that
	// names each violation, and lists them all in its text.
	b, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var ju JUnitSuites
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatal(err)
	}
	for i, s := range ju.Suites[:2] {
		var cases []JUnitCase
		for _, c := range s.Cases {
			if c.Name == checkA11y {
				cases = append(cases, c)
			}
		}
		if len(cases) != 1 {
			t.Fatalf("%s: %d a11y testcases, want 1", s.Name, len(cases))
		}
		f := cases[0].Failure
		if i == 1 {
			if f != nil {
				t.Errorf("the clean page's a11y testcase failed: %+v", f)
			}
			continue
		}
		if f == nil {
			t.Fatalf("the bad page's a11y testcase did not fail:\n%s", b)
		}
		if f.Message != "3 accessibility violations (2 failing at --a11y-impact critical): button-name (critical), color-contrast (serious), image-alt (critical)" {
			t.Errorf("failure message %q", f.Message)
		}
		for rule := range want {
			if !strings.Contains(f.Text, rule+" (") {
				t.Errorf("failure text lacks %s:\n%s", rule, f.Text)
			}
		}
	}
}

// The --a11y flags: levels include the levels below them; a misspelt rule
// or level is a usage error that says what to give.
func TestSmokeA11yFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		err  string
		tags []string
	}{
		{[]string{"--a11y", "wcag21aa,best-practice", "--a11y-ignore", "color-contrast", "--a11y-ignore", "region,image-alt"}, "",
			[]string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"}},
		{[]string{"--a11y", "wcag22aa"}, "", []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"}},
		{nil, "", nil},
		{[]string{"--a11y", "wcag3"}, `--a11y "wcag3": want levels among wcag2a, wcag2aa`, nil},
		{[]string{"--a11y", "wcag2aa", "--a11y-ignore", "colour-contrast"}, `--a11y-ignore "colour-contrast": axe-core 4.14.1 has no such rule; did you mean color-contrast?`, nil},
		{[]string{"--a11y", "wcag2aa", "--a11y-impact", "severe"}, "--a11y-impact \"severe\": want one of minor, moderate, serious, critical", nil},
		{[]string{"--a11y-ignore", "region"}, "--a11y-ignore without --a11y", nil},
	} {
		fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := AddFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		o, err := f.Finish([]string{"https://example.com/"})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(o.A11y.Tags, tt.tags) {
			t.Errorf("%q: tags %q, %v; want %q", tt.args, o.A11y.Tags, err, tt.tags)
		}
		if len(tt.args) > 0 && tt.args[len(tt.args)-1] == "region,image-alt" && !slices.Equal(o.A11y.Ignore, []string{"color-contrast", "region", "image-alt"}) {
			t.Errorf("ignore %q", o.A11y.Ignore)
		}
	}
}

// The vendored axe-core is the one npm publishes (its own SRI hash), and
// the rule ids read from it are axe's rules.
func TestSmokeAxeVendored(t *testing.T) {
	t.Parallel()
	if got := axeDigest(); got != axeSHA256 {
		t.Errorf("smoke/axe/axe.min.js is %s, want %s (axe-core's sri-history.json); see smoke/axe/README.md", got, axeSHA256)
	}
	for _, f := range []string{"axe/LICENSE", "axe/LICENSE-3RD-PARTY.txt"} {
		if b, err := os.ReadFile(f); err != nil || !strings.Contains(string(b), "License") {
			t.Errorf("%s: %v", f, err)
		}
	}
	rules := axeRules()
	sorted := slices.Clone(rules)
	slices.Sort(sorted)
	if len(rules) < 90 || len(slices.Compact(sorted)) != len(rules) {
		t.Errorf("%d rules read from axe-core (%d distinct), want about 100", len(rules), len(slices.Compact(sorted)))
	}
	for _, r := range []string{"color-contrast", "image-alt", "button-name", "region", "html-has-lang", "video-caption", "accesskeys"} {
		if !slices.Contains(rules, r) {
			t.Errorf("no rule %s among %q", r, rules)
		}
	}
}

// The axe runner alone, in a page: it puts back the page's own window.axe
// (and leaves none where the page had none), and the rule ids read from the
// embedded source are the rules axe itself lists.
func TestSmokeAxeRunner(t *testing.T) {
	t.Parallel()
	b := browser.New(browser.Config{})
	defer b.Close()
	ctx := t.Context()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewPage(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(ctx, siteURL("/a11y-bad.html"), 0); err != nil {
		t.Fatal(err)
	}
	path, err := writeAxeRunner(t.TempDir(), A11yOptions{Tags: []string{"wcag2a"}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	eval := func(fn string) string {
		t.Helper()
		v, err := p.Evaluate(ctx, fn, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	run := func() string {
		t.Helper()
		var got struct{ Violations []Violation }
		if err := json.Unmarshal([]byte(eval(string(src))), &got); err != nil {
			t.Fatal(err)
		}
		var rules []string
		for _, v := range got.Violations {
			rules = append(rules, v.Rule)
		}
		slices.Sort(rules)
		return strings.Join(rules, " ")
	}
	if got := run(); got != "button-name image-alt" {
		t.Errorf("wcag2a violations: %s", got)
	}
	if got := eval(`() => typeof window.axe`); got != `"undefined"` {
		t.Errorf("after a run on a page without axe, window.axe is %s", got)
	}
	eval(`() => { window.axe = "the page's own"; return true; }`)
	run()
	if got := eval(`() => window.axe`); got != `"the page's own"` {
		t.Errorf("after a run, the page's window.axe is %s", got)
	}
	// Loaded once more, to ask it its rules.
	rules := eval("async () => { (function (define) {\n" + axeSource + "\n})(); const ids = axe.getRules().map(r => r.ruleId); delete window.axe; return ids; }")
	var ids []string
	if err := json.Unmarshal([]byte(rules), &ids); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	read := slices.Sorted(slices.Values(axeRules()))
	if !slices.Equal(ids, read) {
		t.Errorf("axe lists %d rules, %d were read from its source:\n%q\n%q", len(ids), len(read), ids, read)
	}
}
