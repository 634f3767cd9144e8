package policy

import (
	"strconv"
	"strings"
)

// PatternSyntax is what --help and the README say of a URL pattern.
const PatternSyntax = "SCHEME://HOST[:PORT][/PATH], in which * matches any run of characters within its part " +
	"(https://*.example.com/*, *://localhost:*/*, http://10.0.0.*/admin*), compared with the URL as Chrome reads it " +
	"(scheme and host lowercased, IPs in dotted form); no PORT: the scheme's default port; no PATH: any path. " +
	"A bare host (example.com, *.example.com) matches it on any scheme, port and path; data:*, file:///tmp/* and the like match those URLs whole"

// MatchPattern reports whether rawURL matches pattern, read as
// PatternSyntax says. A URL Chrome cannot read matches nothing.
func MatchPattern(pattern, rawURL string) bool {
	t, ok := parseTarget(rawURL)
	return ok && t.matches(CompilePattern(pattern))
}

// URL is a URL read once, to be matched against many patterns.
type URL struct{ t *target }

// ParseURL reads rawURL as MatchPattern does; a URL Chrome cannot read
// gives a URL that matches nothing.
func ParseURL(rawURL string) URL {
	t, _ := parseTarget(rawURL)
	return URL{t}
}

// Match reports whether the URL matches p, as MatchPattern does.
func (u URL) Match(p Pattern) bool { return u.t != nil && u.t.matches(p) }

// Pattern is a URL pattern read once (PatternSyntax), to be matched
// against many URLs.
type Pattern struct {
	whole                    string // a pattern of a scheme without //: the URL whole
	scheme, host, port, path string
}

// Host is the host a pattern matches alone, and true, when it names one
// without a *; "" and false when it may match many.
func (p Pattern) Host() (string, bool) {
	if p.whole != "" || p.host == "" || strings.Contains(p.host, "*") {
		return "", false
	}
	return p.host, true
}

// Host is the URL's host as patterns match it, "" for none.
func (u URL) Host() string {
	if u.t == nil {
		return ""
	}
	return u.t.host
}

// CompilePattern reads pattern as MatchPattern does.
func CompilePattern(pattern string) Pattern {
	pattern = strings.TrimSpace(pattern)
	scheme, rest, hasScheme := strings.Cut(pattern, "://")
	if !hasScheme {
		if i := strings.IndexByte(pattern, ':'); i > 0 && validScheme(pattern[:i]) {
			// data:*, javascript:*, about:blank: the whole URL.
			return Pattern{whole: strings.ToLower(pattern[:i]) + pattern[i:]}
		}
		scheme, rest = "*", strings.TrimRight(pattern, "/")+":*"
	}
	p := Pattern{scheme: strings.ToLower(scheme), path: "*"}
	authority := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, p.path = rest[:i], rest[i:]
	}
	host := authority
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, p.port = authority[:i], authority[i+1:]
	}
	host = strings.TrimRight(strings.ToLower(host), ".")
	if ch, ok := canonicalHost(host); ok && !strings.Contains(host, "*") {
		host = ch
	}
	p.host = host
	return p
}

// matches compares t with pattern p part by part, so that no * can reach
// from one part into another (https://*.example.com/ does not match
// https://evil.test/x.example.com/).
func (t *target) matches(p Pattern) bool {
	if p.whole != "" {
		whole := t.scheme + ":" + t.rest
		if _, special := specialPorts[t.scheme]; special {
			whole = t.scheme + "://" + t.host + t.path
		}
		return glob(p.whole, whole)
	}
	if _, special := specialPorts[t.scheme]; !special || !glob(p.scheme, t.scheme) {
		return false
	}
	if !glob(p.host, t.host) {
		return false
	}
	if p.port == "" {
		if t.port != specialPorts[t.scheme] {
			return false
		}
	} else if !glob(p.port, strconv.Itoa(t.port)) {
		return false
	}
	return glob(p.path, t.path)
}

// Glob reports whether s matches pattern, in which * matches any run of
// characters and every other character itself.
func Glob(pattern, s string) bool { return glob(pattern, s) }

// glob matches s against pattern, where * matches any run of characters.
func glob(pattern, s string) bool {
	px, sx := 0, 0
	star, mark := -1, 0
	for sx < len(s) {
		switch {
		case px < len(pattern) && pattern[px] == '*':
			star, mark = px, sx
			px++
		case px < len(pattern) && pattern[px] == s[sx]:
			px++
			sx++
		case star >= 0:
			px = star + 1
			mark++
			sx = mark
		default:
			return false
		}
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}
