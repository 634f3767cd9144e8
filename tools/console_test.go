package tools

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

var msgLine = regexp.MustCompile(`(?m)^msgid=(\d+) \[(\w+)\] (.*) \((\d+) args\)( \[\d+ times\])?$`)

// messages maps each listed message text to its "msgid [type]".
func messages(text string) map[string]string {
	out := map[string]string{}
	for _, m := range msgLine.FindAllStringSubmatch(text, -1) {
		out[m[3]] = m[1] + " [" + m[2] + "]"
	}
	return out
}

func msgID(t *testing.T, list map[string]string, text string) int {
	t.Helper()
	v, ok := list[text]
	if !ok {
		t.Fatalf("no message %q in %v", text, list)
	}
	var id int
	fmt.Sscan(v, &id)
	return id
}

func TestConsoleMessages(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			id := e.openPage(t, "/console.html")
			args := map[string]any{"pageId": id}
			text := e.waitFor(t, "list_console_messages", args, "late messages", func(s string) bool {
				return strings.Contains(s, "] ready (1 args)") && strings.Contains(s, "Uncaught Error: kaboom")
			})
			mustContain(t, text, "## Console messages\nShowing 1-",
				"msgid=1 [log] hello {\"a\":1,\"b\":Array(2)} (2 args)\n",
				"msgid=2 [log] data {\"ok\":true} (2 args)\n",
				"msgid=3 [warn] warned (1 args)\n",
				"msgid=4 [error] bad thing (1 args)\n",
				"msgid=5 [info] fyi 3 items (2 args)\n",
				"msgid=6 [debug] dbg (1 args)\n",
				"[error] Uncaught (in promise) Error: nope (0 args)",
				"[error] Uncaught Error: kaboom (0 args)",
			)
			all := messages(text)

			// Types: uncaught exceptions are errors.
			errs := messages(e.ok(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"error"}}))
			for _, w := range []string{"bad thing", "Uncaught Error: kaboom", "Uncaught (in promise) Error: nope"} {
				if _, ok := errs[w]; !ok {
					t.Errorf("types [error] lacks %q: %v", w, errs)
				}
			}
			for txt, v := range errs {
				if !strings.HasSuffix(v, "[error]") {
					t.Errorf("types [error] lists %q %s", txt, v)
				}
			}
			warnInfo := messages(e.ok(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"warn", "info"}}))
			if len(warnInfo) != 2 || warnInfo["warned"] != "3 [warn]" || warnInfo["fyi 3 items"] != "5 [info]" {
				t.Errorf("types [warn info]: %v", warnInfo)
			}
			mustContain(t, e.fails(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"warning"}}), `invalid argument "types[0]" for list_console_messages: want one of "log"`)

			// Paging.
			paged := e.ok(t, "list_console_messages", map[string]any{"pageId": id, "pageSize": 2, "pageIdx": 1})
			mustContain(t, paged, fmt.Sprintf("Showing 3-4 of %d (Page 2 of %d).\nNext page: 2\nPrevious page: 0\nmsgid=3 [warn] warned (1 args)\nmsgid=4 [error] bad thing (1 args)", len(all), (len(all)+1)/2))
			mustContain(t, e.ok(t, "list_console_messages", map[string]any{"pageId": id, "pageIdx": 9}), "Invalid page number provided. Showing first page.")

			// Details: arguments read whole, and stacks.
			hello := e.ok(t, "get_console_message", map[string]any{"pageId": id, "msgid": 1})
			mustContain(t, hello, "ID: 1\nMessage: log> hello {\"a\":1,\"b\":Array(2)}\n### Arguments\nArg #0: hello\nArg #1: {\"a\":1,\"b\":[1,2]}\n### Stack trace\nat <anonymous> ("+testSite.URL+"/console.html?open=",
				":7:9)\nNote: line and column numbers use 1-based indexing")
			nope := e.ok(t, "get_console_message", map[string]any{"pageId": id, "msgid": msgID(t, all, "Uncaught (in promise) Error: nope")})
			mustContain(t, nope, "Message: error> Uncaught (in promise) Error: nope\n### Stack trace\nat rejecter (")
			kaboom := e.ok(t, "get_console_message", map[string]any{"pageId": id, "msgid": msgID(t, all, "Uncaught Error: kaboom")})
			mustContain(t, kaboom, "### Stack trace\nat thrower ("+testSite.URL+"/console.html?open=", ":13:")
			mustContain(t, e.fails(t, "get_console_message", map[string]any{"pageId": id, "msgid": 999}), "Error: no console message with msgid 999", "list_console_messages")
			stacks := e.ok(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"error"}, "includeStackTraces": true})
			mustContain(t, stacks, "Uncaught Error: kaboom (0 args)\n  at thrower (", "Note: stack trace line and column numbers use 1-based indexing")

			// A new message gets the next id; the old ones keep theirs.
			e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Log"`)})
			after := messages(e.ok(t, "list_console_messages", args))
			for txt, v := range all {
				if after[txt] != v {
					t.Errorf("%q was %s, now %s", txt, v, after[txt])
				}
			}
			if clicked := msgID(t, after, `clicked {"n":1}`); clicked <= len(all) {
				t.Errorf("the new message has msgid %d, not after the %d before it", clicked, len(all))
			}

			// An open dialog does not block reading the console.
			e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Alert"`)})
			listed := e.ok(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"warn"}})
			mustContain(t, listed, "# Open dialog\nalert: boom.", "msgid=3 [warn] warned (1 args)")
			mustContain(t, e.ok(t, "get_console_message", map[string]any{"pageId": id, "msgid": 1}), "Arg #1: {\"a\":1,\"b\":Array(2)} (a preview: its document is gone or a dialog blocks the page)")
			mustContain(t, e.ok(t, "list_network_requests", args), "## Network requests")
			mustContain(t, e.fails(t, "get_network_request", args), "A dialog is open")
			e.ok(t, "handle_dialog", map[string]any{"pageId": id, "action": "accept"})
		})
	}
}

// Messages of the current navigation and the 3 before it are kept, older
// ones go, and ids never change.
func TestConsolePreservedNavigations(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.Global)
	id := e.openPage(t, "/form.html")
	logs := map[int]int{} // navigation → msgid of its message
	for i := 1; i <= 5; i++ {
		if i > 1 {
			e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": fmt.Sprintf("%s/form.html?nav=%d", testSite.URL, i)})
		}
		e.eval(t, id, fmt.Sprintf(`() => { console.log("navigation %d"); return 1 }`, i))
		cur := messages(e.ok(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"log"}}))
		if len(cur) != 1 {
			t.Fatalf("navigation %d lists %v, want its own message only", i, cur)
		}
		logs[i] = msgID(t, cur, fmt.Sprintf("navigation %d", i))
	}
	kept := messages(e.ok(t, "list_console_messages", map[string]any{"pageId": id, "includePreservedMessages": true, "types": []string{"log"}}))
	for i := 1; i <= 5; i++ {
		v, ok := kept[fmt.Sprintf("navigation %d", i)]
		switch {
		case i == 1 && ok:
			t.Errorf("the first navigation's message is still kept: %v", kept)
		case i > 1 && v != fmt.Sprintf("%d [log]", logs[i]):
			t.Errorf("navigation %d: kept as %q, want msgid %d", i, v, logs[i])
		}
	}
	// A message of an earlier document: its objects are gone, it is not.
	mustContain(t, e.ok(t, "get_console_message", map[string]any{"pageId": id, "msgid": logs[2]}), "Message: log> navigation 2")
	mustContain(t, e.fails(t, "get_console_message", map[string]any{"pageId": id, "msgid": logs[1]}), "is no longer kept")
	// A page that navigated has an empty current list until it logs.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/page2.html"})
	if cur := e.ok(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"log"}}); !strings.Contains(cur, "## Console messages\n<no console messages found>") {
		t.Errorf("after a navigation:\n%s", cur)
	}
}

// Two pages used at once keep their own messages and requests.
func TestCollectorsSeparatePages(t *testing.T) {
	for _, mode := range []pagelock.Mode{pagelock.PerPage, pagelock.Global} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := sharedEnv(t, mode)
			ids := []int{e.openPage(t, "/page2.html"), e.openPage(t, "/page2.html")}
			var wg sync.WaitGroup
			for _, id := range ids {
				wg.Go(func() {
					for i := range 3 {
						fn := fmt.Sprintf(`async () => { console.log("page %d call %d"); await fetch("/api/data?page=%d&i=%d"); return 1 }`, id, i, id, i)
						if r := e.call(t, "evaluate_script", map[string]any{"pageId": id, "function": fn}); r.isError {
							t.Errorf("page %d: %s", id, r.text)
						}
					}
				})
			}
			wg.Wait()
			for n, id := range ids {
				other := ids[1-n]
				msgs := e.ok(t, "list_console_messages", map[string]any{"pageId": id})
				reqs := e.ok(t, "list_network_requests", map[string]any{"pageId": id})
				for i := range 3 {
					mustContain(t, msgs, fmt.Sprintf("page %d call %d", id, i))
					mustContain(t, reqs, fmt.Sprintf("/api/data?page=%d&i=%d [200]", id, i))
				}
				if strings.Contains(msgs, fmt.Sprintf("page %d", other)) || strings.Contains(reqs, fmt.Sprintf("page=%d", other)) {
					t.Errorf("page %d shows page %d's records:\n%s\n%s", id, other, msgs, reqs)
				}
				if !strings.Contains(msgs, "\nmsgid=1 [") {
					t.Errorf("page %d's msgids do not start at 1:\n%s", id, msgs)
				}
			}
		})
	}
}

// A serviceWorkerId filter is refused with what to do, not answered with an
// empty list that would read as "the worker logged nothing".
func TestConsoleServiceWorkerID(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/console.html")
	mustContain(t, e.fails(t, "list_console_messages", map[string]any{"pageId": id, "serviceWorkerId": "sw-1"}),
		`no service worker "sw-1"`, "omit serviceWorkerId")
}

// TestDevToolsIssues: a page in quirks mode gets an [issue] entry, as
// chrome-devtools-mcp lists DevTools issues with the console messages.
func TestDevToolsIssues(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": "data:text/html,<title>Quirky</title><p>no doctype"})
	text := e.waitFor(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"issue"}}, "an issue", func(s string) bool {
		return strings.Contains(s, "[issue] Page layout may be unexpected due to Quirks Mode")
	})
	mustContain(t, text, "msgid=")

	// An element accessibility issue says which element is where it may
	// not be.
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/a11y-summary.html"})
	e.waitFor(t, "list_console_messages", map[string]any{"pageId": id, "types": []string{"issue"}}, "an element accessibility issue", func(s string) bool {
		return strings.Contains(s, "[issue] Element accessibility: an interactive element inside <summary>, which keyboard and assistive technology users may not reach")
	})
}
