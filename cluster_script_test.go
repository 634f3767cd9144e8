package main

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pagemux/pagemux/internal/etcdtest"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/proc"
)

// TestClusterScript runs scripts/cluster as a newcomer would (with the
// test's pagemux and etcd binaries, so that it builds nothing): once it says
// it is ready, every replica answers /healthz; the first pages of its two
// agents, opened through different replicas, land on different Chromes of
// the pool; each agent's tab has one id on every replica; calls sent at once
// through all three replicas on one tab take turns there (a page-side
// enter/leave log); and SIGTERM stops every process it started and removes
// its directory.
func TestClusterScript(t *testing.T) {
	t.Parallel()
	port := freePortRun(t, 12)
	bin := pagemuxBinary(t)
	start := time.Now()
	cmd := exec.Command("./scripts/cluster", "--port", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "PAGEMUX_BIN="+bin, "PAGEMUX_ETCD="+etcdtest.Binary(t))
	stderr := new(mcptest.LockedBuffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	ready := make(chan string, 1) // what it printed up to its ready summary's end; "" if it ended first
	go func() {
		var out []string
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		said := false
		for sc.Scan() {
			out = append(out, sc.Text())
			if !said && strings.HasPrefix(sc.Text(), "The locks of the whole cluster:") {
				said = true
				ready <- strings.Join(out, "\n")
			}
		}
		if !said {
			ready <- ""
		}
		exited <- cmd.Wait()
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	})
	var text string
	select {
	case text = <-ready:
		if text == "" {
			t.Fatalf("scripts/cluster ended before it was ready; stderr:\n%s", stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("scripts/cluster not ready in 2 minutes; stderr:\n%s", stderr.String())
	}
	t.Logf("scripts/cluster was ready in %s", time.Since(start).Round(time.Millisecond))
	replicas := regexp.MustCompile(`(?m)^  replica (\d)  (http://127\.0\.0\.1:\d+)/mcp  on chromes A and B  \(pid (\d+)\)$`).FindAllStringSubmatch(text, -1)
	chromes := regexp.MustCompile(`(?m)^  chrome ([AB])   (http://127\.0\.0\.1:\d+)  \(pid \d+\)$`).FindAllStringSubmatch(text, -1)
	tokens := regexp.MustCompile(`(?m)^  token      (demo|other): Authorization: Bearer ([0-9a-f]{32})$`).FindAllStringSubmatch(text, -1)
	runDir := regexp.MustCompile(`(?m)^  logs       (\S+)/\*\.log`).FindStringSubmatch(text)
	if len(replicas) != 3 || len(chromes) != 2 || len(tokens) != 2 || runDir == nil {
		t.Fatalf("scripts/cluster's summary lacks three replicas on the pool, two Chromes, two tokens or the logs:\n%s", text)
	}
	for _, r := range replicas {
		resp, err := http.Get(r[2] + "/healthz")
		if err != nil {
			t.Fatalf("replica %s: %v", r[1], err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("replica %s: /healthz answered %s", r[1], resp.Status)
		}
	}
	// Everything the script started, seen while it runs: its descendants
	// and whatever names its directory (Chrome's helpers).
	started := proc.Descendants(cmd.Process.Pid)
	for _, p := range proc.All() {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID)); strings.Contains(string(b), runDir[1]) {
			started = append(started, p)
		}
	}

	as := func(replica int, token string) *client.Client {
		return mcptest.HTTPClient(t, replicas[replica][2]+"/mcp", map[string]string{"Authorization": "Bearer " + token}, "")
	}
	demo, other := tokens[0][2], tokens[1][2]
	demoOn := []*client.Client{as(0, demo), as(1, demo), as(2, demo)}
	otherOn := []*client.Client{as(0, other), as(2, other)}
	site := logSite(t).URL
	// demo's first page through replica 1, other's through replica 3: the
	// pool places them on different Chromes, every replica's pages counted.
	for _, open := range []struct {
		c    *client.Client
		path string
	}{{demoOn[0], "/cluster-demo"}, {otherOn[1], "/cluster-other"}} {
		if text, isErr := callTool(t, open.c, "new_page", map[string]any{"url": site + open.path}); isErr {
			t.Fatalf("new_page %s: %s", open.path, text)
		}
	}
	pool := []string{chromes[0][2], chromes[1][2]}
	onDemo, onOther := onChrome(t, pool, "/cluster-demo"), onChrome(t, pool, "/cluster-other")
	if onDemo < 0 || onOther < 0 || onDemo == onOther {
		t.Errorf("demo's first page is on Chrome %d, other's on Chrome %d (-1: on neither); want one on each", onDemo, onOther)
	}
	// Each agent's tab is its own on every replica, under one id.
	idOn := func(cs []*client.Client, path string) []int {
		var ids []int
		for _, c := range cs {
			list, _ := callTool(t, c, "list_pages", nil)
			ids = append(ids, idOf(t, list, path))
		}
		return ids
	}
	demoIDs, otherIDs := idOn(demoOn, "/cluster-demo"), idOn(otherOn, "/cluster-other")
	if len(slices.Compact(slices.Clone(demoIDs))) != 1 || len(slices.Compact(slices.Clone(otherIDs))) != 1 || demoIDs[0] == otherIDs[0] {
		t.Errorf("demo's tab is page %v through replicas 1, 2, 3; other's %v through replicas 1 and 3: want one id each, not the same", demoIDs, otherIDs)
	}
	const n = 3
	var wg sync.WaitGroup
	for i := range n {
		for r, c := range demoOn {
			who := string(rune('a' + r))
			wg.Go(func() {
				fn := fmt.Sprintf("async () => { calls.push('%s%d+'); await new Promise(r => setTimeout(r, 20)); calls.push('%s%d-'); return 1 }", who, i, who, i)
				if text, isErr := callTool(t, c, "evaluate_script", map[string]any{"pageId": demoIDs[0], "function": fn}); isErr {
					t.Errorf("call %s%d: %s", who, i, text)
				}
			})
		}
	}
	wg.Wait()
	logText, _ := callTool(t, demoOn[0], "evaluate_script", map[string]any{"pageId": demoIDs[0], "function": "() => calls.join(' ')"})
	m := regexp.MustCompile(`"((?:[abc]\d[+-] ?)+)"`).FindStringSubmatch(logText)
	if m == nil {
		t.Fatalf("no call log in the page: %s", logText)
	}
	calls := strings.Fields(m[1])
	if len(calls) != 2*len(demoOn)*n {
		t.Fatalf("the page logged %d enters and leaves, want %d: %v", len(calls), 2*len(demoOn)*n, calls)
	}
	for i := 0; i < len(calls); i += 2 {
		if !strings.HasSuffix(calls[i], "+") || calls[i+1] != strings.TrimSuffix(calls[i], "+")+"-" {
			t.Fatalf("calls of replicas 1, 2 and 3 overlapped on the tab at %d: %v", i, calls)
		}
	}

	stopped = true
	stopping := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Errorf("scripts/cluster exited with %v on SIGTERM, want status 143; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("scripts/cluster still runs a minute after SIGTERM; stderr:\n%s", stderr.String())
	}
	t.Logf("and stopped in %s", time.Since(stopping).Round(time.Millisecond))
	if left := proc.Running(started); len(left) > 0 {
		t.Errorf("left running after scripts/cluster stopped: %+v", left)
	}
	if _, err := os.Stat(runDir[1]); !os.IsNotExist(err) {
		t.Errorf("scripts/cluster left %s behind (%v)", runDir[1], err)
	}
	if !strings.Contains(stderr.String(), "stopped: nothing of the cluster runs any more") {
		t.Errorf("scripts/cluster did not say it stopped; stderr:\n%s", stderr.String())
	}
}

// freePortRun returns a port P from which n ports on loopback were free a
// moment ago, for a script that takes fixed ports from one.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		// Below Linux's ephemeral range (32768 and up), where the kernel
		// hands out the ports of listeners on :0 (the other tests' servers,
		// Chrome's DevTools ports), which could take one meanwhile.
		p := 20000 + rand.IntN(32768-20000-n)
		free := true
		var ls []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+i))
			if err != nil {
				free = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if free {
			return p
		}
	}
	t.Fatalf("no run of %d free ports on loopback", n)
	return 0
}
