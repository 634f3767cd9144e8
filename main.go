// Command pagemux is an MCP server that drives a real headless Chrome over the
// DevTools protocol, with per-page FIFO locks so that agents working on
// different tabs do not wait for each other.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/lighthouse"
	"github.com/pagemux/pagemux/metrics"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/policy"
	"github.com/pagemux/pagemux/rules"
	"github.com/pagemux/pagemux/serve"
	"github.com/pagemux/pagemux/smoke"
	"github.com/pagemux/pagemux/tools"
)

// config is everything the flags say.
type config struct {
	browser  browser.Config
	isolated bool
	etcd     etcdConfig // etcdflags.go
	lockMode string
	lockWait time.Duration
	// toolTimeout bounds how long one call holds its locks.
	toolTimeout time.Duration
	// maxHold bounds a trace or screencast that spans calls.
	maxHold time.Duration
	// maxOutput caps the characters of a tool result's text.
	maxOutput int
	// snapshotMode is how snapshots answer: full or incremental.
	snapshotMode string
	maxQueue     int
	logLevel     string
	logFormat    string
	logFile      string
	// rulesFile is --rules; rules is it as read at start.
	rulesFile string
	rules     *rules.Set
	version   bool
	// workspaces are the directories file paths given to tools must lie in.
	workspaces []string
	// httpAddr serves Streamable HTTP there instead of stdio.
	httpAddr string
	http     serve.HTTPOptions
	// pages says whether HTTP agents see each other's pages.
	pages         string
	keepPages     bool
	isolateAgents bool
	// sharedContext puts every HTTP agent in one browser context.
	sharedContext bool
	// maxPagesPerAgent bounds the pages of one HTTP agent; 0: no bound.
	maxPagesPerAgent int
	// maxTasks bounds the MCP tasks one agent runs at once.
	maxTasks int
	// metricsAddr serves /metrics there (loopback), for stdio too.
	metricsAddr string
	// join bridges stdio to a pagemux serving HTTP at this URL.
	join      string
	joinToken string
	joinAgent string
	// allowFiles and noFiles change the file: rule; allowedURLs and
	// blockedURLs are the URL patterns (urlPolicy).
	allowFiles, noFiles      bool
	allowedURLs, blockedURLs repeated
}

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("pagemux", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var workspaces, tokens, origins, admins repeated
	tokenFile := ""
	bf := addBrowserFlags(fs, &c.browser, &c.isolated)
	addEtcdFlags(fs, &c.etcd)
	fs.Var(&workspaces, "workspace", "a `DIR` that file paths given to tools (screenshots, uploads, traces, downloads) must lie in; relative paths land in the first; over HTTP each agent gets DIR/<agent-key>/ of its own; repeatable (default: on stdio the MCP client's roots and the OS temp dir, over HTTP a private directory per agent, $TMPDIR/pagemux-files-<pid>-<random>/<agent-key>/, removed on exit; never the working directory, and never Chrome's profile)")
	fs.StringVar(&c.lockMode, "lock-mode", "global", "`MODE`: global (one lock for every call; with --http, agents take turns, each agent's calls in order) or page (one FIFO lock per page, so tabs work in parallel)")
	fs.DurationVar(&c.lockWait, "lock-timeout", 2*time.Minute, "longest wait in a lock queue before a call fails")
	fs.IntVar(&c.maxOutput, "max-output", tools.DefaultMaxOutput, "cut the text of a tool result to about `N` characters, with a note on how to get all of it (0: no cap)")
	fs.StringVar(&c.snapshotMode, "snapshot-mode", tools.SnapshotFull, "`MODE` of snapshots (take_snapshot, wait_for, includeSnapshot): full (the whole tree, as chrome-devtools-mcp answers) or incremental (after an agent's first snapshot of a document, what changed since its last one); take_snapshot's mode overrides it per call")
	fs.DurationVar(&c.toolTimeout, "tool-timeout", tools.DefaultToolTimeout, "longest a tool call may hold its locks ("+tools.OwnBounds()+" at least); past it the call fails, its locks are released, a script it runs is terminated and Chrome is checked at once")
	fs.DurationVar(&c.maxHold, "max-hold", tools.DefaultMaxHold, "longest a performance trace (autoStop false) or a screencast may go on across calls; past it pagemux stops it, keeps the trace or video in the agent's workspace, and the agent's next answer says where")
	fs.IntVar(&c.maxQueue, "max-queue", 64, "calls one agent may have waiting per lock (with --http an agent is its token); past it that agent's next call fails at once as busy")
	fs.StringVar(&c.httpAddr, "http", "", "serve MCP over Streamable HTTP at `ADDR` (such as 127.0.0.1:8931; the endpoint is /mcp) instead of stdio")
	fs.Var(&tokens, "auth-token", "with --http, a bearer token `NAME=SECRET` that may call; repeatable. Needed to listen beyond loopback")
	fs.StringVar(&c.pages, "pages", "owned", "with --http, `MODE` owned (a page belongs to the agent that opened it) or shared (every agent sees every page)")
	fs.BoolVar(&c.isolateAgents, "isolate-agents", false, "with --http, open each agent's pages in a browser context of its own (cookies, storage, cache), closed with its last page: the default now, kept for old command lines (see --shared-context)")
	fs.BoolVar(&c.sharedContext, "shared-context", false, "with --http, open every agent's pages in one browser context (one logged-in profile: agents share cookies, storage and cache) instead of one context per agent")
	fs.Var(&admins, "admin-token", "with --http, the `NAME` of an --auth-token whose agents see every agent's calls and pages in /locks and pagemux://locks (others see their own and \"another agent\"); repeatable")
	fs.IntVar(&c.maxPagesPerAgent, "max-pages-per-agent", defaultMaxPagesPerAgent, "with --http, the most pages `N` one agent may have open, popups its pages open included (a popup past it is closed at once); 0: no bound")
	fs.IntVar(&c.maxTasks, "max-tasks", tools.DefaultMaxTasks, "the most MCP tasks `N` one agent (one --auth-token; the one client on stdio) runs at once: long calls (lighthouse_audit, traces, take_heapsnapshot, screencast_stop) sent with params.task; past it a task-augmented call is refused")
	fs.BoolVar(&c.keepPages, "keep-pages", false, "with --http, keep the pages of an agent that left, for its next session (same token and agent name), instead of closing them")
	fs.DurationVar(&c.http.IdleTTL, "agent-idle", 30*time.Minute, "with --http, an agent that sent nothing for this long leaves (its pages close)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics (loopback only), with stdio too; with --http they are also at /metrics there")
	fs.StringVar(&c.join, "join", "", "bridge stdio to a running pagemux at `URL` (such as http://127.0.0.1:8931/mcp), so that stdio clients share its browser; --auth-token then gives the SECRET alone")
	fs.StringVar(&c.joinAgent, "agent", "", "with --join, the agent `NAME` this bridge is: bridges of one token and name are one agent, and a new one takes over its pages (default: a name of its own, join-PID)")
	fs.StringVar(&tokenFile, "auth-token-file", "", "with --http, read NAME=SECRET tokens from `FILE`, one a line")
	fs.Var(&origins, "allowed-origin", "with --http, an `ORIGIN` (such as http://localhost:6274) browser requests may come from; repeatable (default none: requests with an Origin header are refused)")
	fs.Int64Var(&c.http.MaxBody, "max-body", serve.DefaultMaxBody, fmt.Sprintf("with --http, the largest request body in `BYTES`; a request's headers must arrive within %.0fs and its body within %.0fs, a keep-alive connection idle for %.0fs is closed, and at most %d connections are open at once",
		serve.DefaultHeaderTimeout.Seconds(), serve.DefaultBodyTimeout.Seconds(), serve.DefaultIdleTimeout.Seconds(), serve.DefaultMaxConns))
	fs.BoolVar(&c.allowFiles, "allow-file-navigations", false, "let tabs load file: URLs over --http too (refused there by default: any agent could read the host's files; on stdio they load unless --no-file-navigations)")
	fs.BoolVar(&c.noFiles, "no-file-navigations", false, "refuse file: URLs on stdio too (allowed there by default, as chrome-devtools-mcp does)")
	fs.Var(&c.allowedURLs, "allowed-url", "let tabs load only URLs matching `PATTERN`; repeatable (about:blank always loads). PATTERN: "+policy.PatternSyntax)
	fs.Var(&c.blockedURLs, "blocked-url", "refuse URLs matching `PATTERN` (as --allowed-url's); repeatable, checked first. chrome:, chrome-extension:, devtools:, view-source: and about: URLs other than about:blank, and pagemux's own and Chrome's DevTools endpoints, are always refused")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "`FORMAT` of the logs: text (key=value) or json (one object a line, for machines)")
	fs.StringVar(&c.rulesFile, "rules", "", "the action rules in `FILE` (YAML or JSON; docs/RULES.md): what each agent may do, exclusive resources, once-only actions, checked before every call; reloaded when the file changes (an edit that does not parse keeps the rules in force). Check one with: pagemux rules check FILE")
	fs.StringVar(&c.logFile, "log-file", "", "append logs to `FILE` instead of stderr")
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `pagemux %s: an MCP server (stdio) that drives a real Chrome, compatible with chrome-devtools-mcp.

Usage: pagemux [flags]

It speaks MCP on stdin/stdout; configure it in your MCP client, e.g.
  {"mcpServers": {"pagemux": {"command": "/path/to/bin/pagemux", "args": ["--lock-mode=page"]}}}

Flags:
`, tools.Version)
		printFlags(fs, stderr)
	}
	args = translateNodeFlags(args, func(name string) bool { return fs.Lookup(name) != nil }, stderr)
	if err := parseArgs(fs, args, stderr); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; see --help", fs.Arg(0))
	}
	if err := c.parseTokens(tokens, tokenFile); err != nil {
		return nil, err
	}
	if err := c.etcd.check(); err != nil {
		return nil, err
	}
	c.http.AllowedOrigins = origins
	if err := c.checkIsolation(admins); err != nil {
		return nil, err
	}
	if err := c.checkJoinAgent(); err != nil {
		return nil, err
	}
	if c.httpAddr != "" {
		if err := serve.CheckAddr(c.httpAddr, len(c.http.Tokens) > 0); err != nil {
			return nil, err
		}
	}
	if c.metricsAddr != "" {
		if err := serve.CheckAddr(c.metricsAddr, false); err != nil {
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
	}
	if err := bf.finish(); err != nil {
		return nil, err
	}
	if c.allowFiles && c.noFiles {
		return nil, errors.New("give --allow-file-navigations or --no-file-navigations, not both")
	}
	if _, err := c.urlPolicy(nil); err != nil {
		return nil, err
	}
	c.workspaces = workspaces
	if err := tools.CheckWorkspaces(workspaces, c.browser.UserDataDir); err != nil {
		return nil, err
	}
	if c.maxHold <= 0 {
		return nil, fmt.Errorf("--max-hold %v: want a positive duration, such as 5m (an agent's trace or screencast is stopped past it)", c.maxHold)
	}
	if c.maxQueue < 0 {
		return nil, fmt.Errorf("--max-queue %d: want 0 (unbounded) or more", c.maxQueue)
	}
	if c.maxTasks < 1 {
		return nil, fmt.Errorf("--max-tasks %d: want 1 or more (a client that wants no tasks sends no params.task)", c.maxTasks)
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return nil, fmt.Errorf("--log-format %q: want text or json", c.logFormat)
	}
	if c.rulesFile != "" {
		s, err := rules.Load(c.rulesFile)
		if err != nil {
			return nil, fmt.Errorf("--rules: %w", err)
		}
		c.rules = s
	}
	return c, nil
}

// browserFlags are the flags that say which Chrome to launch or attach to:
// the server's and `pagemux smoke`'s. finish turns them into the config.
type browserFlags struct {
	cfg        *browser.Config
	isolated   *bool
	headless   bool
	viewport   string
	chromeArgs repeated
	// browserURLs and wsEndpoints are the Chromes to attach to: one, or a
	// pool (browser.Config.Pool).
	browserURLs, wsEndpoints repeated
}

// addBrowserFlags adds the browser flags to fs; they fill in cfg and
// isolated once finish has run.
func addBrowserFlags(fs *flag.FlagSet, cfg *browser.Config, isolated *bool) *browserFlags {
	f := &browserFlags{cfg: cfg, isolated: isolated}
	fs.StringVar(&cfg.ExecPath, "executable-path", "", "the Chrome binary at `PATH` (default $CHROME_PATH, else the first of "+strings.Join(browser.ExecCandidates, ", ")+" on PATH)")
	fs.BoolVar(&f.headless, "headless", true, "run Chrome without a window")
	fs.BoolVar(isolated, "isolated", true, "use a temporary profile, removed on exit; false keeps ~/.cache/pagemux/chrome-profile")
	fs.StringVar(&cfg.UserDataDir, "user-data-dir", "", "keep Chrome's profile in `DIR` (implies --isolated=false)")
	fs.StringVar(&f.viewport, "viewport", "", "window size as `WxH`, such as 1280x720")
	fs.Var(&f.browserURLs, "browser-url", "attach to a running Chrome at `URL` (http://127.0.0.1:9222) instead of launching one; that Chrome keeps its DevTools port, which every page it loads can reach (over --http: any agent's page can take the whole browser). Repeatable: a pool of Chromes, driven as one browser (a new page goes to the one with the fewest pages)")
	fs.Var(&f.wsEndpoints, "ws-endpoint", "attach to a running Chrome at its DevTools websocket `URL` (ws://…/devtools/browser/…); repeatable, as --browser-url")
	fs.BoolVar(&cfg.OwnContext, "own-context", false, "with one --browser-url or --ws-endpoint: work in a browser context of pagemux's own in that Chrome, listing and driving only the tabs opened there, with cookies, storage and downloads of its own; Chrome disposes of it, closing its tabs, when pagemux exits. Several pagemux processes can so share one Chrome without seeing each other's pages (a performance trace still records the whole Chrome)")
	fs.IntVar(&cfg.RendererProcessLimit, "renderer-process-limit", 0, "cap Chrome's renderer processes at `N` (0: Chrome's default)")
	fs.BoolVar(&cfg.ProcessPerSite, "process-per-site", false, "share one renderer process between the tabs of a site")
	fs.BoolVar(&cfg.DisableSharedWorkers, "disable-shared-workers", false, "turn shared workers off")
	fs.BoolVar(&cfg.PipeJSON, "pipe-json", false, "speak JSON with a launched Chrome on its DevTools pipe instead of CBOR (CBOR spares Chrome converting big answers, a third of a big snapshot's time; this is the way back for a Chrome that does not speak it)")
	fs.StringVar(&cfg.SnapshotSource, "snapshot-source", browser.SourceAuto, "where a snapshot's tree comes from: `SOURCE` page (computed by a script in an isolated world of the page, with Chrome's own subtrees where the script cannot be sure of Chrome's rules: the same text, under half of Chrome's time on a big page), chrome (Chrome's accessibility tree, as chrome-devtools-mcp reads it) or auto (the quicker of the two for the page: chrome on a small one); a verbose snapshot is always Chrome's")
	fs.Var(&f.chromeArgs, "chrome-arg", "extra Chrome `flag`, such as --lang=de; repeatable")
	return f
}

// finish checks the browser flags once parsed and completes the config.
func (f *browserFlags) finish() error {
	f.cfg.Headful = !f.headless
	f.cfg.ChromeArgs = f.chromeArgs
	switch f.cfg.SnapshotSource {
	case browser.SourceChrome, browser.SourcePage, browser.SourceAuto:
	default:
		return fmt.Errorf("--snapshot-source %q: want auto, page or chrome", f.cfg.SnapshotSource)
	}
	if f.viewport != "" {
		w, h, ok := strings.Cut(f.viewport, "x")
		wi, err1 := strconv.Atoi(w)
		hi, err2 := strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil || wi <= 0 || hi <= 0 {
			return fmt.Errorf("--viewport %q: want WIDTHxHEIGHT, such as 1280x720", f.viewport)
		}
		f.cfg.ViewportWidth, f.cfg.ViewportHeight = wi, hi
	}
	if len(f.browserURLs) > 0 && len(f.wsEndpoints) > 0 {
		return errors.New("give --browser-url or --ws-endpoint, not both")
	}
	attach := append(slices.Clone(f.browserURLs), f.wsEndpoints...)
	if len(attach) > 0 {
		if len(f.browserURLs) > 0 {
			f.cfg.BrowserURL = attach[0]
		} else {
			f.cfg.WSEndpoint = attach[0]
		}
		f.cfg.Pool = attach[1:]
	}
	switch {
	case f.cfg.OwnContext && len(attach) == 0:
		return errors.New("--own-context is for a Chrome pagemux attaches to: give --browser-url or --ws-endpoint (a Chrome pagemux launches is its own already)")
	case f.cfg.OwnContext && len(attach) > 1:
		return errors.New("--own-context takes one --browser-url or --ws-endpoint, not a pool")
	}
	if i := duplicate(attach); i >= 0 {
		return fmt.Errorf("the browser %s is given twice: give each Chrome of a pool once", attach[i])
	}
	if !*f.isolated && f.cfg.UserDataDir == "" && !f.cfg.Attaches() {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("--isolated=false needs a cache directory: %w; give --user-data-dir", err)
		}
		f.cfg.UserDataDir = filepath.Join(dir, "pagemux", "chrome-profile")
	}
	return nil
}

// duplicate returns the index of the first string of ss given before, -1
// when none is.
func duplicate(ss []string) int {
	for i, s := range ss {
		if slices.Index(ss, s) < i {
			return i
		}
	}
	return -1
}

// smokeUsage heads `pagemux smoke --help`.
const smokeUsage = `pagemux smoke: check a site's pages in a real headless Chrome, many at once, and fail the build when one is broken.

Usage: pagemux smoke [flags] URL...
       pagemux smoke [flags] --urls FILE
       pagemux smoke            (no URL: a demo site built into pagemux, one page broken on purpose)

Each page loads in its own tab (--parallel at once), kept visible and focused as a tab in front is,
and, once its network is quiet, is checked for: its HTTP status, uncaught exceptions and console
errors, failed requests, DevTools issues, and --expect-text, --expect-selector, --a11y (axe-core,
built in), --check-links and --lighthouse (categories, --lighthouse-audit, --lighthouse-budgets;
audits without performance side by side) when given; --steps and --login act on pages first, and
--crawl N checks N pages more that their links lead to.
Exit 0: all pass; 1: a check failed; 2: bad usage, or Chrome could not start.

Examples:
  pagemux smoke --junit report.xml https://example.com/ https://example.com/pricing
  pagemux smoke --a11y wcag21aa --a11y-impact serious --a11y-ignore region https://example.com/
  pagemux smoke --storage-state state.json https://app.example.com/account
  pagemux smoke --login login.json --steps steps.yaml --base-url "$PREVIEW_URL" /account /orders
  pagemux smoke --check-links --crawl 50 https://example.com/
  pagemux smoke --lighthouse accessibility=0.9 --lighthouse-audit color-contrast=1 --screenshots out/ --urls pages.txt
  pagemux smoke --lighthouse performance=0.8 --lighthouse-budgets budget.json --lighthouse-runs 3 https://example.com/

Flags (the browser flags are the server's):
`

// runSmoke is `pagemux smoke`: the smoke flags and the browser flags, in any order
// with the URLs, then the run. It returns the exit code.
func runSmoke(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pagemux smoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var bc browser.Config
	bf := addBrowserFlags(fs, &bc, new(bool))
	sf := smoke.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, smokeUsage)
		printFlags(fs, stderr)
	}
	var urls []string
	for {
		if err := parseArgs(fs, args, stderr); errors.Is(err, flag.ErrHelp) {
			return smoke.ExitPass
		} else if err != nil {
			fmt.Fprintf(stderr, "pagemux smoke: %v\n", err)
			return smoke.ExitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		urls, args = append(urls, fs.Arg(0)), fs.Args()[1:]
	}
	o, err := sf.Finish(urls)
	if err == nil {
		err = bf.finish()
	}
	if err != nil {
		fmt.Fprintf(stderr, "pagemux smoke: %v\nSee pagemux smoke --help.\n", err)
		return smoke.ExitUsage
	}
	return smoke.Run(ctx, o, bc, stdout, stderr)
}

// printFlags lists the flags GNU style, with two dashes, as the README does.
func printFlags(fs *flag.FlagSet, w io.Writer) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s%s\n", line, usage, def)
	})
}

func newLogger(c *config, stderr io.Writer) (*slog.Logger, func(), error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	w, closeLog := stderr, func() {}
	if c.logFile != "" {
		f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, closeLog = f, func() { f.Close() }
	}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), closeLog, nil
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), closeLog, nil
}

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
	// The profiles of a pagemux that was killed go now; a failed sweep is
	// no reason not to serve.
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		browser.SweepProfiles(ctx, log)
	}()
	defer func() { <-swept }()
	b := browser.New(c.browser)
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
	srv := tools.New(b, locks, tools.Options{Log: log, Workspaces: c.workspaces, ToolTimeout: c.toolTimeout, MaxHold: c.maxHold, OnCall: m.ToolCall,
		Agents: reg, KeepPages: c.keepPages, IsolateAgents: c.isolateAgents, MaxOutput: c.maxOutput, URLPolicy: urls, Cluster: shared, SnapshotMode: snapshotMode,
		MaxTasks: c.maxTasks, Rules: engine, OnDecision: m.RuleDecision})
	defer srv.Close()
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

// isTerminal reports whether r is a terminal: not merely a character
// device, as /dev/null is, which a service manager or a script gives as
// stdin.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return "pagemux"
	}
	return p
}

func main() {
	// A write to a closed stdout (the client died) then fails with EPIPE,
	// which ends pagemux cleanly, instead of the runtime killing it by
	// SIGPIPE with Chrome and its profile left behind. Notify, unlike
	// Ignore, leaves SIGPIPE at its default in the processes pagemux starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), exitSignals()...)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "rules" {
		stop()
		os.Exit(runRules(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "smoke" {
		code := runSmoke(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagemux:", err)
		os.Exit(2)
	}
	if c.version {
		fmt.Println("pagemux", tools.Version)
		return
	}
	if err := run(ctx, c, os.Stdin, os.Stdout, os.Stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "pagemux:", err)
		os.Exit(1)
	}
}

// exitSignals are the signals that stop pagemux cleanly: SIGTERM, and SIGINT
// and SIGHUP unless pagemux started with them ignored (nohup, a background
// job of a script), which catching them would undo.
func exitSignals() []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM}
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

// checkJoinAgent checks --agent, and names a bridge without one after its
// process, so that bridges sharing a token are agents of their own.
func (c *config) checkJoinAgent() error {
	switch {
	case c.join == "" && c.joinAgent != "":
		return errors.New("--agent names a --join bridge's agent: give it with --join")
	case c.join == "":
		return nil
	case c.joinAgent == "":
		c.joinAgent = fmt.Sprintf("join-%d", os.Getpid())
		return nil
	}
	if err := serve.CheckAgentName(c.joinAgent); err != nil {
		return fmt.Errorf("--agent: %w", err)
	}
	return nil
}

// parseTokens reads --auth-token and --auth-token-file into c.http.Tokens.
// defaultMaxPagesPerAgent is --max-pages-per-agent's default: a page costs
// Chrome about 35 MB, so a few agents at the bound fit a laptop.
const defaultMaxPagesPerAgent = 20

// checkIsolation checks the flags of isolation between HTTP agents and
// sets what they say: one browser context per agent unless
// --shared-context, and the admin tokens, which must name tokens.
func (c *config) checkIsolation(admins []string) error {
	if c.sharedContext && c.isolateAgents {
		return errors.New("--shared-context and --isolate-agents contradict each other: give one (isolation is the default)")
	}
	c.isolateAgents = !c.sharedContext
	if c.maxPagesPerAgent < 0 {
		return fmt.Errorf("--max-pages-per-agent %d: want 0 (no bound) or more", c.maxPagesPerAgent)
	}
	for _, name := range admins {
		if _, ok := c.http.Tokens[name]; !ok {
			return fmt.Errorf("--admin-token %q names no --auth-token: give the NAME of one, such as --auth-token %s=SECRET --admin-token %s", name, name, name)
		}
	}
	c.http.AdminTokens = admins
	return nil
}

func (c *config) parseTokens(flags []string, file string) error {
	if c.join != "" {
		if c.httpAddr != "" {
			return errors.New("give --http or --join, not both")
		}
		if file != "" || len(flags) > 1 {
			return errors.New("--join takes one --auth-token SECRET")
		}
		if len(flags) == 1 {
			c.joinToken = flags[0]
		}
		return nil
	}
	lines := slices.Clone(flags)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("--auth-token-file: %w", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) > 0 && c.httpAddr == "" {
		return errors.New("--auth-token and --auth-token-file need --http")
	}
	for _, l := range lines {
		name, secret, ok := strings.Cut(l, "=")
		if !ok || name == "" {
			// Nothing of it is echoed: it may be a real secret, mistyped.
			return errors.New("an auth token is not NAME=SECRET; give each as --auth-token NAME=SECRET")
		}
		if len(secret) < 8 {
			return fmt.Errorf("auth token %q: its secret is shorter than 8 characters", name)
		}
		if c.http.Tokens == nil {
			c.http.Tokens = map[string]string{}
		}
		if _, dup := c.http.Tokens[name]; dup {
			return fmt.Errorf("auth token %q given twice", name)
		}
		c.http.Tokens[name] = secret
	}
	return nil
}

// urlPolicy is the URL policy of the flags: file: refused over HTTP unless
// --allow-file-navigations and allowed on stdio unless --no-file-navigations,
// the --allowed-url and --blocked-url patterns, and pagemux's own endpoints
// and b's Chrome's out of reach (b may be nil, to check the flags).
func (c *config) urlPolicy(b *browser.Browser) (*policy.Policy, error) {
	o := policy.Options{Allowed: c.allowedURLs, Blocked: c.blockedURLs, AllowFiles: !c.noFiles,
		FileRule: "file: URLs are refused (--no-file-navigations); start pagemux without it to allow them"}
	if c.httpAddr != "" {
		o.AllowFiles = c.allowFiles
		o.FileRule = "file: URLs are refused over HTTP (any agent could read the host's files); start pagemux with --allow-file-navigations to allow them"
	}
	var own []string
	for _, a := range []string{c.httpAddr, c.metricsAddr} {
		if a != "" {
			own = append(own, a)
		}
	}
	for _, u := range append([]string{c.browser.BrowserURL, c.browser.WSEndpoint}, c.browser.Pool...) {
		if h := browser.HostPort(u); h != "" {
			own = append(own, h)
		}
	}
	o.Endpoints = func() []string {
		if b == nil {
			return own
		}
		// The bridge of the Chrome pagemux launched starts on first use.
		return append(slices.Clone(own), b.OwnEndpoints()...)
	}
	p, err := policy.New(o)
	if err != nil {
		return nil, fmt.Errorf("--allowed-url or --blocked-url: %w", err)
	}
	return p, nil
}
