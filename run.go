package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/lighthouse"
	"github.com/pagemux/pagemux/metrics"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/rules"
	"github.com/pagemux/pagemux/serve"
	"github.com/pagemux/pagemux/tools"
)

// watchRules puts the --rules read at start in force, and each edit of the
// file that parses after it; nil without --rules.
func (c *config) watchRules(ctx context.Context, log *slog.Logger, m *metrics.Metrics) (*rules.Engine, error) {
	if c.rules == nil {
		return nil, nil
	}
	e := rules.NewEngine(c.rules)
	log.Info("action rules in force", "rules", c.rules.Summary())
	m.Gauge("rules", "With --rules, the action rules in force.", func() float64 { return float64(e.Set().Count()) })
	err := rules.Watch(ctx, c.rulesFile, e, func(s *rules.Set, err error) {
		m.RulesReloaded(err == nil)
		if err != nil {
			log.Warn("the rules file changed but was not taken: the rules in force stay", "error", err)
			return
		}
		log.Info("action rules reloaded", "rules", s.Summary())
	})
	return e, err
}

// run serves MCP on stdin and stdout until stdin ends or ctx is done.
func run(ctx context.Context, c *config, stdin io.Reader, stdout, stderr io.Writer) error {
	log, closeLog, err := newLogger(c, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	mode, err := pagelock.ParseMode(c.lockMode)
	if err != nil {
		return fmt.Errorf("--lock-mode: %w", err)
	}
	snapshotMode, err := tools.ParseSnapshotMode(c.snapshotMode)
	if err != nil {
		return fmt.Errorf("--snapshot-mode: %w", err)
	}
	if c.join != "" {
		log.Info("bridging stdio to a shared pagemux", "url", c.join)
		return serve.Join(ctx, c.join, stdin, stdout, serve.JoinOptions{Log: log, Token: c.joinToken, Agent: c.joinAgent})
	}
	c.browser.Logger = log
	if a := c.browser.Profile; a != nil {
		log.Info(a.String()) // --auto-connect, or a held --user-data-dir
	}
	// The profiles of a pagemux that was killed go now; a failed sweep is
	// no reason not to serve.
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		browser.SweepProfiles(ctx, log)
	}()
	defer func() { <-swept }()
	b := browser.New(c.browser)
	if st := c.storageState; st != nil {
		b.PresetState(st.CookieParams(), st.LocalStorageScript()) // --storage-state
	}
	m := metrics.New(mode)
	locks := pagelock.New(pagelock.Options{Mode: mode, Timeout: c.lockWait, MaxQueue: c.maxQueue, Observer: m})
	m.WatchLocks(locks)
	m.Gauge("pages_open", "Pages open in the browser.", func() float64 { return float64(len(b.Pages())) })
	m.Counter("chrome_launches_total", "Times Chrome was started or attached to.", func() float64 { l, _, _ := b.Counts(); return float64(l) })
	m.Counter("chrome_crashes_total", "Tabs whose renderer crashed.", func() float64 { _, c, _ := b.Counts(); return float64(c) })
	m.Counter("chrome_exits_total", "Times Chrome went away while in use.", func() float64 { _, _, e := b.Counts(); return float64(e) })
	var reg *agents.Registry
	if c.httpAddr != "" {
		pm, err := agents.ParseMode(c.pages)
		if err != nil {
			return fmt.Errorf("--pages: %w", err)
		}
		reg = agents.New(pm)
		reg.LimitPages(c.maxPagesPerAgent)
		m.Gauge("agents", "Agents known now (HTTP sessions and tokens).", func() float64 { return float64(reg.Agents()) })
	}
	urls, err := c.urlPolicy(b)
	if err != nil {
		return err
	}
	shared, closeShared, err := c.etcd.open(log, len(c.browser.Pool) > 0)
	if err != nil {
		return err
	}
	defer closeShared()
	if shared != nil {
		// Every process on the same Chrome shows a tab under one id.
		b.SetPageIDs(shared.Locks)
		shared.OnAcquire = m.EtcdAcquire
		st := shared.Locks.Stats
		m.Counter("etcd_leases_granted_total", "With --etcd, leases etcd granted this process (one more after each loss).", func() float64 { return float64(st().LeasesGranted) })
		m.Counter("etcd_lease_losses_total", "With --etcd, leases lost while in use: the locks held under them were lost.", func() float64 { return float64(st().LeasesLost) })
		m.WatchRegistry(shared.Locks.RegistrySize)
		m.Counter("etcd_keepalive_failures_total", "With --etcd, lease keepalives etcd did not answer in time.", func() float64 { return float64(st().KeepaliveFailures) })
	}
	engine, err := c.watchRules(ctx, log, m)
	if err != nil {
		return err
	}
	recorders, err := c.record.observers(b, log, &c.secrets, engine) // recordflags.go: --record
	if err != nil {
		return err
	}
	live := c.ui.open(ctx, log, c.httpAddr != "", shared != nil, c.record.viewer()) // uiflags.go: the live view, with the records
	srv := tools.New(b, locks, c.profile.options(tools.Options{Log: log, Workspaces: c.workspaces, ToolTimeout: c.toolTimeout, MaxHold: c.maxHold, OnCall: m.ToolCall,
		Agents: reg, KeepPages: c.keepPages, IsolateAgents: c.isolateAgents, MaxOutput: c.maxOutput, URLPolicy: urls, Cluster: shared, SnapshotMode: snapshotMode, SnapshotFormat: c.snapshots.format,
		MaxTasks: c.maxTasks, Rules: engine, OnDecision: m.RuleDecision, Secrets: c.secrets.all, AgentSecrets: c.secrets.byToken,
		Observers: append(live.observers(), recorders...)}))
	defer srv.Close()
	c.http.UI = live.attach(srv)
	if engine != nil {
		m.Gauge("rule_leases_waiting", "With --rules, calls waiting now for an exclusive resource another agent keeps as a lease.", func() float64 { return float64(srv.RuleLeasesWaiting()) })
	}
	defer lighthouse.CloseIdle() // the audits' node runners that wait for another
	if shared != nil {
		m.Gauge("etcd_fallback_local", "With --etcd and --etcd-fallback=local, 1 while calls are served on this process's locks alone because etcd is unavailable.", func() float64 {
			if srv.ClusterFallback() {
				return 1
			}
			return 0
		})
	}
	if c.metricsAddr != "" {
		go func() {
			if err := serve.ListenMetrics(ctx, c.metricsAddr, m.Handler(), log); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("metrics listener", "addr", c.metricsAddr, "error", err)
			}
		}()
	}
	if c.httpAddr == "" && isTerminal(stdin) {
		fmt.Fprintln(stderr, "pagemux speaks MCP on stdin/stdout: start it from an MCP client, not a terminal.\n"+
			`Client config: {"mcpServers": {"pagemux": {"command": "`+executable()+`", "args": ["--lock-mode=page"]}}}`+"\n"+
			"See pagemux --help for the flags. Waiting for MCP messages on stdin (Ctrl-D to quit).")
	}
	if c.httpAddr != "" {
		opts := c.http
		opts.Log, opts.Health, opts.Metrics = log, b.Status, m.Handler()
		opts.Locks = func(ctx context.Context) any { return srv.LocksFor(ctx) }
		opts.SeesTask = srv.SeesTask
		log.Info("serving MCP over HTTP", "addr", c.httpAddr, "lock_mode", mode, "tokens", slices.Sorted(maps.Keys(opts.Tokens)))
		return serveThenClose(ctx, log, b, func(ctx context.Context) error {
			return serve.ListenHTTP(ctx, c.httpAddr, srv.MCP(), opts)
		})
	}
	log.Info("serving MCP on stdio", "lock_mode", mode, "lock_timeout", c.lockWait, "tool_timeout", c.toolTimeout, "max_queue", c.maxQueue)
	err = serveThenClose(ctx, log, b, func(ctx context.Context) error {
		// Every call read before stdin closed gets its answer, bounded as
		// any call is: a fixed grace was outrun by a slow Chrome start, and
		// a client that writes its requests and closes stdin lost them.
		grace := c.toolTimeout + stdinCloseMargin
		return serve.ServeStdio(ctx, srv.MCP(), stdin, stdout, serve.StdioOptions{Log: log, Grace: grace})
	})
	if errors.Is(err, serve.ErrClientGone) {
		log.Info("the client went away; stopped")
		return nil
	}
	return err
}

const (
	// stdinCloseMargin is how long past --tool-timeout the calls in flight
	// when stdin closed may take: a call past its limit is answered within
	// tools.OverBound (abandoned 2 s later, then Chrome is checked), and
	// gets a moment more to write its answer.
	stdinCloseMargin = tools.OverBound + time.Second
	// answerWait is how long, after a signal, the calls in flight get to
	// write their answers once Chrome is closed (closing it ends them).
	answerWait = 200 * time.Millisecond
	// exitLimit bounds the whole shutdown: past it pagemux exits anyway, and
	// the kernel kills the Chrome it launched (see browser's
	// setProcessOptions). A shutdown takes about a second at most.
	exitLimit = 5 * time.Second
)

// serveThenClose serves until serveMCP returns (stdin ended, or the client
// went away) or ctx is done (a signal), then closes b: its Chrome and
// temporary profile. On a signal it does not wait for serveMCP first, so that
// calls still in flight, such as a script that never ends, cannot hold up the
// exit: closing Chrome ends them.
func serveThenClose(ctx context.Context, log *slog.Logger, b *browser.Browser, serveMCP func(context.Context) error) error {
	served := make(chan error, 1)
	go func() { served <- serveMCP(ctx) }()
	var err error
	signalled := false
	select {
	case err = <-served:
	case <-ctx.Done():
		signalled = true
		log.Info("signal received; stopping")
	}
	watchdog := time.AfterFunc(exitLimit, func() {
		log.Error("shutdown took too long; exiting anyway", "limit", exitLimit)
		os.Exit(1)
	})
	defer watchdog.Stop()
	start := time.Now()
	b.Close()
	log.Debug("browser closed", "took", time.Since(start))
	if signalled {
		select {
		case err = <-served:
		case <-time.After(answerWait):
			log.Warn("calls still running at exit")
		}
	}
	return err
}
