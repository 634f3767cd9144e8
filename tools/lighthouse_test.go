package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/lighthouse"
	"github.com/pagemux/pagemux/pagelock"
)

// The lighthouse tests run real Lighthouse (lighthouse/node_modules, from
// ./scripts/setup) on real Chromium. Each audit is kept small, one category
// on a tiny page, as Lighthouse takes seconds even so.

func needLighthouse(t *testing.T) {
	t.Helper()
	if _, err := lighthouse.Find(); err != nil {
		t.Fatalf("these tests need Lighthouse: %v", err)
	}
}

// audit is the arguments of a small audit of a page.
func audit(page int, kv ...any) map[string]any {
	args := map[string]any{"pageId": page, "categories": []string{"accessibility"}, "device": "desktop"}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return args
}

// progressLog collects the progress notifications of one token.
type progressLog struct {
	mu       sync.Mutex
	messages []string
	values   []float64
	got      chan struct{} // gets a value for each notification, if there is room
}

func (e *testEnv) watchProgress(token string) *progressLog {
	p := &progressLog{got: make(chan struct{}, 1000)}
	e.client.OnNotification(func(n mcp.JSONRPCNotification) {
		f := n.Params.AdditionalFields
		if n.Method != "notifications/progress" || f["progressToken"] != token {
			return
		}
		p.mu.Lock()
		msg, _ := f["message"].(string)
		// A number: float64 over a wire, whatever Go type in process.
		v, _ := strconv.ParseFloat(fmt.Sprint(f["progress"]), 64)
		p.messages = append(p.messages, msg)
		p.values = append(p.values, v)
		p.mu.Unlock()
		select {
		case p.got <- struct{}{}:
		default:
		}
	})
	return p
}

// callWithProgress calls a tool with a progress token.
func (e *testEnv) callWithProgress(ctx context.Context, name string, args map[string]any, token string) <-chan outcome {
	return e.asyncRequest(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: name, Arguments: args, Meta: &mcp.Meta{ProgressToken: token},
	}})
}

var accessibilityScore = regexp.MustCompile(`(?m)^- Accessibility: (\d+) \(accessibility\)$`)

// A navigation audit answers as chrome-devtools-mcp does, writes both
// reports, reports progress, and leaves the page as it found it.
// Performance, on request, is scored too; in page mode the audit then also
// holds the tracing resource, as Lighthouse records a trace, and a trace an
// agent started is in the way. One audit asks for both categories: each
// audit costs Lighthouse's start and a page load (7-8 CPU-s), and a second
// one proved nothing this one does not. The test is not parallel, so the
// tracing resource it sees held is its audit's.
func TestLighthouseAudit(t *testing.T) {
	needLighthouse(t)
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/lighthouse.html")
	url := e.eval(t, id, "() => location.href")
	before := e.eval(t, id, "() => [innerWidth, innerHeight, navigator.userAgent]")
	// Lighthouse's storage reset would clear the whole browser's disk cache,
	// which every page shares; pagemux turns it off.
	other := e.openPage(t, "/form.html")
	cached := e.eval(t, other, cacheProbe)
	out := filepath.Join(t.TempDir(), "reports")
	categories := []string{"accessibility", "performance"}

	e.ok(t, "performance_start_trace", map[string]any{"pageId": id, "reload": false, "autoStop": false})
	mustContain(t, e.fails(t, "lighthouse_audit", audit(id, "categories", categories)),
		"a performance trace is already running on page", "stop that one first, or audit without the performance category")
	e.ok(t, "performance_stop_trace", map[string]any{"pageId": id})

	progress := e.watchProgress("lh-audit")
	audited := e.callWithProgress(t.Context(), "lighthouse_audit", audit(id, "outputDirPath", out, "categories", categories), "lh-audit")
	e.waitHeld(t, pagelock.Tracing)
	// An audit without performance waits for it, though it would share
	// the audit resource with another such audit (TestLighthousePageMode);
	// seen waiting, it is cancelled before it costs a Lighthouse run.
	waitCtx, cancelWaiter := context.WithCancel(t.Context())
	waiter := e.async(waitCtx, "lighthouse_audit", audit(other))
	e.waitLock(t, pagelock.Audit, "the audit without performance waiting behind the one with it", func(s pagelock.KeyStats) bool {
		return s.Holders == 1 && s.Queued == 1
	})
	cancelWaiter()
	<-waiter
	o := must(t, <-audited)
	if o.isError {
		t.Fatalf("lighthouse_audit failed: %s", o.text)
	}
	text := o.text
	jsonPath, htmlPath := filepath.Join(out, "report.json"), filepath.Join(out, "report.html")
	mustContain(t, text, "## Lighthouse audit results\nMode: navigation\nDevice: desktop\nURL: "+strings.Trim(url, `"`)+"\n### Category scores\n",
		"### Audit summary\nPassed: ", "\nFailed: ", "\nTotal timing: ",
		"### Failed audits\n", "\n- image-alt [accessibility]: Image elements do not have `[alt]` attributes (score: 0)\n",
		"  Nodes (1):\n  - selector=\"body > img\"",
		"### Reports\n- "+jsonPath+"\n- "+htmlPath)
	m := accessibilityScore.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no accessibility score in:\n%s", text)
	}
	if n, _ := strconv.Atoi(m[1]); n <= 0 || n >= 100 {
		t.Errorf("accessibility score %d, want between 0 and 100 for a page with one missing alt", n)
	}
	mustContain(t, text, "- Performance: ", "(performance)\n")
	if strings.Contains(text, "(seo)") || strings.Contains(text, "(best-practices)") {
		t.Errorf("categories that were not asked for:\n%s", text)
	}

	var lhr struct {
		LighthouseVersion string `json:"lighthouseVersion"`
		ConfigSettings    struct {
			DisableStorageReset bool `json:"disableStorageReset"`
		} `json:"configSettings"`
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil || json.Unmarshal(data, &lhr) != nil || lhr.LighthouseVersion != "12.2.3" || !lhr.ConfigSettings.DisableStorageReset {
		t.Errorf("JSON report: %+v, %v", lhr, err)
	}
	if html, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(strings.ToLower(string(html[:min(len(html), 200)])), "<!doctype html>") {
		t.Errorf("HTML report: %.200s, %v", html, err)
	}

	progress.mu.Lock()
	msgs, vals := progress.messages, progress.values
	progress.mu.Unlock()
	// The Guard's own "lighthouse_audit: …" notes (progress.go) may come
	// first, when the call waited over a second to start.
	steps := slices.DeleteFunc(slices.Clone(msgs), func(m string) bool { return strings.HasPrefix(m, "lighthouse_audit: ") })
	if len(steps) < 3 || steps[0] != "Starting Lighthouse" {
		t.Errorf("progress messages: %q", msgs)
	}
	for i := 1; i < len(vals); i++ {
		if vals[i] <= vals[i-1] {
			t.Errorf("progress does not grow: %v", vals)
			break
		}
	}
	if after := e.eval(t, id, "() => [innerWidth, innerHeight, navigator.userAgent]"); after != before {
		t.Errorf("the audit left the page changed: before %s, after %s", before, after)
	}
	if got := e.eval(t, other, cacheProbe); got != cached {
		t.Errorf("the audit wiped the disk cache another page uses: /cached said %s before, %s after", cached, got)
	}
}

// cacheProbe reads /cached through Chrome's HTTP cache.
const cacheProbe = `async () => (await fetch('/cached')).text()`

// cachedNow answers the time of the request, cacheable for an hour: the
// same answer twice means the second came from Chrome's disk cache.
func cachedNow(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "max-age=3600")
	fmt.Fprint(w, time.Now().UnixNano())
}

// In page mode, calls on another page go on while a page is audited, and
// so does a second audit without performance: the two share the audit
// resource. An audit with performance waits for both, as it runs alone
// (seen waiting, the second audit and it are cancelled, so that the test
// costs one Lighthouse run).
func TestLighthousePageMode(t *testing.T) {
	t.Parallel()
	needLighthouse(t)
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute}})
	a := e.openPage(t, "/lighthouse.html")
	b := e.openPage(t, "/form.html")
	c := e.openPage(t, "/page2.html")
	d := e.openPage(t, "/page2.html?d")
	// pagemux's own emulation of page A survives the audit's.
	e.ok(t, "emulate", map[string]any{"pageId": a, "viewport": "500x400x1"})
	before := e.eval(t, a, "() => [innerWidth, innerHeight, devicePixelRatio, navigator.userAgent]")
	if !strings.HasPrefix(before, "[500,400,1,") {
		t.Fatalf("emulated viewport: %s", before)
	}

	audited := e.async(t.Context(), "lighthouse_audit", audit(a, "mode", "snapshot", "device", "mobile"))
	e.waitHeld(t, pagelock.Audit)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	second := e.async(ctx, "lighthouse_audit", audit(c))
	e.waitLock(t, pagelock.Audit, "two audits without performance at once", func(s pagelock.KeyStats) bool { return s.Holders == 2 })
	perf := e.async(ctx, "lighthouse_audit", audit(d, "categories", []string{"performance"}))
	e.waitLock(t, pagelock.Audit, "the audit with performance waiting behind the two", func(s pagelock.KeyStats) bool {
		return s.Holders == 2 && s.Queued == 1
	})
	cancel()
	var lastB time.Time
	for i := range 20 {
		if got := e.eval(t, b, "() => "+strconv.Itoa(i)); got != strconv.Itoa(i) {
			t.Fatalf("call %d on page B returned %s", i, got)
		}
		lastB = time.Now()
	}
	<-second
	<-perf
	o := <-audited
	r := must(t, o)
	if r.isError {
		t.Fatalf("audit failed: %s", r.text)
	}
	mustContain(t, r.text, "Mode: snapshot\nDevice: mobile\n", "- Accessibility: ")
	if !lastB.Before(o.at) {
		t.Errorf("page B's calls finished after the audit of page A; they should not wait for it")
	}
	if after := e.eval(t, a, "() => [innerWidth, innerHeight, devicePixelRatio, navigator.userAgent]"); after != before {
		t.Errorf("the mobile audit left page A emulated: before %s, after %s", before, after)
	}
	for _, s := range e.srv.locks.Stats() {
		if s.Key == pagelock.Audit && (s.MaxHolders != 2 || s.Holders != 0) {
			t.Errorf("the audit resource: %+v", s)
		}
	}
}

// waitLock waits until key's lock figures satisfy ok, what they show.
func (e *testEnv) waitLock(t *testing.T, key pagelock.Key, what string, ok func(pagelock.KeyStats) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last pagelock.KeyStats
	for time.Now().Before(deadline) {
		for _, s := range e.srv.locks.Stats() {
			if s.Key == key {
				if last = s; ok(s) {
					return
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never saw %s: %s is %+v", what, key, last)
}

// In global mode a call on another page waits for the audit. Without
// outputDirPath the reports go to a temporary directory.
func TestLighthouseGlobalMode(t *testing.T) {
	t.Parallel()
	needLighthouse(t)
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.Global, Timeout: 2 * time.Minute}})
	a := e.openPage(t, "/lighthouse.html")
	b := e.openPage(t, "/form.html")
	audited := e.async(t.Context(), "lighthouse_audit", audit(a, "mode", "snapshot"))
	e.waitHeld(t, pagelock.Audit)
	quick := e.async(t.Context(), "evaluate_script", map[string]any{"pageId": b, "function": "() => 'quick'"})
	o, q := <-audited, <-quick
	if must(t, o).isError || must(t, q).isError {
		t.Fatalf("calls failed: %s / %s", o.r.text, q.r.text)
	}
	// Not the order the answers arrive in: the two are written back to back
	// once the audit lets go, in either order.
	m := regexp.MustCompile(`Waited (\d+) ms for `).FindStringSubmatch(q.r.text)
	if m == nil {
		t.Fatalf("global mode: the call on page B did not wait for the audit of page A:\n%s", q.r.text)
	}
	if w, _ := strconv.Atoi(m[1]); w < 1000 {
		t.Fatalf("global mode: the call on page B waited only %d ms for an audit that takes seconds", w)
	}
	reports := regexp.MustCompile(`(?m)^- (.*/pagemux-lighthouse-[^/]+)/report\.json$`).FindStringSubmatch(o.r.text)
	if reports == nil {
		t.Fatalf("reports not in a temporary directory:\n%s", o.r.text)
	}
	defer os.RemoveAll(reports[1])
	for _, name := range []string{"report.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(reports[1], name)); err != nil {
			t.Error(err)
		}
	}
}

// A cancelled audit kills its runner and frees its page and the audit
// resource at once.
func TestLighthouseCancel(t *testing.T) {
	needLighthouse(t)
	e := sharedEnv(t, pagelock.PerPage)
	a := e.openPage(t, "/lighthouse.html")
	progress := e.watchProgress("lh-cancel")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	audited := e.callWithProgress(ctx, "lighthouse_audit", audit(a), "lh-cancel")
	// Past "Starting Lighthouse": the runner is up and talking (the
	// Guard's own "lighthouse_audit: …" notes do not count).
	for steps := 0; steps < 2; {
		select {
		case <-progress.got:
			progress.mu.Lock()
			steps = len(slices.DeleteFunc(slices.Clone(progress.messages), func(m string) bool { return strings.HasPrefix(m, "lighthouse_audit: ") }))
			progress.mu.Unlock()
		case o := <-audited:
			t.Fatalf("the audit ended before it was cancelled: %v %s", o.err, o.r.text)
		case <-time.After(time.Minute):
			t.Fatal("no progress from the runner")
		}
	}
	start := time.Now()
	cancel()
	<-audited
	e.eval(t, a, "() => 'free'")
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("page A stayed locked %s after its audit was cancelled", d)
	}
	for _, s := range e.srv.locks.Stats() {
		if s.Key == pagelock.Audit && s.Holder != "" {
			t.Fatalf("the audit resource is still held: %+v", s)
		}
	}
	if pids := runnerChildren(); len(pids) > 0 {
		t.Fatalf("runner processes outlived the cancelled audit: %v", pids)
	}
}

// runnerChildren returns the pids of this process's children that run
// runner.mjs.
func runnerChildren() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if !strings.Contains(string(cmdline), "runner.mjs") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "status"))
		if strings.Contains(string(status), "\nPPid:\t"+strconv.Itoa(os.Getpid())+"\n") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Bad input and a missing Lighthouse are tool errors that say what to do;
// the server keeps serving.
func TestLighthouseErrors(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/lighthouse.html")
	blank := e.openPage(t, "/lighthouse.html?blank")
	e.ok(t, "navigate_page", map[string]any{"pageId": blank, "url": "about:blank"})
	tests := []struct {
		name string
		args map[string]any
		env  string
		want string
	}{
		{"bad mode", audit(id, "mode", "timespan"), "", `invalid argument "mode" for lighthouse_audit: want one of "navigation", "snapshot", got "timespan"`},
		{"bad device", audit(id, "device", "tablet"), "", `invalid argument "device" for lighthouse_audit: want one of "desktop", "mobile", got "tablet"`},
		{"bad category", audit(id, "categories", []string{"pwa"}), "", `invalid argument "categories[0]" for lighthouse_audit: want one of`},
		{"outside workspace", audit(id, "outputDirPath", "/proc/pagemux-reports"), "", "outside the allowed roots"},
		{"navigation of about:blank", audit(blank), "", `about:blank cannot be audited that way: navigate_page to an http(s) URL first, or use mode "snapshot"`},
		{"not installed", audit(id), emptyLighthouseDir(t), "no Lighthouse in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(lighthouse.EnvDir, tt.env)
			}
			msg := e.fails(t, "lighthouse_audit", tt.args)
			mustContain(t, msg, tt.want)
			if tt.env != "" {
				mustContain(t, msg, "run ./scripts/setup")
			}
			e.ok(t, "list_pages", nil)
		})
	}
}

// emptyLighthouseDir is a lighthouse directory whose npm ci never ran.
func emptyLighthouseDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "runner.mjs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFormatLighthouse(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "lighthouse", "testdata", "lhr.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := lighthouse.ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	got := formatLighthouse(r, "snapshot", "mobile", []string{"/tmp/r/report.json", "/tmp/r/report.html"})
	mustContain(t, got,
		"## Lighthouse audit results\nMode: snapshot\nDevice: mobile\nURL: http://127.0.0.1:18765/a.html?b\n"+
			"### Category scores\n- Accessibility: 50 (accessibility)\n- SEO: n/a (seo)\n"+
			"### Audit summary\nPassed: 2\nFailed: 2\nTotal timing: 2653.7200000000003ms\n### Failed audits\n- image-alt [accessibility]: ",
		"\n- color-contrast [accessibility]: Background and foreground colors do not have a sufficient contrast ratio. (13 elements) (score: 0.5)\n"+
			"  Low-contrast text is difficult to read.\n  Nodes (12, showing 10):\n"+
			"  - selector=\"li:nth-child(1)\" label=\"item 0\" snippet=\"<li> item 0 </li>\"\n    Fix this: too pale\n"+
			"  - selector=\"li:nth-child(2)\" snippet=\"<li> item 1 </li>\"\n",
		"\n### Reports\n- /tmp/r/report.json\n- /tmp/r/report.html")
	if strings.HasSuffix(got, "\n") {
		t.Error("trailing newline")
	}
}
