package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// example is a rules file as the README shows it.
const example = `# who may do what
agents:
  - agent: reader*
    tools: [read-only, navigate_page]
    urls: ["https://docs.example.com/*"]
  - agent: shopper
    deny: [scripts, files]
    maxPages: 2
    rate: {perSecond: 2, burst: 2}
    navigations: {perMinute: 2}
exclusive:
  - name: shop-account
    when: {tools: [click, fill, fill_form], url: ["https://shop.example/*"]}
    resource: "site:{site}"
    lease: 5m
once:
  - name: place-order
    when: {tools: [click], url: ["https://shop.example/checkout*"], element: "/^(Pay|Place order|Submit)/"}
require:
  - name: seen-first
    when: {tools: [click, fill]}
    inLastSnapshot: true
`

func mustParse(t testing.TB, src string) *Set {
	t.Helper()
	s, err := Parse("rules.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestParseErrors: a bad file is refused with the line and the rule, and
// what to do.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{"agents:\n  - agent: a\n    tools: [clik]\n", `rules.yaml:2: agents[0] (agent "a", line 2): tools: "clik" is neither a tool nor a group`},
		{"agents:\n  - agent: a\n    colour: red\n", `rules.yaml:3: unknown field "colour"`},
		{"agents:\n  - tools: [click]\n", `rules.yaml:2: agents[0]: no agent`},
		{"once:\n  - name: x\n    when: {element: \"/(/\"}\n", `rules.yaml:2: once "x" (line 2): when: element: "/(/"`},
		{"once:\n  - name: x\n  - name: x\n", `rules.yaml:3: once "x": the name is taken by the rule at line 2`},
		{"exclusive:\n  - name: e\n    resource: \"site:{sight}\"\n", `unknown variable {sight}`},
		{"exclusive:\n  - name: e\n    resource: site\n    lease: soon\n", `rules.yaml:4: "soon" is not a duration`},
		{"agents:\n  - agent: a\n    rate: {perSecond: 1, perMinute: 1}\n", `rate: give one of perSecond and perMinute`},
		{"require:\n  - name: r\n    when: {tools: [click]}\n", `requires nothing`},
		{"agents: [\n", `rules.yaml:`},
		// A null entry, as a half-saved edit has, is refused at its line,
		// not a panic.
		{"agents:\n  -\n", `rules.yaml:2: agents[0]: no agent`},
		{"once: [null]\n", `rules.yaml:1: once: no name`},
		{"exclusive:\n  - ~\n", `rules.yaml:2: exclusive: no name`},
		{"require: [~]\n", `rules.yaml:1: require: no name`},
	} {
		_, err := Parse("rules.yaml", []byte(c.src))
		var re *Error
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an Error with %q", c.src, err, c.want)
		}
	}
	if s, err := Parse("empty.yaml", []byte("# nothing yet\n")); err != nil || s.Count() != 0 {
		t.Errorf("a file of comments: %v, %d rules", err, s.Count())
	}
	if s := mustParse(t, example); s.Count() != 5 {
		t.Errorf("the example has %d rules, want 5", s.Count())
	}
	// JSON is YAML too.
	if s := mustParse(t, `{"agents": [{"agent": "*", "deny": ["scripts"]}]}`); s.Count() != 1 {
		t.Errorf("JSON: %d rules", s.Count())
	}
}

// TestPermissions: tools, groups, file arguments, URL scopes and page
// bounds of an agent's rule; the first entry that matches applies.
func TestPermissions(t *testing.T) {
	t.Parallel()
	e := NewEngine(mustParse(t, example))
	for _, c := range []struct {
		call Call
		want string // "" allowed, else in the reason
	}{
		{Call{Agent: "reader-1", Tool: "take_snapshot", URL: "https://docs.example.com/a"}, ""},
		{Call{Agent: "reader-1", Tool: "click", URL: "https://docs.example.com/a"}, "the tool click is not allowed to agent reader-1"},
		{Call{Agent: "reader-1", Tool: "navigate_page", URL: "https://evil.example/", Navigates: true}, "may not load https://evil.example/"},
		{Call{Agent: "reader-1", Tool: "take_snapshot", URL: "https://evil.example/"}, "outside what agent reader-1 may act at"},
		{Call{Agent: "reader-1", Tool: "take_snapshot", URL: "about:blank"}, ""},
		{Call{Agent: "shopper", Tool: "evaluate_script"}, "the tool evaluate_script is not allowed"},
		{Call{Agent: "shopper", Tool: "take_screenshot", Args: map[string]any{"filePath": "/etc/x.png"}}, "names a file of the host"},
		{Call{Agent: "shopper", Tool: "take_screenshot"}, ""},
		{Call{Agent: "shopper", Tool: "get_network_request", Args: map[string]any{"responseFilePath": "/tmp/body"}}, "names a file of the host"},
		{Call{Agent: "shopper", Tool: "take_snapshot", Args: map[string]any{"filePath": "snap.txt"}}, "names a file of the host"},
		{Call{Agent: "shopper", Tool: "upload_file", Args: map[string]any{"filePaths": []any{"/etc/passwd"}}}, "the tool upload_file is not allowed"},
		{Call{Agent: "shopper", Tool: "new_page", Opens: true, Pages: 2}, "has 2 pages open, its most"},
		{Call{Agent: "someone", Tool: "evaluate_script"}, ""}, // no rule for it
	} {
		d := e.Explain(&c.call)
		switch {
		case c.want == "" && d.Outcome != Allowed:
			t.Errorf("%+v: %s by %s: %s", c.call, d.Outcome, d.Rule, d.Reason)
		case c.want != "" && (d.Outcome != Refused || !strings.Contains(d.Reason, c.want) || d.Rule == ""):
			t.Errorf("%+v: %s by %q: %s; want refused for %q", c.call, d.Outcome, d.Rule, d.Reason, c.want)
		}
	}
	// Every argument that names a file of the host is in the files group.
	noFiles := NewEngine(mustParse(t, "agents: [{agent: '*', deny: [files]}]\n"))
	for tool, args := range map[string]map[string]any{
		"evaluate_script":     {"sourcePath": "/etc/passwd"},
		"get_network_request": {"requestFilePath": "req.txt"},
		"lighthouse_audit":    {"outputDirPath": "out"},
		"take_screenshot":     {"filePath": ""}, // empty: names none
	} {
		d := noFiles.Explain(&Call{Agent: "a", Tool: tool, Args: args})
		if want := args["filePath"] == nil; (d.Outcome == Refused) != want {
			t.Errorf("deny [files], %s %v: %s", tool, args, d.Outcome)
		}
	}
}

// TestRates: an agent past its bucket is refused with when to retry, and
// let through once the token came back; navigations count per site; a
// refused call takes no token.
func TestRates(t *testing.T) {
	t.Parallel()
	e := NewEngine(mustParse(t, example))
	now := time.Unix(1e9, 0)
	e.now = func() time.Time { return now }
	call := func(tool, url string) Decision {
		return e.Decide(&Call{Agent: "shopper", Tool: tool, URL: url, Navigates: url != ""})
	}
	for i := range 2 {
		if d := call("take_snapshot", ""); d.Outcome != Allowed {
			t.Fatalf("call %d of a burst of 2: %s", i, d.Reason)
		}
	}
	d := call("take_snapshot", "")
	if d.Outcome != RateLimited || d.RetryAfter != 500*time.Millisecond || !strings.Contains(d.Reason, "retry after 500ms") {
		t.Fatalf("the third call at once: %s after %v: %s", d.Outcome, d.RetryAfter, d.Reason)
	}
	if d := call("evaluate_script", ""); d.Outcome != Refused {
		t.Fatalf("a denied tool: %s", d.Outcome)
	}
	now = now.Add(500 * time.Millisecond)
	if d := call("take_snapshot", ""); d.Outcome != Allowed {
		t.Fatalf("after the token came back: %s", d.Reason)
	}
	// Navigations: 2 a minute to each site (and 2 calls a second).
	now = now.Add(time.Hour)
	for i, u := range []string{"https://a.example/1", "https://www.a.example/2"} {
		if d := call("navigate_page", u); d.Outcome != Allowed {
			t.Fatalf("navigation %d: %s", i, d.Reason)
		}
	}
	now = now.Add(time.Second)
	if d := call("navigate_page", "https://a.example/3"); d.Outcome != RateLimited || !strings.Contains(d.Reason, "navigations to a.example") {
		t.Fatalf("a third navigation to the site in a minute: %s: %s", d.Outcome, d.Reason)
	}
	if d := call("navigate_page", "https://b.example/"); d.Outcome != Allowed {
		t.Fatalf("another site: %s", d.Reason)
	}
}

// TestExclusiveOnceRequire: the resources and once-only keys a call
// gives, and the requirements it must meet.
func TestExclusiveOnceRequire(t *testing.T) {
	t.Parallel()
	e := NewEngine(mustParse(t, example))
	pay := Element{UID: "3_7", Role: "button", Name: "Place order", InLastSnapshot: true}
	d := e.Decide(&Call{Agent: "bob", Tool: "click", Page: 4, Document: 2, URL: "https://shop.example/checkout?step=2", Elements: []Element{pay}})
	if d.Outcome != Allowed || len(d.Resources) != 1 || d.Resources[0].Key != "rule:shop-account:site:shop.example" || d.Resources[0].Lease != 5*time.Minute {
		t.Fatalf("click on Place order: %+v", d)
	}
	if d.Once == nil || d.Once.Key != "rule:place-order:click 4 2 3_7" || d.Once.TTL != DefaultOnceTTL {
		t.Fatalf("click on Place order: once %+v", d.Once)
	}
	other := pay
	other.Name = "Continue shopping"
	if d := e.Decide(&Call{Agent: "bob", Tool: "click", URL: "https://shop.example/checkout", Elements: []Element{other}}); d.Once != nil {
		t.Errorf("another button is once-only: %+v", d.Once)
	}
	stale := pay
	stale.InLastSnapshot = false
	if d := e.Decide(&Call{Agent: "bob", Tool: "click", URL: "https://shop.example/checkout", Elements: []Element{stale}}); d.Outcome != Refused || !strings.Contains(d.Reason, "not in your last snapshot") || d.Once != nil || d.Resources != nil {
		t.Errorf("a uid not in the agent's last snapshot: %+v", d)
	}
	if d := e.Decide(&Call{Agent: "bob", Tool: "take_snapshot", IdempotencyKey: "k1"}); d.Once == nil || d.Once.Key != "key:bob:k1" {
		t.Errorf("an idempotencyKey: %+v", d.Once)
	}
	if d := e.Decide(&Call{Agent: "bob", Tool: "fill", URL: "https://elsewhere.example/"}); len(d.Resources) != 0 {
		t.Errorf("a fill elsewhere takes %v", d.Resources)
	}
}

// TestTemplates: every variable of a key or resource.
func TestTemplates(t *testing.T) {
	t.Parallel()
	tpl, err := parseTemplate("{agent}|{tool}|{page}|{document}|{uid}|{element}|{site}|{origin}|{host}|{arg.email}|{query.cart}")
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{Agent: "a", Tool: "fill", Page: 3, Document: 7, URL: "https://www.shop.example.co.uk:8443/c?cart=42",
		Args: map[string]any{"email": "x@y"}, Elements: []Element{{UID: "1_2", Name: "Email"}}}
	if got, want := tpl.expand(c), "a|fill|3|7|1_2|Email|example.co.uk|https://www.shop.example.co.uk:8443|www.shop.example.co.uk|x@y|42"; got != want {
		t.Errorf("expand: %q, want %q", got, want)
	}
	for u, want := range map[string]string{"http://127.0.0.1:8080/": "127.0.0.1", "http://localhost/": "localhost", "about:blank": "", "https://a.b.github.io/": "b.github.io"} {
		if got := Site(u); got != want {
			t.Errorf("Site(%s) = %q, want %q", u, got, want)
		}
	}
}

// TestOnce: the first call of a key runs; one while it runs waits and
// replays its answer, as does one after it; a call that did not act
// leaves no record.
func TestOnce(t *testing.T) {
	t.Parallel()
	var o Once
	ctx := context.Background()
	rec, first, err := o.Begin(ctx, "k", "a", time.Minute)
	if err != nil || !first {
		t.Fatalf("first Begin: %v %v", first, err)
	}
	var wg sync.WaitGroup
	answers := make(chan any, 3)
	for range 3 {
		wg.Go(func() {
			r, first, err := o.Begin(ctx, "k", "b", time.Minute)
			if err != nil || first {
				t.Errorf("a second Begin while the first runs: first %v, %v", first, err)
				return
			}
			answers <- r.Answer
		})
	}
	o.Finish(rec, "clicked", true)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a != "clicked" {
			t.Errorf("a waiter replayed %v", a)
		}
	}
	if r, first, _ := o.Begin(ctx, "k", "c", time.Minute); first || r.Answer != "clicked" {
		t.Errorf("a Begin after it: first %v, answer %v", first, r.Answer)
	}
	rec, _, _ = o.Begin(ctx, "failed", "a", time.Minute)
	o.Finish(rec, "error", false)
	if _, first, _ := o.Begin(ctx, "failed", "a", time.Minute); !first {
		t.Error("a key whose call did not act is not free again")
	}
	// A waiter gives up with its context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := o.Begin(cctx, "failed", "b", time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled waiter: %v", err)
	}
	// Expired records go.
	rec, _, _ = o.Begin(ctx, "short", "a", time.Nanosecond)
	o.Finish(rec, "x", true)
	for !time.Now().After(rec.expires) {
	}
	if _, first, _ := o.Begin(ctx, "short", "a", time.Minute); !first {
		t.Error("an expired record still answers")
	}
}

// TestWatch: an edit applies to the next decision; an edit that does not
// parse keeps the rules in force and says why.
func TestWatch(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write := func(s string) {
		t.Helper()
		// Written aside and renamed in, as editors save.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("agents: [{agent: '*', deny: [scripts]}]\n")
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(s)
	events := make(chan error, 16)
	if err := Watch(t.Context(), path, e, func(_ *Set, err error) { events <- err }); err != nil {
		t.Fatal(err)
	}
	script := &Call{Agent: "a", Tool: "evaluate_script"}
	if d := e.Decide(script); d.Outcome != Refused {
		t.Fatal("the first rules do not refuse scripts")
	}
	write("agents: [{agent: '*', deny: [input]}]\n")
	if err := <-events; err != nil {
		t.Fatal(err)
	}
	if d := e.Decide(script); d.Outcome != Allowed {
		t.Fatalf("after the edit: %s", d.Reason)
	}
	write("agents: [{agent: '*', deny: [inptu]}]\n")
	for err := range events {
		if err != nil {
			if !strings.Contains(err.Error(), `"inptu" is neither a tool nor a group`) {
				t.Errorf("a broken edit: %v", err)
			}
			break
		}
	}
	if d := e.Decide(&Call{Agent: "a", Tool: "click"}); d.Outcome != Refused {
		t.Fatal("a broken edit did not keep the rules in force")
	}
}

// TestExplain: what `pagemux rules explain` prints.
func TestExplain(t *testing.T) {
	t.Parallel()
	s := mustParse(t, example)
	out := s.Explain(&Call{Agent: "bob", Tool: "click", URL: "https://shop.example/checkout", Elements: []Element{{UID: "1_1", Name: "Pay now", InLastSnapshot: true}}})
	for _, want := range []string{`exclusive "shop-account" (line 12)`, `once "place-order" (line 17)`, "outcome: allowed", "takes rule:shop-account:site:shop.example as a lease", "once only under key"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	out = s.Explain(&Call{Agent: "reader-2", Tool: "evaluate_script"})
	if !strings.Contains(out, `outcome: refused by agents[0] (agent "reader*", line 3): the tool evaluate_script is not allowed`) {
		t.Errorf("explain of a refusal:\n%s", out)
	}
}

// BenchmarkDecide: a decision with 1,000 rules and 100 agents.
func BenchmarkDecide(b *testing.B) {
	s := mustParse(b, bigRules(1000))
	e := NewEngine(s)
	calls := make([]*Call, 100)
	for i := range calls {
		calls[i] = &Call{Agent: fmt.Sprintf("agent-%d", i), Tool: []string{"click", "fill", "take_snapshot", "navigate_page"}[i%4],
			Page: i, Document: 1, URL: fmt.Sprintf("https://site%d.example/checkout/%d", i%50, i), Navigates: i%4 == 3,
			Elements: []Element{{UID: "1_2", Name: "Place order", InLastSnapshot: true}}}
	}
	b.ReportAllocs()
	var costs []time.Duration
	i := 0
	for b.Loop() {
		c := *calls[i%len(calls)]
		costs = append(costs, e.Decide(&c).Cost)
		i++
	}
	slices.Sort(costs)
	b.ReportMetric(float64(costs[len(costs)*99/100].Nanoseconds())/1000, "p99-µs")
}

// bigRules writes n rules: a tenth agents', the rest exclusive, once and
// require rules on many sites.
func bigRules(n int) string {
	var b strings.Builder
	b.WriteString("agents:\n")
	for i := range n / 10 {
		fmt.Fprintf(&b, "  - agent: agent-%d\n    deny: [scripts]\n    rate: {perSecond: 1000000, burst: 1000000}\n", i)
	}
	kinds := []string{"exclusive", "once", "require"}
	for k, kind := range kinds {
		b.WriteString(kind + ":\n")
		for i := range (n - n/10) / 3 {
			fmt.Fprintf(&b, "  - name: %s-%d\n    when: {tools: [%s], url: [\"https://site%d.example/*\"], element: \"/^(Pay|Place order)/\"}\n",
				kind, i, []string{"click", "fill", "navigate_page"}[(i+k)%3], i%60)
			switch kind {
			case "exclusive":
				b.WriteString("    resource: \"site:{site}\"\n")
			case "require":
				b.WriteString("    inLastSnapshot: true\n")
			}
		}
	}
	return b.String()
}

// TestOnceBounded: a flood of keys keeps at most MaxOnceRecords records,
// the finished that expire soonest going first.
func TestOnceBounded(t *testing.T) {
	t.Parallel()
	var o Once
	for i := range MaxOnceRecords + 500 {
		rec, first, err := o.Begin(context.Background(), fmt.Sprint("k", i), "a", time.Hour)
		if err != nil || !first {
			t.Fatal(err, first)
		}
		o.Finish(rec, i, true)
	}
	if n := o.Len(); n > MaxOnceRecords {
		t.Fatalf("%d records kept, want at most %d", n, MaxOnceRecords)
	}
	if _, first, _ := o.Begin(context.Background(), fmt.Sprint("k", MaxOnceRecords+499), "a", time.Hour); first {
		t.Error("the newest record went")
	}
}

// TestNeeds: what a call must gather for the rules of its tool.
func TestNeeds(t *testing.T) {
	t.Parallel()
	s := mustParse(t, example)
	for tool, want := range map[string][2]bool{"click": {true, true}, "fill": {false, true}, "fill_form": {false, false}, "take_snapshot": {false, false}} {
		if names, seen := s.Needs(tool); names != want[0] || seen != want[1] {
			t.Errorf("Needs(%s) = %v, %v; want %v", tool, names, seen, want)
		}
	}
	if names, _ := mustParse(t, "once: [{name: o, key: '{element}'}]\n").Needs("hover"); !names {
		t.Error("a once key of {element} needs names")
	}
}
