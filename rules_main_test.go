package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pagemux/pagemux/internal/etcdtest"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// TestRulesAcrossReplicas: two --http replicas sharing one Chrome through
// etcd, with one rules file. A once-only Place order, clicked through
// replica 1 and retried through replica 2 (a snapshot of its own there,
// and an idempotencyKey of the client's), is clicked once; two agents on
// two tabs of the shop, one on each replica, are never inside it at once
// (the shop's enter/leave log). An account one agent keeps as a lease
// through replica 1 makes another's click through replica 2 wait until
// the first leaves it.
func TestRulesAcrossReplicas(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	chrome := debuggableChrome(t)
	var mu sync.Mutex
	var log []string
	note := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, e)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/work" {
			who := r.URL.Query().Get("agent")
			note("enter " + who)
			time.Sleep(100 * time.Millisecond) // the action's own work at the shop
			note("leave " + who)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<title>Checkout</title><p id=count>0</p>
<button onclick="count.textContent = +count.textContent + 1; fetch('/work?agent=' + location.hash.slice(1))">Place order</button>
<button onclick="fetch('/work?agent=' + location.hash.slice(1))">Pay</button>`)
	}))
	defer site.Close()
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rulesFile, []byte(`once:
  - name: place-order
    when: {tools: [click], element: "Place order"}
    key: "{agent} {site} {element}"
exclusive:
  - name: shop
    when: {tools: [click], element: "/^(Place order|Pay)$/"}
    resource: "site:{site}"
  - name: account
    when: {tools: [click], url: ["`+site.URL+`/account*"]}
    resource: "account:{site}"
    lease: 1h
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := pagemuxBinary(t)
	flags := []string{"--browser-url=" + chrome, "--etcd=" + strings.Join(etcd.Endpoints(), ","), "--lease-ttl=2s", "--rules=" + rulesFile,
		"--auth-token", "alice=alice-secret-1", "--auth-token", "bob=bob-secret-1", "--log-level=warn"}
	replica := func() string {
		addr := freeAddr(t)
		base, _ := startHTTPCommand(t, exec.Command(bin, append([]string{"--http", addr}, flags...)...), addr)
		return base
	}
	as := func(base, secret string) *client.Client {
		return mcptest.HTTPClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + secret}, "")
	}
	pageOf := func(text string) int {
		t.Helper()
		m := regexp.MustCompile(`(?m)^(\d+): .*\[selected\]`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no selected page in %s", text)
		}
		var id int
		fmt.Sscan(m[1], &id)
		return id
	}
	uid := func(c *client.Client, page int, name string) string {
		t.Helper()
		snap := mustCall(t, c, "take_snapshot", map[string]any{"pageId": page})
		m := regexp.MustCompile(`uid=(\S+) button "` + name + `"`).FindStringSubmatch(snap)
		if m == nil {
			t.Fatalf("no %s button in %s", name, snap)
		}
		return m[1]
	}
	base1, base2 := replica(), replica()
	alice1, alice2, bob2 := as(base1, "alice-secret-1"), as(base2, "alice-secret-1"), as(base2, "bob-secret-1")

	pa := pageOf(mustCall(t, alice1, "new_page", map[string]any{"url": site.URL + "/#alice"}))
	if text := mustCall(t, alice1, "click", map[string]any{"pageId": pa, "uid": uid(alice1, pa, "Place order")}); strings.Contains(text, "Replayed") {
		t.Fatalf("the first click: %s", text)
	}
	if text := mustCall(t, alice2, "click", map[string]any{"pageId": pa, "uid": uid(alice2, pa, "Place order")}); !strings.Contains(text, "Replayed: this action already ran") {
		t.Fatalf("the retry through replica 2: %s", text)
	}
	for i, base := range []string{base1, base2} {
		c := as(base, "alice-secret-1")
		args := map[string]any{"pageId": pa, "function": "() => ++count.textContent", "idempotencyKey": "bump"}
		if text := mustCall(t, c, "evaluate_script", args); i == 1 && !strings.Contains(text, "Replayed") {
			t.Fatalf("an idempotencyKey's retry through replica 2: %s", text)
		}
	}
	if got := mustCall(t, alice2, "evaluate_script", map[string]any{"pageId": pa, "function": "() => count.textContent"}); !strings.Contains(got, `"2"`) {
		t.Fatalf("the page counts %s, want 2: one click, one script", got)
	}

	// Bob on replica 2 and Alice on replica 1 pay at once, each on a tab
	// of their own: the shop sees one at a time.
	mu.Lock()
	log = nil
	mu.Unlock()
	pb := pageOf(mustCall(t, bob2, "new_page", map[string]any{"url": site.URL + "/#bob"}))
	ub := uid(bob2, pb, "Pay")
	pa2 := pageOf(mustCall(t, alice1, "new_page", map[string]any{"url": site.URL + "/#alice"}))
	ua := uid(alice1, pa2, "Pay")
	var wg sync.WaitGroup
	for range 3 {
		for _, who := range []struct {
			c         *client.Client
			page      int
			uid, name string
		}{{bob2, pb, ub, "bob"}, {alice1, pa2, ua, "alice"}} {
			wg.Go(func() {
				if text, failed := callTool(t, who.c, "click", map[string]any{"pageId": who.page, "uid": who.uid}); failed {
					t.Errorf("%s's payment: %s", who.name, text)
				}
			})
		}
		wg.Wait()
	}
	mu.Lock()
	seen := append([]string(nil), log...)
	mu.Unlock()
	for i := 0; i+1 < len(seen); i += 2 {
		if !strings.HasPrefix(seen[i], "enter ") || seen[i+1] != "leave "+seen[i][len("enter "):] {
			t.Fatalf("two agents inside the shop at once, across replicas: %v", seen)
		}
	}
	if len(seen) != 12 {
		t.Fatalf("the shop saw %d events, want 12 (6 payments): %v", len(seen), seen)
	}

	// The account: Alice keeps it (replica 1); Bob's click (replica 2)
	// waits in etcd until she leaves it.
	acc := site.URL + "/account"
	pa3 := pageOf(mustCall(t, alice1, "new_page", map[string]any{"url": acc + "#alice"}))
	mustCall(t, alice1, "click", map[string]any{"pageId": pa3, "uid": uid(alice1, pa3, "Pay")})
	pb3 := pageOf(mustCall(t, bob2, "new_page", map[string]any{"url": acc + "#bob"}))
	ub3 := uid(bob2, pb3, "Pay")
	bobDone := make(chan time.Time, 1)
	go func() {
		if text, failed := callTool(t, bob2, "click", map[string]any{"pageId": pb3, "uid": ub3}); failed {
			t.Errorf("bob's click after alice left the account: %s", text)
		}
		bobDone <- time.Now()
	}()
	mcptest.WaitFor(t, "bob's click to wait for alice's lease", func() bool { return metricValue(t, base2, "bob-secret-1", "pagemux_rule_leases_waiting") >= 1 })
	select {
	case <-bobDone:
		t.Fatal("bob got into the account while alice kept it")
	default:
	}
	left := time.Now()
	mustCall(t, alice1, "navigate_page", map[string]any{"pageId": pa3, "type": "url", "url": "about:blank"})
	if at := <-bobDone; at.Before(left) {
		t.Fatal("bob's click ended before alice left the account")
	}
}

// metricValue reads a gauge's value from the /metrics of the server at
// base, as the token of secret (0 when it is not there).
func metricValue(t *testing.T, base, secret, name string) float64 {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	var v float64
	fmt.Sscan(string(m[1]), &v)
	return v
}
