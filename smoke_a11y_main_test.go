package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// `pagemux smoke --a11y` from the binary: axe-core is in it (no Node on
// the way), --a11y-ignore drops a rule, the summary lists the rest and says
// where to read about them; a misspelt rule is a usage error with the
// nearest one; --help lists the flags.
func TestSmokeBinaryA11y(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Shop</title><main><h1>Shop</h1>
<p style="color:#ccc;background:#fff">Faint text</p>
<img src="data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==" width="20" height="20">
<button class="cart"></button></main></html>`)
	}))
	defer site.Close()

	code, stdout, stderr := smokeBinary(t, site.URL+"/", "--a11y", "wcag2aa", "--a11y-ignore", "color-contrast")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, w := range []string{
		"error    a11y: image-alt (critical): Images must have alternative text; 1 element: img; see https://dequeuniversity.com/rules/axe/4.14/image-alt",
		"error    a11y: button-name (critical): Buttons must have discernible text; 1 element: button; see https://dequeuniversity.com/rules/axe/4.14/button-name",
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("summary lacks %q:\n%s", w, stdout)
		}
	}
	if !strings.Contains(stdout, "--a11y-ignore RULE") {
		t.Errorf("the advice does not say how to pass a known violation:\n%s", stdout)
	}
	if strings.Contains(stdout, "color-contrast") {
		t.Errorf("--a11y-ignore color-contrast, yet it is reported:\n%s", stdout)
	}

	code, stdout, stderr = smokeArgs(t, site.URL+"/", "--a11y", "wcag2aa", "--a11y-ignore", "colour-contrast")
	if code != 2 || !strings.Contains(stderr, `--a11y-ignore "colour-contrast": axe-core 4.14.1 has no such rule; did you mean color-contrast?`) {
		t.Errorf("a misspelt rule: exit %d\n%s\n%s", code, stdout, stderr)
	}

	code, _, stderr = smokeArgs(t, "--help")
	for _, w := range []string{"--a11y LEVELS", "--a11y-ignore RULE", "--a11y-impact IMPACT", "wcag22aa"} {
		if code != 0 || !strings.Contains(stderr, w) {
			t.Errorf("--help: exit %d, lacks %q", code, w)
		}
	}
}
