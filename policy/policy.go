// Package policy says what an agent may reach: which URL schemes a tab may
// load, the --allowed-url and --blocked-url patterns, and that pagemux's own
// endpoints and Chrome's are out of reach. It reads URLs as Chrome does, so
// that no spelling of a refused URL gets through.
//
// It only decides; it drives no Chrome and speaks no MCP. The browser package
// enforces its answers on every way a tab gets to a URL, and the tools check
// before they act.
package policy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Options say what the policy refuses beyond what it always refuses.
type Options struct {
	// AllowFiles lets tabs load file: URLs.
	AllowFiles bool
	// FileRule is the refusal of a file: URL, saying what to do, such as
	// "file: URLs are refused over HTTP; start pagemux with
	// --allow-file-navigations to allow them" (that one is the default).
	FileRule string
	// Allowed, when not empty, are the only URL patterns a tab may load
	// (about:blank and about:srcdoc always load). See MatchPattern.
	Allowed []string
	// Blocked are URL patterns no tab may load, checked before Allowed.
	Blocked []string
	// Endpoints returns the HOST:PORT addresses no tab may reach: pagemux's
	// own listeners and Chrome's DevTools endpoints. It is called on each
	// check, as they may change (a relaunched Chrome). May be nil.
	Endpoints func() []string
	// Resolve looks up a host name's addresses, to see whether a name reaches
	// one of the Endpoints. nil: the system resolver, with a short timeout.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Policy is the URL policy. Its zero value refuses only what is always
// refused, plus file: URLs. It is safe for concurrent use.
type Policy struct {
	o                Options
	allowed, blocked []Pattern // o.Allowed and o.Blocked, read once
}

// New returns the policy of o, or an error for a pattern that cannot be
// read.
func New(o Options) (*Policy, error) {
	for _, p := range append(append([]string(nil), o.Allowed...), o.Blocked...) {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("empty URL pattern; give one such as https://*.example.com/*")
		}
	}
	p := &Policy{o: o}
	for _, a := range o.Allowed {
		p.allowed = append(p.allowed, CompilePattern(a))
	}
	for _, b := range o.Blocked {
		p.blocked = append(p.blocked, CompilePattern(b))
	}
	return p, nil
}

// Error is a refusal: the URL, and the rule that refuses it with what to do.
type Error struct {
	URL  string
	Rule string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s is refused: %s", shorten(e.URL), e.Rule)
}

func shorten(u string) string {
	if len(u) > 200 {
		return u[:200] + "…"
	}
	return u
}

// alwaysRefused are the schemes that reach Chrome's own pages, its
// extensions, DevTools, or wrap another URL, and why.
var alwaysRefused = map[string]string{
	"chrome":           "chrome: URLs are Chrome's own pages (they show its profile path and settings) and are always refused",
	"chrome-untrusted": "chrome-untrusted: URLs are Chrome's own pages and are always refused",
	"chrome-search":    "chrome-search: URLs are Chrome's own pages and are always refused",
	"chrome-extension": "chrome-extension: URLs are the pages of Chrome's extensions and are always refused",
	"chrome-error":     "chrome-error: URLs are Chrome's own pages and are always refused",
	"chrome-native":    "chrome-native: URLs are Chrome's own pages and are always refused",
	"chrome-distiller": "chrome-distiller: URLs are Chrome's own pages and are always refused",
	"devtools":         "devtools: URLs are Chrome DevTools' own pages and are always refused",
	"view-source":      "view-source: URLs show any other URL's source, file: and chrome: included, and are always refused; navigate to the URL itself",
	"filesystem":       "filesystem: URLs are refused; navigate to the page that uses them",
	"isolated-app":     "isolated-app: URLs are Chrome's installed apps and are always refused",
}

// otherSchemes load without a rule of their own, unless a pattern says
// otherwise. about: is only about:blank and about:srcdoc (Chrome turns
// other about: URLs into chrome: ones).
var otherSchemes = map[string]bool{"http": true, "https": true, "data": true, "blob": true, "javascript": true, "about": true}

// Always is a URL that every policy lets a tab load: pagemux blanks tabs
// and frames with it.
const Always = "about:blank"

// Check returns nil if a tab may load rawURL, else an *Error saying what is
// refused and what to do. It may look the URL's host up when its port is
// one of the Endpoints' ports.
func (p *Policy) Check(rawURL string) error {
	return p.CheckContext(context.Background(), rawURL)
}

// CheckContext is Check with a context for the host look-up.
func (p *Policy) CheckContext(ctx context.Context, rawURL string) error {
	if p == nil {
		p = &Policy{}
	}
	t, ok := parseTarget(rawURL)
	if !ok {
		return nil // not a URL Chrome can load either; Chrome says so
	}
	refuse := func(rule string) error { return &Error{URL: rawURL, Rule: rule} }
	if why, bad := alwaysRefused[t.scheme]; bad {
		return refuse(why)
	}
	switch t.scheme {
	case "about":
		what := strings.ToLower(strings.TrimRight(strings.SplitN(strings.SplitN(t.rest, "?", 2)[0], "#", 2)[0], "/"))
		if what != "blank" && what != "srcdoc" {
			return refuse("about: URLs other than about:blank and about:srcdoc are Chrome's own pages (about:" + what + " is chrome://" + what + ") and are always refused")
		}
		return nil // pagemux needs them whatever the patterns say
	case "file":
		if !p.o.AllowFiles {
			rule := p.o.FileRule
			if rule == "" {
				rule = "file: URLs are refused; start pagemux with --allow-file-navigations to allow them"
			}
			return refuse(rule)
		}
	default:
		if _, special := specialPorts[t.scheme]; !special && !otherSchemes[t.scheme] {
			return refuse(fmt.Sprintf("pagemux loads only http:, https:, about:blank, data:, blob:, javascript: and (when allowed) file: URLs, not %s:", t.scheme))
		}
	}
	if err := p.checkEndpoints(ctx, t); err != nil {
		return refuse(err.Error())
	}
	for i, pat := range p.blocked {
		if t.matches(pat) {
			return refuse(fmt.Sprintf("it matches --blocked-url %s", p.o.Blocked[i]))
		}
	}
	if len(p.allowed) > 0 {
		for _, pat := range p.allowed {
			if t.matches(pat) {
				return nil
			}
		}
		return refuse(fmt.Sprintf("it matches no --allowed-url pattern (%s)", strings.Join(p.o.Allowed, " ")))
	}
	return nil
}

// Intercepts reports whether the policy refuses any http: or https: URL,
// which is what Chrome's request interception sees: then pagemux must pause
// each document request to check it. The scheme rules need no interception.
func (p *Policy) Intercepts() bool {
	if p == nil {
		return false
	}
	return len(p.o.Allowed) > 0 || len(p.o.Blocked) > 0 || len(p.endpoints()) > 0
}

// EndpointPatterns are wildcard URL patterns (Chrome's Fetch syntax: * and
// ?) that every request reaching one of the Endpoints matches, whatever its
// kind: a page's script fetching one is refused too, not only documents. A
// request they match is then checked with Check; they match more than
// Check refuses, such as any host on an endpoint's port.
func (p *Policy) EndpointPatterns() []string {
	if p == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, a := range p.endpoints() {
		e, ok := parseEndpoint(a)
		if !ok {
			continue
		}
		port := strconv.Itoa(e.port)
		add("*:" + port + "/*")
		if e.port == 80 || e.port == 443 {
			// Chrome leaves a default port out of the URL.
			for _, h := range []string{"127.*", "localhost", "*.localhost", "[::1]", "0.0.0.0", "[::]", e.host} {
				add("*://" + h + "/*")
			}
		}
	}
	return out
}

func (p *Policy) endpoints() []string {
	if p.o.Endpoints == nil {
		return nil
	}
	return p.o.Endpoints()
}

// endpoint is one of the addresses no tab may reach.
type endpoint struct {
	addr  string
	host  string // canonical
	ip    netip.Addr
	port  int
	local bool // on this machine: any spelling of a local address reaches it
}

func parseEndpoint(addr string) (endpoint, bool) {
	h, port, err := net.SplitHostPort(strings.TrimSpace(addr))
	if err != nil {
		return endpoint{}, false
	}
	t, ok := parseTarget("http://" + net.JoinHostPort(h, port) + "/")
	if h == "" {
		t, ok = parseTarget("http://0.0.0.0:" + port + "/")
	}
	if !ok || t.port == 0 {
		return endpoint{}, false
	}
	e := endpoint{addr: addr, host: t.host, ip: t.ip, port: t.port}
	e.local = isLocalName(t.host) || t.ip.IsValid() && isLocalIP(t.ip)
	return e, true
}

// checkEndpoints refuses a URL that reaches one of the endpoints: its port
// and a host that is, or resolves to, the endpoint's machine.
func (p *Policy) checkEndpoints(ctx context.Context, t *target) error {
	if t.scheme == "file" || t.host == "" {
		return nil
	}
	if _, special := specialPorts[t.scheme]; !special {
		return nil
	}
	var hits []endpoint
	for _, a := range p.endpoints() {
		if e, ok := parseEndpoint(a); ok && e.port == t.port {
			hits = append(hits, e)
		}
	}
	if len(hits) == 0 {
		return nil
	}
	addrs, local, err := p.reach(ctx, t)
	for _, e := range hits {
		if e.local && local || t.host == e.host {
			return endpointErr(e)
		}
		for _, a := range addrs {
			if e.ip.IsValid() && a == e.ip.Unmap() {
				return endpointErr(e)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("its port is that of %s and its host %s could not be looked up to tell it apart (%v)", hits[0].addr, t.host, err)
	}
	return nil
}

func endpointErr(e endpoint) error {
	return fmt.Errorf("it reaches %s, an endpoint of pagemux or of its Chrome, which no tab may reach", e.addr)
}

// reach returns the addresses t's host stands for and whether one is on
// this machine.
func (p *Policy) reach(ctx context.Context, t *target) ([]netip.Addr, bool, error) {
	if t.ip.IsValid() {
		return []netip.Addr{t.ip}, isLocalIP(t.ip), nil
	}
	if isLocalName(t.host) {
		return nil, true, nil
	}
	resolve := p.o.Resolve
	if resolve == nil {
		resolve = systemResolve
	}
	addrs, err := resolve(ctx, t.host)
	local := false
	for i, a := range addrs {
		addrs[i] = a.Unmap()
		local = local || isLocalIP(addrs[i])
	}
	return addrs, local, err
}

func systemResolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// isLocalName is a name Chrome sends to this machine without a look-up.
func isLocalName(h string) bool {
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == ""
}

// isLocalIP is an address that reaches this machine: loopback, unspecified
// (0.0.0.0 and [::] connect to it), or one of its interfaces' addresses.
func isLocalIP(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}
