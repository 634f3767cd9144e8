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
// it is ready, every replica answers /healthz, calls sent at once through
// replicas 1 and 2 on one tab of their Chrome take turns there (a page-side
// enter/leave log), and SIGTERM stops every process it started and removes
// its directory.
func TestClusterScript(t *testing.T) {
	t.Parallel()
	port := freePortRun(t, 12)
	bin := pagemuxBinary(t)
	start := time.Now()
	cmd := exec.Command("./scripts/cluster", "--port", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "PAGEMUX_BIN="+bin, "PAGEMUX_ETCD="+etcdtest.Binary(t))
	stderr := new(lockedBuffer)
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
	replicas := regexp.MustCompile(`(?m)^  replica (\d)  (http://127\.0\.0\.1:\d+)/mcp  on chrome ([AB])  \(pid (\d+)\)$`).FindAllStringSubmatch(text, -1)
	token := regexp.MustCompile(`Authorization: Bearer ([0-9a-f]{32})`).FindStringSubmatch(text)
	runDir := regexp.MustCompile(`(?m)^  logs       (\S+)/\*\.log`).FindStringSubmatch(text)
	if len(replicas) != 3 || token == nil || runDir == nil {
		t.Fatalf("scripts/cluster's summary lacks three replicas, the token or the logs:\n%s", text)
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
	if replicas[0][3] != replicas[1][3] {
		t.Fatalf("replicas 1 and 2 drive different Chromes: %v", replicas)
	}
	// Everything the script started, seen while it runs: its descendants
	// and whatever names its directory (Chrome's helpers).
	started := proc.Descendants(cmd.Process.Pid)
	for _, p := range proc.All() {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID)); strings.Contains(string(b), runDir[1]) {
			started = append(started, p)
		}
	}

	auth := map[string]string{"Authorization": "Bearer " + token[1]}
	c1 := mcptest.HTTPClient(t, replicas[0][2]+"/mcp", auth, "")
	c2 := mcptest.HTTPClient(t, replicas[1][2]+"/mcp", auth, "")
	url := logSite(t).URL + "/cluster-script"
	if text, isErr := callTool(t, c1, "new_page", map[string]any{"url": url}); isErr {
		t.Fatalf("new_page through replica 1: %s", text)
	}
	pageIn := func(c *client.Client) int {
		list, _ := callTool(t, c, "list_pages", nil)
		m := regexp.MustCompile(`(?m)^(\d+): .*` + regexp.QuoteMeta(url)).FindStringSubmatch(list)
		if m == nil {
			t.Fatalf("no page on %s in list_pages: %s", url, list)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	// The same tab, the agent's own on both, under one id.
	through := map[string]struct {
		c    *client.Client
		page int
	}{"a": {c1, pageIn(c1)}, "b": {c2, pageIn(c2)}}
	if through["a"].page != through["b"].page {
		t.Errorf("the tab is page %d on replica 1 and %d on replica 2", through["a"].page, through["b"].page)
	}
	const n = 4
	var wg sync.WaitGroup
	for i := range n {
		for who, r := range through {
			wg.Go(func() {
				fn := fmt.Sprintf("async () => { calls.push('%s%d+'); await new Promise(r => setTimeout(r, 20)); calls.push('%s%d-'); return 1 }", who, i, who, i)
				if text, isErr := callTool(t, r.c, "evaluate_script", map[string]any{"pageId": r.page, "function": fn}); isErr {
					t.Errorf("call %s%d: %s", who, i, text)
				}
			})
		}
	}
	wg.Wait()
	logText, _ := callTool(t, c1, "evaluate_script", map[string]any{"pageId": through["a"].page, "function": "() => calls.join(' ')"})
	m := regexp.MustCompile(`"((?:[ab]\d[+-] ?)+)"`).FindStringSubmatch(logText)
	if m == nil {
		t.Fatalf("no call log in the page: %s", logText)
	}
	calls := strings.Fields(m[1])
	if len(calls) != 4*n {
		t.Fatalf("the page logged %d enters and leaves, want %d: %v", len(calls), 4*n, calls)
	}
	for i := 0; i < len(calls); i += 2 {
		if !strings.HasSuffix(calls[i], "+") || calls[i+1] != strings.TrimSuffix(calls[i], "+")+"-" {
			t.Fatalf("calls of replicas 1 and 2 overlapped on the tab at %d: %v", i, calls)
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
		p := 20000 + rand.IntN(40000)
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
