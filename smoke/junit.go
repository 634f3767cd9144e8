package smoke

import (
	"encoding/xml"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The JUnit XML that CI dashboards (Jenkins, GitLab, GitHub test reporters)
// read: one testsuite per page, one testcase per check; a failed check is a
// failure, a check that could not run an error, a skipped one skipped.
// Warnings that do not fail a page go to the testcase's system-out.

// JUnitSuites is the root element.
type JUnitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	JUnitCounts
	Time   string       `xml:"time,attr"`
	Suites []JUnitSuite `xml:"testsuite"`
}

// JUnitCounts are the testcases of a suite, or of all, by outcome.
type JUnitCounts struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
}

func (c *JUnitCounts) add(o JUnitCounts) {
	c.Tests += o.Tests
	c.Failures += o.Failures
	c.Errors += o.Errors
	c.Skipped += o.Skipped
}

// JUnitSuite is one page.
type JUnitSuite struct {
	Name string `xml:"name,attr"`
	JUnitCounts
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []JUnitCase `xml:"testcase"`
}

// JUnitCase is one check of a page.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	Skipped   *JUnitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure, error or skip.
type JUnitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func seconds(m Millis) string { return fmt.Sprintf("%.3f", m.D().Seconds()) }

// JUnit turns the report into JUnit XML's structure.
func (r *Report) JUnit() JUnitSuites {
	root := JUnitSuites{Name: "pagemux smoke", Time: seconds(r.Duration)}
	for _, p := range r.Pages {
		s := JUnitSuite{Name: p.URL, Time: seconds(p.Time)}
		if !p.started.IsZero() {
			s.Timestamp = p.started.UTC().Format("2006-01-02T15:04:05")
		}
		for _, c := range p.Checks {
			tc := JUnitCase{Name: c.Name, Classname: p.URL, Time: seconds(c.Time)}
			var lines []string
			for _, pr := range c.Problems {
				lines = append(lines, string(pr.Severity)+": "+pr.Message)
			}
			switch c.Result {
			case Fail:
				first := c.Summary
				for _, pr := range c.Problems {
					if first == "" && fails(pr.Severity, r.FailOn) {
						first = pr.Message
					}
				}
				tc.Failure = &JUnitProblem{Message: first, Type: c.Name, Text: strings.Join(lines, "\n")}
				s.Failures++
			case Broken:
				tc.Error = &JUnitProblem{Message: oneLine(c.Note), Type: c.Name, Text: c.Note}
				s.Errors++
			case Skip:
				tc.Skipped = &JUnitProblem{Message: c.Note}
				s.Skipped++
			default:
				tc.SystemOut = strings.Join(lines, "\n")
			}
			if p.Screenshot != "" && (tc.Failure != nil || tc.Error != nil) {
				tc.SystemOut = "[[ATTACHMENT|" + p.Screenshot + "]]"
			}
			if isLighthouseCheck(c.Name) && p.Lighthouse != nil {
				// Lighthouse's own reports, kept with --screenshots, pass
				// or fail: Jenkins and GitLab attach what system-out names so.
				var att []string
				for _, rep := range p.Lighthouse.Reports {
					att = append(att, "[[ATTACHMENT|"+rep.HTML+"]]", "[[ATTACHMENT|"+rep.JSON+"]]")
				}
				tc.SystemOut = strings.Join(slices.DeleteFunc(append([]string{tc.SystemOut}, att...), func(s string) bool { return s == "" }), "\n")
			}
			s.Cases = append(s.Cases, tc)
			s.Tests++
		}
		root.add(s.JUnitCounts)
		root.Suites = append(root.Suites, s)
	}
	return root
}

func (r *Report) writeJUnit(path string) error {
	b, err := xml.MarshalIndent(r.JUnit(), "", "  ")
	if err != nil {
		return err
	}
	b = append([]byte(xml.Header), append(b, '\n')...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}
