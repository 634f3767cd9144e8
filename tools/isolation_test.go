package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/serve"
)

// The attack tests of isolation between agents (issue 15, point 4): two
// tokens, alice and bob, on one server over real HTTP and a real Chromium,
// bob trying what a partly trusted agent would to reach alice's pages,
// cookies, storage and calls; boss is an admin token.

const (
	aliceSecret = "alice-secret-1"
	bobSecret   = "bob-secret-1"
	bossSecret  = "boss-secret-1"
)

// isoEnv is one server over Streamable HTTP with the tokens alice, bob and
// boss (an admin token), as main.go makes it with --http.
type isoEnv struct {
	*testEnv
	url string
	reg *agents.Registry
}

// newIsoEnv starts one in lock mode, with one browser context per agent
// unless shared, and at most maxPages pages per agent (0: no bound).
func newIsoEnv(t *testing.T, mode pagelock.Mode, shared bool, maxPages int) *isoEnv {
	t.Helper()
	reg := agents.New(agents.Owned)
	reg.LimitPages(maxPages)
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: mode, Timeout: time.Minute}, Server: Options{Agents: reg, IsolateAgents: !shared}})
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{
		Tokens:      map[string]string{"alice": aliceSecret, "bob": bobSecret, "boss": bossSecret},
		AdminTokens: []string{"boss"},
		Locks:       func(ctx context.Context) any { return e.srv.LocksFor(ctx) },
	}))
	t.Cleanup(ts.Close)
	return &isoEnv{testEnv: e, url: ts.URL, reg: reg}
}

// as connects a session (revision 2025-06-18) with a token's secret and,
// unless name is "", an agent name, so that subtests do not take over each
// other's pages.
func (e *isoEnv) as(t *testing.T, secret, name string) *client.Client {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + secret}
	if name != "" {
		h[serve.AgentHeader] = name
	}
	return mcptest.HTTPClient(t, e.url+"/mcp", h, "2025-06-18")
}

// raw sends one request to /mcp as a client would, by hand: secret ""
// sends no token, session "" no Mcp-Session-Id.
func (e *isoEnv) raw(t *testing.T, method, secret, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "(a stream)" // it would never end
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// locks reads /locks with a token's secret.
func (e *isoEnv) locks(t *testing.T, secret string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/locks", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/locks: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// sessionOf is the Mcp-Session-Id of a client.
func sessionOf(t *testing.T, c *client.Client) string {
	t.Helper()
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
	if id == "" {
		t.Fatal("the client has no session")
	}
	return id
}

// newPageWith opens url as an agent with more new_page arguments and
// returns the page's id.
func newPageWith(t *testing.T, c *client.Client, url string, more map[string]any) int {
	t.Helper()
	args := map[string]any{"url": url}
	for k, v := range more {
		args[k] = v
	}
	text, failed := use(t, c, "new_page", args)
	if failed {
		t.Fatal(text)
	}
	return selectedIn(t, text)
}

// selectedIn is the id of the page a page list marks [selected].
func selectedIn(t *testing.T, list string) int {
	t.Helper()
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "[selected]") {
			id, _ := strconv.Atoi(line[:strings.Index(line, ":")])
			return id
		}
	}
	t.Fatalf("no page is selected:\n%s", list)
	return 0
}

// eval runs a function on a page as an agent and fails the test if it
// fails.
func evalAs(t *testing.T, c *client.Client, page int, fn string) string {
	t.Helper()
	text, failed := use(t, c, "evaluate_script", map[string]any{"pageId": page, "function": fn})
	if failed {
		t.Fatalf("evaluate_script on page %d: %s", page, text)
	}
	return text
}

// listed reports whether a page list shows page id.
func listed(list string, id int) bool {
	return regexp.MustCompile(fmt.Sprintf(`(?m)^%d: `, id)).MatchString(list)
}

// TestIsolationAttacks: bob, with a token of his own, tries each way into
// alice's pages and storage on a server with the defaults over HTTP.
func TestIsolationAttacks(t *testing.T) {
	t.Parallel()
	e := newIsoEnv(t, pagelock.PerPage, false, 3)

	t.Run("ContextNames", func(t *testing.T) {
		alice, bob := e.as(t, aliceSecret, "names"), e.as(t, bobSecret, "names")
		shop := newPageWith(t, alice, testSite.URL+"/form.html", map[string]any{"isolatedContext": "shop"})
		evalAs(t, alice, shop, "() => { document.cookie = 'who=alice-shop'; localStorage.setItem('who', 'alice-shop'); return document.cookie }")
		mine := newPageWith(t, alice, testSite.URL+"/form.html", nil)
		evalAs(t, alice, mine, "() => { document.cookie = 'who=alice-own'; localStorage.setItem('who', 'alice-own'); return document.cookie }")
		read := "() => document.cookie + ' | ' + localStorage.getItem('who')"
		if got := evalAs(t, alice, shop, read); !strings.Contains(got, "alice-shop") || strings.Contains(got, "alice-own") {
			t.Errorf("alice's shop context: %s", got)
		}
		// The same name from bob is a context of bob's.
		theirs := newPageWith(t, bob, testSite.URL+"/form.html", map[string]any{"isolatedContext": "shop"})
		if got := evalAs(t, bob, theirs, read); strings.Contains(got, "alice") {
			t.Errorf("bob's isolatedContext=shop reads alice's: %s", got)
		}
		// The name alice's own context was derived as, from her identity.
		guess := "agent-" + digest("token:alice/agent:names")
		g := newPageWith(t, bob, testSite.URL+"/form.html", map[string]any{"isolatedContext": guess})
		if got := evalAs(t, bob, g, read); strings.Contains(got, "alice") {
			t.Errorf("bob's isolatedContext=%s reads alice's own context: %s", guess, got)
		}
		// Without a name, bob is in a context of his own, not Chrome's default.
		plain := newPageWith(t, bob, testSite.URL+"/form.html", nil)
		if got := evalAs(t, bob, plain, read); strings.Contains(got, "alice") {
			t.Errorf("bob's own context reads alice's: %s", got)
		}
		list, _ := use(t, bob, "list_pages", nil)
		if !strings.Contains(list, "isolatedContext=shop") || listed(list, shop) || listed(list, mine) {
			t.Errorf("bob's page list:\n%s", list)
		}
		if text, failed := use(t, bob, "new_page", map[string]any{"url": "about:blank", "isolatedContext": "a\nb"}); !failed || !strings.Contains(text, "isolatedContext") || !strings.Contains(text, "control characters") {
			t.Errorf("a name with a newline: %s", text)
		}
	})

	t.Run("EveryPageTool", func(t *testing.T) { everyPageTool(t, e) }) // attack_test.go

	t.Run("ForeignSession", func(t *testing.T) {
		alice, bob := e.as(t, aliceSecret, "session"), e.as(t, bobSecret, "session")
		a := newPageWith(t, alice, "data:text/html,<title>alice-private</title><p>alice-private-text", nil)
		sid := sessionOf(t, alice)
		call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"take_snapshot","arguments":{}}}`
		status, body := e.raw(t, http.MethodPost, bobSecret, sid, call)
		if status != http.StatusNotFound || strings.Contains(body, "alice-private") {
			t.Errorf("bob's token with alice's session: %d %s", status, body)
		}
		if status, body := e.raw(t, http.MethodPost, bobSecret, sid, strings.Replace(call, "take_snapshot", "list_pages", 1)); status != http.StatusNotFound || strings.Contains(body, "alice-private") {
			t.Errorf("bob's token with alice's session, list_pages: %d %s", status, body)
		}
		if status, body := e.raw(t, http.MethodGet, bobSecret, sid, ""); status != http.StatusNotFound {
			t.Errorf("bob's GET stream on alice's session: %d %s", status, body)
		}
		if status, body := e.raw(t, http.MethodPost, "", sid, call); status != http.StatusUnauthorized || strings.Contains(body, "alice-private") {
			t.Errorf("no token with alice's session: %d %s", status, body)
		}
		if status, body := e.raw(t, http.MethodPost, bobSecret, "mcp-session-"+strings.Repeat("A", 26), call); status != http.StatusNotFound {
			t.Errorf("a made-up session: %d %s", status, body)
		}
		// Alice's session is hers still, and bob's is his.
		if got := evalAs(t, alice, a, "() => document.title"); !strings.Contains(got, "alice-private") {
			t.Errorf("alice's page: %s", got)
		}
		if list, _ := use(t, bob, "list_pages", nil); strings.Contains(list, "alice-private") {
			t.Errorf("bob's list:\n%s", list)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		alice := e.as(t, aliceSecret, "delete")
		a := newPageWith(t, alice, "data:text/html,<title>alice-kept</title>", nil)
		sid := sessionOf(t, alice)
		if status, body := e.raw(t, http.MethodDelete, "", sid, ""); status != http.StatusUnauthorized {
			t.Errorf("a DELETE without a token: %d %s", status, body)
		}
		if status, body := e.raw(t, http.MethodDelete, bobSecret, sid, ""); status != http.StatusNotFound {
			t.Errorf("a DELETE with bob's token: %d %s", status, body)
		}
		if got := evalAs(t, alice, a, "() => document.title"); !strings.Contains(got, "alice-kept") {
			t.Errorf("alice's session after the DELETEs: %s", got)
		}
		if _, err := e.b.Page(a); err != nil {
			t.Errorf("alice's page after the DELETEs: %v", err)
		}
		// Her own token ends it, and her pages close.
		if status, body := e.raw(t, http.MethodDelete, aliceSecret, sid, ""); status != http.StatusOK {
			t.Errorf("alice's DELETE: %d %s", status, body)
		}
		mcptest.WaitFor(t, "alice's page to close with her session", func() bool { _, err := e.b.Page(a); return err != nil })
	})

	t.Run("LatePopup", func(t *testing.T) {
		alice, bob := e.as(t, aliceSecret, "popup"), e.as(t, bobSecret, "popup")
		a := newPageWith(t, alice, testSite.URL+"/form.html", nil)
		evalAs(t, alice, a, "() => { setTimeout(() => window.open('/page2.html?late'), 1000); return 'later' }")
		var pop *browser.Page
		mcptest.WaitFor(t, "the popup alice's page opens after her call returned", func() bool {
			if opened := e.b.OpenedBy(a, 0); len(opened) > 0 {
				pop = opened[0]
			}
			return pop != nil
		})
		text, failed := use(t, bob, "evaluate_script", map[string]any{"pageId": pop.ID, "function": "() => document.title"})
		if !failed || !strings.Contains(text, fmt.Sprintf("page %d belongs to another agent", pop.ID)) {
			t.Errorf("bob on alice's late popup: %s", text)
		}
		if text, failed := use(t, bob, "select_page", map[string]any{"pageId": pop.ID}); !failed || !strings.Contains(text, "belongs to another agent") {
			t.Errorf("bob selected alice's late popup: %s", text)
		}
		if list, _ := use(t, alice, "list_pages", nil); !listed(list, pop.ID) {
			t.Errorf("alice's list lacks her popup %d:\n%s", pop.ID, list)
		}
		if list, _ := use(t, bob, "list_pages", nil); listed(list, pop.ID) {
			t.Errorf("bob's list shows alice's popup %d:\n%s", pop.ID, list)
		}
		evalAs(t, alice, pop.ID, "() => location.search")
	})

	t.Run("OutsideTab", func(t *testing.T) {
		alice, bob := e.as(t, aliceSecret, "outside"), e.as(t, bobSecret, "outside")
		newPageWith(t, alice, testSite.URL+"/form.html", nil)
		ws, err := e.b.DevToolsURL(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		actx, acancel := remote.NewAllocator(t.Context(), ws, remote.NoModifyURL)
		defer acancel()
		cctx, ccancel := chromedp.NewContext(actx) // a tab of its own, made with Target.createTarget
		defer ccancel()
		if _, err := chromedp.Run(cctx, chromedp.Navigate(testSite.URL+"/page2.html?outside")); err != nil {
			t.Fatal(err)
		}
		tid := chromedp.FromContext(cctx).Target.TargetID
		var outside *browser.Page
		mcptest.WaitFor(t, "pagemux to see the outside tab", func() bool {
			for _, p := range e.b.Pages() {
				if p.TargetID == tid {
					outside = p
				}
			}
			return outside != nil
		})
		first := e.b.Pages()[0] // Chrome's own first tab
		if _, ok := e.reg.Owner(first.ID); ok || first.ID != 1 {
			t.Fatalf("page %d is not Chrome's first tab", first.ID)
		}
		for _, p := range []*browser.Page{outside, first} {
			for _, c := range []*client.Client{alice, bob} {
				text, failed := use(t, c, "evaluate_script", map[string]any{"pageId": p.ID, "function": "() => document.title"})
				if !failed || !strings.Contains(text, fmt.Sprintf("page %d was not opened by pagemux for this agent", p.ID)) {
					t.Errorf("an agent on tab %d, made outside pagemux: %s", p.ID, text)
				}
				if text, failed := use(t, c, "close_page", map[string]any{"pageId": p.ID}); !failed || !strings.Contains(text, "not opened by pagemux") {
					t.Errorf("an agent closed tab %d, made outside pagemux: %s", p.ID, text)
				}
				if list, _ := use(t, c, "list_pages", nil); listed(list, p.ID) || strings.Contains(list, "?outside") {
					t.Errorf("an agent's list shows tab %d, made outside pagemux:\n%s", p.ID, list)
				}
			}
		}
	})

	t.Run("Storage", func(t *testing.T) {
		checkStorage(t, e, false)
	})

	t.Run("PageBound", func(t *testing.T) {
		capped := e.as(t, aliceSecret, "capped")
		var ids []int
		for range 3 {
			ids = append(ids, newPageWith(t, capped, "about:blank", nil))
		}
		text, failed := use(t, capped, "new_page", map[string]any{"url": "about:blank"})
		if !failed || !strings.Contains(text, "you have 3 pages open") || !strings.Contains(text, "--max-pages-per-agent 3") || !strings.Contains(text, "close_page") {
			t.Errorf("a fourth page: %s", text)
		}
		// Another agent's bound is its own.
		newPageWith(t, e.as(t, bobSecret, "capped"), "about:blank", nil)
		for _, id := range ids[1:] {
			if text, failed := use(t, capped, "close_page", map[string]any{"pageId": id}); failed {
				t.Fatal(text)
			}
		}
		opener := ids[0]
		me := agents.Agent{ID: "token:alice/agent:capped"}
		mcptest.WaitFor(t, "the closed pages to be no one's", func() bool { return len(e.reg.Pages(me)) == 1 })
		before := len(e.b.Pages())
		out := evalAs(t, capped, opener, "() => { for (let i = 0; i < 12; i++) window.open('about:blank', '_blank'); return 'flooded' }")
		// 2 fit (3 with the opener); the 10 others are closed at once, and
		// the agent's answers say so.
		closed := countClosed(out)
		mcptest.WaitFor(t, "the answers to tell of 10 popups closed", func() bool {
			list, _ := use(t, capped, "list_pages", nil)
			closed += countClosed(list)
			return closed >= 10
		})
		if closed != 10 {
			t.Errorf("the answers told of %d popups closed, want 10", closed)
		}
		mcptest.WaitFor(t, "the popups over the bound to close", func() bool { return len(e.b.OpenedBy(opener, 0)) == 2 })
		if n := len(e.b.Pages()); n > before+2 {
			t.Errorf("%d tabs after the flood, %d before: more than the 2 that fit", n, before)
		}
		if n := len(e.reg.Pages(me)); n != 3 {
			t.Errorf("the agent owns %d pages, want 3", n)
		}
		list, _ := use(t, capped, "list_pages", nil)
		if got := len(pageLines.FindAllString(list, -1)); got != 3 {
			t.Errorf("the agent lists %d pages, want 3:\n%s", got, list)
		}
	})
}

// pageLines are the lines of a page list.
var pageLines = regexp.MustCompile(`(?m)^\d+: `)

// closedNote is the note of popups closed over the bound.
var closedNote = regexp.MustCompile(`closed (?:popup \d+|(\d+) popups)`)

// countClosed adds up the popups the notes in text tell of.
func countClosed(text string) int {
	n := 0
	for _, m := range closedNote.FindAllStringSubmatch(text, -1) {
		if m[1] == "" {
			n++
		} else {
			k, _ := strconv.Atoi(m[1])
			n += k
		}
	}
	return n
}

// checkStorage: alice's cookie, localStorage and BroadcastChannel messages
// on one origin reach bob only when the server shares one browser context.
func checkStorage(t *testing.T, e *isoEnv, shared bool) {
	alice, bob := e.as(t, aliceSecret, "storage"), e.as(t, bobSecret, "storage")
	a := newPageWith(t, alice, testSite.URL+"/form.html", nil)
	a2 := newPageWith(t, alice, testSite.URL+"/page2.html", nil)
	evalAs(t, alice, a, `() => { document.cookie = 'who=alice'; localStorage.setItem('who', 'alice');
		window.got = []; const c = new BroadcastChannel('pagemux'); c.onmessage = ev => window.got.push(ev.data); return 'listening' }`)
	b := newPageWith(t, bob, testSite.URL+"/page2.html", nil)
	got := evalAs(t, bob, b, "() => document.cookie + ' | ' + localStorage.getItem('who')")
	if strings.Contains(got, "alice") != shared {
		t.Errorf("shared context %v: bob's page reads %s", shared, got)
	}
	evalAs(t, bob, b, "() => { new BroadcastChannel('pagemux').postMessage('from-bob'); return 'sent' }")
	// Alice's own marker comes after bob's message; once it is there, so is
	// bob's, if it reaches her at all.
	if shared {
		got = evalAs(t, alice, a, `() => new Promise(res => { const check = () => window.got.includes('from-bob') ? res(window.got.join(',')) : setTimeout(check, 10); check() })`)
	} else {
		evalAs(t, alice, a2, "() => { new BroadcastChannel('pagemux').postMessage('marker'); return 'sent' }")
		got = evalAs(t, alice, a, `() => new Promise(res => { const check = () => window.got.includes('marker') ? res(window.got.join(',')) : setTimeout(check, 10); check() })`)
	}
	if strings.Contains(got, "from-bob") != shared {
		t.Errorf("shared context %v: alice's channel got %s", shared, got)
	}
}

// TestIsolationSharedContext: with --shared-context agents share cookies,
// storage and channels (one logged-in profile), but their context names
// are still their own and their pages too.
func TestIsolationSharedContext(t *testing.T) {
	t.Parallel()
	e := newIsoEnv(t, pagelock.PerPage, true, 0)
	checkStorage(t, e, true)
	alice, bob := e.as(t, aliceSecret, "names"), e.as(t, bobSecret, "names")
	shop := newPageWith(t, alice, testSite.URL+"/form.html", map[string]any{"isolatedContext": "shop"})
	evalAs(t, alice, shop, "() => { document.cookie = 'who=alice-shop'; return document.cookie }")
	theirs := newPageWith(t, bob, testSite.URL+"/form.html", map[string]any{"isolatedContext": "shop"})
	if got := evalAs(t, bob, theirs, "() => document.cookie"); strings.Contains(got, "alice-shop") {
		t.Errorf("bob's isolatedContext=shop reads alice's: %s", got)
	}
}

// TestIsolationLocks: in global mode, while alice's call holds the lock and
// bob's waits behind it, /locks and pagemux://locks show bob his own call
// and only "another agent" for hers (no name, tool or page of hers), alice
// the reverse, and the admin token all of it; bob's answer says it waited
// for another agent.
func TestIsolationLocks(t *testing.T) {
	t.Parallel()
	e := newIsoEnv(t, pagelock.Global, false, 0)
	release := make(chan struct{})
	blocker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer blocker.Close()
	var once bool
	unblock := func() {
		if !once {
			once = true
			close(release)
		}
	}
	defer unblock()
	alice, bob := e.as(t, aliceSecret, ""), e.as(t, bobSecret, "")
	a := newPageWith(t, alice, testSite.URL+"/form.html", nil)
	newPageWith(t, bob, testSite.URL+"/page2.html", nil)
	aliceDone := make(chan string, 1)
	go func() {
		text, _ := callAs(context.Background(), alice, "evaluate_script",
			map[string]any{"pageId": a, "function": "async () => (await fetch('" + blocker.URL + "')).status"})
		aliceDone <- text
	}()
	mcptest.WaitFor(t, "alice's call to hold the lock", func() bool { return strings.Contains(e.locks(t, bossSecret), "evaluate_script on page") })
	bobDone := make(chan string, 1)
	go func() {
		text, _ := callAs(context.Background(), bob, "list_pages", nil)
		bobDone <- text
	}()
	mcptest.WaitFor(t, "bob's call to wait", func() bool { return strings.Contains(e.locks(t, bossSecret), "list_pages for agent token:bob") })
	queued := time.Now()

	alicePage := fmt.Sprintf("page %d", a)
	res, err := bob.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "pagemux://locks"}})
	if err != nil {
		t.Fatal(err)
	}
	for what, view := range map[string]string{"/locks": e.locks(t, bobSecret), "pagemux://locks": res.Contents[0].(mcp.TextResourceContents).Text} {
		if strings.Contains(view, "alice") || strings.Contains(view, "evaluate_script") || strings.Contains(view, alicePage) {
			t.Errorf("bob's %s names alice, her tool or her page:\n%s", what, view)
		}
		if !strings.Contains(view, "another agent") || !strings.Contains(view, "list_pages for agent token:bob") {
			t.Errorf("bob's %s lacks another agent's hold or his own call:\n%s", what, view)
		}
	}
	aliceView := e.locks(t, aliceSecret)
	if strings.Contains(aliceView, "bob") || !strings.Contains(aliceView, "evaluate_script on "+alicePage+" for agent token:alice") || !strings.Contains(aliceView, "another agent") {
		t.Errorf("alice's /locks:\n%s", aliceView)
	}
	var all []LockState
	if err := json.Unmarshal([]byte(e.locks(t, bossSecret)), &all); err != nil {
		t.Fatal(err)
	}
	if admin, _ := json.Marshal(all); !strings.Contains(string(admin), "token:alice") || !strings.Contains(string(admin), "list_pages for agent token:bob") {
		t.Errorf("the admin's /locks:\n%s", admin)
	}
	// The answer tells of waits past waitNoticeAfter only: bob's must be one.
	mcptest.WaitFor(t, "bob to wait past the notice", func() bool { return time.Since(queued) > 2*waitNoticeAfter })
	unblock()
	<-aliceDone
	text := <-bobDone
	if !strings.Contains(text, "Waited") || !strings.Contains(text, "(held by another agent)") || strings.Contains(text, "alice") || strings.Contains(text, "evaluate_script") {
		t.Errorf("bob's answer after waiting for alice's call:\n%s", text)
	}
}

// TestRedactTimeout: a lock timeout names another agent's hold as
// "another agent", the agent's own as it is, and stdio's whole.
func TestRedactTimeout(t *testing.T) {
	s := &Server{agents: agents.New(agents.Owned)}
	bob := agents.With(context.Background(), agents.Agent{ID: "token:bob", Token: "bob"})
	boss := agents.With(context.Background(), agents.Agent{ID: "token:boss", Token: "boss", Admin: true})
	for _, tt := range []struct {
		ctx         context.Context
		holder, out string
	}{
		{bob, "evaluate_script on page 2 for agent token:alice", "held by another agent"},
		{bob, "performance_start_trace on page 2", "held by another agent"},
		{bob, "click on page 4 for agent token:bob", "held by click on page 4 for agent token:bob"},
		{bob, "click on page 4 for agent token:bob/agent:x", "held by click on page 4 for agent token:bob/agent:x"},
		{bob, "click on page 4 for agent token:bobby", "held by another agent"},
		{boss, "evaluate_script on page 2 for agent token:alice", "held by evaluate_script on page 2 for agent token:alice"},
		{context.Background(), "evaluate_script on page 2", "held by evaluate_script on page 2"},
	} {
		err := s.redactErr(tt.ctx, fmt.Errorf("wrapped: %w", &pagelock.TimeoutError{Key: pagelock.PageKey(2), Waited: time.Second, Holder: tt.holder, HeldFor: time.Second}))
		if !strings.Contains(err.Error(), tt.out) {
			t.Errorf("holder %q: %v", tt.holder, err)
		}
	}
}
