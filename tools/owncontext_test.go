package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

// Attack: two servers on one Chrome, each in a context of its own
// (browser.Config.OwnContext, --own-context). An agent of one
// reaches nothing of the other's: no page id of its names the other's tab,
// its page list never shows it, and a page of the same origin reads none of
// the other's cookies or storage.
func TestAttackOtherContext(t *testing.T) {
	t.Parallel()
	host := browser.New(browser.Config{Logger: testLogger()})
	t.Cleanup(func() { host.Close() })
	url, err := host.DevToolsURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	opts := pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}
	tenant := browser.Config{WSEndpoint: url, OwnContext: true}
	mine, theirs := newEnv(t, envOptions{Locks: opts, Browser: tenant}), newEnv(t, envOptions{Locks: opts, Browser: tenant})
	secret := theirs.openPage(t, "/form.html?their-secret-page")
	theirs.eval(t, secret, `() => { localStorage.setItem("who", "theirs"); document.cookie = "who=theirs"; return 1 }`)

	own := mine.openPage(t, "/form.html")
	if got := mine.eval(t, own, `() => String(localStorage.getItem("who")) + "|" + document.cookie`); got != `"null|"` {
		t.Errorf("a page of the same origin reads %s of the other server's storage and cookies, want none", got)
	}
	if list := mine.ok(t, "list_pages", nil); strings.Contains(list, "their-secret-page") {
		t.Errorf("the page list shows the other server's tab:\n%s", list)
	}
	for id := 1; id <= secret+3; id++ {
		r := mine.call(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => location.href"})
		if strings.Contains(r.text, "their-secret-page") {
			t.Errorf("page id %d reaches the other server's tab: %s", id, r.text)
		}
	}
	if got := theirs.eval(t, secret, `() => localStorage.getItem("who")`); got != `"theirs"` {
		t.Errorf("the other server's page lost its own storage: %s", got)
	}
}
