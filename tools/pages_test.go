package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

func TestPagesLifecycle(t *testing.T) {
	t.Parallel()
	// An env of its own: selection and the last-page rule are global state.
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage}})
	text := e.ok(t, "list_pages", nil)
	mustContain(t, text, "## Pages\n1: about:blank [selected]")

	text = e.ok(t, "new_page", map[string]any{"url": testSite.URL + "/form.html"})
	mustContain(t, text, "1: about:blank\n", fmt.Sprintf("2: Harness Form (%s/form.html) [selected]", testSite.URL))

	text = e.ok(t, "select_page", map[string]any{"pageId": 1, "bringToFront": true})
	mustContain(t, text, "1: about:blank [selected]")
	// Calls without a pageId act on the selected page.
	if got := e.eval(t, 0, "() => location.href"); got != `"about:blank"` {
		t.Fatalf("selected page is at %s, want about:blank", got)
	}

	text = e.ok(t, "close_page", map[string]any{"pageId": 1})
	mustContain(t, text, "Note: the previously selected page was closed. Page 2 is now selected.\n## Pages\n2: Harness Form")
	if strings.Contains(text, "1: about:blank") {
		t.Fatalf("closed page still listed:\n%s", text)
	}
	text = e.ok(t, "close_page", map[string]any{"pageId": 2})
	mustContain(t, text, "The last open page cannot be closed. It is fine to keep it open.")

	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": 1}), "page 1 is closed")
	mustContain(t, e.fails(t, "select_page", map[string]any{"pageId": 1}), "page 1 is closed")
	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": 99}), "no page with id 99")
	// The server keeps serving.
	mustContain(t, e.ok(t, "list_pages", nil), "2: Harness Form")
}

func TestNavigate(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.Global, pagelock.PerPage} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			id := e.openPage(t, "/form.html")
			text := e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html"})
			mustContain(t, text, "Successfully navigated to", "Page Two ("+testSite.URL+"/page2.html)")
			if got := e.eval(t, id, "() => document.title"); got != `"Page Two"` {
				t.Fatalf("title after navigate = %s", got)
			}
			e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "back"})
			if got := e.eval(t, id, "() => document.title"); got != `"Harness Form"` {
				t.Fatalf("title after back = %s", got)
			}
			e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "forward"})
			if got := e.eval(t, id, "() => document.title"); got != `"Page Two"` {
				t.Fatalf("title after forward = %s", got)
			}
			e.eval(t, id, "() => { window.marker = 1; return 1 }")
			mustContain(t, e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "reload"}), "Successfully reloaded the page.")
			if got := e.eval(t, id, "() => typeof window.marker"); got != `"undefined"` {
				t.Fatalf("reload kept the old document: marker is %s", got)
			}
			mustContain(t, e.fails(t, "navigate_page", map[string]any{"pageId": id, "type": "forward"}), "no next entry")
		})
	}
}

func TestNavigateBadInput(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/page2.html")
	mustContain(t, e.fails(t, "navigate_page", map[string]any{"pageId": id, "url": "notaurl"}), "not a valid URL")
	mustContain(t, e.fails(t, "navigate_page", map[string]any{"pageId": id, "url": "http://127.0.0.1:9/"}), "net::ERR_")
	mustContain(t, e.fails(t, "navigate_page", map[string]any{"pageId": id, "type": "sideways"}), `invalid argument "type" for navigate_page: want one of "url", "back", "forward", "reload", got "sideways"`)
	mustContain(t, e.fails(t, "navigate_page", map[string]any{"pageId": id}), "needs a url")
	mustContain(t, e.fails(t, "navigate_page", map[string]any{"pageId": "two"}), `invalid argument "pageId" for navigate_page: want an integer, got string`)
	// The page still works.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/form.html"})
	mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id}), `RootWebArea "Harness Form"`)
}

func TestNavigateWaitsForSlowPage(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	// A click on a link to a slow page returns once that page is there.
	e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `link "Slow page"`)})
	if got := e.eval(t, id, "() => document.title"); got != `"Slow"` {
		t.Fatalf("after clicking a link to a slow page the title is %s, want Slow", got)
	}
}
