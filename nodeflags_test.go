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
		"--no-usage-statistics", "--experimentalStructuredContent", "--channel", "canary",
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
	if strings.Count(warning, "\n") != 1 || !strings.Contains(warning, "--no-usage-statistics") || !strings.Contains(warning, "--channel") ||
		!strings.Contains(warning, "--screenshot-format") || strings.Contains(warning, "canary") {
		t.Errorf("the warning: %q", warning)
	}
	if _, err := parseFlags([]string{"--no-such-flag"}, &strings.Builder{}); err == nil {
		t.Error("an unknown flag was accepted")
	}
}
