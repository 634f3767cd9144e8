package tools

// This file is the tool profiles: --tools picks the groups and tools an
// agent sees (fewer tools listed is fewer tokens in every request), --slim
// answers chrome-devtools-mcp's --slim (its three tools, same names and
// schemas), and the action rules' per-agent tools list trims each agent's
// tools/list to what it may call.
//
// The groups are the rules' (rules.Groups), one vocabulary for both. A
// tool a profile leaves out is not listed, but stays registered: a call by
// its name gets a tool error that says how to get it (mcp-go's own tool
// filter would answer a bare "tool not found" protocol error instead).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/rules"
)

// slimTools are the tools of --slim, as chrome-devtools-mcp 1.11 names
// them.
var slimTools = []string{"navigate", "evaluate", "screenshot"}

// profile is the set of tools a server lists and serves. Its zero value
// serves every tool.
type profile struct {
	// tools are the tools served; nil: all.
	tools map[string]bool
	// spec is the --tools list as given, for errors; slim is --slim.
	spec string
	slim bool
}

// CheckProfile reports the first entry of a --tools list that is neither
// a group (rules.Groups) nor a tool, and a list that leaves nothing.
func CheckProfile(list []string) error {
	_, err := newProfile(list, false)
	return err
}

// newProfile reads a --tools list: group and tool names, each added in
// turn, and -NAME, a group or tool taken away (so "all,-scripts" is every
// tool but evaluate_script). A list of only removals starts from every
// tool. With slim, list must be empty: the profile is --slim's three
// tools.
func newProfile(list []string, slim bool) (profile, error) {
	if slim {
		if len(list) > 0 {
			return profile{}, fmt.Errorf("--slim and --tools cannot be used together: --slim is its own profile (%s)", strings.Join(slimTools, ", "))
		}
		p := profile{slim: true, spec: "--slim", tools: map[string]bool{}}
		for _, t := range slimTools {
			p.tools[t] = true
		}
		return p, nil
	}
	if len(list) == 0 {
		return profile{}, nil
	}
	p := profile{tools: map[string]bool{}, spec: "--tools " + strings.Join(list, ",")}
	if strings.HasPrefix(list[0], "-") {
		list = append([]string{"all"}, list...)
	}
	for _, entry := range list {
		name, drop := strings.CutPrefix(strings.TrimSpace(entry), "-")
		names, err := expandName(name)
		if err != nil {
			return profile{}, err
		}
		for _, t := range names {
			if drop {
				delete(p.tools, t)
			} else {
				p.tools[t] = true
			}
		}
	}
	if len(p.tools) == 0 {
		return profile{}, fmt.Errorf("--tools %s leaves no tool; name groups or tools to keep", strings.Join(list, ","))
	}
	return p, nil
}

// expandName is the tools a group or tool name stands for.
func expandName(name string) ([]string, error) {
	if g, ok := rules.Groups[name]; ok {
		return g, nil
	}
	if slices.Contains(rules.AllTools, name) {
		return []string{name}, nil
	}
	return nil, fmt.Errorf("--tools: %q is neither a tool nor a group; groups: %s", name, strings.Join(rules.GroupNames(), ", "))
}

// has reports whether the profile serves the tool.
func (p profile) has(tool string) bool { return p.tools == nil || p.tools[tool] }

// refusal is the error for a call of a tool the profile leaves out: what
// leaves it out and how to get it.
func (p profile) refusal(tool string) error {
	if p.slim {
		return &argError{fmt.Sprintf("%s is not available with --slim, which serves %s; restart pagemux without --slim for every tool", tool, strings.Join(slimTools, ", "))}
	}
	var groups []string
	for _, g := range rules.GroupNames() {
		if g != "all" && slices.Contains(rules.Groups[g], tool) {
			groups = append(groups, g)
		}
	}
	add := tool
	if len(groups) > 0 {
		add = fmt.Sprintf("%s (or a group that has it: %s)", tool, strings.Join(groups, ", "))
	}
	return &argError{fmt.Sprintf("%s is not in this server's tool profile (%s); restart pagemux with %s added to --tools, or without --tools for every tool", tool, p.spec, add)}
}

// profiled refuses, before anything else of the call, a tool the profile
// leaves out.
func (s *Server) profiled(name string, next server.ToolHandlerFunc) server.ToolHandlerFunc {
	if s.profile.has(name) {
		return next
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return toolError(s.profile.refusal(name)), nil
	}
}

// addProfileHooks trims every tools/list answer to the server's profile
// and, with action rules, to what the calling agent's entry lets it call
// (rules.Set.Lists): the rules refuse the others' calls anyway.
func (s *Server) addProfileHooks(h *server.Hooks) {
	h.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		var set *rules.Set
		if s.rules != nil {
			set = s.rules.Set()
		}
		agent := ""
		if set != nil {
			agent = s.ruleAgent(ctx) // rules.go
		}
		res.Tools = slices.DeleteFunc(res.Tools, func(t mcp.Tool) bool {
			return !s.profile.has(t.Name) || set != nil && !set.Lists(agent, t.Name)
		})
	})
}

// The tools of --slim: chrome-devtools-mcp's, each the lean answer of
// one of pagemux's own (navigate_page, evaluate_script, take_screenshot),
// on the selected page.

// slimToolList is --slim's tools, none without it.
func (s *Server) slimToolList() []tool {
	if !s.profile.slim {
		return nil
	}
	nav := s.slimNavigate()
	nav.answersDialogs = true // as navigate_page: a navigation away answers a beforeunload
	return []tool{s.slimEvaluate(), nav, s.slimScreenshot()}
}

type slimNavigateArgs struct {
	URL string `json:"url" jsonschema:"URL to navigate to"`
}

func (s *Server) slimNavigate() tool {
	t := newTool("navigate", "Loads a URL", pageScope, func(ctx context.Context, c *call, a *slimNavigateArgs) error {
		var beforeUnload bool
		err := c.page.Navigate(ctx, a.URL, browser.DefaultNavigationTimeout, browser.HandleBeforeUnload(true, &beforeUnload))
		if beforeUnload {
			c.resp.say("Accepted a beforeunload dialog.")
		}
		if err != nil && !isDialog(err) {
			return err
		}
		c.resp.say("Navigated to %s.", c.page.URL())
		return nil
	})
	t.def.Annotations = mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(false), OpenWorldHint: mcp.ToBoolPtr(true)}
	return t
}

type slimEvaluateArgs struct {
	Script string `json:"script" jsonschema:"JS script to run on the page"`
}

func (s *Server) slimEvaluate() tool {
	t := newTool("evaluate", "Evaluates a JavaScript script", pageScope, func(ctx context.Context, c *call, a *slimEvaluateArgs) error {
		cut := newPageCut(s.scriptLimit()) // script.go
		v, err := c.page.EvaluateClassic(ctx, a.Script, dialogAnswer(""), cut.onThis())
		if err != nil {
			return err
		}
		if head, total, ok := cut.read(v); ok {
			c.resp.say("%s\n%s", head, cutNote("value", total, cut.limit, "characters of JSON", "return a smaller part of it"))
			return nil
		}
		if v == nil {
			v = []byte("undefined")
		}
		c.resp.say("%s", v)
		return nil
	})
	t.def.Annotations = mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(false), OpenWorldHint: mcp.ToBoolPtr(true)}
	return t
}

type slimScreenshotArgs struct{}

func (s *Server) slimScreenshot() tool {
	t := newTool("screenshot", "Takes a screenshot", pageScope, func(ctx context.Context, c *call, _ *slimScreenshotArgs) error {
		shot, err := c.page.Capture().CaptureScreenshot(ctx, s.shots.cap(browser.ScreenshotOptions{Format: "png"})) // screenshot.go
		if err != nil {
			return err
		}
		path, err := saveTemp(s.files.tempDir(ctx), "screenshot-*.png", shot.Data)
		if err != nil {
			return err
		}
		c.resp.say("%s", path)
		if note := scaledNote(shot); note != "" {
			c.resp.say("%s", note)
		}
		return nil
	})
	t.def.Annotations = mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(false), OpenWorldHint: mcp.ToBoolPtr(false)}
	return t
}

// setProfile takes the Options of profiles, screenshots and idleness; a
// bad one (the flags check them first) is logged and left out.
func (s *Server) setProfile(opts Options) {
	p, err := newProfile(opts.Tools, opts.Slim)
	if err != nil {
		s.log.Warn("tool profile left out: every tool is served", "error", err)
	}
	s.profile = p
	st, err := newShotSettings(opts) // screenshot.go
	if err != nil {
		s.log.Warn("screenshot settings left out", "error", err)
	}
	s.shots = st
	s.idle = newIdleCloser(s, opts.BrowserIdle) // idle.go
}
