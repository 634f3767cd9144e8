package tools

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/pagelock"
)

// browserKey is the key browser-scope tools take in global mode, where every
// tool takes the one lock. In page mode they take none.
const browserKey pagelock.Key = "browser"

// waitNoticeAfter is the wait past which a result says that it waited.
const waitNoticeAfter = 100 * time.Millisecond

// guard wraps a tool's handler: it starts Chrome, resolves the page the call
// acts on, holds the call's locks while the handler runs, and releases them on
// success, error, panic and cancellation alike. Errors an agent can act on
// become results with isError set; none escapes as a protocol error.
func (s *Server) guard(t tool) server.ToolHandlerFunc {
	name := t.def.Name
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		start := time.Now()
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("tool panicked", "tool", name, "panic", r, "stack", string(debug.Stack()))
				res = toolError(fmt.Errorf("internal error in %s: %v; the server keeps serving, so try again, and report it if it repeats", name, r))
			}
			s.log.Debug("tool call", "tool", name, "took", time.Since(start), "error", res != nil && res.IsError)
		}()
		if err := s.browser.Start(ctx); err != nil {
			return toolError(err), nil
		}
		page, keys, err := s.target(ctx, t, req)
		if err != nil {
			return toolError(err), nil
		}
		g, err := s.locks.Acquire(pagelock.WithOwner(ctx, name), keys...)
		if err != nil {
			return toolError(err), nil
		}
		defer g.Release()
		if page != nil && page.Closed() {
			return toolError(&browser.PageClosedError{ID: page.ID}), nil
		}
		if page != nil && !t.answersDialogs {
			if dlg := page.Dialog(); dlg != nil {
				return mcp.NewToolResultError(formatDialog(string(dlg.Type), dlg.Message) + "\n" + errorText(fmt.Errorf("%w (%s: %s)", browser.ErrDialogOpen, dlg.Type, dlg.Message))), nil
			}
		}
		c := &call{req: req, page: page, resp: &response{}}
		if page != nil {
			c.startURL = page.URL()
		}
		if err := t.handle(ctx, c); err != nil {
			return toolError(err), nil
		}
		return s.render(ctx, c, g), nil
	}
}

// target resolves the page a call acts on, when it acts on one, and the lock
// keys it needs. The page is fixed here, on arrival: a select_page that comes
// later does not move a call that already waits.
func (s *Server) target(ctx context.Context, t tool, req mcp.CallToolRequest) (*browser.Page, []pagelock.Key, error) {
	id, err := pageIDArg(req)
	if err != nil {
		return nil, nil, err
	}
	if t.scope == browserScope {
		if s.locks.Mode() == pagelock.Global {
			return nil, []pagelock.Key{browserKey}, nil
		}
		return nil, nil, nil
	}
	var p *browser.Page
	if id != 0 {
		p, err = s.browser.Page(id)
	} else {
		p, err = s.browser.Selected(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	return p, append([]pagelock.Key{pagelock.PageKey(p.ID)}, t.resources...), nil
}

// pageIDArg reads the optional pageId argument; 0 means none.
func pageIDArg(req mcp.CallToolRequest) (int, error) {
	v, ok := req.GetArguments()["pageId"]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) || f < 1 {
		return 0, &argError{fmt.Sprintf("invalid pageId %v: want a page id number from list_pages", v)}
	}
	return int(f), nil
}

// render turns what the handler said into the result, adding the sections it
// asked for while the locks are still held.
func (s *Server) render(ctx context.Context, c *call, g *pagelock.Guard) *mcp.CallToolResult {
	r := c.resp
	parts := []string{strings.Join(r.lines, "\n")}
	if c.page != nil && r.reportNavigation && !c.page.Closed() {
		if url := c.page.URL(); url != c.startURL {
			parts = append(parts, fmt.Sprintf("Page navigated to %s.", url))
		}
	}
	parts = append(parts, emulationLines(c)...) // emulate.go
	if c.page != nil && !c.page.Closed() {
		if dlg := c.page.Dialog(); dlg != nil {
			parts = append(parts, formatDialog(string(dlg.Type), dlg.Message))
		} else if r.withSnapshot {
			snap, err := c.page.Snapshot(ctx, r.verbose)
			if err != nil {
				parts = append(parts, "Could not take a snapshot: "+err.Error())
			} else {
				parts = append(parts, "## Latest page snapshot\n"+strings.TrimSuffix(snap.Text, "\n"))
			}
		}
	}
	if r.withPages {
		s.browser.Refresh(ctx)
		if moved, now := s.browser.TakeSelectionNote(); moved {
			parts = append(parts, fmt.Sprintf("Note: the previously selected page was closed. Page %d is now selected.", now))
		}
		parts = append(parts, formatPages(s.browser.Pages(), s.browser.SelectedID()))
	}
	if w := g.Waited(); w > waitNoticeAfter && c.page != nil {
		parts = append(parts, fmt.Sprintf("Waited %d ms for page %d", w.Milliseconds(), c.page.ID))
	}
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	content := []mcp.Content{mcp.NewTextContent(strings.Join(nonEmpty, "\n"))}
	return &mcp.CallToolResult{Content: append(content, r.images...)}
}

// toolError is the result for an error an agent should see.
func toolError(err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(errorText(err))
}

// errorText is the message of an error as an agent reads it, with the
// "Error: " that chrome-devtools-mcp puts before its errors.
func errorText(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "Error: the call was cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "Error: the call ran out of time"
	}
	return "Error: " + err.Error()
}
