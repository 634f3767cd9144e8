package smoke

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pagemux/pagemux/browser"
	"go.yaml.in/yaml/v3"
)

// Steps are what a page needs done before it is checked (--steps): dismiss
// a banner, open a tab, fill a search. Login is --login's: steps run once,
// before every page, in a tab of the browser context all pages share, so
// that they share its cookies.

// Check names of the steps.
const (
	checkSteps = "steps"
	checkLogin = "login"
)

// Step kinds, as a steps file names them.
const (
	stepNavigate        = "navigate"
	stepClick           = "click"
	stepFill            = "fill"
	stepPress           = "press"
	stepWaitForSelector = "waitForSelector"
	stepWaitForURL      = "waitForURL"
	stepWaitForText     = "waitForText"
)

var stepKinds = []string{stepNavigate, stepClick, stepFill, stepPress, stepWaitForSelector, stepWaitForURL, stepWaitForText}

// Step is one action of a steps file.
type Step struct {
	// Kind is one of stepKinds; Target its selector, URL, key or text.
	Kind, Target string
	// Value is what fill enters; Secret says it came from the environment
	// ($VAR), so it is kept out of every message.
	Value  string
	Secret bool
	// Timeout bounds the step; 0 is --timeout.
	Timeout time.Duration
}

// describe names the step in a report, without its value: "click #buy".
func (s Step) describe() string {
	switch s.Kind {
	case stepWaitForSelector:
		return "wait for selector " + s.Target
	case stepWaitForURL:
		return "wait for URL " + s.Target
	case stepWaitForText:
		return fmt.Sprintf("wait for text %q", s.Target)
	}
	return s.Kind + " " + s.Target
}

// StepsFile is a --steps file: steps for every page, then each page's own,
// by its URL (or path, on --base-url).
type StepsFile struct {
	All   []Step
	Pages map[string][]Step
}

// stepsHelp ends a bad file's error: what a file looks like.
const stepsHelp = `a steps file is a list of steps, or {"all": [steps], "pages": {"URL or /path": [steps]}}; a step is one of {"navigate": URL}, {"click": CSS}, {"fill": CSS, "value": TEXT or $VAR}, {"press": KEY}, {"waitForSelector": CSS}, {"waitForURL": TEXT}, {"waitForText": TEXT}, each with an optional "timeout": "5s"`

// readStepsFile reads --steps (JSON, or YAML for .yaml and .yml).
func readStepsFile(flagName, file string, base *url.URL, pagesAllowed bool) (*StepsFile, error) {
	raw, err := readStructured(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s %s: %s; %s", flagName, file, fmt.Sprintf(format, args...), stepsHelp)
	}
	sf := &StepsFile{Pages: map[string][]Step{}}
	var all any
	switch v := raw.(type) {
	case []any:
		all = v
	case map[string]any:
		for k := range v {
			if k != "all" && k != "pages" {
				return nil, bad("unknown key %q at the top", k)
			}
		}
		all = v["all"]
		if pages, ok := v["pages"]; ok {
			if !pagesAllowed {
				return nil, bad(`"pages" is for --steps; --login's steps run once, before every page`)
			}
			m, ok := pages.(map[string]any)
			if !ok {
				return nil, bad(`"pages" is not an object of URL: [steps]`)
			}
			for _, key := range slices.Sorted(maps.Keys(m)) {
				list := m[key]
				u, err := onBase(key, base)
				if err != nil && strings.HasPrefix(key, "/") {
					u, err = key, nil // a path, matched against the pages' paths
				}
				if err != nil {
					return nil, bad("pages[%q]: %v", key, err)
				}
				steps, err := parseSteps(fmt.Sprintf("pages[%q] ", key), list, bad)
				if err != nil {
					return nil, err
				}
				sf.Pages[u] = append(sf.Pages[u], steps...)
			}
		}
	default:
		return nil, bad("want a list of steps or an object")
	}
	if all != nil {
		if sf.All, err = parseSteps("", all, bad); err != nil {
			return nil, err
		}
	}
	if len(sf.All) == 0 && len(sf.Pages) == 0 {
		return nil, bad("no steps in it")
	}
	return sf, nil
}

// readStructured decodes a JSON or YAML file into plain values (maps,
// lists, strings, numbers). YAML goes through JSON's types, so both are
// read by the same rules.
func readStructured(file string) (any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var v any
	if ext := strings.ToLower(path.Ext(file)); ext == ".yaml" || ext == ".yml" {
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s is not YAML: %v", file, err)
		}
		// YAML maps may have non-string keys; a steps file has none.
		j, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v (keys must be strings)", file, err)
		}
		b = j
	}
	if err := json.Unmarshal(b, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s is not JSON at line %d (%v); a .yaml or .yml file is read as YAML", file, lineOf(b, se.Offset), se)
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return v, nil
}

// parseSteps reads a list of steps; where prefixes the step's place in
// errors.
func parseSteps(where string, list any, bad func(string, ...any) error) ([]Step, error) {
	items, ok := list.([]any)
	if !ok {
		return nil, bad("%swant a list of steps", where)
	}
	var out []Step
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, bad("%sstep %d is not an object", where, i+1)
		}
		s, err := parseStep(m)
		if err != nil {
			return nil, bad("%sstep %d: %v", where, i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseStep(m map[string]any) (Step, error) {
	var s Step
	str := func(key string) (string, error) {
		v, ok := m[key].(string)
		if !ok {
			return "", fmt.Errorf("%q wants a string", key)
		}
		return v, nil
	}
	for key := range m {
		if !slices.Contains(stepKinds, key) && key != "value" && key != "timeout" {
			return s, fmt.Errorf("unknown key %q", key)
		}
		if slices.Contains(stepKinds, key) {
			if s.Kind != "" {
				return s, fmt.Errorf("both %q and %q: give one action a step", s.Kind, key)
			}
			s.Kind = key
		}
	}
	if s.Kind == "" {
		return s, errors.New("no action")
	}
	var err error
	if s.Target, err = str(s.Kind); err != nil {
		return s, err
	}
	if strings.TrimSpace(s.Target) == "" {
		return s, fmt.Errorf("%q is empty", s.Kind)
	}
	if _, ok := m["value"]; ok != (s.Kind == stepFill) {
		if ok {
			return s, fmt.Errorf(`"value" is for fill`)
		}
		return s, errors.New(`fill needs "value" (the text to enter; $VAR reads it from the environment)`)
	}
	if s.Kind == stepFill {
		if s.Value, err = str("value"); err != nil {
			return s, err
		}
		if strings.Contains(s.Value, "$") {
			s.Secret = true
			if s.Value, err = fromEnv("fill "+s.Target, s.Value); err != nil {
				return s, err
			}
		}
	}
	if s.Kind == stepPress {
		if _, err := browser.ParseKey(s.Target); err != nil {
			return s, err
		}
	}
	if _, ok := m["timeout"]; ok {
		t, err := str("timeout")
		if err == nil {
			s.Timeout, err = time.ParseDuration(t)
		}
		if err != nil || s.Timeout <= 0 {
			return s, errors.New(`"timeout" wants a positive duration, such as "5s"`)
		}
	}
	return s, nil
}

// stepsFor are the steps of a page: the file's steps for all, then those
// keyed by its URL or path.
func (sf *StepsFile) stepsFor(pageURL string) []Step {
	if sf == nil {
		return nil
	}
	steps := slices.Clone(sf.All)
	steps = append(steps, sf.Pages[pageURL]...)
	if u, err := url.Parse(pageURL); err == nil && u.RequestURI() != pageURL {
		steps = append(steps, sf.Pages[u.RequestURI()]...)
	}
	return steps
}

// unmatched are the keys of pages no page checked has, for the error that
// names them.
func (sf *StepsFile) unmatched(pages []string) []string {
	if sf == nil {
		return nil
	}
	var out []string
	for key := range sf.Pages {
		if !slices.ContainsFunc(pages, func(p string) bool {
			u, err := url.Parse(p)
			return p == key || err == nil && u.RequestURI() == key
		}) {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// runSteps runs steps in tab id, in order, and adds a problem to c for the
// first that fails, naming it: the steps after it do not run. It reports
// whether all ran.
func (k *checker) runSteps(ctx context.Context, id int, steps []Step, c *Check) bool {
	start := time.Now()
	defer func() { c.Time = Millis(time.Since(start)) }()
	for i, s := range steps {
		if err := k.step(ctx, id, s); err != nil {
			// The page's own words may hold a secret it was given:
			// redact.go takes them out before anything shows them.
			c.add(Error, "step %d (%s): %s", i+1, s.describe(), oneLine(strings.TrimPrefix(err.Error(), "Error: ")))
			return false
		}
	}
	return true
}

// longestStep is the longest timeout a step of --login or --steps gives
// itself; 0 when none does.
func (o *Options) longestStep() time.Duration {
	var d time.Duration
	all := slices.Clone(o.Login)
	if o.Steps != nil {
		all = append(all, o.Steps.All...)
		for _, steps := range o.Steps.Pages {
			all = append(all, steps...)
		}
	}
	for _, s := range all {
		d = max(d, s.Timeout)
	}
	return d
}

// stepsTime is the longest the steps may take, each its timeout.
func (k *checker) stepsTime(steps []Step) time.Duration {
	var d time.Duration
	for _, s := range steps {
		d += cmp.Or(s.Timeout, k.o.Timeout)
	}
	return d
}

// step runs one step: a navigation with navigate_page, as the load, a key
// with press_key and a wait for text with wait_for; the others with the
// step tools (see selectorStep).
func (k *checker) step(ctx context.Context, id int, s Step) error {
	timeout := cmp.Or(s.Timeout, k.o.Timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout+afterLoad)
	defer cancel()
	switch s.Kind {
	case stepNavigate:
		current, err := k.pageURL(ctx, id)
		if err != nil {
			return err
		}
		target, err := resolveOn(current, s.Target)
		if err != nil {
			return err
		}
		ans, err := k.a.call(ctx, "navigate_page", map[string]any{"pageId": id, "url": target, "timeout": toolMillis(timeout)})
		if err == nil {
			var ignored Check
			err = k.answerDialogs(ctx, id, ans.Dialog, &ignored)
		}
		return err
	case stepPress:
		_, err := k.a.call(ctx, "press_key", map[string]any{"pageId": id, "key": s.Target})
		return err
	case stepWaitForText:
		_, err := k.a.call(ctx, "wait_for", map[string]any{"pageId": id, "text": []string{s.Target}, "timeout": toolMillis(timeout)})
		return err
	}
	return k.selectorStep(ctx, id, s, timeout)
}

// toolMillis is a step's timeout as the tools take it, in milliseconds,
// rounded up: a tool reads 0 as its default.
func toolMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// selectorSteps are the step tools of the steps the agents' tools cannot
// run: those name elements by snapshot uids, which a steps file cannot
// know, and none waits for a URL.
var selectorSteps = map[string]string{
	stepClick:           "click_selector",
	stepFill:            "fill_selector",
	stepWaitForSelector: "wait_for_selector",
	stepWaitForURL:      "wait_for_url",
}

// selectorStep runs a step with its step tool (tools.Options.StepTools).
// A failure's message is the tool's own, without the tool's name: the
// report names the step.
func (k *checker) selectorStep(ctx context.Context, id int, s Step, timeout time.Duration) error {
	tool, ok := selectorSteps[s.Kind]
	if !ok {
		return fmt.Errorf("unknown step %q", s.Kind)
	}
	args := map[string]any{"pageId": id, "timeout": toolMillis(timeout)}
	switch s.Kind {
	case stepWaitForURL:
		args["url"] = s.Target
	case stepFill:
		args["selector"], args["value"] = s.Target, s.Value
	default:
		args["selector"] = s.Target
	}
	_, err := k.a.call(ctx, tool, args)
	var te *ToolError
	if errors.As(err, &te) {
		return errors.New(te.Text)
	}
	return err
}

// pageURL is the URL of tab id, as list_pages shows it.
func (k *checker) pageURL(ctx context.Context, id int) (string, error) {
	ans, err := k.a.call(ctx, "list_pages", nil)
	if err != nil {
		return "", err
	}
	for _, p := range ans.Pages {
		if p.ID == id {
			return p.URL, nil
		}
	}
	return "", fmt.Errorf("tab %d is gone", id)
}

// resolveOn makes target, maybe a path, a URL on the page's current one, as
// a link there would lead.
func resolveOn(current, target string) (string, error) {
	ref, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %v", target, err)
	}
	if ref.IsAbs() {
		return target, nil
	}
	base, err := url.Parse(current)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return "", fmt.Errorf("%q is a path, and the tab is on %s: give a full URL", target, current)
	}
	return base.ResolveReference(ref).String(), nil
}

// login runs --login's steps once, in a tab of its own that is closed
// after: the pages' tabs share its browser context, so its cookies (and
// localStorage) are theirs. It returns the login check, and whether every
// step ran.
func (k *checker) login(ctx context.Context) (*Check, bool) {
	c := &Check{Name: checkLogin, Result: Pass, Started: time.Now()}
	k.prog.status("logging in (--login)")
	defer k.prog.status("")
	id, closeTab, err := k.open(ctx, "smoke-login")
	if err != nil {
		c.broken(err)
		return c, false
	}
	defer closeTab()
	ok := k.runSteps(ctx, id, k.o.Login, c)
	return c, ok
}

// loginFirst runs --login and gives every page its login check. When a step
// failed the pages are not loaded: each fails with the login, its other
// checks skipped. It reports whether the pages are to be checked.
func (k *checker) loginFirst(ctx context.Context, pages []*Page) bool {
	lc, ok := k.login(ctx)
	if ok {
		k.prog.note(fmt.Sprintf("Logged in (--login): %s in %s.", plural(len(k.o.Login), "step"), fmtDuration(lc.Time.D())))
	}
	for n, p := range pages {
		c := p.check(checkLogin)
		*c = *lc
		c.Problems = slices.Clone(lc.Problems)
		if !ok {
			p.check(checkLoad).skip("the login (--login) failed")
			k.skipRest(p, "the login (--login) failed")
			p.judge(k.o.FailOn)
			k.redact(p)
			k.prog.finish(n, p)
		}
	}
	return ok
}
