package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulesCommand: `pagemux rules` checks and explains, with its exit
// codes and messages, no Chrome involved.
func TestRulesCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("agents:\n  - agent: a\n    tools: [clik]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	shop := filepath.Join("docs", "rules", "shop.yaml")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout []string // each in stdout
		stderr []string // each in stderr
	}{
		{"check", []string{"check", shop}, 0,
			[]string{"docs/rules/shop.yaml: 2 agent rules, 1 exclusive, 1 once-only"}, nil},
		{"check several", []string{"check", shop, filepath.Join("docs", "rules", "crawler.json")}, 0,
			[]string{"shop.yaml: ", "crawler.json: 2 agent rules"}, nil},
		{"check a bad file", []string{"check", bad}, 2,
			nil, []string{bad + `:2: agents[0] (agent "a", line 2): tools: "clik" is neither a tool nor a group`}},
		{"check a missing file", []string{"check", filepath.Join(dir, "none.yaml")}, 2,
			nil, []string{"none.yaml: no such file"}},
		{"explain allowed", []string{"explain", shop, "--agent", "shopper", "--tool", "click",
			"--url", "https://shop.example/checkout", "--element", "Place order", "--arg", "uid=3_7", "--arg", "pageId=2"}, 0,
			[]string{`once "place-order" (line 18)`, "outcome: allowed", "takes rule:shop-account:site:shop.example as a lease",
				`once only under key "rule:place-order:click 2 0 3_7"`}, nil},
		{"explain flags before the file", []string{"explain", "--agent", "reader-1", "--tool", "navigate_page",
			"--url", "https://docs.example.com/a", shop}, 0,
			[]string{"outcome: allowed"}, nil},
		{"explain refused", []string{"explain", shop, "--agent", "reader-1", "--tool", "evaluate_script"}, 1,
			[]string{`outcome: refused by agents[0] (agent "reader*", line 5): the tool evaluate_script is not allowed to agent reader-1`}, nil},
		{"explain a navigation out of scope", []string{"explain", shop, "--agent", "reader-1", "--tool", "navigate_page", "--url", "https://shop.example/"}, 1,
			[]string{"may not load https://shop.example/"}, nil},
		{"explain a file argument", []string{"explain", shop, "--agent", "shopper", "--tool", "take_screenshot", "--arg", "filePath=/tmp/x.png"}, 1,
			[]string{"names a file of the host"}, nil},
		{"explain a stale uid", []string{"explain", filepath.Join("docs", "rules", "crawler.json"), "--agent", "bot", "--tool", "click",
			"--element", "OK", "--arg", "uid=1_2", "--not-in-snapshot"}, 1,
			[]string{"uid 1_2 is not in your last snapshot"}, nil},
		{"explain an idempotencyKey", []string{"explain", shop, "--agent", "bot", "--tool", "fill", "--arg", "idempotencyKey=k1"}, 0,
			[]string{`once only under key "key:bot:k1"`}, nil},
		{"explain a bad file", []string{"explain", bad, "--agent", "a", "--tool", "click"}, 2,
			nil, []string{bad + ":2: "}},
		{"help", []string{"--help"}, 0, []string{"pagemux rules check FILE", "pagemux rules explain FILE", "Exit 0"}, nil},
		{"explain help", []string{"explain", "--help"}, 0, []string{"--agent NAME", "--not-in-snapshot"}, nil},
		{"no command", nil, 2, nil, []string{"Usage: pagemux rules check"}},
		{"unknown command", []string{"lint", shop}, 2, nil, []string{`unknown command "lint": want check or explain`}},
		{"check without a file", []string{"check"}, 2, nil, []string{"name the rules file to check"}},
		{"explain without --agent", []string{"explain", shop, "--tool", "click"}, 2, nil, []string{"--agent is required"}},
		{"explain without --tool", []string{"explain", shop, "--agent", "a"}, 2, nil, []string{"--tool is required"}},
		{"explain without a file", []string{"explain", "--agent", "a", "--tool", "click"}, 2, nil, []string{"name one rules file, not 0"}},
		{"explain a group as the tool", []string{"explain", shop, "--agent", "a", "--tool", "input"}, 2, nil, []string{`--tool "input" is not a tool`}},
		{"explain a misspelt flag", []string{"explain", shop, "--agent", "a", "--tol", "click"}, 2, nil, []string{"did you mean --tool?"}},
		{"explain a bad --arg", []string{"explain", shop, "--agent", "a", "--tool", "click", "--arg", "uid"}, 2, nil, []string{`--arg "uid": want KEY=VALUE`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr strings.Builder
			code := runRules(c.args, &stdout, &stderr)
			if code != c.code {
				t.Errorf("pagemux rules %q: exit %d, want %d\nstdout: %s\nstderr: %s", c.args, code, c.code, &stdout, &stderr)
			}
			for _, want := range c.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("pagemux rules %q: stdout lacks %q:\n%s", c.args, want, &stdout)
				}
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("pagemux rules %q: stderr lacks %q:\n%s", c.args, want, &stderr)
				}
			}
			if c.code == 2 && len(c.stderr) > 0 && stdout.Len() > 0 {
				t.Errorf("pagemux rules %q: a usage error wrote to stdout: %s", c.args, &stdout)
			}
		})
	}
}
