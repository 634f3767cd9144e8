package browser

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
)

// OriginHeaders are headers added to every request a tab makes to one
// origin (documents, scripts, fetches, redirects to it), and to no other:
// a token for a protected preview deployment must not go to the analytics
// host its pages load.
type OriginHeaders struct {
	// Origin is scheme://host[:port], as a URL's origin is written (the
	// default port left out).
	Origin string
	// Headers are added to the request's, replacing a header of the same
	// name (case folded).
	Headers http.Header
}

// SetOriginHeaders adds headers to the requests of the origins in rules,
// browser-wide (each tab, the tabs pagemux did not open, Lighthouse's): its
// requests to those origins pause at Chrome's request stage and go on with
// the headers added. Call it before the first Start. It does not log or
// show the values.
func (b *Browser) SetOriginHeaders(rules []OriginHeaders) error {
	rules = slices.Clone(rules)
	for i, r := range rules {
		u, err := url.Parse(r.Origin)
		if err != nil || u.Scheme == "" || u.Host == "" || strings.TrimSuffix(u.Path, "/") != "" || u.RawQuery != "" {
			return fmt.Errorf("origin %q: want scheme://host[:port]", r.Origin)
		}
		rules[i].Origin = originOf(r.Origin)
	}
	b.headerRules = rules
	return nil
}

// originOf returns the origin of a URL, as OriginHeaders names one.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	host := u.Hostname()
	if p := u.Port(); p != "" && !(u.Scheme == "http" && p == "80" || u.Scheme == "https" && p == "443") {
		host = u.Host
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(host)
}

// headersFor returns the headers a request to raw goes on with when a rule
// covers its origin, nil when none does.
func (b *Browser) headersFor(raw string, sent network.Headers) []*fetch.HeaderEntry {
	origin := originOf(raw)
	i := slices.IndexFunc(b.headerRules, func(r OriginHeaders) bool { return strings.EqualFold(r.Origin, origin) })
	if origin == "" || i < 0 {
		return nil
	}
	return mergeHeaders(sentEntries(sent), b.headerRules[i].Headers, nil)
}

// sentEntries are the headers a request was sent with, as Fetch takes
// them.
func sentEntries(sent network.Headers) []*fetch.HeaderEntry {
	out := make([]*fetch.HeaderEntry, 0, len(sent))
	for name, v := range sent {
		out = append(out, &fetch.HeaderEntry{Name: name, Value: fmt.Sprint(v)})
	}
	return out
}

// mergeHeaders is base without the headers set replaces and those remove
// names (any case), then set's.
func mergeHeaders(base []*fetch.HeaderEntry, set http.Header, remove []string) []*fetch.HeaderEntry {
	out := make([]*fetch.HeaderEntry, 0, len(base)+len(set))
	for _, h := range base {
		if set.Get(h.Name) == "" && !slices.ContainsFunc(remove, func(n string) bool { return strings.EqualFold(n, h.Name) }) {
			out = append(out, h)
		}
	}
	return append(out, headerEntries(set)...)
}

// sentHeader is the value of a header a request was sent with, by name in
// any case; "" if it has none.
func sentHeader(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// headerPatterns are the interception patterns of the rules: every request
// to their origins.
func (b *Browser) headerPatterns() []*fetch.RequestPattern {
	var ps []*fetch.RequestPattern
	for _, r := range b.headerRules {
		ps = append(ps, &fetch.RequestPattern{URLPattern: strings.TrimSuffix(r.Origin, "/") + "/*", RequestStage: fetch.RequestStageRequest})
	}
	return ps
}
