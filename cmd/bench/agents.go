package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/internal/mcptest"
	"github.com/pagemux/pagemux/internal/proc"
	"golang.org/x/sync/errgroup"

	"github.com/pagemux/pagemux/internal/tail"
)

// The many-agents benchmark (issue 9): N agents share one pagemux served
// over Streamable HTTP, each its own MCP session (loopback, no token, so
// each session is an agent of its own) on its own page. All of them make
// their calls of an in-page wait at once; the wall time is set against the
// serial sum. Then, in page mode, quick calls on a free page while several
// agents hold long calls on theirs.

// agentsProtocol is a session-based revision: in the stateless one an agent
// is its token, and without one every client would be the same agent.
const agentsProtocol = "2025-06-18"

// agentGoalFactor: page mode's speedup must reach 0.8·N.
const agentGoalFactor = 0.8

// goalQuickMS bounds the p99 of quick calls on a free page while other
// agents hold their pages.
const goalQuickMS = 20

// connectConcurrency bounds the agents that connect and open their pages at
// once: 32 new_page calls at once spend seconds making windows on 2 CPUs,
// and that setup is not what is measured.
const connectConcurrency = 4

// agentsResult is the many-agents figures of one lock mode.
type agentsResult struct {
	Mode      string      `json:"mode"`
	PID       int         `json:"pid,omitempty"`
	Replicas  int         `json:"replicas"`          // pagemux --http processes
	Chromes   int         `json:"chromes,omitempty"` // attached Chromes (replicas > 1)
	Runs      []*agentRun `json:"runs"`
	Quick     *quickRun   `json:"quick_while_held,omitempty"`
	RSSPeakMB float64     `json:"server_rss_peak_mb"`
	CloseMS   float64     `json:"close_ms"`
	Anomalies []string    `json:"anomalies,omitempty"`
	Failure   string      `json:"failure,omitempty"`
}

func (r *agentsResult) anomaly(format string, args ...any) {
	r.Anomalies = append(r.Anomalies, fmt.Sprintf(format, args...))
}

// agentRun is N agents making their waits at once.
type agentRun struct {
	Agents    int     `json:"agents"`
	CallsEach int     `json:"calls_per_agent"`
	WaitMS    float64 `json:"wait_ms"`
	SerialMS  float64 `json:"serial_sum_ms"` // N × calls × wait
	WallMS    float64 `json:"wall_ms"`       // first call sent to last answer
	Speedup   float64 `json:"speedup"`       // SerialMS / WallMS
	// GoalSpeedup is 0.8·N in page mode; global mode is serial by design
	// and has no goal.
	GoalSpeedup float64 `json:"goal_speedup,omitempty"`
	Met         bool    `json:"met"`
	// SlowestAgentMS is the longest time one agent took for its calls.
	SlowestAgentMS float64 `json:"slowest_agent_ms"`
	Calls          *series `json:"calls"` // each call's round trip
	// SetupMS is connecting the agents and opening their pages (untimed).
	SetupMS float64  `json:"setup_ms"`
	Where   *profile `json:"where_the_time_went,omitempty"`
	// Idle is the same profile over -agent-settle before the run, the
	// agents' pages open and nothing called: what the pages cost by
	// themselves.
	Idle    *profile `json:"idle_before,omitempty"`
	IdleMS  float64  `json:"idle_ms,omitempty"`
	Failure string   `json:"failure,omitempty"`
}

// quickRun is quick calls on a free page while holders hold theirs.
type quickRun struct {
	Holders int     `json:"holders"`
	HoldMS  float64 `json:"hold_ms"`
	Quick   *series `json:"quick_calls"` // answered while every hold still ran
	// HoldsMS is the longest hold call's round trip.
	HoldsMS     float64  `json:"longest_hold_ms"`
	HoldErrors  int      `json:"hold_errors"`
	HoldError   string   `json:"first_hold_error,omitempty"`
	Notices     int      `json:"waited_notices"`
	Met         bool     `json:"met"`
	Where       *profile `json:"where_the_time_went,omitempty"`
	FirstQuick  float64  `json:"first_quick_ms"`
	AfterHolds  int      `json:"quick_calls_after_first_hold_ended"`
	QuickFailed int      `json:"quick_calls_failed"`
}

// profile is where the time of a run went, from the server's /metrics and
// /proc read before and after it.
type profile struct {
	// ToolMeanMS is the server's own mean time of the run's evaluate_script
	// calls (pagemux_tool_call_seconds), lock wait included; the client's
	// round trip beyond it is HTTP and the client.
	ToolMeanMS float64 `json:"server_tool_mean_ms"`
	// LockWaitMeanMS is the mean lock wait of the run's calls.
	LockWaitMeanMS float64 `json:"server_lock_wait_mean_ms"`
	// EtcdAcquireMeanMS is the mean time a call took to get its locks in
	// etcd (pagemux_etcd_lock_acquire_seconds), with -agent-replicas.
	EtcdAcquireMeanMS float64 `json:"server_etcd_acquire_mean_ms,omitempty"`
	ToolCalls         uint64  `json:"server_tool_calls"`
	// CPU seconds spent over the run by the server, by Chrome (every
	// process under the server) and by this benchmark (the clients).
	CPUServerS float64 `json:"cpu_server_s"`
	CPUChromeS float64 `json:"cpu_chrome_s"`
	CPUBenchS  float64 `json:"cpu_bench_s"`
	// CPUChromeByType splits Chrome's by process type (browser, renderer,
	// gpu-process, utility …).
	CPUChromeByType map[string]float64 `json:"cpu_chrome_by_type_s,omitempty"`
	// CPUOtherS is the machine's busy CPU time not spent by the three above:
	// other processes on the shared machine, and the kernel's.
	CPUOtherS float64 `json:"cpu_other_s"`
	// CPUBusy is the share of the machine's CPUs that were busy (every
	// process, other users' too), 0 to 1.
	CPUBusy float64 `json:"cpu_busy"`
	CPUs    int     `json:"cpus"`
}

// agentsBench runs the many-agents benchmark against a fresh server in one
// lock mode.
func agentsBench(ctx context.Context, cfg *config, bin, siteURL, mode string, log *slog.Logger) *agentsResult {
	r := &agentsResult{Mode: mode}
	if err := r.run(ctx, cfg, bin, siteURL, log); err != nil {
		r.Failure = err.Error()
		log.Error("many agents failed", "mode", mode, "err", err)
	}
	return r
}

func (r *agentsResult) run(ctx context.Context, cfg *config, bin, siteURL string, log *slog.Logger) error {
	f, err := startFleet(ctx, cfg, bin, r.Mode, log) // fleet.go
	if err != nil {
		return err
	}
	r.PID = f.servers[0].cmd.Process.Pid
	r.Replicas, r.Chromes = len(f.servers), len(f.chromes)
	defer func() {
		for _, h := range f.servers {
			if peak, _, err := memory(h.cmd.Process.Pid); err == nil {
				r.RSSPeakMB = max(r.RSSPeakMB, peak)
			}
		}
		took, err := f.close()
		r.CloseMS = ms(took)
		if err != nil {
			r.anomaly("closing the servers: %v", err)
		}
		for _, h := range f.servers {
			for _, line := range matchingLines(h.stderr, "level=WARN", "level=ERROR", "panic") {
				r.anomaly("server stderr: %s", line)
			}
		}
	}()
	if err := f.warmUp(ctx, cfg, siteURL); err != nil {
		r.anomaly("warming up: %v", err)
		return err
	}
	for _, n := range cfg.agents {
		if ctx.Err() != nil {
			break
		}
		log.Info("many agents", "mode", r.Mode, "agents", n, "calls_each", cfg.agentCalls, "wait", cfg.agentWait, "replicas", len(f.servers))
		run := r.runN(ctx, cfg, f, siteURL, n)
		r.Runs = append(r.Runs, run)
		if run.Failure != "" {
			r.anomaly("%d agents: %s", n, run.Failure)
		}
		if err := f.waitPages(10 * time.Second); err != nil {
			r.anomaly("after %d agents: %v", n, err)
		}
	}
	if cfg.holders > 0 && r.Mode == "page" && ctx.Err() == nil {
		log.Info("quick calls while agents hold their pages", "holders", cfg.holders, "hold", cfg.hold)
		r.Quick = r.quickWhileHeld(ctx, cfg, f, siteURL)
	}
	return ctx.Err()
}

// runN connects n agents, each opens its page, then all make their waits at
// once.
func (r *agentsResult) runN(ctx context.Context, cfg *config, h *fleet, siteURL string, n int) *agentRun {
	run := &agentRun{Agents: n, CallsEach: cfg.agentCalls, WaitMS: ms(cfg.agentWait),
		SerialMS: ms(time.Duration(n*cfg.agentCalls) * cfg.agentWait),
		Calls:    &series{Name: fmt.Sprintf("evaluate_script of a %v wait", cfg.agentWait)}}
	if r.Mode == "page" {
		run.GoalSpeedup = agentGoalFactor * float64(n)
	}
	setup := time.Now()
	ags, err := connectAgents(ctx, cfg, h, siteURL, n, fmt.Sprintf("n%d", n))
	defer closeAgents(ags)
	if err != nil {
		run.Failure = err.Error()
		return run
	}
	run.SetupMS = ms(time.Since(setup))

	waitJS := fmt.Sprintf("async () => { await new Promise(r => setTimeout(r, %d)); return 1 }", cfg.agentWait.Milliseconds())
	idle, idleStart := takeSnapshot(h), time.Now()
	select {
	case <-time.After(cfg.agentSettle):
	case <-ctx.Done():
	}
	before := takeSnapshot(h)
	run.Idle, run.IdleMS = idle.since(before, "evaluate_script"), ms(time.Since(idleStart))
	gate := make(chan struct{})
	took := make([][]reply, n)
	var wg sync.WaitGroup
	for i, a := range ags {
		wg.Go(func() {
			<-gate
			for range cfg.agentCalls {
				took[i] = append(took[i], a.call(ctx, cfg.callTimeout, "evaluate_script", map[string]any{"pageId": a.page, "function": waitJS}))
			}
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	wall := time.Since(start)
	run.Where = before.since(takeSnapshot(h), "evaluate_script")

	run.WallMS = ms(wall)
	run.Speedup = round2(run.SerialMS / run.WallMS)
	notices := 0
	for _, reps := range took {
		var sum time.Duration
		for _, rep := range reps {
			sum += rep.took
			switch {
			case rep.err != nil || rep.isError:
				run.Calls.fail(rep.failure())
			case !strings.Contains(rep.text, "```json\n1\n```"):
				run.Calls.fail("unexpected answer: " + rep.text)
			default:
				run.Calls.add(rep.took)
			}
			if strings.Contains(rep.text, "Waited ") {
				notices++
			}
		}
		run.SlowestAgentMS = max(run.SlowestAgentMS, ms(sum))
	}
	run.Calls.finish()
	if run.Calls.Errors > 0 {
		run.Failure = fmt.Sprintf("%d of %d calls failed; first: %s", run.Calls.Errors, run.Calls.Calls, run.Calls.FirstError)
	}
	if r.Mode == "page" && notices > 0 {
		r.anomaly(`page mode, %d agents: %d answers carried a "Waited" line, but every agent had a page of its own`, n, notices)
	}
	run.Met = run.Failure == "" && (run.GoalSpeedup == 0 || run.Speedup >= run.GoalSpeedup)
	return run
}

// quickWhileHeld starts cfg.holders agents' long calls on their pages and,
// while they run, quick calls one after another on one more agent's page.
// Only quick calls answered before the first hold ended count.
func (r *agentsResult) quickWhileHeld(ctx context.Context, cfg *config, h *fleet, siteURL string) *quickRun {
	q := &quickRun{Holders: cfg.holders, HoldMS: ms(cfg.hold), Quick: &series{Name: "evaluate_script () => 1 on a free page"}}
	ags, err := connectAgents(ctx, cfg, h, siteURL, cfg.holders+1, "quick")
	defer closeAgents(ags)
	if err != nil {
		r.anomaly("quick calls while held: %v", err)
		return q
	}
	holders, prober := ags[:cfg.holders], ags[cfg.holders]
	holdJS := fmt.Sprintf("async () => { await new Promise(r => setTimeout(r, %d)); return 1 }", cfg.hold.Milliseconds())
	before := takeSnapshot(h)
	var (
		mu        sync.Mutex
		firstDone = make(chan struct{})
		once      sync.Once
		wg        sync.WaitGroup
	)
	for _, a := range holders {
		wg.Go(func() {
			rep := a.call(ctx, cfg.hold+cfg.callTimeout, "evaluate_script", map[string]any{"pageId": a.page, "function": holdJS})
			once.Do(func() { close(firstDone) })
			mu.Lock()
			defer mu.Unlock()
			q.HoldsMS = max(q.HoldsMS, ms(rep.took))
			if rep.err != nil || rep.isError || !strings.Contains(rep.text, "```json\n1\n```") {
				q.HoldErrors++
				if q.HoldError == "" {
					q.HoldError = rep.failure()
				}
			}
		})
	}
	// The holds must have reached the server and taken their pages' locks;
	// that can't be seen from outside, so give them a moment.
	select {
	case <-time.After(4 * settle):
	case <-ctx.Done():
	}
	for i := 0; i < maxBCalls && ctx.Err() == nil; i++ {
		rep := prober.call(ctx, cfg.callTimeout, "evaluate_script", map[string]any{"pageId": prober.page, "function": "() => 1"})
		if i == 0 {
			q.FirstQuick = ms(rep.took)
		}
		ended := false
		select {
		case <-firstDone:
			ended = true
		default:
		}
		if strings.Contains(rep.text, "Waited ") {
			q.Notices++
		}
		switch {
		case rep.err != nil || rep.isError || !strings.Contains(rep.text, "```json\n1\n```"):
			q.QuickFailed++
			q.Quick.fail(rep.failure())
		case ended:
			q.AfterHolds++ // a hold had ended: the call no longer ran beside all of them
		default:
			q.Quick.add(rep.took)
		}
		if ended || q.QuickFailed >= maxErrors {
			break
		}
	}
	wg.Wait()
	q.Where = before.since(takeSnapshot(h), "evaluate_script")
	q.Quick.finish()
	q.Met = q.Quick.Samples > 0 && q.Quick.Errors == 0 && q.HoldErrors == 0 && q.Quick.P99 <= goalQuickMS
	if q.HoldErrors > 0 {
		r.anomaly("quick calls while held: %d of %d holds failed: %s", q.HoldErrors, cfg.holders, q.HoldError)
	}
	if q.Notices > 0 {
		r.anomaly(`quick calls while held: %d answers on the free page carried a "Waited" line`, q.Notices)
	}
	return q
}

// agent is one MCP session over HTTP with its page.
type agent struct {
	c    *client.Client
	page int
}

func (a *agent) call(ctx context.Context, timeout time.Duration, name string, args map[string]any) reply {
	return callTool(ctx, a.c, timeout, name, args)
}

func (a *agent) close() { a.c.Close() }

// connectAgent connects one agent: its own HTTP client and connections, as
// an agent in a process of its own has.
func connectAgent(ctx context.Context, url string, timeout time.Duration) (*agent, error) {
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(hc))
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Start(ictx); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Initialize(ictx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: agentsProtocol, ClientInfo: mcp.Implementation{Name: "pagemux-bench-agent", Version: "1"}}}); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return &agent{c: c}, nil
}

// connectAgents connects n agents, each opening a page of its own whose
// URL names it, and makes one quick call on it (warm-up). The agents are
// returned even on error, for closeAgents.
func connectAgents(ctx context.Context, cfg *config, f *fleet, siteURL string, n int, tag string) ([]*agent, error) {
	ags := make([]*agent, n)
	var g errgroup.Group
	g.SetLimit(connectConcurrency)
	for i := range n {
		g.Go(func() error {
			a, err := connectAgent(ctx, f.url(i), cfg.callTimeout)
			if err != nil {
				return fmt.Errorf("agent %d: %w", i, err)
			}
			ags[i] = a
			if a.page, _, err = openPage(ctx, a, cfg, fmt.Sprintf("%s/form.html?agent=%s-%d", siteURL, tag, i)); err != nil {
				return fmt.Errorf("agent %d: %w", i, err)
			}
			for range warmups {
				if rep := a.call(ctx, cfg.callTimeout, "evaluate_script", map[string]any{"pageId": a.page, "function": "() => 1"}); rep.err != nil || rep.isError {
					return fmt.Errorf("agent %d: warm-up: %s", i, rep.failure())
				}
			}
			return nil
		})
	}
	return ags, g.Wait()
}

// closeAgents ends the agents' sessions (DELETE), which closes their pages.
func closeAgents(ags []*agent) {
	var wg sync.WaitGroup
	for _, a := range ags {
		if a != nil {
			wg.Go(a.close)
		}
	}
	wg.Wait()
}

// httpServer is pagemux --http, started from its binary.
type httpServer struct {
	cmd    *exec.Cmd
	base   string
	stderr *tail.Buffer
	exited chan error
}

// startHTTP starts bin with args serving HTTP on a free loopback port,
// without a token, and waits for /healthz.
func startHTTP(ctx context.Context, bin string, args []string, timeout time.Duration) (*httpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	h := &httpServer{base: "http://" + addr, stderr: &tail.Buffer{Size: 256 << 10}, exited: make(chan error, 1)}
	h.cmd = exec.Command(bin, append([]string{"--http", addr, "--log-level=warn"}, args...)...)
	h.cmd.Stderr = h.stderr
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { h.exited <- h.cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(h.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return h, nil
		}
		select {
		case err := <-h.exited:
			return nil, fmt.Errorf("pagemux --http exited: %v\n%s", err, strings.Join(matchingLines(h.stderr, ""), "\n"))
		case <-ctx.Done():
			h.close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond): // polling /healthz, bounded by deadline
		}
		if time.Now().After(deadline) {
			h.close()
			return nil, fmt.Errorf("pagemux --http never answered /healthz: %v", err)
		}
	}
}

// close ends the server with SIGTERM (SIGKILL after 15 s) and says how long
// it took.
func (h *httpServer) close() (time.Duration, error) {
	start := time.Now()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
		return time.Since(start), nil
	case <-time.After(15 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
		return time.Since(start), errors.New("pagemux --http did not exit within 15 s of SIGTERM and was killed")
	}
}

// pagesOpen reads pagemux_pages_open.
func (h *httpServer) pagesOpen() (float64, error) {
	m, err := mcptest.ScrapeMetrics(h.base+"/metrics", "")
	if err != nil {
		return 0, err
	}
	open, ok := m.Find("pagemux_pages_open")
	if !ok {
		return 0, errors.New("/metrics has no pagemux_pages_open")
	}
	return open.Value, nil
}

// waitPages waits until the server has at most base pages open: the agents
// that left took theirs, and closing them must not load the next run.
func (h *httpServer) waitPages(base float64, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		open, err := h.pagesOpen()
		if err != nil {
			return err
		}
		if open <= base {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%v pages open %v after their agents left, want %v", open, wait, base)
		}
		time.Sleep(100 * time.Millisecond) // polling, bounded by deadline
	}
}

// snapshot is what takeSnapshot reads: the server's metrics and the CPU
// time of the server, Chrome, this process and the machine.
type snapshot struct {
	metrics      []mcptest.Metrics // one per server
	server, self float64           // CPU seconds
	chrome       map[int]chromeProc
	busy, total  float64 // the machine's CPU ticks
	cpus         int
}

// chromeProc is one of Chrome's processes: its type and CPU seconds.
type chromeProc struct {
	typ string
	cpu float64
}

func takeSnapshot(f *fleet) snapshot {
	s := snapshot{chrome: map[int]chromeProc{}}
	var roots []int
	for _, h := range f.servers {
		m, _ := mcptest.ScrapeMetrics(h.base+"/metrics", "")
		s.metrics = append(s.metrics, m)
		s.server += cpuSeconds(h.cmd.Process.Pid)
		roots = append(roots, h.cmd.Process.Pid)
	}
	for _, c := range f.chromes {
		if p, ok := proc.Read(c.cmd.Process.Pid); ok {
			s.chrome[p.PID] = chromeProc{typ: "browser", cpu: p.CPU / proc.ClockTick}
		}
		roots = append(roots, c.cmd.Process.Pid)
	}
	for _, pid := range roots {
		for _, p := range proc.Descendants(pid) {
			s.chrome[p.PID] = chromeProc{typ: chromeType(p), cpu: p.CPU / proc.ClockTick}
		}
	}
	s.self = cpuSeconds(os.Getpid())
	s.busy, s.total, s.cpus = machineTicks()
	return s
}

// chromeType is a Chrome process's --type (renderer, gpu-process, utility,
// zygote …), "browser" without one; a helper that is not Chrome's is named
// by its command.
func chromeType(p proc.Proc) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	// Chrome rewrites its helpers' command lines, spaces between arguments.
	args := strings.FieldsFunc(string(b), func(r rune) bool { return r == 0 || r == ' ' })
	for _, a := range args {
		if t, ok := strings.CutPrefix(a, "--type="); ok {
			if t == "renderer" && slices.Contains(args, "--top-chrome-webui") {
				// Chrome's own UI (an address bar popup per window),
				// not a page's.
				return "webui-renderer"
			}
			return t
		}
	}
	if len(args) > 0 && strings.Contains(args[0], "chrom") {
		return "browser"
	}
	return p.Comm
}

// since is the profile of the time between s and later. Chrome's processes
// count from s, or from their start when they started since; one that
// ended in between is lost, its CPU time with it.
func (s snapshot) since(later snapshot, tool string) *profile {
	p := &profile{CPUServerS: round2(later.server - s.server), CPUBenchS: round2(later.self - s.self), CPUs: later.cpus,
		CPUChromeByType: map[string]float64{}}
	chrome := 0.0
	for pid, c := range later.chrome {
		d := c.cpu - s.chrome[pid].cpu
		chrome += d
		p.CPUChromeByType[c.typ] += d
	}
	for t, v := range p.CPUChromeByType {
		p.CPUChromeByType[t] = round2(v)
	}
	p.CPUChromeS = round2(chrome)
	if dt := later.total - s.total; dt > 0 {
		p.CPUBusy = round2((later.busy - s.busy) / dt)
		p.CPUOtherS = round2((later.busy-s.busy)/proc.ClockTick - p.CPUServerS - p.CPUChromeS - p.CPUBenchS)
	}
	if len(s.metrics) != len(later.metrics) {
		return p
	}
	var calls, callSum, waits, waitSum, acquires, acquireSum float64
	for i, m := range s.metrics {
		if m == nil || later.metrics[i] == nil {
			return p
		}
		a, b := m.Total("pagemux_tool_call_seconds", "tool", tool), later.metrics[i].Total("pagemux_tool_call_seconds", "tool", tool)
		calls, callSum = calls+float64(b.Count-a.Count), callSum+b.Sum-a.Sum
		a, b = m.Total("pagemux_lock_wait_seconds"), later.metrics[i].Total("pagemux_lock_wait_seconds")
		waits, waitSum = waits+float64(b.Count-a.Count), waitSum+b.Sum-a.Sum
		a, b = m.Total("pagemux_etcd_lock_acquire_seconds"), later.metrics[i].Total("pagemux_etcd_lock_acquire_seconds")
		acquires, acquireSum = acquires+float64(b.Count-a.Count), acquireSum+b.Sum-a.Sum
	}
	if acquires > 0 {
		p.EtcdAcquireMeanMS = round2(acquireSum / acquires * 1000)
	}
	if calls > 0 {
		p.ToolCalls = uint64(calls)
		p.ToolMeanMS = round2(callSum / calls * 1000)
	}
	if waits > 0 {
		p.LockWaitMeanMS = round2(waitSum / waits * 1000)
	}
	return p
}

// cpuSeconds is the user and system CPU time of a process so far.
func cpuSeconds(pid int) float64 {
	p, _ := proc.Read(pid)
	return p.CPU / proc.ClockTick
}

// machineTicks reads /proc/stat's cpu line: busy and all ticks, and the
// number of CPUs.
func machineTicks() (busy, total float64, cpus int) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 4 && f[0] == "cpu":
			for i, v := range f[1:min(len(f), 9)] { // guest time is in user already
				var x float64
				fmt.Sscan(v, &x)
				total += x
				if i != 3 && i != 4 { // idle, iowait
					busy += x
				}
			}
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
			cpus++
		}
	}
	return busy, total, cpus
}

func round2(v float64) float64 {
	return float64(int64(v*100+0.5)) / 100
}
