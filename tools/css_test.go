package tools

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

// The answers of chrome-devtools-mcp 1.11 to get_css_styles on the two
// cascade pages of testdata are in testdata/cdm/get_css_styles, recorded
// from the Node server on the same pages; pagemux must answer the same,
// byte for byte.

func TestCSSStylesMatchNodeServer(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	cases := []struct {
		page   string
		needle string // of the snapshot line whose uid is asked for
		args   map[string]any
		want   string // file in testdata/cdm/get_css_styles
	}{
		{"/css.html", `button "* Card button"`, nil, "target-page0"},
		{"/css.html", `button "* Card button"`, map[string]any{"pageIdx": 1}, "target-page1"},
		{"/css.html", `button "* Card button"`, map[string]any{"pageIdx": 2}, "target-page2-invalid"},
		{"/css.html", `button "* Card button"`, map[string]any{"pageIdx": 7}, "target-page7-invalid"},
		{"/css.html", `button "* Card button"`, map[string]any{"pageSize": 100}, "target-all"},
		{"/css.html", `"Plain paragraph"`, map[string]any{"pageSize": 100}, "plain"},
		{"/css.html", `"Item"`, map[string]any{"pageSize": 100}, "item"},
		{"/css.html", `link "A link"`, map[string]any{"pageSize": 100}, "link"},
		{"/css.html", ` main`, map[string]any{"pageSize": 100}, "main"},
		{"/css-more.html", `button "Nested button"`, map[string]any{"pageSize": 100}, "nested-button"},
		{"/css-more.html", `"SCOPED TEXT"`, map[string]any{"pageSize": 100}, "scoped-span"},
		{"/css-more.html", `"Old font"`, map[string]any{"pageSize": 100}, "font-attributes"},
		{"/css-more.html", `heading "Heading two"`, map[string]any{"pageSize": 100}, "h2-important"},
		{"/css-more.html", `heading "Heading two"`, map[string]any{"pageSize": 2, "pageIdx": 1}, "h2-page1-size2"},
		{"/css-at-rules.html", `"Palette"`, map[string]any{"pageSize": 100}, "at-rules-palette"},
		{"/css-at-rules.html", `"Popover text"`, map[string]any{"pageSize": 100}, "at-rules-position-try"},
		{"/css-at-rules.html", `"Function"`, map[string]any{"pageSize": 100}, "at-rules-function"},
		{"/css-at-rules.html", `"Deep para"`, map[string]any{"pageSize": 100}, "at-rules-nested"},
	}
	pages := map[string]int{}
	snaps := map[string]string{}
	for _, c := range cases {
		id, ok := pages[c.page]
		if !ok {
			id = e.openPage(t, c.page)
			pages[c.page] = id
			snaps[c.page] = e.ok(t, "take_snapshot", map[string]any{"pageId": id})
		}
		uid := uidIn(t, snaps[c.page], c.needle)
		args := map[string]any{"pageId": id, "uid": uid}
		for k, v := range c.args {
			args[k] = v
		}
		got := e.ok(t, "get_css_styles", args)
		raw, err := os.ReadFile(filepath.Join("testdata", "cdm", "get_css_styles", c.want+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(string(raw), "\n")
		// The one deliberate difference: chrome-devtools-mcp nests layers
		// inside out (README, compatibility).
		want = strings.ReplaceAll(want, "  @layer b {\n    @layer a {", "  @layer a {\n    @layer b {")
		if got != want {
			t.Errorf("%s %s %v: the answer differs from chrome-devtools-mcp's (%s.txt)\n%s", c.page, c.needle, c.args, c.want, lineDiff(want, got))
		}
	}
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return "first difference at line " + strconv.Itoa(i+1) + ":\nwant: " + wl + "\ngot:  " + gl + "\n--- got in full:\n" + got
		}
	}
	return "(same lines)"
}

func TestCSSStylesUnknownUID(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.Global)
	id := e.openPage(t, "/css.html")
	e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	for _, uid := range []string{"9_99", "nonsense"} {
		got := e.fails(t, "get_css_styles", map[string]any{"pageId": id, "uid": uid})
		mustContain(t, got, uid, "take a new snapshot")
	}
	mustContain(t, e.fails(t, "get_css_styles", map[string]any{"pageId": id}), `missing required argument "uid"`)
	mustContain(t, e.fails(t, "get_css_styles", map[string]any{"pageId": id, "uid": "1_1", "pageSize": 0}), "pageSize")
	// A uid from before a navigation is stale.
	uid := e.uid(t, id, "Card button")
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "type": "reload"})
	mustContain(t, e.fails(t, "get_css_styles", map[string]any{"pageId": id, "uid": uid}), "take a new snapshot")
	// The page works as before: DOM events are off again after a call.
	uid = e.uid(t, id, "Card button")
	mustContain(t, e.ok(t, "get_css_styles", map[string]any{"pageId": id, "uid": uid}), `Styles for button#target (uid: "`+uid+`"):`)
	e.ok(t, "click", map[string]any{"pageId": id, "uid": uid})
}

func TestCSSStylesOfTheDocument(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/css.html")
	root := e.uid(t, id, "RootWebArea")
	mustContain(t, e.fails(t, "get_css_styles", map[string]any{"pageId": id, "uid": root}), "uid "+root+" is not an element")
}

// The content of a <details> is slotted into its user-agent shadow tree:
// each inherited style still comes from the ancestor it belongs to (the
// Node server shifts them by one there).
func TestCSSStylesThroughDetails(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/css-details.html")
	got := e.ok(t, "get_css_styles", map[string]any{"pageId": id, "uid": e.uid(t, id, `"Inside text"`), "pageSize": 100})
	mustContain(t, got, "Styles for p#inside",
		"  Inherited from details:\n    details (css-details.html:7) {\n      color: teal;\n    }",
		"  Inherited from body:\n    body (css-details.html:8) {\n      font-style: italic;\n    }")
}
