package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/secrets"
	"github.com/pagemux/pagemux/serve"
)

// The secrets of the tests: alice's and bob's own files (--agent-secrets).
// Their values hold characters that escape differently in URLs, JSON and
// HTML, so each encoding a page or a protocol gives them is checked.
const (
	alicePassword = `Pa55 w&rd<"x">+é`
	bobToken      = "bob-token-Zq81"
)

// echoPage shows, logs and posts (as JSON and in a GET query) whatever is
// typed in its box, and puts it in localStorage and a cookie: a page that
// hands a secret to every channel pagemux reads.
const echoPage = `<!doctype html><title>Echo</title>
<label>Password <input id=pw type=text></label>
<label>Note <input id=note></label>
<output id=out></output>
<script>
function spread(v) {
  document.getElementById('out').textContent = 'you typed ' + v;
  console.log('typed:', v);
  localStorage.setItem('last', v);
  fetch('/post', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({pw: v})});
  fetch('/get?pw=' + encodeURIComponent(v));
}
for (const id of ['pw', 'note']) {
  document.getElementById(id).addEventListener('input', e => spread(e.target.value));
}
</script>`

// echoSite serves echoPage and keeps what the page sent it.
type echoSite struct {
	*httptest.Server
	mu   sync.Mutex
	got  []string // bodies and queries, as received
	seen chan struct{}
}

func newEchoSite(t *testing.T) *echoSite {
	s := &echoSite{seen: make(chan struct{}, 64)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			io.WriteString(w, echoPage)
			return
		case "/post", "/get":
			body, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			s.got = append(s.got, string(body)+r.URL.RawQuery)
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Echo", r.URL.Query().Get("pw"))
			w.Write(append([]byte(`{"echo":`), append(body, '}')...))
			select {
			case s.seen <- struct{}{}:
			default:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// received waits until the page sent all of wants, and returns all it sent.
func (s *echoSite) received(t *testing.T, wants ...string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		got := strings.Join(s.got, "\n")
		s.mu.Unlock()
		missing := false
		for _, w := range wants {
			missing = missing || !strings.Contains(got, w)
		}
		if !missing {
			return got
		}
		select {
		case <-s.seen:
		case <-deadline:
			t.Fatalf("the page did not send %q; it sent:\n%s", wants, got)
		}
	}
}

// TestSecrets: alice types her password by name into a page that echoes
// it to every channel; the page gets the value, and nothing pagemux
// answers, logs or writes shows it, nor bob's token. Bob cannot name
// alice's secret, nor she his.
func TestSecrets(t *testing.T) {
	t.Parallel()
	aliceSet, err := secrets.Parse(strings.NewReader("ALICE_PASSWORD='"+alicePassword+"'\n"), "alice.env")
	if err != nil {
		t.Fatal(err)
	}
	bobSet, err := secrets.Parse(strings.NewReader("BOB_TOKEN="+bobToken+"\n"), "bob.env")
	if err != nil {
		t.Fatal(err)
	}
	logs := &mcptest.LockedBuffer{}
	masker := secrets.NewMasker(aliceSet, bobSet)
	log := slog.New(secrets.Handler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}), masker))
	ws := t.TempDir()
	rec := &recorder{}
	reg := agents.New(agents.Owned)
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute},
		Server: Options{Agents: reg, IsolateAgents: true, Log: log, Workspaces: []string{ws},
			AgentSecrets: map[string]*secrets.Set{"alice": aliceSet, "bob": bobSet}, Observers: []Observer{rec}}})
	ts := httptest.NewServer(serve.NewHTTP(e.srv.MCP(), serve.HTTPOptions{
		Tokens: map[string]string{"alice": aliceSecret, "bob": bobSecret}}))
	t.Cleanup(ts.Close)
	iso := &isoEnv{testEnv: e, url: ts.URL, reg: reg}
	alice, bob := iso.as(t, aliceSecret, "typist"), iso.as(t, bobSecret, "other")
	site := newEchoSite(t)

	var answers []string
	call := func(c *client.Client, tool string, args map[string]any) string {
		t.Helper()
		text, failed := use(t, c, tool, args)
		if failed {
			t.Fatalf("%s: %s", tool, text)
		}
		answers = append(answers, text)
		return text
	}
	page := newPageWith(t, alice, site.URL+"/", nil)
	snap := call(alice, "take_snapshot", map[string]any{"pageId": page})
	box := uidIn(t, snap, `textbox "Password"`)
	call(alice, "fill", map[string]any{"pageId": page, "uid": box, "value": "${ALICE_PASSWORD}"})

	// The page got the value, in both its requests.
	// JSON.stringify leaves & < > as they are; encodeURIComponent spells
	// a space %20.
	site.received(t, `{"pw":"Pa55 w&rd<\"x\">+é"}`, "pw=Pa55%20w%26rd%3C%22x%22%3E%2B%C3%A9")

	// Every channel pagemux reads, answers and files.
	call(alice, "take_snapshot", map[string]any{"pageId": page})
	call(alice, "take_snapshot", map[string]any{"pageId": page, "filePath": "alice-snap.txt"})
	call(alice, "evaluate_script", map[string]any{"pageId": page, "function": "() => [document.getElementById('pw').value, localStorage.getItem('last'), document.getElementById('out').textContent]"})
	call(alice, "list_console_messages", map[string]any{"pageId": page})
	call(alice, "get_console_message", map[string]any{"pageId": page, "msgid": 1})
	list := call(alice, "list_network_requests", map[string]any{"pageId": page})
	for _, line := range strings.Split(list, "\n") {
		if id, ok := strings.CutPrefix(line, "reqid="); ok && (strings.Contains(line, "/post") || strings.Contains(line, "/get")) {
			n, _ := strconv.Atoi(id[:strings.IndexByte(id, ' ')])
			call(alice, "get_network_request", map[string]any{"pageId": page, "reqid": n})
		}
	}
	// An error that quotes the page's state: a wait for text that never comes.
	text, failed := use(t, alice, "wait_for", map[string]any{"pageId": page, "text": []string{"never there"}, "timeout": 200})
	if !failed {
		t.Fatalf("wait_for of absent text succeeded: %s", text)
	}
	answers = append(answers, text)
	// type_text and fill_form take names too; a bare name is its value.
	call(alice, "type_text", map[string]any{"pageId": page, "text": "${ALICE_PASSWORD}"})
	snap = call(alice, "take_snapshot", map[string]any{"pageId": page})
	call(alice, "fill_form", map[string]any{"pageId": page, "elements": []map[string]any{{"uid": uidIn(t, snap, `textbox "Note"`), "value": "ALICE_PASSWORD"}}})
	call(alice, "evaluate_script", map[string]any{"pageId": page, "function": "() => document.getElementById('note').value"})

	// $${NAME} types the text itself.
	call(alice, "fill", map[string]any{"pageId": page, "uid": box, "value": "$${ALICE_PASSWORD}"})
	if v := call(alice, "evaluate_script", map[string]any{"pageId": page, "function": "() => document.getElementById('pw').value"}); !strings.Contains(v, `"${ALICE_PASSWORD}"`) {
		t.Errorf("$${NAME} did not type ${NAME}: %s", v)
	}

	// Stored values and route bodies take names too; a storage state file
	// keeps ${NAME} and restores the value.
	call(alice, "localstorage_set", map[string]any{"pageId": page, "key": "tok", "value": "${ALICE_PASSWORD}"})
	call(alice, "cookie_set", map[string]any{"pageId": page, "name": "sid", "value": "${ALICE_PASSWORD}"})
	call(alice, "cookie_list", map[string]any{"pageId": page})
	call(alice, "localstorage_list", map[string]any{"pageId": page})
	call(alice, "storage_state", map[string]any{"pageId": page, "filename": "alice-state.json"})
	call(alice, "cookie_clear", map[string]any{"pageId": page})
	call(alice, "localstorage_clear", map[string]any{"pageId": page})
	call(alice, "set_storage_state", map[string]any{"pageId": page, "filename": "alice-state.json"})
	call(alice, "route", map[string]any{"pageId": page, "pattern": "**/mocked", "body": "${ALICE_PASSWORD}", "contentType": "text/plain"})
	call(alice, "route_list", nil)
	call(alice, "evaluate_script", map[string]any{"pageId": page, "function": `async () => {
		const mocked = await (await fetch('/mocked')).text();
		const cookie = document.cookie.split('; ').find(c => c.startsWith('sid=')).slice(4);
		await fetch('/get?restored=' + encodeURIComponent(localStorage.getItem('tok')) + '&cookie=' + cookie + '&mocked=' + encodeURIComponent(mocked));
		return 'sent';
	}`})
	enc := strings.ReplaceAll(url.QueryEscape(alicePassword), "+", "%20")
	site.received(t, "restored="+enc, "&mocked="+enc)

	// Attacks: a name of another agent's file is unknown to this one, and
	// its error lists this agent's names only.
	text, failed = use(t, alice, "fill", map[string]any{"pageId": page, "uid": box, "value": "${BOB_TOKEN}"})
	if !failed || !strings.Contains(text, `no secret "BOB_TOKEN"`) || !strings.Contains(text, "ALICE_PASSWORD") {
		t.Errorf("alice named bob's secret: %s", text)
	}
	bobPage := newPageWith(t, bob, site.URL+"/", nil)
	snap = call(bob, "take_snapshot", map[string]any{"pageId": bobPage})
	text, failed = use(t, bob, "fill", map[string]any{"pageId": bobPage, "uid": uidIn(t, snap, `textbox "Password"`), "value": "${ALICE_PASSWORD}"})
	if !failed || strings.Contains(text, "ALICE_PASSWORD\"") && !strings.Contains(text, `no secret "ALICE_PASSWORD"`) || strings.Contains(text, "the secrets this agent has are ALICE") {
		t.Errorf("bob named alice's secret: %s", text)
	}
	// A secret is not put in where a tool would show it back or send it
	// elsewhere: a script's text keeps the name.
	v := call(bob, "evaluate_script", map[string]any{"pageId": bobPage, "function": "() => '${BOB_TOKEN}'"})
	if !strings.Contains(v, `"${BOB_TOKEN}"`) {
		t.Errorf("evaluate_script's function: %s", v)
	}
	// Bob's own value, typed, is masked for him too.
	call(bob, "fill", map[string]any{"pageId": bobPage, "uid": uidIn(t, snap, `textbox "Password"`), "value": "${BOB_TOKEN}"})
	call(bob, "evaluate_script", map[string]any{"pageId": bobPage, "function": "() => document.getElementById('pw').value + ' and ' + btoa(document.getElementById('pw').value)"})

	var files []byte
	for _, name := range []string{"alice-snap.txt", "alice-state.json"} {
		written, _ := filepath.Glob(filepath.Join(ws, "*", name))
		if len(written) != 1 {
			t.Fatalf("%s is not in alice's workspace: %v", name, written)
		}
		b, err := os.ReadFile(written[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("${ALICE_PASSWORD}")) {
			t.Errorf("%s does not show ${ALICE_PASSWORD}: %s", name, b)
		}
		files = append(files, b...)
	}
	all := strings.Join(answers, "\n") + string(files) + logs.String() + rec.String()
	rec.check(t)
	for _, leak := range []string{alicePassword, url.QueryEscape(alicePassword), "Pa55 w", "w\\u0026rd", bobToken} {
		if strings.Contains(all, leak) {
			i := strings.Index(all, leak)
			t.Errorf("%q shows in what pagemux answered, wrote or logged: …%s…", leak, all[max(0, i-200):min(len(all), i+100)])
		}
	}
	if !strings.Contains(strings.Join(answers, "\n"), "${ALICE_PASSWORD}") {
		t.Errorf("the answers do not show ${ALICE_PASSWORD} where the value was:\n%s", strings.Join(answers, "\n"))
	}
}

// recorder is an Observer that keeps what it saw, as a session record
// would: each call's events, and the page's title as the call left it.
type recorder struct {
	mu     sync.Mutex
	events []string
	calls  map[uint64][]string
}

func (r *recorder) add(id uint64, ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[uint64][]string{}
	}
	r.calls[id] = append(r.calls[id], ev)
	r.events = append(r.events, ev)
}

func (r *recorder) Queued(c CallInfo) { r.add(c.ID, "queued "+c.Tool+" "+strings.Join(c.Locks, ",")) }
func (r *recorder) Started(_ context.Context, c CallInfo) {
	r.add(c.ID, "started "+c.Tool+" "+string(c.Args))
}
func (r *recorder) Ended(ctx context.Context, e CallEnd, page *browser.Page) {
	text := ""
	for _, c := range e.Result.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	after := ""
	if page != nil && !page.Closed() {
		// The page as the call left it, read under the call's locks.
		snap, err := page.Snapshot(ctx, false)
		if err != nil {
			after = "snapshot failed: " + err.Error()
		} else {
			after = e.Mask(snap.Text)
		}
	}
	r.add(e.ID, fmt.Sprintf("ended %s %s %s | %s", e.Tool, e.Outcome, text, after))
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.events, "\n")
}

// check: every call that queued started and ended, in that order, and a
// fill's record names the secret and shows the page after it.
func (r *recorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	fills := 0
	for id, evs := range r.calls {
		last := evs[len(evs)-1]
		if !strings.HasPrefix(last, "ended ") {
			t.Errorf("call %d did not end last: %q", id, evs)
		}
		if len(evs) == 3 && (!strings.HasPrefix(evs[0], "queued ") || !strings.HasPrefix(evs[1], "started ")) {
			t.Errorf("call %d: events out of order: %q", id, evs)
		}
		if strings.HasPrefix(evs[0], "queued fill page ") && strings.Contains(evs[1], `"${ALICE_PASSWORD}"`) {
			fills++
			if !strings.Contains(last, `textbox "Password"`) {
				t.Errorf("call %d: no snapshot of the page after the fill: %q", id, last)
			}
		}
	}
	if fills == 0 {
		t.Errorf("no fill of ${ALICE_PASSWORD} was observed:\n%s", strings.Join(r.events, "\n"))
	}
}

// panicky is an Observer that panics at every event.
type panicky struct{}

func (panicky) Queued(CallInfo)                               { panic("queued") }
func (panicky) Started(context.Context, CallInfo)             { panic("started") }
func (panicky) Ended(context.Context, CallEnd, *browser.Page) { panic("ended") }

// TestObserverPanics: an observer that panics at every event neither
// fails the call nor leaves its page's lock held between Reserve and Wait.
func TestObserverPanics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: 10 * time.Second}, Server: Options{Observers: []Observer{panicky{}}}})
	id := e.openPage(t, "/form.html")
	for range 3 {
		if got := e.eval(t, id, "() => 6 * 7"); !strings.Contains(got, "42") {
			t.Fatalf("evaluate_script with a panicking observer: %s", got)
		}
	}
}
