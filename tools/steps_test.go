package tools

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
)

// stepToolNames are the tools Options.StepTools adds.
var stepToolNames = []string{"click_selector", "fill_selector", "wait_for_selector", "wait_for_url", "add_init_script", "new_window"}

// stepsSite serves the pages the step tools are tried on: /form, whose
// button shows up after a moment and counts its clicks, with a text
// input, a select, a checkbox and a hidden element; /push, which changes
// its URL with pushState after a moment; /away, which navigates to /form
// after a moment.
func stepsSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Form</title><main><input id="q"><select id="plan"><option>free</option><option>pro</option></select>
<input id="ok" type="checkbox"><p id="hidden" style="display:none">hidden</p></main>
<script>window.clicks = 0; setTimeout(() => { const b = document.createElement("button"); b.id = "late"; b.textContent = "Late";
b.onclick = () => window.clicks++; document.querySelector("main").append(b); }, 150);</script>`)
	})
	mux.HandleFunc("/push", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Push</title><script>setTimeout(() => history.pushState({}, "", "/pushed/here?x=1"), 150);</script>`)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Away</title><script>setTimeout(() => { location.href = "/form"; }, 150);</script>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestStepTools: the tools of Options.StepTools, on one server of their
// own in tabs (smoke's browser.Config.Tabs), each subtest in its own
// pages: they act on elements by CSS selector and wait for them, wait for
// a URL, add an init script, open a window of its own; bad input is a
// clear error; a server without the option, as agents get, has none of
// them.
func TestStepTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute},
		Server: Options{StepTools: true}, Browser: browser.Config{Tabs: true}})
	site := stepsSite(t)

	t.Run("listed only with the option", func(t *testing.T) {
		t.Parallel()
		list, err := e.client.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range stepToolNames {
			i := slices.IndexFunc(list.Tools, func(d mcp.Tool) bool { return d.Name == name })
			if i < 0 {
				t.Errorf("%s is not listed with StepTools", name)
				continue
			}
			if a := list.Tools[i].Annotations; a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Errorf("%s lacks its hints: %+v", name, a)
			}
		}
		agents := toolNames(t, sharedEnv(t, pagelock.PerPage))
		for _, name := range stepToolNames {
			if slices.Contains(agents, name) {
				t.Errorf("%s is listed without StepTools", name)
			}
			// An agent that names one anyway gets no such tool.
			r := mcptest.Call(t.Context(), sharedEnv(t, pagelock.PerPage).client, name, map[string]any{"selector": "body"})
			if r.Err == nil || !strings.Contains(r.Err.Error(), "not found") {
				t.Errorf("%s without StepTools: %v %q, want no such tool", name, r.Err, r.Text)
			}
		}
		for _, d := range e.srv.Tools() {
			if slices.Contains(stepToolNames, d.Name) {
				t.Errorf("Tools() lists %s: it is the agents' list", d.Name)
			}
		}
	})

	t.Run("click and fill by selector", func(t *testing.T) {
		t.Parallel()
		id := e.openPage(t, site.URL+"/form")
		// The button is added 150 ms after the load: the click waits for it.
		e.ok(t, "click_selector", map[string]any{"pageId": id, "selector": "#late", "timeout": 5000})
		e.ok(t, "fill_selector", map[string]any{"pageId": id, "selector": "#q", "value": "hello"})
		e.ok(t, "fill_selector", map[string]any{"pageId": id, "selector": "#plan", "value": "pro"})
		e.ok(t, "fill_selector", map[string]any{"pageId": id, "selector": "#ok", "value": "true"})
		got := e.eval(t, id, `() => [window.clicks, q.value, plan.value, ok.checked]`)
		if got != `[1,"hello","pro",true]` {
			t.Errorf("after the steps the page has %s, want one click, hello, pro and a checked box", got)
		}
	})

	t.Run("selector errors", func(t *testing.T) {
		t.Parallel()
		id := e.openPage(t, site.URL+"/form")
		for _, tt := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"click_selector", map[string]any{"selector": "#nope", "timeout": 300}, "Error: #nope: no element matches it after 300ms"},
			{"wait_for_selector", map[string]any{"selector": "#hidden", "timeout": 300}, "Error: #hidden: the element it matches is not rendered"},
			{"wait_for_selector", map[string]any{"selector": "p[[", "timeout": 300}, "Error: p[[: not a valid CSS selector"},
			{"fill_selector", map[string]any{"selector": "#plan", "value": "gold"}, `the select has no option "gold"`},
			{"click_selector", map[string]any{"selector": "  "}, "click_selector needs a selector: a CSS selector such as #buy"},
			{"wait_for_selector", map[string]any{"selector": "main", "timeout": -1}, `invalid argument "timeout" for wait_for_selector: want at least 0`},
			{"wait_for_url", map[string]any{"url": ""}, "wait_for_url needs a url"},
			{"add_init_script", map[string]any{"script": " "}, "add_init_script needs a script"},
			{"click_selector", map[string]any{"selector": "main", "pageId": 99999}, "99999"},
		} {
			args := map[string]any{"pageId": id}
			for k, v := range tt.args {
				args[k] = v
			}
			if got := e.fails(t, tt.tool, args); !strings.Contains(got, tt.want) {
				t.Errorf("%s %v: %q, want %q", tt.tool, tt.args, got, tt.want)
			}
		}
	})

	t.Run("waits across a navigation", func(t *testing.T) {
		t.Parallel()
		id := e.openPage(t, site.URL+"/away")
		e.ok(t, "wait_for_selector", map[string]any{"pageId": id, "selector": "#late", "timeout": 10000})
		if got := e.eval(t, id, `() => location.pathname`); got != `"/form"` {
			t.Errorf("the element was found at %s, want /form", got)
		}
	})

	t.Run("wait for URL", func(t *testing.T) {
		t.Parallel()
		id := e.openPage(t, site.URL+"/push")
		text := e.ok(t, "wait_for_url", map[string]any{"pageId": id, "url": "*/pushed/*?x=1", "timeout": 10000})
		if !strings.Contains(text, "/pushed/here?x=1") {
			t.Errorf("wait_for_url does not name the URL it found:\n%s", text)
		}
		e.ok(t, "wait_for_url", map[string]any{"pageId": id, "url": "/pushed/"})
		got := e.fails(t, "wait_for_url", map[string]any{"pageId": id, "url": "/elsewhere", "timeout": 200})
		if want := "Error: the page is still at " + site.URL + "/pushed/here?x=1 after 200ms"; !strings.HasPrefix(got, want) {
			t.Errorf("wait_for_url past its timeout: %q, want %q", got, want)
		}
	})

	t.Run("init script in each document", func(t *testing.T) {
		t.Parallel()
		id := e.openPage(t, site.URL+"/push")
		text := e.ok(t, "add_init_script", map[string]any{"pageId": id, "script": `localStorage.setItem("token", "s3cret-init"); window.early = typeof clicks;`})
		if strings.Contains(text, "s3cret-init") {
			t.Errorf("add_init_script's answer shows the script:\n%s", text)
		}
		if got := e.eval(t, id, `() => localStorage.getItem("token")`); got != "null" {
			t.Errorf("the script ran in the document shown already: token %s", got)
		}
		// Each new document runs it before its own scripts: /form's
		// clicks is not defined yet when it runs.
		for range 2 {
			e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": site.URL + "/form"})
			if got := e.eval(t, id, `() => [localStorage.getItem("token"), window.early]`); got != `["s3cret-init","undefined"]` {
				t.Errorf("after a navigation: %s, want the item set before the page's scripts", got)
			}
			e.eval(t, id, `() => localStorage.clear()`)
		}
	})

	t.Run("a window of its own", func(t *testing.T) {
		t.Parallel()
		tab := e.openPage(t, site.URL+"/form")
		r := callTyped(t, e.client, "new_window", nil, asked)
		if r.isError || r.answer == nil || r.answer.PageID == 0 {
			t.Fatalf("new_window: %+v\n%s", r.answer, r.text)
		}
		win := r.answer.PageID
		defer e.ok(t, "close_page", map[string]any{"pageId": win})
		if !slices.ContainsFunc(r.answer.Pages, func(p PageInfo) bool { return p.ID == win && p.URL == "about:blank" && p.Selected }) {
			t.Errorf("new_window's answer does not list page %d, blank and selected: %+v", win, r.answer.Pages)
		}
		if a, b := windowOf(t, e, tab), windowOf(t, e, win); a == b {
			t.Errorf("new_window's page %d is in window %d, that of the tab %d", win, b, tab)
		}
		// It is a page as any other: the tools act on it.
		e.ok(t, "navigate_page", map[string]any{"pageId": win, "url": site.URL + "/form"})
		e.ok(t, "click_selector", map[string]any{"pageId": win, "selector": "#late"})
	})
}

// TestURLMatches: wait_for_url's patterns, as smoke's waitForURL steps
// give them.
func TestURLMatches(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		u, pattern string
		want       bool
	}{
		{"http://a.test/account", "/account", true},
		{"http://a.test/login", "/account", false},
		{"http://a.test/account", "*/account", true},
		{"http://a.test/account?x=1", "*/account", false},
		{"http://a.test/account?x=1", "*/account*", true},
		{"http://a.test/a/b/c", "http://a.test/*/c", true},
		{"http://a.test/a/b/d", "http://a.test/*/c", false},
		{"http://a.test/a/b/c", "http://a.test/a*b*c", true},
		{"http://a.test/abc", "http://a.test/a*b*b", false},
	} {
		if got := URLMatches(tt.u, tt.pattern); got != tt.want {
			t.Errorf("URLMatches(%q, %q) = %v", tt.u, tt.pattern, got)
		}
	}
}

// toolNames lists the tools e's server offers.
func toolNames(t *testing.T, e *testEnv) []string {
	t.Helper()
	res, err := e.client.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range res.Tools {
		names = append(names, d.Name)
	}
	return names
}

// windowOf is the Chrome window of page id.
func windowOf(t *testing.T, e *testEnv, id int) cdpbrowser.WindowID {
	t.Helper()
	p, err := e.b.Page(id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := p.Context(t.Context())
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	win, err := chromedp.CallBrowser(ctx, cdpbrowser.GetWindowForTarget, cdpbrowser.GetWindowForTargetParams{TargetID: p.TargetID})
	if err != nil {
		t.Fatalf("the window of page %d: %v", id, err)
	}
	return win.WindowID
}
