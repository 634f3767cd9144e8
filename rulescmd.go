package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/pagemux/pagemux/internal/cli"
	"github.com/pagemux/pagemux/rules"
)

// The exit codes of `pagemux rules`.
const (
	rulesOK      = subOK    // checked, or the call would be allowed
	rulesRefused = 1        // explain: the call would be refused
	rulesUsage   = subUsage // bad usage, or a rules file that does not load
)

// rulesUsageText is `pagemux rules --help`.
const rulesUsageText = `pagemux rules: check a rules file (--rules FILE), and see what it says of a call.

Usage: pagemux rules check FILE...
       pagemux rules explain FILE --agent NAME --tool TOOL [--url URL] [--element NAME] [--arg KEY=VALUE]...

check     reads each file as pagemux --rules does and prints what it holds, a line a file. A file
          that does not load is named on stderr with its line and rule, as file:line: rule: what
          to do.
explain   says which rules of FILE apply to one call and what would happen: allowed (and the
          resources it takes, whether it is once-only) or refused, by which rule and why. It
          decides as the server does, but with full rate buckets and without the server's flags.

Exit 0: the files load; explain: the call would be allowed. 1: explain: the call would be refused.
2: bad usage, or a file that does not load.

The file format, the groups of tools and the template variables: docs/RULES.md; its JSON Schema:
rules/schema.json.

Examples:
  pagemux rules check docs/rules/shop.yaml
  pagemux rules explain docs/rules/shop.yaml --agent reader-1 --tool evaluate_script
  pagemux rules explain docs/rules/shop.yaml --agent shopper --tool click \
      --url https://shop.example/checkout --element "Place order" --arg uid=3_7
`

// runRules is `pagemux rules`: check or explain. It returns the exit code.
func runRules(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("rules", rulesUsageText, []subcommand{{"check", rulesCheck}, {"explain", rulesExplain}}, args, stdout, stderr)
}

// rulesCheck is `pagemux rules check FILE...`.
func rulesCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "pagemux rules check: name the rules file to check: pagemux rules check FILE\n")
		return rulesUsage
	}
	if slices.ContainsFunc(args, isHelp) {
		fmt.Fprint(stdout, rulesUsageText)
		return rulesOK
	}
	code := rulesOK
	for _, path := range args {
		s, err := rules.Load(path)
		if err != nil {
			// A rules.Error already reads file:line: rule: what to do.
			fmt.Fprintln(stderr, err)
			code = rulesUsage
			continue
		}
		fmt.Fprintln(stdout, s.Summary())
	}
	return code
}

// rulesExplain is `pagemux rules explain FILE --agent A --tool T …`.
func rulesExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pagemux rules explain", flag.ContinueOnError)
	var c rules.Call
	var element string
	var stale bool
	var callArgs cli.Repeated
	fs.StringVar(&c.Agent, "agent", "", "the calling agent's `NAME`, as rules match it (required)")
	fs.StringVar(&c.Tool, "tool", "", "the `TOOL` called, such as click (required)")
	fs.StringVar(&c.URL, "url", "", "where the call acts: the `URL` a navigation goes to, else its page's")
	fs.StringVar(&element, "element", "", "the accessible `NAME` of the element the call acts on, as a snapshot shows it")
	fs.BoolVar(&stale, "not-in-snapshot", false, "the element is not in the agent's last snapshot of the page's document")
	fs.Var(&callArgs, "arg", "an argument of the call as `KEY=VALUE`, a string; repeatable. uid names the element, pageId the page, idempotencyKey makes the call once-only")
	fs.Usage = func() {
		fmt.Fprint(stdout, rulesUsageText+"\nFlags of explain:\n")
		cli.PrintFlags(fs, stdout)
	}
	files, err := cli.ParseInterspersed(fs, args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return rulesOK
	} else if err != nil {
		fmt.Fprintf(stderr, "pagemux rules explain: %v\n", err)
		return rulesUsage
	}
	if err := explainCall(&c, files, element, stale, callArgs); err != nil {
		fmt.Fprintf(stderr, "pagemux rules explain: %v\nSee pagemux rules --help.\n", err)
		return rulesUsage
	}
	s, err := rules.Load(files[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return rulesUsage
	}
	fmt.Fprint(stdout, s.Explain(&c))
	if d := rules.NewEngine(s).Explain(&c); d.Outcome != rules.Allowed {
		return rulesRefused
	}
	return rulesOK
}

// explainCall checks explain's usage and fills in the call the flags
// describe, as the server would gather it.
func explainCall(c *rules.Call, files []string, element string, stale bool, args []string) error {
	switch {
	case len(files) != 1:
		return fmt.Errorf("name one rules file, not %d", len(files))
	case c.Agent == "":
		return errors.New("--agent is required: the name of the agent that calls")
	case c.Tool == "":
		return errors.New("--tool is required: the tool called, such as click")
	case !slices.Contains(rules.AllTools, c.Tool):
		return fmt.Errorf("--tool %q is not a tool; tools: %s", c.Tool, strings.Join(rules.AllTools, ", "))
	}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return fmt.Errorf("--arg %q: want KEY=VALUE, such as uid=3_7", a)
		}
		if c.Args == nil {
			c.Args = map[string]any{}
		}
		c.Args[k] = v
	}
	c.IdempotencyKey, _ = c.Args["idempotencyKey"].(string)
	if id, ok := c.Args["pageId"].(string); ok {
		n, err := strconv.Atoi(id)
		if err != nil || n < 1 {
			return fmt.Errorf("--arg pageId=%s: want a page's number, 1 or more", id)
		}
		c.Page = n
	}
	c.Opens = c.Tool == "new_page"
	c.Navigates = c.URL != "" && (c.Tool == "new_page" || c.Tool == "navigate_page")
	if element != "" || c.Args["uid"] != nil {
		uid, _ := c.Args["uid"].(string)
		c.Elements = []rules.Element{{UID: uid, Name: element, InLastSnapshot: !stale}}
	}
	return nil
}
