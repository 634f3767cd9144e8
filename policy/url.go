package policy

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// target is a URL as Chrome reads it: what it will load, whatever the
// spelling the agent or the page gave.
type target struct {
	raw    string
	scheme string // lowercase, without the colon
	// rest is what follows "scheme:", for schemes without an authority.
	rest string
	// For the schemes with an authority (http, https, ws, wss, ftp, file):
	host string     // canonical: lowercase, IDNA, no trailing dot, IPs in dotted or bracketed form
	ip   netip.Addr // the host's address when it is an IP literal (4in6 unmapped)
	port int        // the effective port; the scheme's default when none was given
	path string     // path, query and fragment, as given
}

var dropTabsNewlines = strings.NewReplacer("\t", "", "\n", "", "\r", "")

// specialPorts are the schemes with an authority and their default ports,
// as in the URL standard Chrome follows; file has no port.
var specialPorts = map[string]int{"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "file": 0}

// parseTarget reads raw as Chrome's URL parser does, so far as the policy
// needs: tabs and newlines anywhere and spaces and controls at the ends are
// dropped, the scheme is case-insensitive, backslashes are slashes and any
// number of them may follow the scheme of a special URL, userinfo is not the
// host, the host is percent-decoded and IDNA-mapped (full-width digits are
// digits), and IPv4 addresses may be written in decimal, hex or octal, whole
// or in fewer than four parts.
func parseTarget(raw string) (*target, bool) {
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	s = dropTabsNewlines.Replace(s)
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !validScheme(s[:colon]) {
		return nil, false
	}
	t := &target{raw: raw, scheme: strings.ToLower(s[:colon]), rest: s[colon+1:]}
	def, special := specialPorts[t.scheme]
	if !special {
		return t, true
	}
	rest := strings.ReplaceAll(t.rest, `\`, "/")
	if t.scheme == "file" {
		// file:///p and file:/p have no host; file://h/p has one.
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			rest = r
		} else {
			rest = "/" + strings.TrimLeft(rest, "/")
		}
	} else {
		rest = strings.TrimLeft(rest, "/")
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	hostPart, portPart := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		hostPart, portPart = authority[:i], authority[i+1:]
	}
	t.port = def
	if portPart != "" {
		n, err := strconv.Atoi(portPart)
		if err != nil || n < 0 || n > 65535 {
			return nil, false
		}
		t.port = n
	}
	host, ok := canonicalHost(hostPart)
	if !ok {
		return nil, false
	}
	if t.scheme == "file" && host == "localhost" {
		host = ""
	}
	t.host = host
	if strings.HasPrefix(host, "[") {
		t.ip, _ = netip.ParseAddr(strings.Trim(host, "[]"))
		t.ip = t.ip.Unmap()
	} else if a, err := netip.ParseAddr(host); err == nil {
		t.ip = a
	}
	if tail == "" {
		tail = "/"
	}
	t.path = tail
	return t, true
}

func validScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// idnaProfile maps a host as the URL standard's domain-to-ASCII does.
var idnaProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false), idna.VerifyDNSLength(false))

// canonicalHost returns the host as Chrome keeps it, with the trailing dots
// of a name dropped (they reach the same host).
func canonicalHost(h string) (string, bool) {
	if strings.HasPrefix(h, "[") {
		a, err := netip.ParseAddr(strings.Trim(h, "[]"))
		if err != nil || !strings.HasSuffix(h, "]") {
			return "", false
		}
		return "[" + a.WithZone("").String() + "]", true
	}
	if dec, err := url.PathUnescape(h); err == nil {
		h = dec
	}
	if a, err := idnaProfile.ToASCII(h); err == nil {
		h = a
	} else {
		h = strings.ToLower(h)
	}
	if ip, ok := parseIPv4(h); ok {
		return ip.String(), true
	}
	return strings.TrimRight(h, "."), true
}

// parseIPv4 reads the IPv4 forms the URL standard accepts: one to four
// parts, each decimal, 0x-hex or 0-octal, the last filling the bytes left.
func parseIPv4(h string) (netip.Addr, bool) {
	parts := strings.Split(h, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func ipv4Number(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil || n > 1<<32 {
		return 0, false
	}
	return n, true
}
