package policy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func mustNew(t *testing.T, o Options) *Policy {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The schemes that reach Chrome's internals are refused in every spelling,
// whatever the options and patterns.
func TestAlwaysRefused(t *testing.T) {
	p := mustNew(t, Options{AllowFiles: true, Allowed: []string{"*"}})
	for _, u := range []string{
		"chrome://version", "CHROME://version/", " chrome://settings", "chr\tome://version",
		"chrome-untrusted://new-tab-page", "chrome-search://local-ntp", "chrome-extension://abcdefghijklmnop/x.html",
		"devtools://devtools/bundled/inspector.html", "DevTools://devtools/",
		"view-source:file:///etc/passwd", "view-source:https://example.com/", "VIEW-SOURCE:chrome://version",
		"about:version", "about:settings", "ABOUT:Version", "chrome-error://chromewebdata/",
		"filesystem:http://example.com/temporary/x", "isolated-app://abc/", "mailto:a@example.com", "localhost:9222/json",
	} {
		err := p.Check(u)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v, want it refused", u, err)
			continue
		}
		if !strings.Contains(err.Error(), "refused") {
			t.Errorf("%q: %v does not say it is refused", u, err)
		}
	}
}

func TestAlwaysLoads(t *testing.T) {
	p := mustNew(t, Options{Allowed: []string{"https://example.com/*"}})
	for _, u := range []string{"about:blank", "about:srcdoc", "ABOUT:BLANK", "about:blank#x"} {
		if err := p.Check(u); err != nil {
			t.Errorf("%q: %v, want it allowed", u, err)
		}
	}
	open := mustNew(t, Options{})
	for _, u := range []string{"data:text/html,<p>hi", "blob:https://example.com/1-2", "javascript:void(0)", "https://example.com/", "http://127.0.0.1:8080/"} {
		if err := open.Check(u); err != nil {
			t.Errorf("%q: %v, want it allowed without patterns", u, err)
		}
	}
}

func TestFiles(t *testing.T) {
	refuse := mustNew(t, Options{})
	for _, u := range []string{"file:///etc/shadow", "FILE:///etc/shadow", "file:/etc/passwd", `file:\\\etc\passwd`, "file://localhost/etc/passwd", "file:etc/passwd"} {
		err := refuse.Check(u)
		if err == nil || !strings.Contains(err.Error(), "start pagemux with --allow-file-navigations") {
			t.Errorf("%q: %v, want it refused with the flag to give", u, err)
		}
	}
	allow := mustNew(t, Options{AllowFiles: true})
	if err := allow.Check("file:///etc/hostname"); err != nil {
		t.Errorf("file: with AllowFiles: %v", err)
	}
	if err := allow.Check("view-source:file:///etc/hostname"); err == nil {
		t.Error("view-source:file: loads with AllowFiles; view-source: is always refused")
	}
}

// Every spelling of a local address and the endpoint's port is refused;
// other hosts or ports are not.
func TestEndpoints(t *testing.T) {
	p := mustNew(t, Options{
		Endpoints: func() []string { return []string{"127.0.0.1:8931", ":9101", "[::1]:9222", "localhost:80"} },
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "rebind.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "mapped.test":
				return []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.1")}, nil
			case "example.com":
				return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
			}
			return nil, errors.New("no such host")
		},
	})
	refused := []string{
		"http://127.0.0.1:8931/mcp", "http://localhost:8931/", "http://LOCALHOST:8931/", "http://localhost.:8931/",
		"http://foo.localhost:8931/", "http://127.1:8931/", "http://127.0.1:8931/", "http://2130706433:8931/",
		"http://0x7f000001:8931/", "http://0x7f.0.0.1:8931/", "http://0177.0.0.1:8931/", "http://017700000001:8931/",
		"http://127.0.0.1.:8931/", "http://127.0.0.2:8931/", "http://0.0.0.0:8931/", "http://0:8931/", "http://[::]:8931/",
		"http://[::1]:8931/", "http://[::ffff:127.0.0.1]:8931/", "http://[0:0:0:0:0:0:0:1]:8931/",
		"http://user:pw@127.0.0.1:8931/", "http://evil.com@127.0.0.1:8931/", "http://127.0.0.%31:8931/", "http://%6c%6fcalhost:8931/",
		"http://１２７.０.０.１:8931/", "HTTP://127.0.0.1:8931", `http:\\127.0.0.1:8931\mcp`, "http:127.0.0.1:8931/", "http:///127.0.0.1:8931/",
		"http://127.0.0.1:08931/", "https://127.0.0.1:8931/", "ws://127.0.0.1:8931/", "http://rebind.test:8931/", "http://mapped.test:8931/",
		"http://127.0.0.1:9101/metrics", "http://[::1]:9222/json/list", "http://localhost:9222/json", "http://localhost/", "http://127.0.0.1:80/",
		"http://unknown.test:8931/", // cannot tell: refused
		"http://\t127.0.0.1:8931/",
	}
	for _, u := range refused {
		err := p.Check(u)
		if err == nil {
			t.Errorf("%q: allowed, want it refused", u)
		} else if !strings.Contains(err.Error(), "8931") && !strings.Contains(err.Error(), "9101") && !strings.Contains(err.Error(), "9222") && !strings.Contains(err.Error(), ":80") {
			t.Errorf("%q: %v does not name the endpoint", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8932/", "http://example.com:8931/", "http://example.com/", "https://localhost/", "data:text/html,x"} {
		if err := p.Check(u); err != nil {
			t.Errorf("%q: %v, want it allowed", u, err)
		}
	}
	if !p.Intercepts() {
		t.Error("a policy with endpoints does not intercept")
	}
	if mustNew(t, Options{Endpoints: func() []string { return nil }}).Intercepts() {
		t.Error("a policy with no endpoint and no pattern intercepts")
	}
}

func TestParseIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "127.1": "127.0.0.1", "2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "0x7F.1": "127.0.0.1", "127.0.0.1.": "127.0.0.1", "0": "0.0.0.0", "0x": "0.0.0.0",
		"192.168.0x1.1": "192.168.1.1",
	} {
		got, ok := parseIPv4(in)
		if !ok || got.String() != want {
			t.Errorf("parseIPv4(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"256.0.0.1", "1.2.3.4.5", "example.com", "08.0.0.1", "4294967296", "1.2.3.256.", "1..2"} {
		if got, ok := parseIPv4(in); ok {
			t.Errorf("parseIPv4(%q) = %v, want no IPv4", in, got)
		}
	}
}

func TestPatterns(t *testing.T) {
	tests := []struct {
		pattern, url string
		want         bool
	}{
		{"https://example.com/*", "https://example.com/", true},
		{"https://example.com/*", "https://EXAMPLE.com", true},
		{"https://example.com/*", "https://example.com:443/a", true},
		{"https://example.com/*", "https://example.com:8443/a", false},
		{"https://example.com/*", "http://example.com/", false},
		{"https://*.example.com/*", "https://a.b.example.com/x", true},
		{"https://*.example.com/*", "https://evil.test/x.example.com/", false},
		{"https://*.example.com/*", "https://evil.test/?://a.example.com/", false},
		{"*://localhost:*/*", "http://localhost/", true},
		{"*://localhost:*/*", "ws://localhost:9/x", true},
		{"http://10.0.0.*/admin*", "http://10.0.0.7/admin/x", true},
		{"http://10.0.0.*/admin*", "http://10.0.0.7/user", false},
		{"http://127.0.0.1/*", "http://2130706433/", true},
		{"example.com", "https://example.com:8443/a?b", true},
		{"example.com", "https://a.example.com/", false},
		{"*.example.com", "https://a.example.com/", true},
		{"example.com", "https://evil.test/?example.com", false},
		{"data:*", "data:text/html,x", true},
		{"DATA:*", "data:text/html,x", true},
		{"javascript:*", "javascript:alert(1)", true},
		{"file:///tmp/*", "file:///tmp/x.html", true},
		{"file:///tmp/*", "file:///etc/passwd", false},
	}
	for _, tt := range tests {
		if got := MatchPattern(tt.pattern, tt.url); got != tt.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tt.pattern, tt.url, got, tt.want)
		}
	}
}

func TestAllowBlock(t *testing.T) {
	p := mustNew(t, Options{Allowed: []string{"https://*.example.com/*", "example.org"}, Blocked: []string{"https://admin.example.com/*"}})
	for u, want := range map[string]string{
		"https://www.example.com/":   "",
		"https://example.org/x":      "",
		"https://admin.example.com/": "--blocked-url https://admin.example.com/*",
		"https://evil.test/":         "matches no --allowed-url pattern",
		"data:text/html,x":           "matches no --allowed-url pattern",
		"about:blank":                "",
	} {
		err := p.Check(u)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v, want it allowed", u, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want an error with %q", u, err, want)
		}
	}
	if _, err := New(Options{Blocked: []string{" "}}); err == nil {
		t.Error("an empty pattern is accepted")
	}
}

func BenchmarkCheck(b *testing.B) {
	p, _ := New(Options{Blocked: []string{"https://*.ads.example/*"}, Endpoints: func() []string { return []string{"127.0.0.1:8931"} }})
	for b.Loop() {
		_ = p.Check("https://www.example.com/some/path?q=1")
	}
}

func TestEndpointPatterns(t *testing.T) {
	p := mustNew(t, Options{Endpoints: func() []string { return []string{"127.0.0.1:9222", "localhost:80", "bad"} }})
	got := strings.Join(p.EndpointPatterns(), " ")
	for _, want := range []string{"*:9222/*", "*:80/*", "*://127.*/*", "*://localhost/*", "*://[::1]/*"} {
		if !strings.Contains(got, want) {
			t.Errorf("EndpointPatterns %q lack %q", got, want)
		}
	}
}
