package main

import (
	"strings"
	"testing"
)

// TestNodeFlags: a config written for chrome-devtools-mcp starts pagemux:
// its spellings become pagemux's flags, and flags with no meaning here are
// dropped with one warning line, never a failure.
func TestNodeFlags(t *testing.T) {
	var stderr strings.Builder
	c, err := parseFlags([]string{
		"--executablePath=/usr/bin/chromium", "--headless", "--isolated=true", "--viewport", "1280x720",
		"--chromeArg=--lang=de", "--chrome-arg", "--mute-audio", "-u", "http://127.0.0.1:9222",
		"--no-usage-statistics", "--experimentalStructuredContent", "--experimentalDataFormat", "canary",
		"--proxyServer", "http://127.0.0.1:3128", "--acceptInsecureCerts", "--logFile", "/tmp/x.log",
		"--categoryEmulation=false", "--screenshot-format", "jpeg",
	}, &stderr)
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	if c.browser.ExecPath != "/usr/bin/chromium" || c.browser.BrowserURL != "http://127.0.0.1:9222" || c.logFile != "/tmp/x.log" ||
		c.browser.ViewportWidth != 1280 {
		t.Errorf("translated flags: %+v", c)
	}
	for _, want := range []string{"--lang=de", "--mute-audio", "--proxy-server=http://127.0.0.1:3128", "--ignore-certificate-errors"} {
		found := false
		for _, a := range c.browser.ChromeArgs {
			found = found || a == want
		}
		if !found {
			t.Errorf("no Chrome flag %s in %v", want, c.browser.ChromeArgs)
		}
	}
	warning := stderr.String()
	if strings.Count(warning, "\n") != 1 || !strings.Contains(warning, "--no-usage-statistics") || !strings.Contains(warning, "--experimentalDataFormat") ||
		!strings.Contains(warning, "--screenshot-format") || strings.Contains(warning, "canary") {
		t.Errorf("the warning: %q", warning)
	}
	if _, err := parseFlags([]string{"--no-such-flag"}, &strings.Builder{}); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

// chrome-devtools-mcp's URL flags become pagemux's: its array flags take
// every value up to the next flag, and --no-file-navigations and
// --file-navigations=false refuse file: URLs on stdio.
func TestNodeURLFlags(t *testing.T) {
	tests := []struct {
		args             []string
		allowed, blocked []string
		noFiles, allow   bool
	}{
		{args: []string{"--blocked-url-pattern", "https://a.test/*", "https://b.test/*", "--headless"}, blocked: []string{"https://a.test/*", "https://b.test/*"}},
		{args: []string{"--blockedUrlPattern=https://a.test/*", "--allowedUrlPattern", "example.com"}, blocked: []string{"https://a.test/*"}, allowed: []string{"example.com"}},
		{args: []string{"--no-file-navigations"}, noFiles: true},
		{args: []string{"--noFileNavigations"}, noFiles: true},
		{args: []string{"--fileNavigations=false"}, noFiles: true},
		{args: []string{"--file-navigations"}, allow: true},
		{args: []string{"--allowed-url", "example.com", "--blocked-url=*.ads.test"}, allowed: []string{"example.com"}, blocked: []string{"*.ads.test"}},
	}
	for _, tt := range tests {
		var stderr strings.Builder
		c, err := parseFlags(tt.args, &stderr)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if strings.Join(c.allowedURLs, " ") != strings.Join(tt.allowed, " ") || strings.Join(c.blockedURLs, " ") != strings.Join(tt.blocked, " ") ||
			c.noFiles != tt.noFiles || c.allowFiles != tt.allow {
			t.Errorf("%q: allowed %q blocked %q noFiles %v allowFiles %v", tt.args, c.allowedURLs, c.blockedURLs, c.noFiles, c.allowFiles)
		}
		if stderr.Len() > 0 {
			t.Errorf("%q: warned %q", tt.args, stderr.String())
		}
	}
	if _, err := parseFlags([]string{"--allow-file-navigations", "--no-file-navigations"}, &strings.Builder{}); err == nil {
		t.Error("--allow-file-navigations with --no-file-navigations was accepted")
	}
}

// The policy of the flags: file: refused over HTTP unless allowed, loaded
// on stdio unless refused; pagemux's own addresses out of reach.
func TestURLPolicyFlags(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		fileLoads bool
		rule      string
	}{
		{[]string{}, true, ""},
		{[]string{"--no-file-navigations"}, false, "start pagemux without it"},
		{[]string{"--http=127.0.0.1:8931"}, false, "refused over HTTP"},
		{[]string{"--http=127.0.0.1:8931", "--allow-file-navigations"}, true, ""},
	} {
		c, err := parseFlags(tt.args, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.urlPolicy(nil)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Check("file:///etc/passwd")
		if (err == nil) != tt.fileLoads || err != nil && !strings.Contains(err.Error(), tt.rule) {
			t.Errorf("%q: file: %v", tt.args, err)
		}
	}
	c, _ := parseFlags([]string{"--http=127.0.0.1:8931", "--metrics-addr=127.0.0.1:9464"}, &strings.Builder{})
	p, _ := c.urlPolicy(nil)
	for _, u := range []string{"http://localhost:8931/mcp", "http://127.1:9464/metrics"} {
		if err := p.Check(u); err == nil || !strings.Contains(err.Error(), "endpoint of pagemux") {
			t.Errorf("%s: %v, want it refused as pagemux's endpoint", u, err)
		}
	}
}
