package smoke

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/cli"
)

// usage heads `pagemux smoke --help`.
const usage = `pagemux smoke: check a site's pages in a real headless Chrome, many at once, and fail the build when one is broken.

Usage: pagemux smoke [flags] URL...
       pagemux smoke [flags] --urls FILE
       pagemux smoke            (no URL: a demo site built into pagemux, one page broken on purpose)

Each page loads in its own tab (--parallel at once), kept visible and focused as a tab in front is,
and, once its network is quiet, is checked for: its HTTP status, uncaught exceptions and console
errors, failed requests, DevTools issues, and --expect-text, --expect-selector, --a11y (axe-core,
built in), --check-links and --lighthouse (categories, --lighthouse-audit, --lighthouse-budgets;
audits without performance side by side) when given; --steps and --login act on pages first, and
--crawl N checks N pages more that their links lead to.
Exit 0: all pass; 1: a check failed; 2: bad usage, or Chrome could not start.

Examples:
  pagemux smoke --junit report.xml https://example.com/ https://example.com/pricing
  pagemux smoke --a11y wcag21aa --a11y-impact serious --a11y-ignore region https://example.com/
  pagemux smoke --storage-state state.json https://app.example.com/account
  pagemux smoke --login login.json --steps steps.yaml --base-url "$PREVIEW_URL" /account /orders
  pagemux smoke --check-links --crawl 50 https://example.com/
  pagemux smoke --lighthouse accessibility=0.9 --lighthouse-audit color-contrast=1 --screenshots out/ --urls pages.txt
  pagemux smoke --lighthouse performance=0.8 --lighthouse-budgets budget.json --lighthouse-runs 3 https://example.com/

Flags (the browser flags are the server's):
`

// Main is `pagemux smoke`, its command line whole: the smoke flags and the
// browser flags, in any order with the URLs, then the run. It returns the
// exit code (ExitPass, ExitFail, ExitUsage).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pagemux smoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var bc browser.Config
	bf := cli.AddBrowserFlags(fs, &bc, new(bool))
	sf := AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		cli.PrintFlags(fs, stderr)
	}
	urls, err := cli.ParseInterspersed(fs, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitPass
	} else if err != nil {
		fmt.Fprintf(stderr, "pagemux smoke: %v\n", err)
		return ExitUsage
	}
	o, err := sf.Finish(urls)
	if err == nil {
		err = bf.Finish()
	}
	if err != nil {
		fmt.Fprintf(stderr, "pagemux smoke: %v\nSee pagemux smoke --help.\n", err)
		return ExitUsage
	}
	return Run(ctx, o, bc, stdout, stderr)
}
