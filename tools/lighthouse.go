package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/lighthouse"
	"github.com/pagemux/pagemux/pagelock"
)

// lighthouseTools lists the tools of this group.
func (s *Server) lighthouseTools() []tool { return []tool{s.lighthouseAudit()} }

// Lighthouse's categories, in its config's order; the default leaves out
// performance, as chrome-devtools-mcp does: a trace measures it better.
var (
	lighthouseCategories        = []string{"performance", "accessibility", "best-practices", "seo"}
	defaultLighthouseCategories = []string{"accessibility", "best-practices", "seo"}
)

type lighthouseArgs struct {
	pageArg
	Mode          string   `json:"mode,omitempty" jsonschema:"\"navigation\" reloads & audits. \"snapshot\" analyzes current state."`
	Device        string   `json:"device,omitempty" jsonschema:"Device to emulate."`
	OutputDirPath string   `json:"outputDirPath,omitempty" jsonschema:"Directory for reports. If omitted, uses temporary files."`
	Categories    []string `json:"categories,omitempty" jsonschema:"Lighthouse categories to audit. Default: accessibility, best-practices and seo; add performance to score it too (slower)."`
	waitArg
}

// How an audit runs beside the other calls: it holds its page's lock and
// pagelock.Audit, shared with the other audits unless it scores
// performance (sharesAudit), plus pagelock.Tracing in page mode when it
// does, since that records a trace. The Lighthouse runner is a Node process attached to the
// page's own target, so calls on other pages go on while it works. It
// leaves the browser's cache and storage alone, and its emulation lives on
// its own session on the page: pagemux sets the page's own emulation again
// afterwards, as the runner's leaving clears the device metrics.
func (s *Server) lighthouseAudit() tool {
	t := newTool("lighthouse_audit",
		"Get Lighthouse scores, failing audits, and the DOM nodes they flag for accessibility, SEO and best practices. Full reports are saved to disk. "+
			"This excludes performance unless categories asks for it. For performance audits, you can also run performance_start_trace",
		pageScope, s.runLighthouse)
	t.resources = []pagelock.Key{pagelock.Audit}
	t.shares = sharesAudit
	patchSchema(&t, map[string]map[string]any{
		"mode":   {"enum": []string{"navigation", "snapshot"}, "default": "navigation"},
		"device": {"enum": []string{"desktop", "mobile"}, "default": "desktop"},
		"categories": {"type": "array", "items": struct {
			Type string   `json:"type"`
			Enum []string `json:"enum"`
		}{"string", lighthouseCategories}},
	})
	return t
}

func (s *Server) runLighthouse(ctx context.Context, c *call, a *lighthouseArgs) error {
	req, err := a.request()
	if err != nil {
		return err
	}
	if url := c.page.URL(); req.Mode == lighthouse.Navigation && !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "file://") {
		return &argError{fmt.Sprintf("mode \"navigation\" reloads the page's URL, and %s cannot be audited that way: navigate_page to an http(s) URL first, or use mode \"snapshot\"", url)}
	}
	runner, err := lighthouse.Find()
	if err != nil {
		return err
	}
	if req.JSONPath, req.HTMLPath, err = s.reportPaths(ctx, a.OutputDirPath); err != nil {
		return err
	}
	if req.Endpoint, err = c.page.DevToolsURL(); err != nil {
		return err
	}
	req.TargetID = string(c.page.TargetID)
	if scoresPerformance(req.Categories) {
		release, err := s.holdTracing(ctx, c.page, a.Wait)
		if err != nil {
			return err
		}
		defer release()
	}
	// Lighthouse's final screenshot of a tab behind others never came
	// (PROTOCOL_TIMEOUT after 30 s, 2026-12-01): it audits a front tab.
	// Taken last, as no lock is waited for while it is held.
	releaseFront, err := c.page.HoldFront(ctx)
	if err != nil {
		return err
	}
	defer releaseFront()
	req.Progress = progressReporter(ctx, c)
	req.Progress("Starting Lighthouse")
	rep, err := runner.Run(ctx, req)
	s.restoreEmulation(ctx, c)
	if err != nil {
		return err
	}
	c.resp.say("%s", formatLighthouse(rep, string(req.Mode), req.Device, []string{req.JSONPath, req.HTMLPath}))
	return nil
}

// sharesAudit says whether an audit shares pagelock.Audit with the other
// audits, running beside them, or holds it alone. Lighthouse 12's
// accessibility, best-practices and seo gatherers (DevtoolsLog,
// Accessibility, Stacks, FullPageScreenshot …) send every command on the
// audited tab's own session, and the emulation, the (simulated) throttling
// and the navigation they set are that tab's; with disableStorageReset the
// browser-wide cache and storage resets are skipped. Performance adds the
// Trace and BFCacheFailures gatherers: tracing is browser-wide, and a
// second run's CPU load would skew the first one's timings, so such an
// audit runs alone. Tabs behind others still take turns at the front
// (Page.HoldFront).
func sharesAudit(req mcp.CallToolRequest) []pagelock.Key {
	if scoresPerformance(req.GetStringSlice("categories", nil)) { // the default leaves performance out
		return nil
	}
	return []pagelock.Key{pagelock.Audit}
}

// scoresPerformance says whether an audit of categories scores
// performance, which records a browser-wide trace.
func scoresPerformance(categories []string) bool {
	return slices.Contains(categories, "performance")
}

// holdTracing takes the tracing resource of p's Chrome for an audit of p that scores
// performance, as Lighthouse records a trace for it and Chrome runs one
// trace at a time. A trace that the agent itself started fails the audit at
// once: waiting for it could mean waiting for a performance_stop_trace on
// the very page the audit holds. Another agent's trace or hold fails it at
// once too, unless wait asks to wait in line (page mode only: see
// heldByOther). In global mode the call's one lock covers tracing.
func (s *Server) holdTracing(ctx context.Context, p *browser.Page, wait bool) (release func(), err error) {
	if run := s.perf.running(p); run != nil {
		if err := s.traceInTheWay(run, lockAgent(ctx), wait); err != nil {
			return nil, err
		}
		if run.agent == lockAgent(ctx) {
			return nil, fmt.Errorf("%w; Lighthouse's performance audit records a trace of its own, so stop that one first, or audit without the performance category", run.busyError())
		}
	}
	if s.locks.Mode() != pagelock.PerPage {
		return func() {}, nil
	}
	key := pagelock.Tracing.Of(p.Chrome())
	req := pagelock.Request{Keys: []pagelock.Key{key}, Owner: "lighthouse_audit", Agent: lockAgent(ctx)}
	if !wait {
		req.FailIfHeld = req.Keys
	}
	g, err := s.locks.Acquire(ctx, req)
	if err != nil {
		return nil, s.heldError(err)
	}
	return g.Release, nil
}

// request checks the arguments and fills in the defaults.
func (a *lighthouseArgs) request() (lighthouse.Request, error) {
	req := lighthouse.Request{Mode: lighthouse.Navigation, Device: "desktop", Categories: defaultLighthouseCategories}
	switch a.Mode {
	case "", "navigation":
	case "snapshot":
		req.Mode = lighthouse.Snapshot
	default:
		return req, &argError{fmt.Sprintf("invalid mode %q: want \"navigation\" (reload and audit) or \"snapshot\" (audit the page as it is)", a.Mode)}
	}
	switch a.Device {
	case "", "desktop":
	case "mobile":
		req.Device = "mobile"
	default:
		return req, &argError{fmt.Sprintf("invalid device %q: want \"desktop\" or \"mobile\"", a.Device)}
	}
	if len(a.Categories) > 0 {
		req.Categories = nil
		for _, cat := range a.Categories {
			if !slices.Contains(lighthouseCategories, cat) {
				return req, &argError{fmt.Sprintf("invalid category %q: want some of %s", cat, quoteAll(lighthouseCategories))}
			}
			if !slices.Contains(req.Categories, cat) {
				req.Categories = append(req.Categories, cat)
			}
		}
	}
	return req, nil
}

// reportPaths returns where the reports go: report.json and report.html in
// outputDirPath, which must lie in the workspace, or in a new temporary
// directory.
func (s *Server) reportPaths(ctx context.Context, outputDirPath string) (jsonPath, htmlPath string, err error) {
	if outputDirPath == "" {
		dir, err := os.MkdirTemp(s.files.tempDir(ctx), "pagemux-lighthouse-")
		if err != nil {
			return "", "", fmt.Errorf("make a directory for the lighthouse reports: %w", err)
		}
		return filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html"), nil
	}
	if jsonPath, err = s.files.output(ctx, filepath.Join(outputDirPath, "report.json")); err != nil {
		return "", "", err
	}
	if htmlPath, err = s.files.output(ctx, filepath.Join(outputDirPath, "report.html")); err != nil {
		return "", "", err
	}
	return jsonPath, htmlPath, nil
}

// progressReporter returns a func that sends each message as an MCP
// progress notification of the call (progress.go), when the client asked
// for them with a progress token; otherwise the func does nothing.
func progressReporter(ctx context.Context, c *call) func(string) {
	p := progressFrom(ctx)
	return func(msg string) {
		p.phase("Lighthouse: " + msg)
		p.say(msg)
	}
}

// restoreEmulation sets the page's own emulation again, if it has any.
// Lighthouse emulated its device from the runner's session, and the runner
// cleared that when it ended (Chrome does too when the session goes); the
// page's renderer keeps one set of device metrics, so pagemux's own went
// with it. It runs after a cancelled call too, bounded, as the call still
// holds the page.
func (s *Server) restoreEmulation(ctx context.Context, c *call) {
	own := c.page.Emulation()
	if c.page.Closed() || reflect.DeepEqual(own, browser.Emulation{}) {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := c.page.Emulate(rctx, own); err != nil {
		s.log.Warn("restore emulation after lighthouse", "page", c.page.ID, "error", err)
	}
}

// formatLighthouse renders the report as chrome-devtools-mcp does.
func formatLighthouse(r *lighthouse.Report, mode, device string, reports []string) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	line("## Lighthouse audit results")
	line("Mode: %s", mode)
	line("Device: %s", device)
	line("URL: %s", r.URL)
	if e := r.RuntimeError; e != nil {
		line("Lighthouse could not audit the page: %s (%s)", collapseSpace(e.Message), e.Code)
		if e.Code == "NO_FCP" {
			line("The page painted nothing while Lighthouse watched: make sure it shows content, bring it to the front (select_page with bringToFront), and try again.")
		}
	}
	line("### Category scores")
	for _, cat := range r.Categories {
		score := "n/a"
		if cat.Score != nil {
			score = strconv.Itoa(int(math.Floor(*cat.Score*100 + 0.5))) // JavaScript's Math.round
		}
		line("- %s: %s (%s)", cat.Title, score, cat.ID)
	}
	line("### Audit summary")
	line("Passed: %d", r.Passed)
	line("Failed: %d", len(r.Failed))
	line("Total timing: %sms", jsNumber(r.TotalMS))
	if len(r.Failed) > 0 {
		line("### Failed audits")
	}
	for _, a := range r.Failed {
		cats, value := "", ""
		if len(a.Categories) > 0 {
			cats = " [" + strings.Join(a.Categories, ", ") + "]"
		}
		if a.DisplayValue != "" {
			value = " (" + a.DisplayValue + ")"
		}
		line("- %s%s: %s%s (score: %s)", a.ID, cats, a.Title, value, jsNumber(a.Score))
		if a.Description != "" {
			line("  %s", collapseSpace(a.Description))
		}
		if a.TotalNodes > 0 {
			shown := ""
			if a.TotalNodes > len(a.Nodes) {
				shown = fmt.Sprintf(", showing %d", len(a.Nodes))
			}
			line("  Nodes (%d%s):", a.TotalNodes, shown)
		}
		for _, n := range a.Nodes {
			var parts []string
			if n.Selector != "" {
				parts = append(parts, "selector="+jsString(n.Selector))
			}
			if n.NodeLabel != "" {
				parts = append(parts, "label="+jsString(collapseSpace(n.NodeLabel)))
			}
			if n.Snippet != "" {
				parts = append(parts, "snippet="+jsString(collapseSpace(n.Snippet)))
			}
			line("  - %s", strings.Join(parts, " "))
			if n.Explanation != "" {
				line("    %s", collapseSpace(n.Explanation))
			}
		}
	}
	line("### Reports")
	for _, p := range reports {
		line("- %s", p)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// spaces are what JavaScript's \s matches.
var spaces = regexp.MustCompile(`[\s\p{Zs}\x{FEFF}\x{2028}\x{2029}]+`)

// collapseSpace turns every run of white space into one space, and trims.
func collapseSpace(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

// jsString quotes a string as JSON.stringify does: no escaping of <, > and &.
func jsString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
