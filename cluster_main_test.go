package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagemux/pagemux/cluster"
	"github.com/pagemux/pagemux/internal/cutproxy"
	"github.com/pagemux/pagemux/internal/etcdtest"
	"github.com/pagemux/pagemux/internal/mcptest"
)

// answers reads the answers to ids, in whatever order they come.
func (s *server) answers(ids map[int]bool) map[int]string {
	s.t.Helper()
	got := map[int]string{}
	timeout := time.After(2 * time.Minute)
	for len(got) < len(ids) {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("stdout closed with %d of %d answers", len(got), len(ids))
			}
			var msg struct{ ID int }
			if json.Unmarshal([]byte(line), &msg) == nil && ids[msg.ID] {
				got[msg.ID] = line
			}
		case <-timeout:
			s.t.Fatalf("%d of %d answers in 2 minutes", len(got), len(ids))
		}
	}
	return got
}

// TestSharedChromeOverEtcd: three pagemux processes attached to one
// Chrome with --etcd, two on stdio and one over HTTP, take turns on one tab.
// Bursts of calls sent at once by all three, each logging its enter and
// leave in the page, never overlap there, and each stdio process's calls
// run in the order it read them. A process SIGKILLed while it holds the tab
// frees it for another within the lease's TTL.
func TestSharedChromeOverEtcd(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	chrome := debuggableChrome(t)
	site := logSite(t)
	flags := []string{"--browser-url=" + chrome, "--etcd=" + strings.Join(etcd.Endpoints(), ","), "--lease-ttl=2s", "--lock-mode=page"}
	a := startServer(t, shortTmp(t), flags...)
	b := startServer(t, shortTmp(t), flags...)
	url := site.URL + "/shared"
	a.call(2, "new_page", fmt.Sprintf(`{"url":%q}`, url))
	if ans := a.answer(2); strings.Contains(ans, `"isError":true`) {
		t.Fatalf("new_page: %s", ans)
	}
	pa, pb := a.pageOf(3, url), b.pageOf(3, url)
	base, _ := startHTTPServer(t, pagemuxBinary(t), append(flags, "--pages=shared")...)
	c := mcptest.HTTPClient(t, base+"/mcp", nil, "")
	list, _ := callTool(t, c, "list_pages", nil)
	mc := regexp.MustCompile(`(?m)^(\d+): .*` + regexp.QuoteMeta(url)).FindStringSubmatch(list)
	if mc == nil {
		t.Fatalf("the HTTP replica lists no page on %s: %s", url, list)
	}
	pc, _ := strconv.Atoi(mc[1])
	// One page registry: the tab has one id in every process.
	if pa != pb || pb != mc[1] {
		t.Errorf("the shared tab is page %s, %s and %s in the three processes; want one id", pa, pb, mc[1])
	}

	const n = 8
	call := func(who string, i int) string {
		return fmt.Sprintf(`{"pageId":%%s,"function":"async () => { calls.push('%s%d+'); await new Promise(r => setTimeout(r, 20)); calls.push('%s%d-'); return '%s%d' }"}`, who, i, who, i, who, i)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			fn := fmt.Sprintf("async () => { calls.push('c%d+'); await new Promise(r => setTimeout(r, 20)); calls.push('c%d-'); return 'c%d' }", i, i, i)
			if text, isErr := callTool(t, c, "evaluate_script", map[string]any{"pageId": pc, "function": fn}); isErr {
				t.Errorf("the HTTP replica's call %d: %s", i, text)
			}
		})
	}
	idsA, idsB := map[int]bool{}, map[int]bool{}
	for i := range n {
		a.call(10+i, "evaluate_script", fmt.Sprintf(call("a", i), pa))
		b.call(10+i, "evaluate_script", fmt.Sprintf(call("b", i), pb))
		idsA[10+i], idsB[10+i] = true, true
	}
	for who, s := range map[string]*server{"a": a, "b": b} {
		ids := idsA
		if who == "b" {
			ids = idsB
		}
		for id, ans := range s.answers(ids) {
			if strings.Contains(ans, `"isError":true`) {
				t.Fatalf("%s's call %d failed: %s", who, id, ans)
			}
		}
	}
	wg.Wait()
	a.call(30, "evaluate_script", fmt.Sprintf(`{"pageId":%s,"function":"() => calls.join(' ')"}`, pa))
	m := regexp.MustCompile(`"((?:[abc]\d+[+-] ?)+)"`).FindStringSubmatch(strings.ReplaceAll(a.answer(30), `\"`, `"`))
	if m == nil {
		t.Fatal("no call log in the page")
	}
	log := strings.Fields(m[1])
	if len(log) != 6*n {
		t.Fatalf("the page logged %d enters and leaves, want %d: %v", len(log), 6*n, log)
	}
	next := map[byte]int{}
	for i := 0; i < len(log); i += 2 {
		enter, leave := log[i], log[i+1]
		if !strings.HasSuffix(enter, "+") || leave != strings.TrimSuffix(enter, "+")+"-" {
			t.Fatalf("calls overlapped on the shared tab at %d: %v", i, log)
		}
		who := enter[0]
		if who == 'c' {
			continue // concurrent HTTP requests have no order of their own
		}
		if want := fmt.Sprintf("%c%d+", who, next[who]); enter != want {
			t.Fatalf("process %c's calls ran out of their order: %s where %s was next: %v", who, enter, want, log)
		}
		next[who]++
	}

	// a holds the tab with a call that never ends; b's next call waits
	// for it in etcd until a is killed. The call tells the test when it
	// runs in the page (so it holds the lock): holding the lock in etcd is
	// not yet running there.
	ran := make(chan struct{}, 1)
	beacon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case ran <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(beacon.Close)
	a.call(40, "evaluate_script", fmt.Sprintf(`{"pageId":%s,"function":"() => { calls.push('long+'); fetch('%s/ran', {mode: 'no-cors'}); return new Promise(() => {}) }"}`, pa, beacon.URL))
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatal("a's long call did not run in the page within a minute")
	}
	b.call(41, "evaluate_script", fmt.Sprintf(`{"pageId":%s,"function":"() => calls.includes('long+') ? 'after a' : 'before a'"}`, pb))
	waitQueue(t, etcd, 2, "evaluate_script")
	// Both processes' calls show in either's pagemux://locks.
	b.send(`{"jsonrpc":"2.0","id":42,"method":"resources/read","params":{"uri":"pagemux://locks"}}`)
	locks := strings.ReplaceAll(b.answer(42), `\"`, `"`)
	for _, want := range []string{`"lock": "page ` + pb + `"`, `"cluster": true`, `"holder": "evaluate_script on page ` + pa + ` of process `, `"waiting": [\n      "evaluate_script on page ` + pb + ` of process `} {
		if !strings.Contains(locks, want) {
			t.Errorf("pagemux://locks lacks %s:\n%s", want, locks)
		}
	}
	killed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ans := b.answer(41)
	took := time.Since(killed)
	if !strings.Contains(ans, "after a") {
		t.Fatalf("b's call after a was killed: %s", ans)
	}
	t.Logf("b ran %s after the holder was killed (lease TTL 2 s)", took.Round(time.Millisecond))
	if took > 2*time.Second+10*time.Second {
		t.Errorf("b waited %s after the holder was killed, with a 2 s lease", took)
	}
}

// waitQueue waits until a lock in etcd has n calls of tool (its holder and
// n-1 waiters): that is, until those calls took their places.
func waitQueue(t *testing.T, etcd *etcdtest.Cluster, n int, tool string) {
	t.Helper()
	locks := cluster.New(etcd.Client(t), cluster.Options{})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		qs, err := locks.Holders(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if len(q.Entries) >= n && q.Entries[0].Holder.Tool == tool {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lock in etcd with %d calls of %s in a minute: %+v", n, tool, qs)
		}
	}
}

// TestCutOffFromEtcd: a process cut off from etcd (a proxy that stops
// forwarding) while its call waits in the page loses its lock within the
// lease's TTL: the call ends with the lock-lost error, not a result, and
// the other process then gets the tab. Once etcd is reachable again the
// cut-off process serves again, on a new lease.
func TestCutOffFromEtcd(t *testing.T) {
	t.Parallel()
	etcd, proxy := etcdBehindProxy(t)
	chrome := debuggableChrome(t)
	site := logSite(t)
	common := []string{"--browser-url=" + chrome, "--lease-ttl=2s", "--lock-mode=page", "--etcd-dial-timeout=1s", "--lock-timeout=1m"}
	a := startServer(t, shortTmp(t), append(common, "--etcd="+proxy.URL())...)
	b := startServer(t, shortTmp(t), append(common, "--etcd="+etcd.Endpoints()[0])...)
	url := site.URL + "/cut"
	a.call(2, "new_page", fmt.Sprintf(`{"url":%q}`, url))
	a.answer(2)
	pa, pb := a.pageOf(3, url), b.pageOf(3, url)

	a.call(4, "evaluate_script", fmt.Sprintf(`{"pageId":%s,"function":"async () => { await new Promise(r => setTimeout(r, 30000)); return 'a finished' }"}`, pa))
	waitQueue(t, etcd, 1, "evaluate_script")
	b.call(5, "evaluate_script", fmt.Sprintf(`{"pageId":%s,"function":"() => 'b ran'"}`, pb))
	waitQueue(t, etcd, 2, "evaluate_script")
	proxy.Cut()
	cut := time.Now()
	ans := a.answer(4)
	lost := time.Since(cut)
	if !strings.Contains(ans, `"isError":true`) || !strings.Contains(ans, "lock lost") || !strings.Contains(ans, "the lock of page "+pa+" in etcd was lost while the call ran, so its result is void") {
		t.Fatalf("the cut-off call's answer: %s", ans)
	}
	if ans := b.answer(5); !strings.Contains(ans, "b ran") {
		t.Fatalf("the other process's call: %s", ans)
	}
	t.Logf("the cut-off call failed %s after the cut (lease TTL 2 s): %s", lost.Round(time.Millisecond), ans)

	proxy.Resume()
	a.call(6, "evaluate_script", fmt.Sprintf(`{"pageId":%s,"function":"() => 'a again'"}`, pa))
	if ans := a.answer(6); !strings.Contains(ans, "a again") {
		t.Fatalf("after the proxy resumed: %s", ans)
	}
}

// TestEtcdUnavailable: with etcd out of reach, a call fails within
// --lock-timeout with an error naming etcd and what to do; it works again
// by itself once etcd is back. With --etcd-fallback=local the calls go on,
// on this process's locks, with a warning at each switch.
func TestEtcdUnavailable(t *testing.T) {
	t.Parallel()
	_, proxy := etcdBehindProxy(t)
	common := []string{"--lock-mode=page", "--lease-ttl=2s", "--etcd-dial-timeout=1s", "--lock-timeout=3s", "--etcd=" + proxy.URL()}
	strict := startServer(t, shortTmp(t), common...)
	metricsAddr := freeAddr(t)
	loose := startServer(t, shortTmp(t), append(common, "--etcd-fallback=local", "--metrics-addr="+metricsAddr)...)
	const script = `{"function":"() => 'ran'"}`
	for _, s := range []*server{strict, loose} {
		s.call(2, "evaluate_script", script)
		if ans := s.answer(2); !strings.Contains(ans, "ran") {
			t.Fatalf("with etcd up: %s", ans)
		}
	}

	proxy.Cut()
	start := time.Now()
	strict.call(3, "evaluate_script", script)
	ans := strict.answer(3)
	if took := time.Since(start); took > 3*time.Second+10*time.Second {
		t.Errorf("the call failed %s after etcd was cut off, with --lock-timeout=3s", took)
	}
	for _, want := range []string{`"isError":true`, "etcd unavailable", proxy.URL(), "etcdctl"} {
		if !strings.Contains(ans, want) {
			t.Fatalf("the call with etcd out of reach: %s; want %q in it", ans, want)
		}
	}
	loose.call(3, "evaluate_script", script)
	if ans := loose.answer(3); !strings.Contains(ans, "ran") {
		t.Fatalf("--etcd-fallback=local with etcd out of reach: %s", ans)
	}
	loose.waitLog("etcd is unavailable: serving on this process's locks alone")
	metric(t, metricsAddr, "pagemux_etcd_fallback_local 1", `pagemux_etcd_lock_acquire_seconds_count{outcome="unavailable"} 1`, `pagemux_etcd_lock_acquire_seconds_count{outcome="ok"} 1`)

	proxy.Resume()
	for _, s := range []*server{strict, loose} {
		s.call(4, "evaluate_script", script)
		if ans := s.answer(4); !strings.Contains(ans, "ran") {
			t.Fatalf("once etcd is back: %s", ans)
		}
	}
	loose.waitLog("etcd is back")
	metric(t, metricsAddr, "pagemux_etcd_fallback_local 0", `pagemux_etcd_lock_acquire_seconds_count{outcome="ok"} 2`, "pagemux_etcd_leases_granted_total ")
}

// metric fails the test unless the metrics at addr have every line.
func metric(t *testing.T, addr string, lines ...string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range lines {
		if !strings.Contains(string(b), l) {
			t.Errorf("metrics lack %q", l)
		}
	}
}

// etcdBehindProxy starts a 1-member etcd and a proxy to it that a test cuts
// to play a partition.
func etcdBehindProxy(t *testing.T) (*etcdtest.Cluster, *cutproxy.Proxy) {
	t.Helper()
	etcd := etcdtest.Start(t, 1)
	proxy, err := cutproxy.New(strings.TrimPrefix(etcd.Endpoints()[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return etcd, proxy
}
