package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
)

// typed is a call's result with its answer as data.
type typed struct {
	text    string
	isError bool
	// answer is the structuredContent decoded; nil when it has none.
	answer *Answer
}

// callTyped calls a tool as c with meta as the request's _meta (nil for
// none) and returns its text, without a lock-wait notice, and its typed
// answer. A protocol error fails the test.
func callTyped(t *testing.T, c *client.Client, name string, args map[string]any, meta map[string]any) typed {
	t.Helper()
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}}
	if meta != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	out := typed{text: waitNotice.ReplaceAllString(mcptest.Text(res), ""), isError: res.IsError}
	if len(res.RawStructuredContent) > 0 {
		out.answer = new(Answer)
		if err := json.Unmarshal(res.RawStructuredContent, out.answer); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", name, res.RawStructuredContent, err)
		}
	}
	return out
}

// asked is the _meta that asks for typed answers.
var asked = map[string]any{StructuredMeta: true}

// both calls a tool plainly and asking for its answer as data, and
// checks that the text is the same and that only the second has data; it
// returns the typed answer, which must be there.
func both(t *testing.T, e *testEnv, name string, args map[string]any) (string, *Answer) {
	t.Helper()
	plain := callTyped(t, e.client, name, args, nil)
	got := callTyped(t, e.client, name, args, asked)
	if plain.answer != nil {
		t.Errorf("%s without %s has structuredContent: %+v", name, StructuredMeta, plain.answer)
	}
	if plain.text != got.text || plain.isError != got.isError {
		t.Errorf("%s: the text changed when the answer was asked for as data:\nplain: %s\ntyped: %s", name, plain.text, got.text)
	}
	if got.answer == nil {
		t.Fatalf("%s with %s has no structuredContent:\n%s", name, StructuredMeta, got.text)
	}
	return got.text, got.answer
}

// lineOf fails the test unless text has line whole.
func lineOf(t *testing.T, text, line string) {
	t.Helper()
	if !slices.Contains(strings.Split(text, "\n"), line) {
		t.Errorf("no line %q in:\n%s", line, text)
	}
}

// The console tools' typed answers say what their text says: each entry,
// its stack, a message's location; a plain call is unchanged.
func TestAnswersConsole(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/console.html")
	args := map[string]any{"pageId": id}
	e.waitFor(t, "list_console_messages", args, "late messages", func(s string) bool {
		return strings.Contains(s, "] ready (1 args)") && strings.Contains(s, "Uncaught Error: kaboom")
	})
	text, a := both(t, e, "list_console_messages", args)
	list := a.Messages
	if list == nil || len(list.Messages) != strings.Count(text, "\nmsgid=") || list.Total != len(list.Messages) || a.PageID != id {
		t.Fatalf("messages %+v (page %d) for:\n%s", list, a.PageID, text)
	}
	var kaboom MessageInfo
	for _, m := range list.Messages {
		lineOf(t, text, messageLine(m))
		if m.Text == "Uncaught Error: kaboom" {
			kaboom = m
		}
	}
	if kaboom.Type != "error" || kaboom.Count != 1 || kaboom.Args != 0 || kaboom.Stack != nil {
		t.Errorf("kaboom: %+v", kaboom)
	}

	text, a = both(t, e, "list_console_messages", map[string]any{"pageId": id, "types": []string{"error"}, "includeStackTraces": true, "pageSize": 2})
	if n := len(a.Messages.Messages); n != 2 || a.Messages.Total < 3 {
		t.Errorf("a page of 2 of the errors: %+v", a.Messages)
	}
	for _, m := range a.Messages.Messages {
		if m.Type != "error" {
			t.Errorf("types [error] gave %+v", m)
		}
		for _, l := range formatStack(m.Stack) {
			lineOf(t, text, "  "+l)
		}
	}

	text, a = both(t, e, "get_console_message", map[string]any{"pageId": id, "msgid": kaboom.ID})
	m := a.Message
	if m == nil || m.ID != kaboom.ID || m.Text != kaboom.Text || len(m.Stack) == 0 || m.Stack[0].Function != "thrower" {
		t.Fatalf("get_console_message: %+v", m)
	}
	want := "at thrower (" + m.Location + ")"
	if !strings.Contains(m.Location, "/console.html?open=") || !strings.Contains(m.Location, ":13:") {
		t.Errorf("location %q", m.Location)
	}
	lineOf(t, text, want)

	// A message with arguments: their values, as the text shows them.
	text, a = both(t, e, "get_console_message", map[string]any{"pageId": id, "msgid": 1})
	if len(a.Message.Args) != 2 {
		t.Fatalf("msgid 1's args: %+v", a.Message)
	}
	for i, v := range a.Message.Args {
		lineOf(t, text, fmt.Sprintf("Arg #%d: %s", i, v))
	}
}

// list_network_requests' typed answer: each request as listed, with its
// HTTP status, failure and time of change; filters and paging apply.
func TestAnswersNetwork(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	opened := time.Now()
	id := e.openPage(t, "/network.html")
	e.waitFor(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => document.title"}, "all settled", func(s string) bool {
		return strings.Contains(s, "Network settled")
	})
	args := map[string]any{"pageId": id}
	text, a := both(t, e, "list_network_requests", args)
	list := a.Requests
	if list == nil || len(list.Requests) != strings.Count(text, "\nreqid=") || list.Total != len(list.Requests) {
		t.Fatalf("requests %+v for:\n%s", list, text)
	}
	seen := map[string]RequestInfo{}
	for _, r := range list.Requests {
		lineOf(t, text, requestLine(r))
		if r.ChangedAt.Before(opened.Add(-time.Second)) || r.ChangedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("%s changed at %v, not while the test ran", r.URL, r.ChangedAt)
		}
		u := r.URL[strings.Index(r.URL[8:], "/")+8:]
		seen[u] = r
	}
	if r := seen["/net/status?code=404"]; r.HTTPStatus != 404 || r.Status != "404" || r.Pending || r.ResourceType != "fetch" {
		t.Errorf("the 404: %+v", r)
	}
	if r := seen["/net/abort"]; r.HTTPStatus != 0 || !strings.HasPrefix(r.Failure, "net::") || r.Status != r.Failure {
		t.Errorf("the aborted request: %+v", r)
	}
	if r := seen["/missing.png"]; r.ResourceType != "image" || r.HTTPStatus != 404 {
		t.Errorf("the image: %+v", r)
	}

	_, a = both(t, e, "list_network_requests", map[string]any{"pageId": id, "resourceTypes": []string{"document"}})
	if docs := a.Requests.Requests; len(docs) != 1 || docs[0].ResourceType != "document" || docs[0].HTTPStatus != 200 {
		t.Errorf("documents: %+v", docs)
	}
	_, a = both(t, e, "list_network_requests", map[string]any{"pageId": id, "pageSize": 2, "pageIdx": 1})
	if got := a.Requests; len(got.Requests) != 2 || got.Total != list.Total || got.Requests[0].ID != list.Requests[2].ID {
		t.Errorf("page 2 of 2: %+v", got)
	}
}

// evaluate_script's value, list_pages', new_page's and a dialog's typed
// answers, and a navigation's typed failures.
func TestAnswersPagesScriptsDialogs(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/console.html")

	text, a := both(t, e, "evaluate_script", map[string]any{"pageId": id, "function": `() => ({a: [1, "é"], b: null})`})
	if a.Script == nil || string(a.Script.Value) != `{"a":[1,"é"],"b":null}` {
		t.Errorf("script value %+v", a.Script)
	}
	mustContain(t, text, "```json\n"+string(a.Script.Value)+"\n```")
	if _, a = both(t, e, "evaluate_script", map[string]any{"pageId": id, "function": `() => undefined`}); !a.Script.Undefined || a.Script.Value != nil {
		t.Errorf("undefined: %+v", a.Script)
	}

	text, a = both(t, e, "list_pages", nil)
	if a.PageID != 0 || !strings.Contains(text, formatPages(a.Pages)) {
		t.Errorf("pages %+v are not the text's:\n%s", a.Pages, text)
	}
	if i := slices.IndexFunc(a.Pages, func(p PageInfo) bool { return p.ID == id }); i < 0 || a.Pages[i].Title != "Console" || !strings.Contains(a.Pages[i].URL, "/console.html") {
		t.Errorf("page %d is not in %+v", id, a.Pages)
	}

	blank := callTyped(t, e.client, "new_page", map[string]any{"url": "about:blank", "background": true}, asked)
	if blank.isError || blank.answer == nil || blank.answer.PageID == 0 {
		t.Fatalf("new_page about:blank: %s %+v", blank.text, blank.answer)
	}
	b := blank.answer.PageID
	defer e.call(t, "close_page", map[string]any{"pageId": b})
	if i := slices.IndexFunc(blank.answer.Pages, func(p PageInfo) bool { return p.ID == b }); i < 0 || blank.answer.Pages[i].URL != "about:blank" || !blank.answer.Pages[i].Selected {
		t.Errorf("the new page %d in %+v", b, blank.answer.Pages)
	}

	// A dialog open when the call ends, whatever the tool.
	clicked := callTyped(t, e.client, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `button "Alert"`)}, asked)
	if d := clicked.answer; clicked.isError || d == nil || d.Dialog == nil || *d.Dialog != (Dialog{Type: "alert", Message: "boom"}) {
		t.Fatalf("click on Alert: %s %+v", clicked.text, clicked.answer)
	}
	lineOf(t, clicked.text, "alert: boom.")
	if handled := callTyped(t, e.client, "handle_dialog", map[string]any{"pageId": id, "action": "accept"}, asked); handled.answer == nil || handled.answer.Dialog != nil {
		t.Errorf("handle_dialog: %s %+v", handled.text, handled.answer)
	}

	// Navigations that fail say how, as data, on the error.
	refused := callTyped(t, e.client, "navigate_page", map[string]any{"pageId": id, "url": "http://127.0.0.1:9/"}, asked)
	if f := refused.answer; !refused.isError || f == nil || f.NavigationFailure == nil || !strings.HasPrefix(f.NavigationFailure.Error, "net::ERR_") || f.PageID != id {
		t.Errorf("a refused navigation: %s %+v", refused.text, refused.answer)
	}
	if plain := callTyped(t, e.client, "navigate_page", map[string]any{"pageId": id, "url": "http://127.0.0.1:9/"}, nil); plain.answer != nil || plain.text != refused.text {
		t.Errorf("a plain call's error changed: %q %+v", plain.text, plain.answer)
	}
	slow := callTyped(t, e.client, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/slow?ms=3000", "timeout": 300}, asked)
	if f := slow.answer; !slow.isError || f == nil || f.NavigationFailure == nil || !f.NavigationFailure.TimedOut {
		t.Errorf("a navigation past its timeout: %s %+v", slow.text, slow.answer)
	}
}

// _meta's key takes true or false; anything else is refused before the
// call runs, and false is a plain call.
func TestAnswersMetaValidated(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/page2.html")
	for _, bad := range []any{"yes", 1, map[string]any{}} {
		r := callTyped(t, e.client, "evaluate_script", map[string]any{"pageId": id, "function": "() => { window.ran = (window.ran || 0) + 1; return 1; }"}, map[string]any{StructuredMeta: bad})
		if !r.isError || !strings.Contains(r.text, `invalid _meta "pagemux.dev/structured"`) || !strings.Contains(r.text, "want true") || r.answer != nil {
			t.Errorf("_meta %v: %s", bad, r.text)
		}
	}
	if got := e.eval(t, id, "() => window.ran === undefined"); got != "true" {
		t.Errorf("a refused call ran its script: window.ran is set")
	}
	if r := callTyped(t, e.client, "list_pages", nil, map[string]any{StructuredMeta: false}); r.isError || r.answer != nil {
		t.Errorf("_meta false: %s %+v", r.text, r.answer)
	}
}

// Over HTTP, bob's typed answers show what his text shows and no more:
// alice's page is not in his page list, and her page's requests are
// refused to him, as data too.
func TestAnswersIsolation(t *testing.T) {
	t.Parallel()
	e := newIsoEnv(t, pagelock.PerPage, false, 0)
	alice, bob := e.as(t, aliceSecret, "alice-typed"), e.as(t, bobSecret, "bob-typed")
	hers := newPageWith(t, alice, testSite.URL+"/network.html", nil)
	mine := newPageWith(t, bob, testSite.URL+"/page2.html", nil)

	pages := callTyped(t, bob, "list_pages", nil, asked)
	if pages.answer == nil || slices.ContainsFunc(pages.answer.Pages, func(p PageInfo) bool { return p.ID == hers }) ||
		!slices.ContainsFunc(pages.answer.Pages, func(p PageInfo) bool { return p.ID == mine }) {
		t.Errorf("bob's typed page list: %+v", pages.answer)
	}
	for _, tool := range []string{"list_network_requests", "list_console_messages", "evaluate_script"} {
		args := map[string]any{"pageId": hers, "function": "() => location.href"}
		if tool != "evaluate_script" {
			delete(args, "function")
		}
		r := callTyped(t, bob, tool, args, asked)
		if !r.isError || r.answer != nil {
			t.Errorf("bob's %s on alice's page %d: %s %+v", tool, hers, r.text, r.answer)
		}
	}
}

// An answer's data past twice --max-output is left out, saying so; within
// it, or with no --max-output, it is sent whole.
func TestAnswersBounded(t *testing.T) {
	t.Parallel()
	big := Answer{PageID: 3, Script: &ScriptResult{Value: json.RawMessage(`"` + strings.Repeat("x", 500) + `"`)}}
	for _, tt := range []struct {
		maxOutput int
		whole     bool
	}{{0, true}, {1000, true}, {200, false}} {
		s := &Server{maxOutput: tt.maxOutput}
		c := &call{req: mcp.CallToolRequest{Params: mcp.CallToolParams{Meta: &mcp.Meta{AdditionalFields: asked}}}, resp: &response{answer: big}}
		c.resp.publish()
		got, _ := s.withAnswer(c, &mcp.CallToolResult{}).StructuredContent.(*Answer)
		switch {
		case got == nil:
			t.Errorf("max-output %d: no answer", tt.maxOutput)
		case tt.whole && (got.Script == nil || got.TooBig != nil):
			t.Errorf("max-output %d: %+v, want it whole", tt.maxOutput, got)
		case !tt.whole && (got.Script != nil || got.PageID != 3 || got.TooBig == nil || got.TooBig.Limit != 400 || got.TooBig.Size < 500):
			t.Errorf("max-output %d: %+v, want it left out", tt.maxOutput, got)
		}
	}
	// Not asked for: nothing, however small.
	c := &call{resp: &response{answer: Answer{PageID: 1}}}
	c.resp.publish()
	if res := (&Server{}).withAnswer(c, &mcp.CallToolResult{}); res.StructuredContent != nil {
		t.Errorf("a plain call got %+v", res.StructuredContent)
	}
}
