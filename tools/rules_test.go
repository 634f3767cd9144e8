package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/rules"
)

// shopSite is a shop whose buttons count their clicks in the page and
// report what they do to the site, which a test can hold: /hold answers
// once the test lets it.
type shopSite struct {
	*httptest.Server
	held    chan struct{} // a /hold request arrived
	release chan struct{} // closed: /hold answers
	mu      sync.Mutex
	log     []string // "enter A", "leave A" of /work?agent=A
	hits    map[string]int
}

func newShopSite(t *testing.T) *shopSite {
	s := &shopSite{held: make(chan struct{}, 16), release: make(chan struct{}), hits: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/checkout", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Checkout</title><h1>Checkout</h1>
<p id=count>0</p>
<button onclick="count.textContent = +count.textContent + 1; fetch('/work?agent=' + (new URLSearchParams(location.search).get('agent') || ''))">Place order</button>
<button onclick="count.textContent = +count.textContent + 1">Continue shopping</button>`)
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		s.held <- struct{}{}
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "released")
	})
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		a := r.URL.Query().Get("agent")
		s.note("enter " + a)
		// The action's own work at the shop, which the agents' calls
		// span: the exclusive rule must keep them from overlapping.
		time.Sleep(150 * time.Millisecond)
		s.note("leave " + a)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		fmt.Fprint(w, "<!doctype html><title>Elsewhere</title><p>elsewhere")
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *shopSite) note(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, e)
}

// rulesEnv is a server over HTTP with the rules of src in force (written
// to a file, which the server watches), agents by token.
func rulesEnv(t *testing.T, src string) (*agentEnv, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := rules.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e := rules.NewEngine(set)
	if err := rules.Watch(t.Context(), path, e, nil); err != nil {
		t.Fatal(err)
	}
	env := newAgentEnvWith(t, Options{Agents: agents.New(agents.Shared), Rules: e})
	return env, path
}

// TestRulesOnceOnly: a once-only click retried while the first still waits
// for its page, and again after it, and after a reconnect, clicks once;
// the retries answer the first call's result, marked as a replay. Another
// button is not once-only; an idempotencyKey makes any call so.
func TestRulesOnceOnly(t *testing.T) {
	t.Parallel()
	shop := newShopSite(t)
	env, _ := rulesEnv(t, `once:
  - name: place-order
    when: {tools: [click], element: "/^Place order/"}
`)
	a := env.session(t, "team-secret-1", "buyer")
	page := openAs(t, a, shop.URL+"/checkout")
	snap, _ := use(t, a, "take_snapshot", map[string]any{"pageId": page})
	order, other := uidIn(t, snap, `button "Place order"`), uidIn(t, snap, `button "Continue shopping"`)

	// The page is busy with a script the test holds: the click queues
	// behind it, its once-only record made, and its retry comes meanwhile.
	busy := callAsync(t, a, "evaluate_script", map[string]any{"pageId": page, "function": `async () => (await fetch('/hold')).text()`})
	<-shop.held
	first := callAsync(t, a, "click", map[string]any{"pageId": page, "uid": order})
	mcptest.WaitFor(t, "the click to queue for its page", func() bool { return queued(env.srv.locks, pagelock.PageKey(page)) > 0 })
	retry := callAsync(t, a, "click", map[string]any{"pageId": page, "uid": order})
	mcptest.WaitFor(t, "the retry to wait for the first click", func() bool { return env.srv.once.Waiting() > 0 })
	close(shop.release)
	if o := <-busy; o.err != nil || o.r.isError {
		t.Fatal(o.err, o.r.text)
	}
	r1, r2 := <-first, <-retry
	if r1.err != nil || r1.r.isError || strings.Contains(r1.r.text, "Replayed") {
		t.Fatalf("the first click: %v %s", r1.err, r1.r.text)
	}
	if r2.err != nil || r2.r.isError || !strings.Contains(r2.r.text, "Replayed: this action already ran") || !strings.Contains(r2.r.text, "Successfully clicked") {
		t.Fatalf("the retry while it ran: %v %s", r2.err, r2.r.text)
	}
	// After it, and from a new session of the same agent.
	if text, _ := use(t, a, "click", map[string]any{"pageId": page, "uid": order}); !strings.Contains(text, "Replayed") {
		t.Fatalf("a retry after it: %s", text)
	}
	b := env.session(t, "team-secret-1", "buyer")
	if text, _ := use(t, b, "click", map[string]any{"pageId": page, "uid": order}); !strings.Contains(text, "Replayed") {
		t.Fatalf("a retry after a reconnect: %s", text)
	}
	if got := env.eval(t, page, "() => count.textContent"); got != `"1"` {
		t.Fatalf("the page counted %s clicks on Place order, want 1", got)
	}
	// Another button clicks each time.
	for range 2 {
		if text, failed := use(t, b, "click", map[string]any{"pageId": page, "uid": other}); failed || strings.Contains(text, "Replayed") {
			t.Fatalf("Continue shopping: %s", text)
		}
	}
	if got := env.eval(t, page, "() => count.textContent"); got != `"3"` {
		t.Fatalf("the page counted %s clicks, want 3", got)
	}
	// An idempotencyKey of the caller's.
	for range 2 {
		text, failed := use(t, b, "evaluate_script", map[string]any{"pageId": page, "function": "() => ++window.n || (window.n = 1)", idempotencyKeyArg: "bump-1"})
		if failed {
			t.Fatal(text)
		}
	}
	if got := env.eval(t, page, "() => window.n"); got != "1" {
		t.Fatalf("a script with an idempotencyKey ran %s times, want 1", got)
	}
	// Another agent's key of the same name is its own: its call runs, and
	// it never sees the first agent's answer.
	lead := env.session(t, "lead-secret-1", "")
	text, failed := use(t, lead, "evaluate_script", map[string]any{"pageId": page, "function": "() => ++window.n", idempotencyKeyArg: "bump-1"})
	if failed || strings.Contains(text, "Replayed") || !strings.Contains(text, "2") {
		t.Fatalf("another agent's call with the same idempotencyKey: %s", text)
	}
	// A key that is not one is refused as bad input, before anything runs.
	for _, bad := range []any{5, strings.Repeat("k", 201)} {
		text, failed := use(t, lead, "evaluate_script", map[string]any{"pageId": page, "function": "() => ++window.n", idempotencyKeyArg: bad})
		if !failed || !strings.Contains(text, idempotencyKeyArg) {
			t.Fatalf("idempotencyKey %v: %s", bad, text)
		}
	}
	// The key in the request's _meta, as a client's middleware may put it.
	for range 2 {
		res, err := b.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "evaluate_script",
			Arguments: map[string]any{"pageId": page, "function": "() => ++window.m || (window.m = 1)"},
			Meta:      &mcp.Meta{AdditionalFields: map[string]any{idempotencyKeyArg: "bump-meta"}}}})
		if err != nil || res.IsError {
			t.Fatal(err, res)
		}
	}
	if got := env.eval(t, page, "() => window.m"); got != "1" {
		t.Fatalf("a script with an idempotencyKey in _meta ran %s times, want 1", got)
	}
}

// queued is how many calls wait for key now.
func queued(l *pagelock.Locker, key pagelock.Key) int {
	for _, st := range l.Stats() {
		if st.Key == key {
			return st.Queued
		}
	}
	return 0
}

// TestRulesPermissions: each refusal, a tool, a URL, a rate, is a tool
// error that names the rule and says why, and reaches neither the locks
// nor the page.
func TestRulesPermissions(t *testing.T) {
	t.Parallel()
	shop := newShopSite(t)
	env, _ := rulesEnv(t, fmt.Sprintf(`agents:
  - agent: lead
    tools: [read-only, navigation]
    urls: ["%s/*"]
    rate: {perMinute: 6, burst: 6}
`, shop.URL))
	lead := env.session(t, "lead-secret-1", "")
	page := openAs(t, lead, shop.URL+"/checkout")
	text, failed := use(t, lead, "evaluate_script", map[string]any{"pageId": page, "function": "() => window.touched = 1"})
	if !failed || !strings.Contains(text, "refused by the action rules: the tool evaluate_script is not allowed to agent lead") || !strings.Contains(text, `agents[0] (agent "lead", line 2)`) {
		t.Fatalf("a denied tool: %s", text)
	}
	text, failed = use(t, lead, "navigate_page", map[string]any{"pageId": page, "type": "url", "url": testSite.URL + "/"})
	if !failed || !strings.Contains(text, "may not load "+testSite.URL) {
		t.Fatalf("a URL out of the agent's scope: %s", text)
	}
	if got := env.eval(t, page, "() => [location.pathname, typeof window.touched]"); got != `["/checkout","undefined"]` {
		t.Fatalf("a refused call reached the page: %s", got)
	}
	// The rate: 6 a minute, one used by new_page (the refused calls take
	// none): five more pass, the sixth is refused with when to retry.
	for i := range 5 {
		if text, failed := use(t, lead, "list_pages", nil); failed {
			t.Fatalf("call %d within the rate: %s", i, text)
		}
	}
	text, failed = use(t, lead, "list_pages", nil)
	if !failed || !strings.Contains(text, "rate-limited by the action rules") || !strings.Contains(text, "retry after") {
		t.Fatalf("past the rate: %s", text)
	}
	// Attacks: a name of the agent's own choosing does not pick its rule
	// (rules know a caller by its token), and a script that moves the page
	// out of the agent's scope leaves the page's next call refused.
	posing := env.session(t, "lead-secret-1", "team")
	if text, failed := use(t, posing, "evaluate_script", map[string]any{"pageId": page, "function": "() => 1"}); !failed || !strings.Contains(text, "not allowed to agent lead") {
		t.Fatalf("token lead posing as agent team: %s", text)
	}
	// Another agent has no rule.
	team := env.session(t, "team-secret-1", "")
	if text, failed := use(t, team, "evaluate_script", map[string]any{"pageId": page, "function": "() => 1"}); failed {
		t.Fatalf("an agent without a rule: %s", text)
	}
	// The page leaves lead's scope by another's hand (a script, a link):
	// lead's next call on it is refused, reading nothing.
	if text, failed := use(t, team, "navigate_page", map[string]any{"pageId": page, "type": "url", "url": testSite.URL + "/"}); failed {
		t.Fatal(text)
	}
	if text, failed := use(t, lead, "take_snapshot", map[string]any{"pageId": page}); !failed || !strings.Contains(text, "outside what agent lead may act at") {
		t.Fatalf("lead on a page out of its scope: %s", text)
	}
}

// TestRulesExclusive: two agents on two tabs of one shop under an
// exclusive rule are never inside at once (the shop's enter/leave log);
// with a lease the second waits until the first leaves the site.
func TestRulesExclusive(t *testing.T) {
	t.Parallel()
	shop := newShopSite(t)
	env, path := rulesEnv(t, `exclusive:
  - name: shop
    when: {tools: [click], element: "Place order"}
    resource: "site:{site}"
`)
	a, b := env.session(t, "team-secret-1", ""), env.session(t, "lead-secret-1", "")
	pa, pb := openAs(t, a, shop.URL+"/checkout?agent=A"), openAs(t, b, shop.URL+"/checkout?agent=B")
	snapA, _ := use(t, a, "take_snapshot", map[string]any{"pageId": pa})
	snapB, _ := use(t, b, "take_snapshot", map[string]any{"pageId": pb})
	ua, ub := uidIn(t, snapA, `button "Place order"`), uidIn(t, snapB, `button "Place order"`)
	for range 3 {
		ca := callAsync(t, a, "click", map[string]any{"pageId": pa, "uid": ua})
		cb := callAsync(t, b, "click", map[string]any{"pageId": pb, "uid": ub})
		for _, o := range []outcome{<-ca, <-cb} {
			if o.err != nil || o.r.isError {
				t.Fatal(o.err, o.r.text)
			}
		}
	}
	shop.mu.Lock()
	log := slices.Clone(shop.log)
	shop.mu.Unlock()
	if len(log) != 12 {
		t.Fatalf("the shop saw %d events, want 12: %v", len(log), log)
	}
	for i := 0; i < len(log); i += 2 {
		if !strings.HasPrefix(log[i], "enter ") || log[i+1] != "leave "+log[i][len("enter "):] {
			t.Fatalf("two agents inside at once: %v", log)
		}
	}

	// A lease: A keeps the shop between its calls; B waits until A leaves
	// the site, then gets in.
	write(t, path, `exclusive:
  - name: shop
    when: {tools: [click, navigate_page], url: ["`+shop.URL+`/*"]}
    resource: "site:{site}"
    lease: 1h
`)
	mcptest.WaitFor(t, "the new rules", func() bool {
		return strings.Contains(env.srv.rules.Set().Explain(&rules.Call{Tool: "click", URL: shop.URL + "/x"}), "lease")
	})
	if text, failed := use(t, a, "click", map[string]any{"pageId": pa, "uid": ua}); failed {
		t.Fatal(text)
	}
	cb := callAsync(t, b, "click", map[string]any{"pageId": pb, "uid": ub})
	mcptest.WaitFor(t, "B to wait for A's lease", func() bool { return env.srv.leases.waiting() > 0 })
	select {
	case o := <-cb:
		t.Fatalf("B got in while A held the lease: %s", o.r.text)
	default:
	}
	// A leaves the site: to another origin's page.
	if text, failed := use(t, a, "navigate_page", map[string]any{"pageId": pa, "type": "url", "url": testSite.URL + "/"}); failed {
		t.Fatal(text)
	}
	if o := <-cb; o.err != nil || o.r.isError {
		t.Fatalf("B after A left: %v %s", o.err, o.r.text)
	}
}

// TestRulesReload: a rule added mid-run applies to the next call; an edit
// that does not parse keeps the rules in force.
func TestRulesReload(t *testing.T) {
	t.Parallel()
	env, path := rulesEnv(t, "agents: [{agent: team, deny: [scripts]}]\n")
	a := env.session(t, "team-secret-1", "")
	page := openAs(t, a, testSite.URL+"/")
	if _, failed := use(t, a, "evaluate_script", map[string]any{"pageId": page, "function": "() => 1"}); !failed {
		t.Fatal("the first rules let a script run")
	}
	write(t, path, "agents: [{agent: team, deny: [read-only]}]\n")
	mcptest.WaitFor(t, "the edit to apply", func() bool {
		_, failed := use(t, a, "evaluate_script", map[string]any{"pageId": page, "function": "() => 1"})
		return !failed
	})
	if text, failed := use(t, a, "take_snapshot", map[string]any{"pageId": page}); !failed || !strings.Contains(text, "take_snapshot is not allowed") {
		t.Fatalf("after the edit, a read-only tool: %s", text)
	}
	write(t, path, "agents: [{agent: team, deny: [read-onyl]}]\n")
	before := env.srv.rules.Set()
	mcptest.WaitFor(t, "the broken edit to be read", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), "onyl")
	})
	if env.srv.rules.Set() != before {
		t.Fatal("a broken edit replaced the rules")
	}
	if _, failed := use(t, a, "take_snapshot", map[string]any{"pageId": page}); !failed {
		t.Fatal("a broken edit dropped the rules in force")
	}
}

func write(t *testing.T, path, src string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestRulesRequire: an action on a uid the agent never saw in its own
// snapshot of the current document is refused; after it looks, it acts.
// An action away from the rule's URLs is refused.
func TestRulesRequire(t *testing.T) {
	t.Parallel()
	shop := newShopSite(t)
	env, _ := rulesEnv(t, fmt.Sprintf(`require:
  - name: seen-first
    when: {tools: [click]}
    inLastSnapshot: true
  - name: shop-only
    when: {tools: [fill]}
    at: ["%s/*"]
`, shop.URL))
	a, b := env.session(t, "team-secret-1", ""), env.session(t, "lead-secret-1", "")
	page := openAs(t, a, shop.URL+"/checkout")
	snap, _ := use(t, a, "take_snapshot", map[string]any{"pageId": page})
	order := uidIn(t, snap, `button "Place order"`)
	text, failed := use(t, b, "click", map[string]any{"pageId": page, "uid": order})
	if !failed || !strings.Contains(text, "uid "+order+" is not in your last snapshot") || !strings.Contains(text, `require "seen-first" (line 2)`) {
		t.Fatalf("a uid of another agent's snapshot: %s", text)
	}
	if got := env.eval(t, page, "() => count.textContent"); got != `"0"` {
		t.Fatalf("the refused click reached the page: %s clicks", got)
	}
	use(t, b, "take_snapshot", map[string]any{"pageId": page})
	if text, failed := use(t, b, "click", map[string]any{"pageId": page, "uid": order}); failed {
		t.Fatalf("after its own snapshot: %s", text)
	}
	// The page goes elsewhere: its old uids are of another document.
	if text, failed := use(t, a, "navigate_page", map[string]any{"pageId": page, "type": "url", "url": testSite.URL + "/"}); failed {
		t.Fatal(text)
	}
	if text, failed := use(t, a, "click", map[string]any{"pageId": page, "uid": order}); !failed || !strings.Contains(text, "not in your last snapshot") {
		t.Fatalf("a uid of the page's old document: %s", text)
	}
	snap, _ = use(t, a, "take_snapshot", map[string]any{"pageId": page})
	if text, failed := use(t, a, "fill", map[string]any{"pageId": page, "uid": "1_0", "value": "x"}); !failed || !strings.Contains(text, "fill may act only at "+shop.URL) {
		t.Fatalf("a fill away from the shop: %s", text)
	}
}

// TestRuleHolds: the rules' holds bound traces and screencasts (the
// holdLimits seam); where they say nothing, --max-hold does.
func TestRuleHolds(t *testing.T) {
	t.Parallel()
	set, err := rules.Parse("rules.yaml", []byte("holds: {trace: 90s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{rules: rules.NewEngine(set), maxHold: time.Hour}
	s.holdLimits = s.ruleHolds
	if got := s.holdLimit(t.Context(), holdTrace); got != 90*time.Second {
		t.Errorf("a trace's limit: %v, want the rules' 90s", got)
	}
	if got := s.holdLimit(t.Context(), holdScreencast); got != time.Hour {
		t.Errorf("a screencast's limit: %v, want --max-hold's 1h", got)
	}
}

// TestKeptAnswer: a once-only record keeps a small answer whole, a big
// one as its text cut to the bound, without its images.
func TestKeptAnswer(t *testing.T) {
	t.Parallel()
	small := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("ok"), mcp.NewImageContent("aGk=", "image/png")}}
	if got := keptAnswer(small, 100); got != small {
		t.Errorf("a small answer: %+v", got)
	}
	big := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(strings.Repeat("x", 300)), mcp.NewImageContent(strings.Repeat("A", 1000), "image/png")}}
	got := keptAnswer(big, 200)
	if len(got.Content) != 1 || !strings.Contains(answerText(got), "images are not kept") || len(answerText(got)) > 400 {
		t.Errorf("a big answer: %d parts, %q", len(got.Content), answerText(got))
	}
}

// TestIdempotencyKeyWithoutRules: every tool's idempotencyKey makes its
// call once-only on a server without --rules too: the second call with
// the key answers the first's answer, replayed, and does not act; another
// key acts.
func TestIdempotencyKeyWithoutRules(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	bump := "() => { window.bumps = (window.bumps || 0) + 1; return window.bumps }"
	key := "bump-" + t.Name()
	first := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": bump, "idempotencyKey": key})
	again := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": bump, "idempotencyKey": key})
	if strings.Contains(first, "Replayed") || !strings.Contains(again, "Replayed: this action already ran") || !strings.Contains(again, "\n1\n") {
		t.Errorf("the first call:\n%s\nthe second, same key:\n%s", first, again)
	}
	if got := e.eval(t, id, "() => window.bumps"); strings.TrimSpace(got) != "1" {
		t.Errorf("the page ran the action again: bumps %s", got)
	}
	if other := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": bump, "idempotencyKey": key + "-2"}); strings.Contains(other, "Replayed") || !strings.Contains(other, "\n2\n") {
		t.Errorf("another key: %s", other)
	}
}
