// Package tools is pagemux's MCP surface: the chrome-devtools-mcp compatible
// tools and pagemux's own, each wrapped in a Guard that holds the right
// locks for the call.
//
// A tool lives in the file of its group (pages.go, input.go, network.go,
// state.go for cookies and storage, routes.go, har.go, pdf.go …): an
// arguments struct whose tags are its JSON schema, and newTool(name,
// description, scope, handler), where scope says which lock it takes
// (pageScope: its page's; browserScope: none in page mode). The handler
// acts through the page (browser.Page and its Input, Storage and Capture
// views) and answers on c.resp; a typed value for the answer goes in
// answers.go. The group's function is listed in (*Server).tools(); then
// give the tool its annotations (compat.go), its rules groups
// (rules/groups.go), a row of README's lock table, and regenerate the
// schema snapshots and README's tool table (PAGEMUX_UPDATE_SCHEMAS=1 go
// test ./tools -run 'TestSchemaSnapshots|TestReadmeToolTable').
//
// A call goes through the stages serveCall (guard.go) lists: arguments,
// agent, secrets, admission (page, rules, lock queues), locks, handler,
// answer (masked), observers. Tests: sharedEnv(t, mode) is the shared
// server of a lock mode, with e.ok / e.fails / e.openPage; newIsoEnv is
// two agents over HTTP, and TestIsolationAttacks' EveryPageTool already
// calls every tool with a pageId on another agent's page.
package tools

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
	"github.com/pagemux/pagemux/rules"
	"github.com/pagemux/pagemux/secrets"
)

// Version is the server version reported to clients.
var Version = "0.1.0"

//go:embed instructions.md
var instructions string

// Server is the MCP server over one browser and one set of locks.
type Server struct {
	browser *browser.Browser
	locks   *pagelock.Locker
	log     *slog.Logger
	files   *workspace
	mcp     *server.MCPServer
	perf    tracer // performance.go: the running trace, the last summaries
	// secrets and agentSecrets are the agents' secrets by name, masker
	// hides all their values (secrets.go).
	secrets      *secrets.Set
	agentSecrets map[string]*secrets.Set
	masker       *secrets.Masker
	observers    []Observer     // observe.go
	restored     restoreScripts // state.go: set_storage_state's init scripts
	// maxHold bounds a hold across calls (a trace, a screencast): see
	// holds.go. holdLimits, nil by default, is the seam by which the action
	// rules give an agent a limit of its own: when set, holdLimit asks it
	// with the starting call's context and a kind (holdTrace,
	// holdScreencast), and a positive answer replaces maxHold for that hold.
	maxHold    time.Duration
	holdLimits func(ctx context.Context, kind string) time.Duration
	holdNotes  holdNotes   // holds.go: what agents are yet to read of holds their limit ended
	casts      screencasts // screencast.go: the running screencasts' holds
	// toolTimeout bounds how long one call holds its locks (bound.go).
	toolTimeout time.Duration
	onCall      func(tool, outcome string, took time.Duration)
	maxOutput   int // response.go
	agents      *agents.Registry
	replicas    *replicaSets // the agents' sets in etcd; nil without

	keepPages     bool
	isolateAgents bool
	cluster       *clusterState // cluster.go; nil: this process's locks alone
	tasks         taskTable     // tasks.go: the calls that run as MCP tasks
	snapshotMode  string        // incremental.go: SnapshotFull or SnapshotIncremental
	seen          seenSnapshots // incremental.go: each agent's last snapshot of each page
	harMarks      harMarks      // har.go: where har_start began each agent's recording

	// snapshotFormat is snapshot.FormatDefault or FormatCompact (snapshot.go).
	snapshotFormat string

	rules      *rules.Engine // rules.go: the action rules; nil: none
	once       rules.Once    // rules.go: once-only actions' records
	leases     leaseTable    // rules.go: the resources agents keep across calls
	onDecision func(rule, outcome string, cost time.Duration)

	profile profile      // profiles.go: the tools served and listed
	shots   shotSettings // screenshot.go: the cap, quality, image responses
	idle    *idleCloser  // idle.go: --browser-idle; nil: off
}

// Options are the settings of a Server beyond its browser and locks.
type Options struct {
	// Log receives the server's logs; nil discards them.
	Log *slog.Logger
	// Workspaces are the directories that file paths given to tools must lie
	// in; with Agents, each agent gets a directory of its own inside each.
	// Empty means the client's roots and the OS temp dir, or with Agents a
	// directory of each agent's own in the temp dir; never the working
	// directory (files.go).
	Workspaces []string
	// ToolTimeout bounds how long one call may hold its locks; past it the
	// call is stopped with an error that says so. Zero means
	// DefaultToolTimeout; some tools keep longer bounds (OwnBounds).
	ToolTimeout time.Duration
	// Agents, if set, tells agents apart: each has its own selected page
	// and, in agents.Owned mode, its own pages (see agents.go). Transports
	// that know agents (HTTP) mark their calls; nil: one client, as stdio.
	Agents *agents.Registry
	// KeepPages keeps the pages of an agent that left, still its identity's
	// (for its next session), instead of closing them.
	KeepPages bool
	// IsolateAgents opens each agent's pages in a browser context of its
	// own (cookies, storage, cache), closed with its last page.
	IsolateAgents bool
	// OnCall, if set, is told of every tool call when it is answered:
	// outcome "ok", "error" or "cancelled", and the time since it arrived.
	OnCall func(tool, outcome string, took time.Duration)
	// URLPolicy, if set, is what tabs may load: the browser keeps every tab
	// to it (Browser.SetURLPolicy) and navigate_page and new_page check
	// their URL before they act. nil: any URL.
	URLPolicy browser.URLPolicy
	// MaxOutput caps the characters of text a result carries; a longer
	// one is cut with a note that says how to get all of it. Zero or less
	// is no cap; --max-output defaults to DefaultMaxOutput.
	MaxOutput int
	// MaxHold bounds how long a hold across calls lasts: a performance
	// trace started with autoStop false, or a screencast, that its agent
	// does not stop. Past it pagemux stops it, keeps the trace or video in
	// the agent's workspace, and the agent's next answer says where (see
	// holds.go). Zero or less means DefaultMaxHold (5 minutes). It does not
	// bound one call: ToolTimeout does.
	MaxHold time.Duration
	// SnapshotMode is how snapshots answer unless a call says otherwise:
	// SnapshotFull ("" too), as chrome-devtools-mcp does, or
	// SnapshotIncremental, what changed since the agent's last snapshot of
	// the page's document (incremental.go).
	SnapshotMode string
	// SnapshotFormat is how snapshots are written unless a call says
	// otherwise: snapshot.FormatDefault ("" too), chrome-devtools-mcp's
	// text, or snapshot.FormatCompact, the same tree and uids in fewer
	// tokens (snapshot/compact.go).
	SnapshotFormat string
	// Cluster, if set, shares every call's locks with the other pagemux
	// processes that drive the same browser, in etcd (cluster.go).
	Cluster *Cluster
	// MaxTasks bounds the MCP tasks one agent (one token, or one client
	// without tokens) runs at once (tasks.go); zero: DefaultMaxTasks.
	MaxTasks int
	// Rules, if set, decides each call before it takes a lock (rules.go):
	// the action rules of --rules, which it may swap as the file changes.
	Rules *rules.Engine
	// OnDecision, if set, is told of each rules decision: the rule that
	// decided (or last applied; "" for none), the outcome and its cost.
	OnDecision func(rule, outcome string, cost time.Duration)
	// Secrets are the values agents may name as ${NAME} in the tools that
	// type or store values, and that no answer shows (secrets.go);
	// AgentSecrets, by --auth-token name, replace them for that token's
	// agents. Every agent's values are masked in every answer.
	Secrets      *secrets.Set
	AgentSecrets map[string]*secrets.Set
	// Observers see every call go by (observe.go): the live view, the
	// session records.
	Observers []Observer
	// Tools is the tool profile (profiles.go): group names (rules.Groups)
	// and tool names, -NAME to leave one out; only those are listed and
	// served. Empty: every tool. CheckProfile checks it.
	Tools []string
	// Slim serves chrome-devtools-mcp's --slim tools alone (navigate,
	// evaluate, screenshot), with Tools empty.
	Slim bool
	// ScreenshotMax caps a screenshot's pixels: a bigger one is scaled
	// down to fit, and its answer says so. Zero sides: no cap.
	ScreenshotMax browser.Size
	// ScreenshotQuality is the quality of jpeg and webp screenshots whose
	// call gives none (1-100); zero: Chrome's default.
	ScreenshotQuality int
	// ImageResponses is ImagesInclude ("" too) or ImagesOmit: screenshots
	// saved in the workspace, answered with their path only.
	ImageResponses string
	// BrowserIdle, if positive, closes a Chrome pagemux launched after
	// this long without calls, traces or screencasts (idle.go); the next
	// call starts a new one. An attached browser is never closed.
	BrowserIdle time.Duration
	// StepTools registers the tools of scripted steps (steps.go:
	// click_selector, fill_selector, wait_for_selector, wait_for_url,
	// add_init_script, new_window) for pagemux smoke; agents never get them.
	StepTools bool
}

// New registers every tool on a new MCP server. It does not start Chrome: the
// first call that needs it does.
func New(b *browser.Browser, locks *pagelock.Locker, opts Options) *Server {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	files, err := newWorkspace(opts.Workspaces, b.ProfileDirs)
	if err != nil {
		log.Warn("workspace roots", "error", err)
	}
	s := &Server{browser: b, locks: locks, log: log, files: files, toolTimeout: opts.ToolTimeout, onCall: opts.OnCall, maxOutput: opts.MaxOutput,
		agents: opts.Agents, keepPages: opts.KeepPages, isolateAgents: opts.IsolateAgents, snapshotMode: opts.SnapshotMode,
		rules: opts.Rules, onDecision: opts.OnDecision, secrets: opts.Secrets, agentSecrets: opts.AgentSecrets,
		observers: opts.Observers}
	s.masker = secrets.MaskerOf(opts.Secrets, opts.AgentSecrets)
	if s.toolTimeout <= 0 {
		s.toolTimeout = DefaultToolTimeout
	}
	s.maxHold = cmp.Or(max(opts.MaxHold, 0), DefaultMaxHold)
	s.snapshotFormat = opts.SnapshotFormat
	if opts.Cluster != nil {
		s.cluster = &clusterState{Cluster: *opts.Cluster}
		if s.agents != nil && b.Attaches() {
			s.replicas = &replicaSets{s: s}
			s.agents.Share(s.replicas) // replicas.go
		}
	}
	if s.rules != nil {
		s.holdLimits = s.ruleHolds // rules.go
	}
	if s.cluster != nil {
		s.leases.shared = s.cluster.Locks // rules.go: leases in etcd
	}
	s.tasks.max = cmp.Or(max(opts.MaxTasks, 0), DefaultMaxTasks)
	s.setProfile(opts) // profiles.go
	hooks := s.agentHooks()
	s.addProfileHooks(hooks)
	s.addTaskHooks(hooks) // tasks.go
	s.mcp = server.NewMCPServer("pagemux", Version, append(s.taskOptions(),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithHooks(hooks),
		server.WithInstructions(instructions),
	)...)
	b.SetURLPolicy(opts.URLPolicy)
	if s.agents != nil {
		s.agents.KeepPages(opts.KeepPages)
		b.OnPageOpened(s.pageOpened) // agents.go: a popup is its opener's owner's
	}
	files.agentOf, files.agentsOn, files.mcp, files.masker = s.agentOf, s.agents != nil, s.mcp, s.masker
	s.mcp.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, files.rootsChanged)
	b.OnDownloads(files.downloadDir)
	b.ObservePages(s.seen.observe) // incremental.go
	b.OnPageClosed(func(p *browser.Page) {
		locks.Close(pagelock.PageKey(p.ID))
		s.seen.forget(func(k seenKey) bool { return k.page == p.ID })
		s.restored.forget(p.ID)
		s.harMarks.forget(func(k harMarkKey) bool { return k.page == p.ID })
		if s.agents != nil {
			s.agents.PageClosed(p.ID)
		}
	})
	for _, t := range s.tools() {
		s.mcp.AddTool(t.def, s.idling(s.profiled(t.def.Name, s.guard(t)))) // idle.go, profiles.go
	}
	s.addStepTools(opts.StepTools) // steps.go: smoke's, only when asked for
	s.addLockResource()
	return s
}

// Close removes what the server made for itself: the agents' directories
// in the temp dir (files.go). Files saved under a --workspace are kept. It
// does not close the browser.
func (s *Server) Close() error {
	s.idle.stop()
	s.replicas.close()
	return s.files.close()
}

// MCP returns the MCP server, for in-process clients and other transports.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Tools returns the definitions of every tool, in registration order.
func (s *Server) Tools() []mcp.Tool {
	var defs []mcp.Tool
	for _, t := range s.tools() {
		defs = append(defs, t.def)
	}
	return defs
}

// scope says which lock a tool takes in page mode.
type scope int

const (
	// browserScope tools never wait behind a busy page in page mode.
	browserScope scope = iota
	// pageScope tools take the lock of the page they act on.
	pageScope
	// optionalPageScope tools take the lock of the page a pageId names;
	// without one they act on no page, as browserScope tools (route).
	optionalPageScope
)

// tool is one definition and its handler, before the Guard wraps it.
type tool struct {
	def   mcp.Tool
	scope scope
	// answersDialogs marks page tools that work while a dialog is open;
	// the others fail with the dialog, as it blocks the page.
	answersDialogs bool
	// selects marks tools that change which page is selected: a later call
	// of the same client on the selected page waits until they are done.
	selects bool
	// resources are browser-wide keys the tool holds besides its page, such
	// as pagelock.Tracing: taken in page mode too, in canonical order.
	resources []pagelock.Key
	// shares, if set, names those of resources the call holds shared with
	// the other calls that share them (pagelock.Request.Shared), from its
	// arguments: lighthouse_audit shares pagelock.Audit unless it scores
	// performance.
	shares func(req mcp.CallToolRequest) []pagelock.Key
	handle func(ctx context.Context, c *call) error
}

// call is one tool call as the handler sees it.
type call struct {
	req      mcp.CallToolRequest
	page     *browser.Page // the page acted on; nil for browser-scope tools
	startURL string        // the page's URL when the call began
	args     []byte        // the arguments, checked against the schema
	since    int           // pages with this id or more were found during the call
	resp     *response
}

// bind decodes the call's arguments, checked by the Guard against the
// tool's schema (args.go), into args.
func (c *call) bind(args any) error {
	name := c.req.Params.Name
	if err := json.Unmarshal(c.args, args); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field[strings.LastIndex(te.Field, ".")+1:] // without embedded structs
			return &argError{fmt.Sprintf("invalid argument %q for %s: want %s, got %s", field, name, jsonKind(te.Type), te.Value)}
		}
		return &argError{fmt.Sprintf("invalid arguments for %s: %v", name, err)}
	}
	return nil
}

// jsonKind names a Go type as JSON Schema would.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
}

// argError is bad input from the agent.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// nullable matches the type the schema generator gives Go pointers, slices
// and maps: ["null", T]. Some clients reject type arrays, and
// chrome-devtools-mcp's schemas say plain T; an explicit null still decodes.
var nullable = regexp.MustCompile(`"type":\["null","(\w+)"\]`)

// newTool builds a tool whose handler decodes its arguments into A. Its
// annotations come from the table in compat.go.
func newTool[A any](name, description string, sc scope, handle func(ctx context.Context, c *call, args *A) error) tool {
	def := mcp.NewTool(name,
		mcp.WithDescription(description),
		mcp.WithInputSchema[A](),
	)
	def.RawInputSchema = nullable.ReplaceAll(def.RawInputSchema, []byte(`"type":"$1"`))
	return tool{def: def, scope: sc, handle: func(ctx context.Context, c *call) error {
		args := new(A)
		if err := c.bind(args); err != nil {
			return err
		}
		return handle(ctx, c, args)
	}}
}

// tools lists every tool, group by group; each group's file lists its own.
func (s *Server) tools() []tool {
	return append(withIdempotencyKey(markTasks(withCompat(slices.Concat(
		s.pageTools(),        // pages.go: list, new, select, close, navigate
		s.snapshotTools(),    // snapshot.go: wait_for, take_snapshot
		s.inputTools(),       // input.go: click, hover, fill, type, keys, dialogs
		s.formTools(),        // forms.go: fill_form, drag, upload_file
		s.scriptTools(),      // script.go: evaluate_script
		s.screenshotTools(),  // screenshot.go: take_screenshot
		s.consoleTools(),     // console.go: console messages
		s.networkTools(),     // network.go: network requests
		s.emulationTools(),   // emulate.go: emulate, resize_page
		s.performanceTools(), // performance.go: traces, insights
		s.memoryTools(),      // memory.go: heap snapshots
		s.lighthouseTools(),  // lighthouse.go: lighthouse_audit
		s.cssTools(),         // css.go: get_css_styles
		s.screencastTools(),  // screencast.go: screencast_start, screencast_stop
		s.stateTools(),       // state.go: cookies, web storage, IndexedDB, storage state
		s.routeTools(),       // routes.go: route, route_list, unroute
		s.harTools(),         // har.go: har_start, har_save
		s.pdfTools(),         // pdf.go: pdf_save
	)))), s.slimToolList()...) // profiles.go: --slim's, as chrome-devtools-mcp has them; tasks.go: the long ones may run as MCP tasks; rules.go: idempotencyKey
}

// ms turns a timeout argument in milliseconds into a duration, def if 0 or
// unset, as chrome-devtools-mcp reads its timeouts.
func ms(v int, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return time.Duration(v) * time.Millisecond
}
