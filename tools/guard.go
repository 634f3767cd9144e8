package tools

import (
	"context"
	"fmt"
	"runtime/debug"
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
