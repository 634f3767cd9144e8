// Command bench is pagemux's end-to-end benchmark. It serves a small form
// page on loopback, starts the real pagemux binary over stdio once per lock
// mode, and times MCP tool calls the way an agent makes them:
// evaluate_script, click and fill on one page, the server's peak memory, and
// calls on page B while page A runs a long script, then while page A is
// audited by Lighthouse; then, over HTTP, many agents at once on a server
// each lock mode (agents.go); then, on a server of its own, take_snapshot of
// a page of 200,000 DOM nodes (time and peak memory); then take_snapshot of
// testdata/real's pages and of the W3C APG examples (-apg-dir) on pagemux,
// on pagemux with Chrome's tree, on chrome-devtools-mcp and on Playwright
// MCP: times, sizes, and how many pages' text is chrome-devtools-mcp's node
// for node (realsnap.go, fidelity.go; -dump writes every text). The tables
// go to stdout, progress to stderr; -json writes the figures to a file.
//
// The binary is $PAGEMUX_BIN (scripts/bench sets it) or, without it, one
// built from this module into a temporary directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is everything the flags say.
type config struct {
	bin         string
	n           int
	hold        time.Duration
	jsonPath    string
	modes       []string
	callTimeout time.Duration
	timeout     time.Duration
	strict      bool
	audit       bool
	bursts      int
	bigNodes    int // bigsnap.go
	// realsnap.go: take_snapshot of the pages of testdata/real.
	realDir, peerDir string
	realReps         int
	realPages        []string // realsnap.go; empty: all of realPages
	// realsnap.go and fidelity.go: the APG examples' snapshots, and where
	// every server's answers are written.
	apgDir  string
	apgReps int
	dumpDir string
	settle  time.Duration
	// agents.go: the many-agents benchmark over HTTP.
	agents      []int
	agentModes  []string
	agentCalls  int
	agentWait   time.Duration
	holders     int
	agentSettle time.Duration
	agentArgs   []string
	// fleet.go: -agent-replicas above 1 serves the agents from replicas
	// sharing their locks through etcd, on -agent-chromes Chromes.
	replicas, chromes int
	etcdBin           string
	etcdFsync         bool
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	// A flag set of our own: the default one also carries httptest's flag.
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modes := "global,page"
	agentCounts, agentModes := "1,2,4,8,32", "page,global"
	fs.StringVar(&c.bin, "bin", os.Getenv("PAGEMUX_BIN"), "pagemux `binary` (default $PAGEMUX_BIN; empty: go build one into a temporary directory)")
	fs.IntVar(&c.n, "n", 200, "evaluate_script calls; click and fill make n/4 each")
	fs.DurationVar(&c.hold, "hold", 5*time.Second, "how long page A's script runs while page B is probed")
	fs.StringVar(&c.jsonPath, "json", "", "also write the figures as JSON to `FILE`")
	fs.StringVar(&modes, "modes", modes, "lock modes to measure over stdio, comma-separated (empty: none)")
	fs.StringVar(&agentCounts, "agents", agentCounts, "numbers of agents sharing one server over HTTP, comma-separated (empty: skip the many-agents benchmark)")
	fs.StringVar(&agentModes, "agent-modes", agentModes, "lock modes of the many-agents benchmark, comma-separated (empty: skip it)")
	fs.IntVar(&c.agentCalls, "agent-calls", 5, "calls of the in-page wait each agent makes")
	fs.DurationVar(&c.agentWait, "agent-wait", 200*time.Millisecond, "how long each agent's in-page wait lasts")
	fs.DurationVar(&c.agentSettle, "agent-settle", time.Second, "how long the agents' freshly opened pages sit idle before their calls (Chrome's renderers finish loading them meanwhile; their CPU is reported)")
	fs.Func("agent-arg", "one more `FLAG` for the many-agents server, such as --browser-url=http://127.0.0.1:9222 to profile a Chrome of one's own; repeatable", func(v string) error {
		c.agentArgs = append(c.agentArgs, v)
		return nil
	})
	fs.IntVar(&c.replicas, "agent-replicas", 1, "pagemux --http replicas the agents are spread over; above 1 they share their locks through an etcd started for them (-etcd-bin) and drive -agent-chromes Chromes they attach to")
	fs.IntVar(&c.chromes, "agent-chromes", 2, "with -agent-replicas above 1, the Chromes the replicas attach to (replica i on Chrome i·chromes/replicas)")
	fs.StringVar(&c.etcdBin, "etcd-bin", os.Getenv("PAGEMUX_ETCD"), "with -agent-replicas above 1, the etcd `binary` to start (default $PAGEMUX_ETCD; ./scripts/bench gives bin/etcd-plain)")
	fs.BoolVar(&c.etcdFsync, "etcd-fsync", true, "with -agent-replicas above 1, let etcd fsync its log as in production (false: --unsafe-no-fsync, as the tests run it)")
	fs.IntVar(&c.holders, "holders", 8, "agents holding a -hold script on their own pages while quick calls are timed on a free one, page mode (0: skip)")
	fs.DurationVar(&c.callTimeout, "call-timeout", 30*time.Second, "longest wait for one tool call")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "longest whole run; the bench stops by itself after it (the 200,000-node snapshot alone takes 3 to 5 minutes on a 2-CPU machine)")
	fs.BoolVar(&c.strict, "strict", false, "exit 1 when a goal is missed, not only when calls fail")
	fs.IntVar(&c.bursts, "bursts", 100, "pipelined bursts of 10 evaluate_script calls written in one write each, checked for order (0: none)")
	fs.IntVar(&c.bigNodes, "big-nodes", 200000, "DOM nodes of the page take_snapshot is measured on, on a server of its own (0: skip)")
	fs.StringVar(&c.realDir, "real-dir", "testdata/real", "`DIR` of the real pages whose snapshots are measured, sizes and times against the peers (empty: skip)")
	fs.StringVar(&c.peerDir, "peers", "cmd/bench/peers", "`DIR` where ./scripts/bench installed chrome-devtools-mcp, Playwright MCP and js-tiktoken (npm ci)")
	fs.IntVar(&c.realReps, "real-reps", 5, "timed take_snapshot calls per page and server (the median is reported)")
	fs.Func("real-pages", "comma-separated `PAGES` of -real-dir to measure (default: the ten of realsnap.go)", func(v string) error {
		c.realPages = strings.Split(v, ",")
		return nil
	})
	apg := "testdata/aria-practices"
	if _, err := os.Stat(apg); err != nil {
		apg = ""
	}
	fs.StringVar(&c.apgDir, "apg-dir", apg, "`DIR` of the W3C ARIA Authoring Practices examples (patterns/*/examples/*.html) whose snapshots are compared with chrome-devtools-mcp's and timed, as the real pages' are (default testdata/aria-practices when it exists; empty: skip)")
	fs.DurationVar(&c.settle, "settle", 1500*time.Millisecond, "how long each page, once loaded on every server, sits before the servers' whole snapshots are taken (the APG examples finish on timers after their load)")
	fs.IntVar(&c.apgReps, "apg-reps", 3, "timed snapshot calls per APG example and server (the median is reported)")
	fs.StringVar(&c.dumpDir, "dump", "", "write every server's snapshot answer of every page to `DIR`/SERVER/CORPUS/PAGE.txt, and its nodes as compared (uids aside, quoting undone) to PAGE.nodes, for diff -r")
	snapOnly := fs.Bool("snapshot-only", false, "measure the real pages' snapshots only (as -modes= -agents= -holders=0 -big-nodes=0)")
	fs.BoolVar(&c.audit, "audit", true, "also probe page B while page A runs a real Lighthouse audit (needs ./scripts/setup)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *snapOnly {
		modes, agentCounts, c.holders, c.bigNodes = "", "", 0, 0
	}
	if c.realReps < 1 || c.apgReps < 1 || c.settle < 0 {
		return nil, errors.New("-real-reps and -apg-reps must be positive, -settle not negative")
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; see -help", fs.Arg(0))
	}
	if c.n < 1 || c.n > 100000 {
		return nil, fmt.Errorf("-n %d: want 1 to 100000", c.n)
	}
	if c.hold < 100*time.Millisecond || c.hold > 5*time.Minute {
		return nil, fmt.Errorf("-hold %v: want 100ms to 5m", c.hold)
	}
	if c.callTimeout <= 0 || c.timeout <= 0 {
		return nil, errors.New("-call-timeout and -timeout must be positive")
	}
	var err error
	if c.modes, err = lockModes("-modes", modes); err != nil {
		return nil, err
	}
	if c.agentModes, err = lockModes("-agent-modes", agentModes); err != nil {
		return nil, err
	}
	for _, f := range strings.Split(agentCounts, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue // -agents= skips the many-agents benchmark
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("-agents: %q: want numbers from 1 to 64 (pagemux queues 64 calls per lock at most)", f)
		}
		c.agents = append(c.agents, n)
	}
	if c.agentCalls < 1 || c.agentWait <= 0 || c.holders < 0 {
		return nil, errors.New("-agent-calls and -agent-wait must be positive, -holders not negative")
	}
	if c.replicas < 1 || c.replicas > 16 || (c.replicas > 1 && (c.chromes < 1 || c.chromes > c.replicas)) {
		return nil, errors.New("-agent-replicas: want 1 to 16; -agent-chromes: 1 to the replicas")
	}
	if c.replicas > 1 && c.etcdBin == "" {
		return nil, errors.New("-agent-replicas above 1 needs an etcd: -etcd-bin or $PAGEMUX_ETCD (./scripts/bench builds bin/etcd-plain)")
	}
	return c, nil
}

// lockModes parses a comma-separated list of lock modes; "" is none.
func lockModes(flag, list string) ([]string, error) {
	var out []string
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m != "global" && m != "page" {
			return nil, fmt.Errorf("%s: unknown lock mode %q; want global and/or page", flag, m)
		}
		out = append(out, m)
	}
	return out, nil
}

// run benchmarks every mode and returns the exit code: 1 when a mode failed
// or a call failed (or, with -strict, a goal was missed).
func run(ctx context.Context, cfg *config, stdout io.Writer, log *slog.Logger) int {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	bin, cleanup, err := binary(ctx, cfg.bin, log)
	if err != nil {
		log.Error("no pagemux binary", "err", err)
		return 1
	}
	defer cleanup()
	site := startSite(cfg.realDir, cfg.apgDir)
	defer site.Close()
	log.Info("test site", "url", site.URL)

	var rs []*modeResult
	for _, mode := range cfg.modes {
		if ctx.Err() != nil {
			break
		}
		r := bench(ctx, cfg, bin, site.URL, mode, log)
		printMode(stdout, cfg, r)
		rs = append(rs, r)
	}
	if len(rs) > 0 {
		printComparison(stdout, cfg, rs)
	}
	var ags []*agentsResult
	if len(cfg.agents) > 0 || cfg.holders > 0 {
		for _, mode := range cfg.agentModes {
			if ctx.Err() != nil {
				break
			}
			ags = append(ags, agentsBench(ctx, cfg, bin, site.URL, mode, log)) // agents.go
		}
		printAgents(stdout, cfg, ags)
	}
	var big *bigResult
	if cfg.bigNodes > 0 && ctx.Err() == nil {
		big = bigSnapshot(ctx, cfg, bin, site.URL, log) // bigsnap.go
		printBig(stdout, big)
	}
	var cs []*corpus
	if (cfg.realDir != "" || cfg.apgDir != "") && ctx.Err() == nil {
		cs = realSnapshots(ctx, cfg, bin, site.URL, log) // realsnap.go
		printReal(stdout, cfg, cs)
	}
	code := 0
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, cfg, bin, rs, ags, big, cs); err != nil {
			log.Error("writing JSON", "err", err)
			code = 1
		} else {
			log.Info("wrote JSON", "file", cfg.jsonPath)
		}
	}
	if ctx.Err() != nil {
		log.Error("stopped early", "err", context.Cause(ctx))
		code = 1
	}
	if big != nil && (big.Failure != "" || (cfg.strict && big.RSSPeakMB > bigGoalRSSMB)) {
		code = 1
	}
	if failed, missed := agentsFailed(ags); failed || (cfg.strict && missed) {
		code = 1
	}
	for _, r := range rs {
		failed := r.Failure != "" || r.Evaluate.Errors+r.Click.Errors+r.Fill.Errors > 0 ||
			(r.BWhileA != nil && (r.BWhileA.B.Errors > 0 || r.BWhileA.AError != "")) ||
			(r.BWhileAudit != nil && (r.BWhileAudit.B.Errors > 0 || r.BWhileAudit.AError != "")) ||
			(r.Bursts != nil && (r.Bursts.OutOfOrder > 0 || r.Bursts.Burst.Samples < r.Bursts.Bursts))
		missed := false
		for _, g := range r.Goals {
			missed = missed || !g.Met
		}
		if failed || (cfg.strict && missed) {
			code = 1
		}
	}
	return code
}

// binary returns the pagemux binary to run: bin if given, else one built
// from this module, removed by cleanup.
func binary(ctx context.Context, bin string, log *slog.Logger) (string, func(), error) {
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", nil, fmt.Errorf("PAGEMUX_BIN: %w", err)
		}
		return abs, func() {}, nil
	}
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(gomod)), "go.mod") {
		return "", nil, fmt.Errorf("not inside the pagemux module (go env GOMOD: %q, %v); set PAGEMUX_BIN or -bin", gomod, err)
	}
	dir, err := os.MkdirTemp("", "pagemux-bench-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	out := filepath.Join(dir, "pagemux")
	log.Info("building pagemux", "dir", root, "out", out)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build: %w", err)
	}
	return out, cleanup, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	code := run(ctx, cfg, os.Stdout, log)
	stop()
	os.Exit(code)
}
