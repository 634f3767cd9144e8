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
	return ok && t.matches(pattern)
}

// matches compares t with pattern part by part, so that no * can reach
// from one part into another (https://*.example.com/ does not match
// https://evil.test/x.example.com/).
func (t *target) matches(pattern string) bool {
	pattern = strings.TrimSpace(pattern)
	scheme, rest, hasScheme := strings.Cut(pattern, "://")
	if !hasScheme {
		if i := strings.IndexByte(pattern, ':'); i > 0 && validScheme(pattern[:i]) {
			// data:*, javascript:*, about:blank: the whole URL.
			whole := t.scheme + ":" + t.rest
			if _, special := specialPorts[t.scheme]; special {
				whole = t.scheme + "://" + t.host + t.path
			}
			return glob(strings.ToLower(pattern[:i])+pattern[i:], whole)
		}
		scheme, rest = "*", strings.TrimRight(pattern, "/")+":*"
	}
	if _, special := specialPorts[t.scheme]; !special || !glob(strings.ToLower(scheme), t.scheme) {
		return false
	}
	authority, path := rest, "*"
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	host, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, port = authority[:i], authority[i+1:]
	}
	host = strings.TrimRight(strings.ToLower(host), ".")
	if ch, ok := canonicalHost(host); ok && !strings.Contains(host, "*") {
		host = ch
	}
	if !glob(host, t.host) {
		return false
	}
	if port == "" {
		if t.port != specialPorts[t.scheme] {
			return false
		}
	} else if !glob(port, strconv.Itoa(t.port)) {
		return false
	}
	return glob(path, t.path)
}

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
