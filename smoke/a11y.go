package smoke

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pagemux/pagemux/internal/typo"
)

// The a11y check runs axe-core (Deque's accessibility engine, the one
// Lighthouse's accessibility category runs) in each page, with the rules of
// the WCAG levels --a11y names, and lists every violation: its rule, impact,
// elements and help page. It is vendored (axe/) and embedded, so that
// `pagemux smoke` needs no Node, and it goes in through evaluate_script like
// every other check.

//go:embed axe/axe.min.js
var axeSource string

// axeSHA256 is the SRI hash axe-core publishes for this axe.min.js
// (sri-history.json); the vendoring test checks the file against it.
const axeSHA256 = "sha256-KTSJmUUM3yhJqOcLeRL8LahahJ2jnA0NU5T1HUqe2Vw="

const checkA11y = "a11y"

// A11yLevel is a level --a11y takes and the axe tags it runs.
type A11yLevel struct {
	Name string
	Tags []string
}

// A11yLevels are what --a11y takes, each with the axe tags it runs: a WCAG
// level includes the levels below it, as conformance does (AA is A and AA;
// 2.1 AA is 2.0's A and AA and 2.1's).
var A11yLevels = []A11yLevel{
	{"wcag2a", []string{"wcag2a"}},
	{"wcag2aa", []string{"wcag2a", "wcag2aa"}},
	{"wcag2aaa", []string{"wcag2a", "wcag2aa", "wcag2aaa"}},
	{"wcag21a", []string{"wcag2a", "wcag21a"}},
	{"wcag21aa", []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa"}},
	{"wcag22aa", []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"}},
	{"best-practice", []string{"best-practice"}},
	{"section508", []string{"section508"}},
	{"EN-301-549", []string{"EN-301-549"}},
}

// Impacts are axe's impacts, lowest first; --a11y-impact names the lowest
// that fails a page.
var Impacts = []string{"minor", "moderate", "serious", "critical"}

// A11yOptions are the --a11y flags.
type A11yOptions struct {
	// Levels are as given (wcag2aa,best-practice); Tags the axe tags they
	// run. Empty Tags runs no a11y check.
	Levels []string
	Tags   []string
	// Ignore are rule ids not run (--a11y-ignore).
	Ignore []string
	// Impact is the lowest impact that is an error; violations below it
	// are warnings (which --fail-on warning fails).
	Impact string
}

// parseA11y reads --a11y, --a11y-ignore and --a11y-impact.
func parseA11y(levels string, ignore []string, impact string) (A11yOptions, error) {
	var o A11yOptions
	if !slices.Contains(Impacts, impact) {
		return o, fmt.Errorf("--a11y-impact %q: want one of %s (the lowest impact that fails a page)", impact, strings.Join(Impacts, ", "))
	}
	o.Impact = impact
	if strings.TrimSpace(levels) == "" {
		if len(ignore) > 0 {
			return o, fmt.Errorf("--a11y-ignore without --a11y: give the levels to check as well, such as --a11y wcag2aa")
		}
		return o, nil
	}
	var names []string
	for _, l := range A11yLevels {
		names = append(names, l.Name)
	}
	for _, part := range strings.Split(levels, ",") {
		part = strings.TrimSpace(part)
		i := slices.IndexFunc(A11yLevels, func(l A11yLevel) bool { return strings.EqualFold(l.Name, part) })
		if i < 0 {
			return o, fmt.Errorf("--a11y %q: want levels among %s, comma-separated, such as --a11y wcag2aa,best-practice", part, strings.Join(names, ", "))
		}
		o.Levels = append(o.Levels, A11yLevels[i].Name)
		for _, t := range A11yLevels[i].Tags {
			if !slices.Contains(o.Tags, t) {
				o.Tags = append(o.Tags, t)
			}
		}
	}
	known := axeRules()
	for _, raw := range ignore {
		for _, id := range strings.Split(raw, ",") {
			if id = strings.TrimSpace(id); id == "" {
				continue
			}
			if !slices.Contains(known, id) {
				hint := ""
				if near := nearest(id, known); near != "" {
					hint = fmt.Sprintf("did you mean %s? ", near)
				}
				return o, fmt.Errorf("--a11y-ignore %q: axe-core %s has no such rule; %sthe rule ids are a violation's first word in the report, and listed at %s", id, axeVersion(), hint, axeRulesURL())
			}
			o.Ignore = append(o.Ignore, id)
		}
	}
	return o, nil
}

var (
	axeRulesOnce sync.Once
	axeRuleIDs   []string
)

// axeRules are the ids of the rules in the embedded axe-core, read from its
// source (the rules array before the checks), so that a misspelt
// --a11y-ignore is a usage error rather than a rule that still runs. The
// a11y test checks the list against what axe says in a page.
func axeRules() []string {
	axeRulesOnce.Do(func() {
		i := strings.Index(axeSource, `rules:[{id:"`)
		j := strings.Index(axeSource[max(i, 0):], "checks:[")
		if i < 0 || j < 0 {
			return
		}
		for _, m := range regexp.MustCompile(`\{id:"([a-z0-9-]+)"`).FindAllStringSubmatch(axeSource[i:i+j], -1) {
			axeRuleIDs = append(axeRuleIDs, m[1])
		}
	})
	return axeRuleIDs
}

var axeVersionRE = regexp.MustCompile(`^/\*! axe v(\d+\.\d+\.\d+)`)

// axeVersion is the embedded axe-core's version, "4.14.1".
func axeVersion() string {
	if m := axeVersionRE.FindStringSubmatch(axeSource); m != nil {
		return m[1]
	}
	return "?"
}

// axeRulesURL is Deque's list of the rules of this axe-core version.
func axeRulesURL() string {
	v := axeVersion()
	if parts := strings.Split(v, "."); len(parts) == 3 {
		v = parts[0] + "." + parts[1]
	}
	return "https://dequeuniversity.com/rules/axe/" + v
}

// axeDigest is the SRI form of the embedded source's SHA-256.
func axeDigest() string {
	sum := sha256.Sum256([]byte(axeSource))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// maxA11yNodes bounds the selectors kept of one violation (each cut at 200
// characters): the count says how many elements there were. So bounded,
// the answer of a page that breaks every rule stays under evaluate_script's
// inline limit (256 KB).
const maxA11yNodes = 10

// axeRunner is the function evaluate_script runs: it loads axe-core with
// AMD and CommonJS hidden (a page's RequireJS would otherwise take it as a
// module), runs the rules of the levels, and puts back the page's own
// window.axe, if it had one. Frames are not entered: axe would wait for an
// axe in each of them. It returns the violations, cut to what the report
// shows.
const axeRunner = `async () => {
  const opts = %s;
  const prior = Object.getOwnPropertyDescriptor(window, 'axe');
  (function (define, module, exports) {
%s
  })();
  const axe = window.axe;
  try {
    const rules = {};
    for (const id of opts.ignore) rules[id] = {enabled: false};
    const known = new Set(axe.getRules().map(r => r.ruleId));
    const r = await axe.run(document, {runOnly: {type: 'tag', values: opts.tags}, rules, resultTypes: ['violations'], iframes: false});
    const cut = s => s.length > 200 ? s.slice(0, 199) + '…' : s;
    const sel = t => cut(Array.isArray(t) ? t.join(' >>> ') : String(t));
    return {
      version: axe.version,
      unknown: opts.ignore.filter(id => !known.has(id)),
      violations: r.violations.map(v => ({
        rule: v.id, impact: v.impact || 'minor', help: v.help, helpUrl: v.helpUrl, count: v.nodes.length,
        selectors: v.nodes.slice(0, opts.max).map(n => n.target.map(sel).join(' ')),
      })),
    };
  } finally {
    if (prior) Object.defineProperty(window, 'axe', prior); else delete window.axe;
  }
}`

// writeAxeRunner writes the runner, with axe-core and the run's options in
// it, to dir (a workspace of the run's), for evaluate_script's sourcePath:
// 650 KB once, rather than in every call.
func writeAxeRunner(dir string, o A11yOptions) (string, error) {
	opts, err := json.Marshal(map[string]any{"tags": o.Tags, "ignore": append([]string{}, o.Ignore...), "max": maxA11yNodes})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "axe-run.js")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(axeRunner, opts, axeSource)), 0o600); err != nil {
		return "", fmt.Errorf("write the axe-core runner: %w", err)
	}
	return path, nil
}

// A11yResult is what axe found on a page, in the JSON report.
type A11yResult struct {
	// Axe is axe-core's version; Levels the --a11y levels run.
	Axe        string      `json:"axe"`
	Levels     []string    `json:"levels"`
	Violations []Violation `json:"violations"`
}

// Violation is one axe rule a page breaks.
type Violation struct {
	Rule    string `json:"rule"`
	Impact  string `json:"impact"`
	Help    string `json:"help"`
	HelpURL string `json:"helpUrl"`
	// Count is how many elements break it; Selectors name the first
	// maxA11yNodes of them.
	Count     int      `json:"count"`
	Selectors []string `json:"selectors"`
}

// a11y runs axe-core in the page and adds a problem per violation: an
// error at --a11y-impact or above, else a warning.
func (k *checker) a11y(ctx context.Context, id int, p *Page) {
	c := p.check(checkA11y)
	start := time.Now()
	defer func() { c.Time = Millis(time.Since(start)) }()
	var got struct {
		Version    string      `json:"version"`
		Unknown    []string    `json:"unknown"`
		Violations []Violation `json:"violations"`
	}
	err := k.a.scriptValue(ctx, map[string]any{"pageId": id, "sourcePath": k.axePath, "waitForStableDom": false}, &got)
	if err != nil {
		c.broken(fmt.Errorf("axe-core: %w", err))
		return
	}
	if len(got.Unknown) > 0 {
		c.add(Warning, "axe-core %s does not know the rules %s given to --a11y-ignore; they ran", got.Version, strings.Join(got.Unknown, ", "))
	}
	lowest := slices.Index(Impacts, k.o.A11y.Impact)
	var named []string
	failing := 0
	for i, v := range got.Violations {
		// Deque's page without axe's tag of where the link was shown.
		v.HelpURL = strings.TrimSuffix(v.HelpURL, "?application=axeAPI")
		got.Violations[i] = v
		sev := Warning
		if slices.Index(Impacts, v.Impact) >= lowest {
			sev = Error
		}
		if fails(sev, k.o.FailOn) {
			failing++
		}
		named = append(named, v.Rule+" ("+v.Impact+")")
		c.add(sev, "%s (%s): %s; %s: %s; see %s", v.Rule, v.Impact, strings.TrimSuffix(v.Help, "."), plural(v.Count, "element"), elementList(v), v.HelpURL)
	}
	p.A11y = &A11yResult{Axe: got.Version, Levels: k.o.A11y.Levels, Violations: got.Violations}
	if failing > 0 {
		c.Summary = fmt.Sprintf("%s (%d failing at --a11y-impact %s): %s", plural(len(named), "accessibility violation"), failing, k.o.A11y.Impact, strings.Join(named, ", "))
	}
}

// elementList names up to three of a violation's elements.
func elementList(v Violation) string {
	names := v.Selectors
	if len(names) > 3 {
		names = names[:3]
	}
	s := strings.Join(names, ", ")
	if v.Count > len(names) {
		s += fmt.Sprintf(" and %d more", v.Count-len(names))
	}
	return s
}

// nearest is the name among names closest to s, if close enough to be a
// typo of it; "" if none is.
func nearest(s string, names []string) string { return typo.Nearest(s, names, 0) }
