package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The subcommand as CI runs it: flags before and after the URLs, the exit
// code to gate on, a JUnit file; bad usage and a Chrome that cannot start
// exit 2 with a message that says what to do.
func TestSmokeBinary(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Broken</title><main><h1>Broken</h1><script>undefinedFunction()</script></main></html>`)
			return
		}
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Home</title><main><h1>Welcome home</h1></main></html>`)
	}))
	defer site.Close()

	t.Run("pass", func(t *testing.T) {
		junit := filepath.Join(t.TempDir(), "report.xml")
		code, stdout, stderr := smokeBinary(t, "--junit", junit, site.URL+"/", "--parallel", "2", "--expect-text", "Welcome")
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "PASS") || !strings.Contains(stdout, "1 passed, 0 failed") {
			t.Errorf("summary:\n%s", stdout)
		}
		b, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		var ju struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		if err := xml.Unmarshal(b, &ju); err != nil || ju.Tests != 5 || ju.Failures != 0 {
			t.Errorf("JUnit: %+v, %v\n%s", ju, err, b)
		}
	})
	t.Run("fail, base-url", func(t *testing.T) {
		// Paths on a preview deployment's address, the flag after them; a
		// broken page fails the run, saying why. (One run for both: each
		// starts a Chrome under a -race pagemux.)
		code, stdout, stderr := smokeBinary(t, "/", "/broken", "--base-url", site.URL)
		if code != 1 || !strings.Contains(stdout, "PASS    /  ") || !strings.Contains(stdout, "FAIL    /broken") {
			t.Errorf("exit %d, want 1 with / passed and /broken failed\n%s\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "undefinedFunction is not defined") {
			t.Errorf("summary lacks the broken page's error:\n%s", stdout)
		}
	})
	t.Run("demo", func(t *testing.T) {
		code, stdout, stderr := smokeBinary(t)
		if code != 1 || !strings.Contains(stdout, "blog.html") || !strings.Contains(stdout, "demo site") || !strings.Contains(stderr, "demo site") {
			t.Errorf("demo: exit %d\n%s\n%s", code, stdout, stderr)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown flag", []string{"--paralel", "2", site.URL}, []string{"pagemux smoke: unknown flag --paralel: did you mean --parallel?\n"}},
		{"unknown flag, one dash", []string{"-lighthose", "seo=1", site.URL}, []string{"unknown flag -lighthose: did you mean --lighthouse?"}},
		{"nothing near", []string{"--frobnicate", site.URL}, []string{"unknown flag --frobnicate; see --help"}},
		{"flag without its value", []string{site.URL, "--timeout"}, []string{"--timeout needs a value"}},
		{"bad flag value", []string{"--parallel", "0", site.URL}, []string{"--parallel 0: want 1 to 64", "pagemux smoke --help"}},
		{"bad URL", []string{"ftp://example.com/"}, []string{"is not a URL to check"}},
		{"path without --base-url", []string{"/pricing"}, []string{`"/pricing" is a path: give --base-url`}},
		{"browser flags checked", []string{"--viewport", "wide", site.URL}, []string{"want WIDTHxHEIGHT"}},
		{"no chrome", []string{"--executable-path", "/nonexistent/chrome", site.URL}, []string{"chrome could not start", "--executable-path"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := smokeArgs
			if tt.name == "no chrome" {
				run = smokeBinary // exit 2 from the binary, and its TMPDIR left clean
			}
			code, stdout, stderr := run(t, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "Usage: pagemux smoke") {
				t.Errorf("a usage error printed the whole help:\n%s", stderr)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		code, _, stderr := smokeArgs(t, "--help")
		for _, w := range []string{"Usage: pagemux smoke", "--parallel", "--lighthouse", "--junit", "--executable-path", "--browser-url", "--headless"} {
			if code != 0 || !strings.Contains(stderr, w) {
				t.Errorf("--help: exit %d, lacks %q", code, w)
			}
		}
	})
}

// The server's browser flags are the shared ones, still.
func TestSmokeSharedBrowserFlags(t *testing.T) {
	c, err := parseFlags([]string{"--executable-path", "/x/chrome", "--viewport", "800x600", "--chrome-arg=--lang=de", "--headless=false", "--isolated=false", "--user-data-dir", "/tmp/p"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	b := c.browser
	if b.ExecPath != "/x/chrome" || b.ViewportWidth != 800 || b.ViewportHeight != 600 || len(b.ChromeArgs) != 1 || !b.Headful || c.isolated || b.UserDataDir != "/tmp/p" {
		t.Errorf("parsed: %+v isolated %v", b, c.isolated)
	}
}
