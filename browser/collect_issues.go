package browser

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/chromedp/cdproto/audits"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// DevTools issues (quirks mode, mixed content, cookies, CORS, CSP, failed
// stylesheets, deprecated features …) are filed with the console messages
// as type "issue", as chrome-devtools-mcp lists them. Chrome sends the
// issues it already has when the Audits domain is enabled, then each new one.

// enableIssues turns the tab's Audits domain on. A Chrome without it still
// serves the page, so a failure is only logged.
func (p *Page) enableIssues(ctx context.Context) {
	if _, err := chromedp.Call(ctx, audits.Enable, cdp.Empty{}); err != nil {
		p.b.log.Debug("no DevTools issues for this page", "page", p.ID, "error", err)
	}
}

// consoleIssue is the console entry of a DevTools issue.
func consoleIssue(issue *audits.InspectorIssue) *ConsoleMessage {
	m := &ConsoleMessage{Type: "issue", Text: issueText(issue)}
	if d := issue.Details; d != nil {
		switch {
		case d.QuirksModeIssueDetails != nil:
			m.URL = d.QuirksModeIssueDetails.URL
		case d.MixedContentIssueDetails != nil:
			m.URL = d.MixedContentIssueDetails.MainResourceURL
		case d.DeprecationIssueDetails != nil && d.DeprecationIssueDetails.SourceCodeLocation != nil:
			loc := d.DeprecationIssueDetails.SourceCodeLocation
			m.URL, m.Line, m.Column = loc.URL, loc.LineNumber, loc.ColumnNumber
		}
	}
	return m
}

// issueText says what an issue is in one line: its title as DevTools words
// it for the common kinds, and what it is about.
func issueText(issue *audits.InspectorIssue) string {
	d := issue.Details
	if d == nil {
		return words(string(issue.Code))
	}
	switch {
	case d.QuirksModeIssueDetails != nil:
		if d.QuirksModeIssueDetails.IsLimitedQuirksMode {
			return "Page layout may be unexpected due to Limited Quirks Mode"
		}
		return "Page layout may be unexpected due to Quirks Mode"
	case d.MixedContentIssueDetails != nil:
		x := d.MixedContentIssueDetails
		return fmt.Sprintf("Mixed content: %s loaded over HTTP on a secure page (%s)", x.InsecureURL, x.ResolutionStatus)
	case d.CookieIssueDetails != nil:
		x := d.CookieIssueDetails
		var reasons []string
		for _, r := range x.CookieExclusionReasons {
			reasons = append(reasons, words(string(r)))
		}
		for _, r := range x.CookieWarningReasons {
			reasons = append(reasons, words(string(r)))
		}
		name := x.RawCookieLine
		if x.Cookie != nil {
			name = x.Cookie.Name
		}
		return fmt.Sprintf("Cookie %q: %s", name, strings.Join(reasons, "; "))
	case d.ContentSecurityPolicyIssueDetails != nil:
		x := d.ContentSecurityPolicyIssueDetails
		return fmt.Sprintf("Content Security Policy blocked %s (directive %s)", orNone(x.BlockedURL, "an inline resource"), x.ViolatedDirective)
	case d.CorsIssueDetails != nil:
		x := d.CorsIssueDetails
		url := ""
		if x.Request != nil {
			url = x.Request.URL
		}
		reason := ""
		if x.CorsErrorStatus != nil {
			reason = words(string(x.CorsErrorStatus.CorsError))
		}
		return fmt.Sprintf("Cross-origin request blocked: %s (%s)", orNone(url, "a request"), reason)
	case d.StylesheetLoadingIssueDetails != nil:
		x := d.StylesheetLoadingIssueDetails
		url := ""
		if x.FailedRequestInfo != nil {
			url = x.FailedRequestInfo.URL
		}
		return fmt.Sprintf("Stylesheet could not be loaded: %s (%s)", orNone(url, "a stylesheet"), words(string(x.StyleSheetLoadingIssueReason)))
	case d.DeprecationIssueDetails != nil:
		return "Deprecated feature used: " + words(d.DeprecationIssueDetails.Type)
	case d.GenericIssueDetails != nil:
		return words(string(d.GenericIssueDetails.ErrorType))
	case d.ElementAccessibilityIssueDetails != nil:
		x := d.ElementAccessibilityIssueDetails
		what, ok := elementAccessibility[x.ElementAccessibilityIssueReason]
		if !ok {
			what = words(string(x.ElementAccessibilityIssueReason))
		}
		if x.HasDisallowedAttributes {
			what += " (contenteditable or tabindex)"
		}
		return "Element accessibility: " + what + ", which keyboard and assistive technology users may not reach"
	}
	return words(string(issue.Code))
}

// elementAccessibility says what each reason of an element accessibility
// issue is about.
var elementAccessibility = map[audits.ElementAccessibilityIssueReason]string{
	audits.ElementAccessibilityIssueReasonDisallowedSelectChild:               "an element not allowed inside <select>",
	audits.ElementAccessibilityIssueReasonDisallowedOptGroupChild:             "an element not allowed inside <optgroup>",
	audits.ElementAccessibilityIssueReasonNonPhrasingContentOptionChild:       "non-phrasing content inside <option>",
	audits.ElementAccessibilityIssueReasonInteractiveContentOptionChild:       "an interactive element inside <option>",
	audits.ElementAccessibilityIssueReasonInteractiveContentLegendChild:       "an interactive element inside <legend>",
	audits.ElementAccessibilityIssueReasonInteractiveContentSummaryDescendant: "an interactive element inside <summary>",
}

var wordBreak = regexp.MustCompile(`([a-z0-9])([A-Z])`)

// words spells a protocol name as words: "QuirksModeIssue" is "Quirks mode
// issue", "ExcludeSameSiteLax" is "Exclude same site lax".
func words(name string) string {
	s := strings.ToLower(wordBreak.ReplaceAllString(name, "$1 $2"))
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
