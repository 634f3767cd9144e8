package smoke

import (
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
)

// displayNames are the pages' names in the output: their paths when every
// page is on one origin (given once in the summary's first line), else the
// URLs. It returns the origin, or "".
func displayNames(urls []string) ([]string, string) {
	origin := ""
	names := make([]string, len(urls))
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return urls, ""
		}
		o := u.Scheme + "://" + u.Host
		if i > 0 && o != origin {
			return urls, ""
		}
		origin = o
		names[i] = strings.TrimPrefix(raw, o)
		if names[i] == "" {
			names[i] = "/"
		}
	}
	if len(urls) < 2 {
		return urls, ""
	}
	return names, origin
}

// writeSummary writes the table of pages and their problems, and what to do.
func writeSummary(w io.Writer, r *Report, names []string, origin string) {
	failed := 0
	for _, p := range r.Pages {
		if !p.Passed {
			failed++
		}
	}
	where := ""
	if origin != "" {
		where = " on " + origin
	}
	fmt.Fprintf(w, "pagemux smoke: %s%s, %d at a time, in %s: %d passed, %d failed\n\n",
		plural(len(r.Pages), "page"), where, max(1, min(r.Parallel, len(r.Pages))), fmtDuration(r.Duration.D()), len(r.Pages)-failed, failed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tPAGE\tHTTP\tLOAD\tPROBLEMS")
	for i, p := range r.Pages {
		probs := problemSummary(p, "")
		if probs == "" {
			probs = "-"
		} else if r := []rune(probs); len(r) > 72 {
			probs = string(r[:71]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", verdict(p), names[i], statusText(p), fmtDuration(p.Load.D()), probs)
	}
	tw.Flush()
	any := false
	for i, p := range r.Pages {
		probs := p.Problems()
		if len(probs) == 0 {
			continue
		}
		if !any {
			fmt.Fprintln(w, "\nProblems")
			any = true
		}
		fmt.Fprintf(w, "  %s\n", names[i])
		for _, c := range p.Checks {
			for _, pr := range c.Problems {
				fmt.Fprintf(w, "    %-8s %s: %s\n", pr.Severity, c.Name, pr.Message)
			}
			if c.Result == Broken {
				fmt.Fprintf(w, "    %-8s %s: the check could not run: %s\n", Error, c.Name, oneLine(c.Note))
			}
		}
		if p.Screenshot != "" {
			fmt.Fprintf(w, "    screenshot: %s\n", p.Screenshot)
		}
	}
	writeLighthouse(w, r, names)
	fmt.Fprintln(w)
	switch {
	case r.Demo:
		fmt.Fprintln(w, "This was pagemux's demo site, with one page broken on purpose. Check your own pages:\n"+
			"  pagemux smoke https://example.com/ https://example.com/pricing   (or --urls FILE, one URL a line)\n"+
			"  add --junit report.xml for CI, --lighthouse accessibility=0.9 for scores; pagemux smoke --help lists the checks.")
	case failed > 0 && failed == len(r.Pages) && unreachable(r) != "":
		fmt.Fprintf(w, "FAIL: no page could be reached (%s): is the site up, at the address given? Start it before pagemux smoke, or check the URLs (--base-url).\n", unreachable(r))
	case failed > 0 && failedCheck(r, checkLogin):
		fmt.Fprintln(w, "FAIL: the login (--login) failed, so no page was checked: see the step above and what the page showed; fix the steps, or the credentials they fill in.")
	case failed > 0:
		noise := "--ignore-console REGEX / --ignore-request REGEX"
		if failedCheck(r, checkA11y) {
			noise += " / --a11y-ignore RULE (or a higher --a11y-impact)"
		}
		steps := ""
		if failedCheck(r, checkSteps) {
			steps = " A step that failed stopped its page's steps: check its selector or text against the page (--screenshots DIR shows it), or give the step a longer \"timeout\"."
		}
		fmt.Fprintf(w, "FAIL: %s failed at --fail-on=%s. Fix the problems above, or pass known noise with %s.%s\n",
			plural(failed, "page"), r.FailOn, noise, steps)
	default:
		fmt.Fprintf(w, "PASS: every page passed.\n")
	}
}

// connectErrors are Chrome's errors for a site it could not reach at all.
var connectErrors = []string{"ERR_CONNECTION_REFUSED", "ERR_NAME_NOT_RESOLVED", "ERR_CONNECTION_TIMED_OUT",
	"ERR_ADDRESS_UNREACHABLE", "ERR_CONNECTION_RESET", "ERR_CONNECTION_CLOSED", "ERR_INTERNET_DISCONNECTED", "ERR_EMPTY_RESPONSE"}

// unreachable returns the connection errors every page's load failed with
// ("net::ERR_CONNECTION_REFUSED"), "" unless each one failed so.
func unreachable(r *Report) string {
	var kinds []string
	for _, p := range r.Pages {
		found := ""
		for _, pr := range p.check(checkLoad).Problems {
			for _, e := range connectErrors {
				if strings.Contains(pr.Message, e) {
					found = "net::" + e
				}
			}
		}
		if found == "" {
			return ""
		}
		if !slices.Contains(kinds, found) {
			kinds = append(kinds, found)
		}
	}
	return strings.Join(kinds, ", ")
}

// failedCheck says whether the check of that name failed on a page.
func failedCheck(r *Report, name string) bool {
	for _, p := range r.Pages {
		for _, c := range p.Checks {
			if c.Name == name && c.Result == Fail {
				return true
			}
		}
	}
	return false
}

// writeLighthouse writes how the pages were audited: the categories, the
// runs whose median was judged, how many audits ran at once, and each
// page's scores and kept reports.
func writeLighthouse(w io.Writer, r *Report, names []string) {
	lr := r.Lighthouse
	if lr == nil || lr.Audits == 0 {
		return
	}
	runs := "1 run a page"
	if lr.Runs > 1 {
		runs = fmt.Sprintf("%d runs a page, median scores judged", lr.Runs)
	}
	fmt.Fprintf(w, "\nLighthouse (%s; %s; %s, at most %d at once)\n", strings.Join(lr.Categories, ", "), runs, plural(lr.Audits, "audit"), lr.AtOnce)
	for i, p := range r.Pages {
		if p.Lighthouse == nil {
			continue
		}
		var scores []string
		for _, c := range Categories {
			if v, ok := p.Scores[c]; ok {
				scores = append(scores, fmt.Sprintf("%s %.2f", c, v))
			}
		}
		for _, id := range slices.Sorted(maps.Keys(p.Lighthouse.Audits)) {
			scores = append(scores, fmt.Sprintf("%s %.2f", id, p.Lighthouse.Audits[id]))
		}
		fmt.Fprintf(w, "  %s  %s\n", names[i], strings.Join(scores, ", "))
		for _, rep := range p.Lighthouse.Reports {
			fmt.Fprintf(w, "    report: %s\n", rep.HTML)
		}
	}
}
