package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pagemux/pagemux/internal/etcdtest"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// TestReplicasShareAgents: HTTP replicas on one Chrome with --etcd behave as
// one server to an agent whose requests go to any of them: a page it opened
// on one is its own on the others, under the same id, and no one else's;
// its pages share one browser context (cookies), not another agent's;
// every replica collects a page's console and network from its start, so
// they list alike (a replica that came later says what it lacks);
// the page it selected on one is the one its next call acts on, wherever
// that call lands; a replica SIGKILLed takes nothing with it; a replica
// started later knows all of it; and a newer session of the agent on one
// replica takes over its older one on another.
func TestReplicasShareAgents(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	chrome := debuggableChrome(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title><p>%s<script>console.log('hello from %s'); fetch('/x?from=%s')</script>", r.URL.Path, r.URL.Path, r.URL.Path, r.URL.Path)
	}))
	defer site.Close()
	bin := pagemuxBinary(t)
	flags := []string{"--browser-url=" + chrome, "--etcd=" + strings.Join(etcd.Endpoints(), ","), "--lease-ttl=2s",
		"--auth-token", "alice=alice-secret-1", "--auth-token", "bob=bob-secret-1", "--auth-token", "boss=boss-secret-1", "--admin-token", "boss", "--log-level=warn"}
	replica := func() (string, *exec.Cmd) {
		addr := freeAddr(t)
		cmd := exec.Command(bin, append([]string{"--http", addr}, flags...)...)
		base, _ := startHTTPCommand(t, cmd, addr)
		return base, cmd
	}
	as := func(base, secret string) *client.Client {
		return mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + secret}, "")
	}
	pageID := func(text string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^(\d+): .*\[selected\]`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no selected page in %s", text)
		}
		return m[1]
	}
	num := func(id string) int { n, _ := strconv.Atoi(id); return n }
	where := func(c *client.Client) string {
		t.Helper()
		return mustCall(t, c, "evaluate_script", map[string]any{"function": "() => location.pathname"})
	}
	base1, cmd1 := replica()
	base2, _ := replica()
	alice1, alice2, bob2 := as(base1, "alice-secret-1"), as(base2, "alice-secret-1"), as(base2, "bob-secret-1")

	a := pageID(mustCall(t, alice1, "new_page", map[string]any{"url": site.URL + "/a"}))
	list := mustCall(t, alice2, "list_pages", nil)
	if !regexp.MustCompile(`(?m)^` + a + `: .*/a\) \[selected\]`).MatchString(list) {
		t.Errorf("alice's page %s from replica 1, on replica 2:\n%s", a, list)
	}
	if got := where(alice2); !strings.Contains(got, `"/a"`) {
		t.Errorf("alice's next call on replica 2 acts on %s, want her page /a", got)
	}
	// Replica 2 attached to the tab as it appeared, so it collects the
	// page's history as replica 1 does: the console Chrome replays, and
	// every request of a document that starts after that (the first one may
	// have begun before it attached, and its answer then says so).
	mustCall(t, alice1, "wait_for", map[string]any{"text": []string{"/a"}})
	if got := mustCall(t, alice2, "list_console_messages", nil); !strings.Contains(got, "hello from /a") {
		t.Errorf("alice's console on replica 2, of the page replica 1 opened:\n%s", got)
	}
	mustCall(t, alice1, "navigate_page", map[string]any{"url": site.URL + "/a?again"})
	mustCall(t, alice1, "wait_for", map[string]any{"text": []string{"/a"}})
	mcptest.WaitFor(t, "replica 2 to list the page's fetch", func() bool {
		got, _ := callTool(t, alice2, "list_network_requests", nil)
		return strings.Contains(got, "/x?from=/a") && strings.Contains(got, "GET "+site.URL+"/a?again [200]") && !strings.Contains(got, "attached to this page after")
	})
	res, failed := callTool(t, bob2, "evaluate_script", map[string]any{"pageId": num(a), "function": "() => document.title"})
	if !failed || !strings.Contains(res, "belongs to another agent") {
		t.Errorf("bob on alice's page through replica 2: %s", res)
	}
	if list := mustCall(t, bob2, "list_pages", nil); strings.Contains(list, "/a") {
		t.Errorf("bob's list on replica 2 shows alice's page:\n%s", list)
	}

	b := pageID(mustCall(t, alice2, "new_page", map[string]any{"url": site.URL + "/b"}))
	if b == a {
		t.Fatalf("two tabs got one id, %s", a)
	}
	if got := where(alice1); !strings.Contains(got, `"/b"`) {
		t.Errorf("after new_page on replica 2, alice's call on replica 1 acts on %s, want /b", got)
	}
	// One context for alice's pages, whichever replica opened them; not bob's.
	mustCall(t, alice1, "evaluate_script", map[string]any{"pageId": num(a), "function": "() => { document.cookie = 'who=alice'; return document.cookie }"})
	if got := mustCall(t, alice2, "evaluate_script", map[string]any{"pageId": num(b), "function": "() => document.cookie"}); !strings.Contains(got, "who=alice") {
		t.Errorf("alice's page from replica 2 lacks the cookie her page from replica 1 set: %s", got)
	}
	mustCall(t, bob2, "new_page", map[string]any{"url": site.URL + "/bob"})
	if got := mustCall(t, bob2, "evaluate_script", map[string]any{"function": "() => document.cookie"}); strings.Contains(got, "alice") {
		t.Errorf("bob's page has alice's cookie: %s", got)
	}
	liveViewOfCluster(t, base1, bob2)
	mustCall(t, alice1, "select_page", map[string]any{"pageId": num(a)})
	if got := where(alice2); !strings.Contains(got, `"/a"`) {
		t.Errorf("after select_page on replica 1, alice's call on replica 2 acts on %s, want /a", got)
	}

	if err := cmd1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	base3, _ := replica()
	alice3 := as(base3, "alice-secret-1")
	for name, c := range map[string]*client.Client{"2": alice2, "3 (started later)": alice3} {
		list := mustCall(t, c, "list_pages", nil)
		if !regexp.MustCompile(`(?m)^`+a+`: /a \(.*\) \[selected\]`).MatchString(list) || !regexp.MustCompile(`(?m)^`+b+`: .*/b\)`).MatchString(list) {
			t.Errorf("after replica 1 died, alice's pages on replica %s:\n%s", name, list)
		}
	}
	if got := where(alice3); !strings.Contains(got, `"/a"`) {
		t.Errorf("alice's call on a replica started later acts on %s, want /a", got)
	}
	// A replica that came after the page loaded says what it lacks.
	if got := mustCall(t, alice3, "list_network_requests", nil); !strings.Contains(got, "pagemux attached to this page after its document had started") {
		t.Errorf("the requests of a page older than replica 3, there:\n%s", got)
	}

	// Takeover across replicas: alice's newest MCP session, on replica 3,
	// takes over her older one on replica 2, as on one server.
	older := mcptest.HTTPClient(t, base2+"/mcp", map[string]string{"Authorization": "Bearer alice-secret-1"}, "2025-11-25")
	mustCall(t, older, "list_pages", nil)
	newer := mcptest.HTTPClient(t, base3+"/mcp", map[string]string{"Authorization": "Bearer alice-secret-1"}, "2025-11-25")
	mustCall(t, newer, "list_pages", nil)
	if res, failed := callTool(t, older, "list_pages", nil); !failed || !strings.Contains(res, "this session was taken over") {
		t.Errorf("alice's older session on replica 2, after a newer one on replica 3: %s", res)
	}
	if got := mustCall(t, newer, "evaluate_script", map[string]any{"function": "() => location.pathname"}); !strings.Contains(got, `"/a"`) {
		t.Errorf("alice's newer session acts on %s, want her selected /a", got)
	}
}

// TestReplicasChurn: two HTTP replicas with --etcd, one agent opening and
// closing pages through both at once. Once a new_page returns on one
// replica, the other lists the page under the same id; once a close_page
// returns, neither lists it; at the end both list the same pages, ids and
// URLs, and no page of the churn is lost or left behind.
func TestReplicasChurn(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	site := pathSite(t)
	bin := pagemuxBinary(t)
	var cs []*client.Client
	for range 2 {
		addr := freeAddr(t)
		base, _ := startHTTPCommand(t, exec.Command(bin, "--http", addr, "--browser-url="+sharedChrome(t),
			"--etcd="+strings.Join(etcd.Endpoints(), ","), "--lock-mode=page", "--auth-token", "alice=alice-secret-1", "--log-level=warn"), addr)
		cs = append(cs, mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer alice-secret-1"}, ""))
	}
	// lists maps the pages of a list_pages answer, URL to id.
	lists := func(text string) map[string]string {
		m := map[string]string{}
		for _, l := range regexp.MustCompile(`(?m)^(\d+): .*\((\S+)\)`).FindAllStringSubmatch(text, -1) {
			m[l[2]] = l[1]
		}
		return m
	}
	list := func(c *client.Client) (map[string]string, error) {
		text, failed := callTool(t, c, "list_pages", nil)
		if failed {
			return nil, fmt.Errorf("list_pages: %s", text)
		}
		return lists(text), nil
	}
	const rounds = 4
	var wg sync.WaitGroup
	for g := range 2 {
		here, there := cs[g], cs[1-g]
		wg.Go(func() {
			for k := range rounds {
				url := fmt.Sprintf("%s/churn-%d-%d", site.URL, g, k)
				if text, failed := callTool(t, here, "new_page", map[string]any{"url": url}); failed {
					t.Errorf("new_page %s through replica %d: %s", url, g+1, text)
					return
				}
				mine, err := list(here)
				if err != nil || mine[url] == "" {
					t.Errorf("replica %d does not list the page it opened, %s (%v): %v", g+1, url, err, mine)
					return
				}
				theirs, err := list(there)
				if err != nil || theirs[url] != mine[url] {
					t.Errorf("right after new_page %s returned on replica %d (page %s), replica %d lists it as page %q (%v)", url, g+1, mine[url], 2-g, theirs[url], err)
					return
				}
				if k%2 == 0 {
					continue
				}
				id, _ := strconv.Atoi(mine[url])
				if text, failed := callTool(t, there, "close_page", map[string]any{"pageId": id}); failed {
					t.Errorf("close_page %d through replica %d: %s", id, 2-g, text)
					return
				}
				for r, c := range cs {
					if pages, err := list(c); err != nil || pages[url] != "" {
						t.Errorf("right after close_page %d returned, replica %d lists it (%v): %v", id, r+1, err, pages)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	a, errA := list(cs[0])
	b, errB := list(cs[1])
	if errA != nil || errB != nil || !maps.Equal(a, b) {
		t.Fatalf("after the churn, replica 1 lists %v (%v), replica 2 %v (%v)", a, errA, b, errB)
	}
	for g := range 2 {
		for k := range rounds {
			url := fmt.Sprintf("%s/churn-%d-%d", site.URL, g, k)
			if open := a[url] != ""; open != (k%2 == 0) {
				t.Errorf("after the churn, %s listed: %v, want %v", url, open, k%2 == 0)
			}
		}
	}
}

// liveViewOfCluster: the live view of replica base, to an admin, names
// the replica, shows the agents of the cluster with their pages (bob's,
// which another replica opened), and the lock bob's call on another
// replica holds in etcd, marked as the cluster's and naming that process.
func liveViewOfCluster(t *testing.T, base string, bob *client.Client) {
	t.Helper()
	var st struct {
		Replica string `json:"replica"`
		Agents  []struct {
			ID    string `json:"id"`
			Pages []int  `json:"pages"`
		} `json:"agents"`
		Locks []struct {
			Lock    string `json:"lock"`
			Holder  string `json:"holder"`
			Cluster bool   `json:"cluster"`
		} `json:"locks"`
	}
	read := func() {
		t.Helper()
		code, body := getWith(t, base+"/ui/state", "boss-secret-1")
		if code != http.StatusOK {
			t.Fatalf("/ui/state as the admin: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if st.Replica == "" {
		t.Error("the live view names no replica")
	}
	if !slices.ContainsFunc(st.Agents, func(a struct {
		ID    string `json:"id"`
		Pages []int  `json:"pages"`
	}) bool {
		return a.ID == "token:bob" && len(a.Pages) > 0
	}) {
		t.Errorf("the live view of replica %s lacks bob, whose page another replica opened: %+v", st.Replica, st.Agents)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		callTool(t, bob, "evaluate_script", map[string]any{"function": "() => new Promise(r => setTimeout(() => r('held'), 3000))"})
	}()
	mcptest.WaitFor(t, "the live view to show bob's lock held on another replica", func() bool {
		read()
		for _, l := range st.Locks {
			if l.Cluster && strings.Contains(l.Holder, "evaluate_script") && strings.Contains(l.Holder, "of process") {
				return true
			}
		}
		return false
	})
	<-done
}
