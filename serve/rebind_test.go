package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// get sends a GET of base+path over real HTTP with the Host header host
// (and the headers given), and returns the status and body.
func get(t *testing.T, base, path, host string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricsText stands for the Prometheus handler.
var metricsText = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "pagemux_pages_open 0\n")
})

// locksJSON stands for the locks' table.
func locksJSON(ctx context.Context) any { return map[string]any{"locks": []any{}} }

// checkRebinding asks base+path with Host names of other sites, which must
// be refused with 403 and advice, and with loopback names, which must not.
func checkRebinding(t *testing.T, base string, paths []string, headers map[string]string) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	_, port, _ := net.SplitHostPort(addr)
	for _, path := range paths {
		for _, host := range []string{"evil.example", "evil.example:" + port, "EVIL.example:" + port,
			"127.0.0.1.evil.example:" + port, "localhost.evil.example:" + port, "10.0.0.1:" + port, "[::2]:" + port} {
			status, body := get(t, base, path, host, headers)
			if status != http.StatusForbidden {
				t.Errorf("%s with Host %s: %d %s, want 403", path, host, status, body)
				continue
			}
			for _, want := range []string{"Host \\\"" + host + "\\\" is not a loopback name", "DNS rebinding", "connect to " + addr} {
				if !strings.Contains(body, want) {
					t.Errorf("%s with Host %s: the refusal does not say %q: %s", path, host, want, body)
				}
			}
			if strings.Count(strings.TrimSpace(body), "\n") > 0 {
				t.Errorf("%s with Host %s: the refusal is not one line: %q", path, host, body)
			}
		}
		for _, host := range []string{addr, "localhost:" + port, "LocalHost:" + port, "localhost.:" + port, "localhost",
			"127.0.0.1", "127.1.2.3:" + port, "[::1]:" + port, "[::1]"} {
			if status, body := get(t, base, path, host, headers); status != http.StatusOK {
				t.Errorf("%s with Host %s: %d %s, want 200", path, host, status, body)
			}
		}
	}
}

// TestHTTPRefusesRebinding: on a loopback --http listener, /locks,
// /metrics, /healthz and /mcp refuse a request whose Host names another
// site (a web page that pointed its name at 127.0.0.1) with 403 and what to
// do, with or without tokens, and answer loopback names with or without a
// port.
func TestHTTPRefusesRebinding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    HTTPOptions
		headers map[string]string
	}{
		{"no tokens", HTTPOptions{Metrics: metricsText, Locks: locksJSON}, nil},
		{"tokens", HTTPOptions{Metrics: metricsText, Locks: locksJSON, Tokens: map[string]string{"lead": "s3cret-lead"}},
			map[string]string{"Authorization": "Bearer s3cret-lead"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := serveReal(t, tc.opts)
			checkRebinding(t, base, []string{"/locks", "/metrics", "/healthz"}, tc.headers)
			initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(initialize))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "evil.example"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "is not a loopback name") {
				t.Errorf("POST /mcp with Host evil.example: %d %s, want 403", resp.StatusCode, b)
			}
			if status, body, _ := post(t, base, initialize, tc.headers); status != http.StatusOK {
				t.Errorf("POST /mcp with Host 127.0.0.1: %d %s", status, body)
			}
		})
	}
}

// TestHTTPOpenListenerTakesAnyHost: beyond loopback (with tokens, as
// ListenHTTP asks) Host is not checked, as before: the token is the guard.
func TestHTTPOpenListenerTakesAnyHost(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip("no wildcard listener here:", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts := HTTPOptions{Metrics: metricsText, Locks: locksJSON, Tokens: map[string]string{"lead": "s3cret-lead"}}
	go func() { done <- ServeHTTP(ctx, ln, newTestServer().srv, opts) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	base := "http://127.0.0.1:" + port
	for _, path := range []string{"/locks", "/metrics"} {
		if status, body := get(t, base, path, "mcp.example.com", map[string]string{"Authorization": "Bearer s3cret-lead"}); status != http.StatusOK {
			t.Errorf("%s with Host mcp.example.com on 0.0.0.0: %d %s, want 200", path, status, body)
		}
		if status, body := get(t, base, path, "mcp.example.com", nil); status != http.StatusUnauthorized {
			t.Errorf("%s without a token on 0.0.0.0: %d %s, want 401", path, status, body)
		}
	}
}

// TestMetricsRefusesRebinding: --metrics-addr's listener refuses a Host
// naming another site on /metrics (and elsewhere) with 403 and what to do.
func TestMetricsRefusesRebinding(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveMetrics(ctx, ln, metricsText, nil) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	base := "http://" + ln.Addr().String()
	checkRebinding(t, base, []string{"/metrics"}, nil)
	if status, body := get(t, base, "/metrics", "evil.example", nil); !strings.Contains(body, "--metrics-addr serves loopback only") {
		t.Errorf("/metrics with Host evil.example: %d %s: no advice for --metrics-addr", status, body)
	}
	if status, body := get(t, base, "/nothing", "evil.example", nil); status != http.StatusForbidden {
		t.Errorf("/nothing with Host evil.example: %d %s, want 403", status, body)
	}
}

// TestLoopbackHost: which Host values name loopback.
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"": true, "localhost": true, "LOCALHOST:8931": true, "localhost.": true, "Localhost.:1": true,
		"127.0.0.1": true, "127.0.0.1:8931": true, "127.255.0.9:80": true, "[::1]": true, "[::1]:8931": true,
		"::1": true, "[::ffff:127.0.0.1]:8931": true,
		"evil.example": false, "evil.example:8931": false, "localhost.evil.example": false,
		"127.0.0.1.nip.io:8931": false, "evilocalhost": false, "10.0.0.1:8931": false, "[::2]:8931": false,
		"0.0.0.0:8931": false, "[::]:8931": false, "[::1": false, "localhost..": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
