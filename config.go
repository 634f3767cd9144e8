package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/internal/cli"
	"github.com/pagemux/pagemux/policy"
	"github.com/pagemux/pagemux/rules"
	"github.com/pagemux/pagemux/secrets"
	"github.com/pagemux/pagemux/serve"
	"github.com/pagemux/pagemux/storagestate"
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
	// storageState is --storage-state, read at start: what the default
	// browser context starts with.
	storageState *storagestate.State
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
	allowedURLs, blockedURLs cli.Repeated
	secrets                  secretsConfig // secretflags.go
	profile                  profileConfig // profileflags.go
	record                   recordConfig  // recordflags.go
	ui                       uiConfig      // uiflags.go
	snapshots                snapConfig    // snapshotflags.go
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("pagemux", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var workspaces, tokens, origins, admins cli.Repeated
	tokenFile := ""
	bf := cli.AddBrowserFlags(fs, &c.browser, &c.isolated)
	addEtcdFlags(fs, &c.etcd)
	addSecretFlags(fs, &c.secrets)
	addProfileFlags(fs, &c.profile)
	addRecordFlags(fs, &c.record)
	addUIFlags(fs, &c.ui)
	addSnapshotFlags(fs, &c.snapshots)
	fs.Func("storage-state", "start logged in: set the cookies and localStorage of `FILE` (Playwright's storageState JSON, as the storage_state tool saves it) in the default browser context before its first page loads (the localStorage in each document of its origins before the page's scripts run); over HTTP, agents' own contexts do not get it (set_storage_state does)", func(path string) (err error) {
		c.storageState, err = storagestate.Read(path)
		return err
	})
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
	fs.IntVar(&c.maxTasks, "max-tasks", tools.DefaultMaxTasks, "the most MCP tasks `N` one agent (one --auth-token; the one client on stdio) runs at once: long calls (lighthouse_audit, traces, take_heapsnapshot, screencast_stop, har_save, pdf_save) sent with params.task; past it a task-augmented call is refused")
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
		cli.PrintFlags(fs, stderr)
	}
	args = translateNodeFlags(args, func(name string) bool { return fs.Lookup(name) != nil }, stderr)
	if err := cli.ParseArgs(fs, args, stderr); err != nil {
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
	if err := c.profile.check(c.httpAddr != ""); err != nil {
		return nil, err
	}
	if err := c.record.check(); err != nil {
		return nil, err
	}
	if err := c.ui.check(); err != nil {
		return nil, err
	}
	c.http.AllowedOrigins = origins
	if err := c.checkIsolation(admins); err != nil {
		return nil, err
	}
	if err := c.secrets.load(c.http.Tokens); err != nil {
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
	if err := bf.Finish(); err != nil {
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
	var h slog.Handler = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	if c.logFormat == "json" {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	}
	return slog.New(secrets.Handler(h, c.secrets.masker())), closeLog, nil
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

// parseTokens reads --auth-token and --auth-token-file into c.http.Tokens.
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
