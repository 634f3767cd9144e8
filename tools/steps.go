package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/policy"
)

// The step tools are what pagemux smoke needs to run a steps file (--steps,
// --login) and to open an audit's window, through the same pipeline as any
// tool (the Guard's locks, the bound, the typed answers): a steps file is
// written before its pages exist, so it names elements by CSS selector,
// where the agents' tools take a snapshot's uids. They are registered only
// when Options.StepTools asks for them, which smoke alone does: agents'
// tool list, the schema snapshots and the README's table do not change.
//
// Locks: click_selector, fill_selector, wait_for_selector, wait_for_url and
// add_init_script take the lock of the page they act on (in global mode,
// the one lock); new_window takes none but the browser's in global mode,
// as new_page.

// addStepTools registers the step tools when on (Options.StepTools), each
// wrapped in a Guard as the others are. They stay out of tools() and Tools(),
// the agents' list: no compat table, MCP task or idempotencyKey applies.
func (s *Server) addStepTools(on bool) {
	if !on {
		return
	}
	for _, t := range s.stepTools() {
		s.mcp.AddTool(t.def, s.guard(t))
	}
}

// stepTools lists the step tools, with their hints (stepHints) set here
// rather than in compat.go's table, which is the agents' tools'.
func (s *Server) stepTools() []tool {
	ts := []tool{s.clickSelector(), s.fillSelector(), s.waitForSelector(), s.waitForURL(), s.addInitScript(), s.newWindow()}
	for i := range ts {
		h := stepHints[ts[i].def.Name]
		ts[i].def.Annotations = mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(h.readOnly),
			DestructiveHint: mcp.ToBoolPtr(h.destructive),
			IdempotentHint:  mcp.ToBoolPtr(h.idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(h.openWorld),
		}
	}
	return ts
}

// timed adds the JSON Schema bound of a step tool's timeout: the Guard
// refuses a negative one before the call runs.
func timed(t tool) tool {
	patchSchema(&t, map[string]map[string]any{"timeout": {"minimum": 0}})
	return t
}

// stepHints are the step tools' annotations, as compat.go's annotations
// are the agents' tools'.
var stepHints = map[string]hints{
	"click_selector":    {openWorld: true}, // as click
	"fill_selector":     {idempotent: true},
	"wait_for_selector": {idempotent: true},
	"wait_for_url":      {idempotent: true},
	"add_init_script":   {destructive: true, openWorld: true}, // runs code, as evaluate_script
	"new_window":        {},
}

// selectorArgs name an element by CSS selector, waited for up to a
// timeout.
type selectorArgs struct {
	pageArg
	Selector string `json:"selector" jsonschema:"A CSS selector: the first element of the main frame that matches it and is rendered."`
	Timeout  int    `json:"timeout,omitempty" jsonschema:"Maximum wait time in milliseconds for a rendered element to match. If set to 0, the default timeout will be used."`
}

// check refuses a blank selector, naming tool. A negative timeout is the
// schema's to refuse (timed).
func (a *selectorArgs) check(tool string) error {
	if strings.TrimSpace(a.Selector) == "" {
		return &argError{fmt.Sprintf("%s needs a selector: a CSS selector such as #buy or button[type=submit]", tool)}
	}
	return nil
}

// clickSelector is click_selector: click's click on the element a
// selector names. It holds the page's lock.
func (s *Server) clickSelector() tool {
	return timed(newTool("click_selector", "Clicks the first rendered element that matches a CSS selector, waiting for one to appear; then waits for the page to settle, as click does.", pageScope,
		func(ctx context.Context, c *call, a *selectorArgs) error {
			if err := a.check("click_selector"); err != nil {
				return err
			}
			progressFrom(ctx).phase("waiting for the element") // progress.go
			if err := c.page.Input().ClickSelector(ctx, a.Selector, ms(a.Timeout, defaultWaitTimeout)); err != nil {
				return err
			}
			c.resp.say("Clicked the element that matches %s.", a.Selector)
			return nil
		}))
}

// fillSelectorArgs are fill_selector's: an element and its value.
type fillSelectorArgs struct {
	selectorArgs
	Value string `json:"value" jsonschema:"The value to fill in: text typed in, a select's option, a checkbox's true or false."`
}

// fillSelector is fill_selector: fill's fill of the element a selector
// names. Neither its answer nor its errors show the value. It holds the
// page's lock.
func (s *Server) fillSelector() tool {
	return timed(newTool("fill_selector", "Fills the first rendered element that matches a CSS selector with a value, waiting for one to appear, as fill does: text typed into an input, an option picked in a select, a checkbox set.", pageScope,
		func(ctx context.Context, c *call, a *fillSelectorArgs) error {
			if err := a.check("fill_selector"); err != nil {
				return err
			}
			progressFrom(ctx).phase("waiting for the element")
			if err := c.page.Input().FillSelector(ctx, a.Selector, a.Value, ms(a.Timeout, defaultWaitTimeout)); err != nil {
				return err
			}
			c.resp.say("Filled the element that matches %s.", a.Selector)
			return nil
		}))
}

// waitForSelector is wait_for_selector: a wait, across navigations, for a
// rendered element to match a selector. It holds the page's lock.
func (s *Server) waitForSelector() tool {
	return timed(newTool("wait_for_selector", "Waits until a rendered element of the main frame matches a CSS selector, across navigations. Fails saying whether nothing matched, the match stayed hidden, or the selector is not valid.", pageScope,
		func(ctx context.Context, c *call, a *selectorArgs) error {
			if err := a.check("wait_for_selector"); err != nil {
				return err
			}
			progressFrom(ctx).phase("waiting for the element")
			if err := c.page.WaitForSelector(ctx, a.Selector, ms(a.Timeout, defaultWaitTimeout)); err != nil {
				return err
			}
			c.resp.say("An element matches %s.", a.Selector)
			return nil
		}))
}

// waitForURLArgs are wait_for_url's: a URL pattern and a timeout.
type waitForURLArgs struct {
	pageArg
	URL     string `json:"url" jsonschema:"The URL to wait for: the page's URL matches when it contains this text or, when it has a *, when it matches it as a glob (* matches anything, slashes too)."`
	Timeout int    `json:"timeout,omitempty" jsonschema:"Maximum wait time in milliseconds. If set to 0, the default timeout will be used."`
}

// waitForURL is wait_for_url: a wait, across navigations and history
// changes, for the page's URL to match a pattern (URLMatches). It holds
// the page's lock.
func (s *Server) waitForURL() tool {
	return timed(newTool("wait_for_url", "Waits until the page's URL matches: contains the text given or, with a *, matches it as a glob. Navigations and history changes (pushState) count.", pageScope,
		func(ctx context.Context, c *call, a *waitForURLArgs) error {
			if a.URL == "" {
				return &argError{"wait_for_url needs a url: a text the URL contains (/account), or a glob with * (*/account)"}
			}
			timeout := ms(a.Timeout, defaultWaitTimeout)
			progressFrom(ctx).phase("waiting for the URL")
			last, ok, err := c.page.WaitForURL(ctx, func(u string) bool { return URLMatches(u, a.URL) }, timeout)
			switch {
			case err != nil:
				return err
			case !ok:
				return fmt.Errorf("the page is still at %s after %v", last, timeout)
			}
			c.resp.say("The page is at %s.", last)
			return nil
		}))
}

// URLMatches says whether u matches pattern as wait_for_url reads it: as a
// glob where it has a * (which matches anything, slashes too), else when u
// contains it.
func URLMatches(u, pattern string) bool {
	if !strings.Contains(pattern, "*") {
		return strings.Contains(u, pattern)
	}
	return policy.Glob(pattern, u)
}

// addInitScriptArgs are add_init_script's: the script.
type addInitScriptArgs struct {
	pageArg
	Script string `json:"script" jsonschema:"JavaScript to run in each new document of the page, its frames' too, before the document's own scripts."`
}

// maxInitScript bounds an init script: smoke's is a storage state's
// localStorage, which set_storage_state bounds so too.
const maxInitScript = maxStateFile

// addInitScript is add_init_script: a script in every document the page
// loads from now on, before its own (browser.Page.AddInitScript), as
// smoke's --storage-state sets localStorage in each tab. navigate_page's
// initScript is for one navigation, and steps navigate too. Its answer
// does not show the script, which may hold secrets. It holds the page's
// lock.
func (s *Server) addInitScript() tool {
	return newTool("add_init_script", "Adds a script that runs in each new document the page loads from now on (its frames' too), before the document's own scripts. It does not run in the document the page shows now.", pageScope,
		func(ctx context.Context, c *call, a *addInitScriptArgs) error {
			switch {
			case strings.TrimSpace(a.Script) == "":
				return &argError{"add_init_script needs a script: JavaScript to run in each new document"}
			case len(a.Script) > maxInitScript:
				return &argError{fmt.Sprintf("the script is %d bytes, past the %d MiB add_init_script takes", len(a.Script), maxInitScript>>20)}
			}
			if _, err := c.page.AddInitScript(ctx, a.Script); err != nil {
				return err
			}
			c.resp.say("Page %d runs the script in each new document from now on.", c.page.ID)
			return nil
		})
}

// newWindow is new_window: a blank page in a window of its own
// (browser.InOwnWindow), in the caller's browser context, so that it
// draws and is captured (screenshots, Lighthouse) without taking turns at
// the front of a window it shares; a window costs more to make than
// new_page's tab. It opens in the background and is selected, as new_page's
// pages are; it takes no page lock, as there is nothing to load.
func (s *Server) newWindow() tool {
	t := newTool("new_window", "Opens a blank page in a window of its own, in the background, and selects it: it draws and can be captured without sharing a window with other pages.", browserScope,
		func(ctx context.Context, c *call, _ *noArgs) error {
			done, err := s.reservePage(ctx) // --max-pages-per-agent
			if err != nil {
				return err
			}
			defer done()
			p, err := s.browser.NewPage(ctx, true, append(s.contextFor(ctx, ""), browser.InOwnWindow())...)
			if err != nil {
				return err
			}
			if err := s.own(ctx, p); err != nil {
				return err
			}
			c.page = p
			c.resp.includePages()
			return nil
		})
	t.selects = true
	return t
}
