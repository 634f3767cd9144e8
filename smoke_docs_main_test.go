package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/smoke"
)

// Every smoke flag is in the README's smoke section, where a user reads
// what pagemux smoke does (--help lists them all by construction).
func TestSmokeFlagsInREADME(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Smoke tests for CI\n")
	if !ok {
		t.Fatal("README.md has no '## Smoke tests for CI' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	smoke.AddFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b[^-]`).MatchString(section) {
			t.Errorf("the README's smoke section does not mention --%s", f.Name)
		}
	})
}
