package lighthouse

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseReport(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "lhr.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if r.URL != "http://127.0.0.1:18765/a.html?b" || r.GatherMode != "snapshot" || r.FormFactor != "mobile" || r.TotalMS != 2653.7200000000003 {
		t.Errorf("header: %+v", r)
	}
	half := 0.5
	if want := []Category{{"accessibility", "Accessibility", &half}, {"seo", "SEO", nil}}; !reflect.DeepEqual(r.Categories, want) {
		t.Errorf("categories %+v, want %+v (in the report's order, a null score kept)", r.Categories, want)
	}
	// document-title and html-has-lang pass; accesskeys has no score.
	if r.Passed != 2 || len(r.Failed) != 2 {
		t.Fatalf("passed %d, failed %+v", r.Passed, r.Failed)
	}
	img := r.Failed[0]
	if img.ID != "image-alt" || img.Score != 0 || !reflect.DeepEqual(img.Categories, []string{"accessibility"}) ||
		img.TotalNodes != 1 || img.Nodes[0].Selector != "body > img" || !strings.HasPrefix(img.Nodes[0].Explanation, "Fix any of the following") {
		t.Errorf("image-alt: %+v", img)
	}
	cc := r.Failed[1]
	if cc.ID != "color-contrast" || cc.Score != 0.5 || cc.DisplayValue != "13 elements" {
		t.Errorf("color-contrast: %+v", cc)
	}
	// 12 distinct nodes; the 13th item is n0 again, which fills in what the
	// first sight lacked; sub-items and debug data are not failing nodes.
	if cc.TotalNodes != 12 || len(cc.Nodes) != MaxNodes {
		t.Fatalf("color-contrast nodes: %d of %d, want %d of 12", len(cc.Nodes), cc.TotalNodes, MaxNodes)
	}
	if n := cc.Nodes[0]; n.Selector != "li:nth-child(1)" || n.NodeLabel != "item 0" || n.Explanation != "Fix this:\n  too pale" {
		t.Errorf("merged node: %+v", n)
	}
	for _, n := range cc.Nodes {
		if n.Selector == "ul" || n.Selector == "html" {
			t.Errorf("a related or debug node was listed: %+v", n)
		}
	}
}

func TestParseReportErrors(t *testing.T) {
	for _, in := range []string{`not json`, `{"categories": [1]}`, `{"audits": {"a": 3}}`} {
		if _, err := ParseReport([]byte(in)); err == nil {
			t.Errorf("ParseReport(%s) succeeded", in)
		}
	}
	r, err := ParseReport([]byte(`{"runtimeError": {"code": "NO_FCP", "message": "The page did not paint any content."}}`))
	if err != nil || r.RuntimeError == nil || r.RuntimeError.Code != "NO_FCP" {
		t.Errorf("runtime error: %+v, %v", r, err)
	}
}

func TestNodeKey(t *testing.T) {
	tests := []struct {
		lhID, path, selector, snippet string
		want                          string
	}{
		{"1-0-IMG", "1,HTML", "img", "<img>", "id:1-0-IMG"},
		{"", "1,HTML", "img", "", "id:1,HTML"},
		{"", "", "img", "<img>", "selector:img|<img>"},
		{"", "", "", "<img>", "selector:|<img>"},
		{"", "", "", "", "unidentified:7"},
	}
	for _, tt := range tests {
		if got := nodeKey(tt.lhID, tt.path, tt.selector, tt.snippet, 7); got != tt.want {
			t.Errorf("nodeKey(%q, %q, %q, %q) = %q, want %q", tt.lhID, tt.path, tt.selector, tt.snippet, got, tt.want)
		}
	}
}

// fakeRunner returns a Runner whose "node" is a shell script, for the
// process handling; the script gets runner.mjs's path as its argument.
func fakeRunner(t *testing.T, script string) *Runner {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "runner.mjs"), nil, 0o644)
	node := filepath.Join(dir, "node")
	if err := os.WriteFile(node, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Runner{Dir: dir, Node: node}
}

// alive reports whether the process whose pid the fake wrote is running.
func alive(t *testing.T, pidFile string) bool {
	t.Helper()
	var pid int
	deadline := time.Now().Add(10 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the fake runner wrote no pid")
	}
	// A killed child of the fake is reparented and reaped by init; give it a
	// moment.
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return false
		}
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// A cancelled run kills the runner and what it started, and returns at once.
func TestRunCancelKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := fakeRunner(t, `sleep 300 & echo $! > `+pidFile+`
echo '{"progress":"Gather phase"}'
wait
`)
	ctx, cancel := context.WithCancel(t.Context())
	progress := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, Request{Progress: func(m string) { progress <- m }})
		done <- err
	}()
	if m := <-progress; m != "Gather phase" {
		t.Fatalf("progress %q", m)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if alive(t, pidFile) {
		t.Fatal("the runner's child outlived the cancelled run")
	}
}

// A runner that hangs is killed after the Timeout, with an error that says so.
func TestRunTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := fakeRunner(t, `sleep 300 & echo $! > `+pidFile+"\nwait\n")
	r.Timeout = 500 * time.Millisecond
	_, err := r.Run(t.Context(), Request{})
	if !errors.Is(err, ErrHung) || !strings.Contains(err.Error(), "500ms") || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("err = %v, want ErrHung naming the time and the kill", err)
	}
	if alive(t, pidFile) {
		t.Fatal("the hung runner's child was not killed")
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name, script string
		want         []string
	}{
		{"reported", `echo '{"error":"no tab with target id X in the browser"}'; exit 1`, []string{"lighthouse failed: no tab with target id X"}},
		{"crashed", `echo 'SyntaxError: bad import' >&2; exit 1`, []string{"exited without a result", "SyntaxError: bad import"}},
		{"silent", `exit 0`, []string{"exited without a result", "no output"}},
		// Gone before the request is written, or after: told alike.
		{"closed its input", `exec 0<&-; echo 'SyntaxError: bad import' >&2; exit 1`, []string{"exited without a result", "SyntaxError: bad import"}},
		{"no report", `echo '{"done":{}}'`, []string{"read the lighthouse report"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fakeRunner(t, tt.script)
			_, err := r.Run(t.Context(), Request{JSONPath: filepath.Join(t.TempDir(), "none.json")})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The request reaches the runner on stdin, and the report is read back.
func TestRunRequest(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "request.json")
	report := filepath.Join(dir, "report.json")
	fixture, _ := filepath.Abs(filepath.Join("testdata", "lhr.json"))
	r := fakeRunner(t, `head -n 1 > `+got+`; cp `+fixture+` `+report+`; echo '{"done":{}}'`)
	rep, err := r.Run(t.Context(), Request{Endpoint: "ws://127.0.0.1:1/devtools/browser/x", TargetID: "T1", Mode: Snapshot,
		Device: "mobile", Categories: []string{"seo"}, JSONPath: report, HTMLPath: "r.html", MaxWaitForLoad: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rep.GatherMode != "snapshot" {
		t.Errorf("report: %+v", rep)
	}
	b, _ := os.ReadFile(got)
	want := `{"endpoint":"ws://127.0.0.1:1/devtools/browser/x","targetId":"T1","mode":"snapshot","device":"mobile","categories":["seo"],"jsonPath":"` + report + `","htmlPath":"r.html","maxWaitForLoad":2000}` + "\n"
	if string(b) != want {
		t.Errorf("request\n%s\nwant\n%s", b, want)
	}
}

// A runner that answered well takes the next audit: node and Lighthouse
// load once. One that failed is not used again, and the next audit gets a
// new one.
func TestRunReusesRunner(t *testing.T) {
	dir := t.TempDir()
	pids, report := filepath.Join(dir, "pids"), filepath.Join(dir, "report.json")
	fixture, _ := filepath.Abs(filepath.Join("testdata", "lhr.json"))
	// A request naming target "fail" fails, and the runner exits, as
	// runner.mjs does.
	r := fakeRunner(t, `while read -r req; do
	echo $$ >> `+pids+`
	case "$req" in *'"targetId":"fail"'*) echo '{"error":"no tab"}'; exit 1;; esac
	cp `+fixture+` `+report+`; echo '{"progress":"Auditing"}'; echo '{"done":{}}'
done
`)
	audit := func(target string) error {
		var progress []string
		_, err := r.Run(t.Context(), Request{TargetID: target, JSONPath: report, Progress: func(m string) { progress = append(progress, m) }})
		if err == nil && !slices.Equal(progress, []string{"Auditing"}) {
			t.Errorf("progress of %s: %q", target, progress)
		}
		return err
	}
	for _, target := range []string{"a", "b", "fail", "c", "d"} {
		if err := audit(target); (err != nil) != (target == "fail") {
			t.Fatalf("audit of %s: %v", target, err)
		}
	}
	b, _ := os.ReadFile(pids)
	got := strings.Fields(string(b))
	if len(got) != 5 || got[0] != got[1] || got[1] != got[2] || got[3] == got[2] || got[3] != got[4] {
		t.Fatalf("runner pids of audits a, b, fail, c, d: %q; want a, b and fail on one, c and d on a new one", got)
	}
}

func TestFind(t *testing.T) {
	t.Run("env dir without runner", func(t *testing.T) {
		t.Setenv(EnvDir, t.TempDir())
		if _, err := Find(); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), EnvDir) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not installed", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "runner.mjs"), nil, 0o644)
		t.Setenv(EnvDir, dir)
		if _, err := Find(); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "./scripts/setup") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no node", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		wd, _ := os.Getwd()
		t.Setenv(EnvDir, wd)
		if _, err := os.Stat(filepath.Join(wd, "node_modules", "lighthouse")); err != nil {
			t.Skip("lighthouse/node_modules is not installed; run ./scripts/setup")
		}
		if _, err := Find(); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "node is not on PATH") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("source dir", func(t *testing.T) {
		t.Setenv(EnvDir, "")
		wd, _ := os.Getwd()
		if d, err := findDir(); err != nil || d != wd {
			t.Fatalf("findDir = %q, %v; want this package's directory %q", d, err, wd)
		}
	})
}
