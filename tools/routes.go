package tools

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// Network routes (issue 41): an agent mocks, fails, delays or changes the
// requests of its pages that match a URL pattern, as Playwright MCP's
// browser_route does (its parameter names, plus pageId, bodyFile, abort and
// delayMs). The URL policy judges first: a route never makes a refused URL
// load (browser/routes.go). Over HTTP a route is its agent's: it covers only
// the agent's pages, only the agent lists or removes it, and it goes when
// the agent's session ends (agentGone).
//
// Locks: route with a pageId takes that page's lock; route for every page
// of the agent (no pageId), route_list and unroute take no page lock in page
// mode, and the one lock in global mode.

// routeTools lists the route tools.
func (s *Server) routeTools() []tool {
	add := s.route()
	add.answersDialogs = true // a route does not touch the page's document
	return []tool{add, s.routeList(), s.unroute()}
}

type routeArgs struct {
	PageID        int      `json:"pageId,omitempty" jsonschema:"The page whose requests the route covers; it takes that page's lock and goes when the page closes. Without pageId the route covers every page of yours, those you open later (popups too) included."`
	Pattern       string   `json:"pattern" jsonschema_description:"The URLs to route: a glob matched against the whole URL (** any characters, * any but /, {a,b} either; such as **/api/users or **/*.{png,jpg}) or a regex written /source/flags (such as /\\/api\\/v\\d+\\//i), found anywhere in the URL."`
	Status        *int     `json:"status,omitempty" jsonschema:"Answer the request with this HTTP status (default 200 when body, bodyFile or contentType is given)."`
	Body          *string  `json:"body,omitempty" jsonschema:"Answer the request with this body (text or JSON). At most 1 MiB: use bodyFile for more."`
	BodyFile      string   `json:"bodyFile,omitempty" jsonschema:"Answer the request with this file of your workspace as the body (at most 10 MiB)."`
	ContentType   string   `json:"contentType,omitempty" jsonschema:"The Content-Type of the answer (such as application/json)."`
	Headers       []string `json:"headers,omitempty" jsonschema:"Headers in 'Name: Value' form: the answer's when the route answers, else set on the request before it goes on."`
	RemoveHeaders string   `json:"removeHeaders,omitempty" jsonschema:"Comma-separated names of request headers to remove before the request goes on."`
	Abort         string   `json:"abort,omitempty" jsonschema:"Fail the request with this reason instead, as Playwright's route.abort names them (failed, aborted, timedout, connectionrefused, namenotresolved …)."`
	DelayMs       int      `json:"delayMs,omitempty" jsonschema:"Hold each request this many milliseconds (at most 60000) before the route acts on it, or before it goes on."`
}

// maxRouteInlineBody bounds route's body argument; bodyFile takes up to
// browser.MaxRouteBody.
const maxRouteInlineBody = 1 << 20

func (s *Server) route() tool {
	return newTool("route", "Routes the network requests of your pages whose URL matches a pattern: answers them (status, body or bodyFile, contentType, headers), fails them (abort), delays them (delayMs), or sends them on with changed headers (headers, removeHeaders). The newest matching route acts. URLs the server refuses stay refused. route_list shows routes, unroute removes them.", optionalPageScope,
		func(ctx context.Context, c *call, a *routeArgs) error {
			owner, err := s.routeOwner(ctx)
			if err != nil {
				return err
			}
			action, err := s.routeAction(ctx, a)
			if err != nil {
				return err
			}
			r := browser.Route{Pattern: a.Pattern, Owner: owner, Action: action, Page: c.page}
			if c.page == nil {
				r.Covers = s.agentCovers(ctx)
			}
			info, err := s.browser.AddRoute(ctx, r)
			if err != nil {
				return &argError{err.Error()}
			}
			c.resp.say("Route %d added: %s", info.ID, routeLine(info))
			return nil
		})
}

// routeOwner is whose the call's routes are: its agent's, "" without
// agents (stdio), where every route is the one client's.
func (s *Server) routeOwner(ctx context.Context) (string, error) {
	a, ok := s.agentOf(ctx)
	if !ok {
		return "", nil
	}
	if !a.Named() {
		return "", &argError{"this call carries neither a session nor a token, so pagemux cannot tell which pages and routes are yours: connect with a session"}
	}
	return a.ID, nil
}

// agentCovers says which pages a route of the call's agent without pageId
// covers: those the agent owns, whenever a request comes (a popup is its
// opener's owner's from its start); every page without agents.
func (s *Server) agentCovers(ctx context.Context) func(page int) bool {
	a, ok := s.agentOf(ctx)
	if !ok {
		return nil
	}
	return func(page int) bool {
		owner, ok := s.agents.Owner(page)
		return ok && owner == a.ID
	}
}

// routeAction reads what route is to do from its arguments, the body
// file from the agent's workspace.
func (s *Server) routeAction(ctx context.Context, a *routeArgs) (browser.RouteAction, error) {
	act := browser.RouteAction{Status: derefOr(a.Status, 0), Delay: time.Duration(a.DelayMs) * time.Millisecond}
	if a.DelayMs < 0 || act.Delay > browser.MaxRouteDelay {
		return act, &argError{fmt.Sprintf("delayMs %d: want 0 to %d", a.DelayMs, browser.MaxRouteDelay.Milliseconds())}
	}
	if a.Abort != "" {
		reason, err := browser.ParseAbortReason(a.Abort)
		if err != nil {
			return act, &argError{err.Error()}
		}
		act.Abort = reason
	}
	headers, err := parseHeaderLines(a.Headers)
	if err != nil {
		return act, err
	}
	act.Headers = headers
	for _, name := range strings.Split(a.RemoveHeaders, ",") {
		if name = strings.TrimSpace(name); name != "" {
			act.RemoveHeaders = append(act.RemoveHeaders, name)
		}
	}
	act.Fulfil = a.Status != nil || a.Body != nil || a.BodyFile != "" || a.ContentType != ""
	if act.Fulfil && act.Abort != "" {
		return act, &argError{"give abort, or an answer (status, body, bodyFile, contentType), not both"}
	}
	if a.ContentType != "" {
		if act.Headers == nil {
			act.Headers = http.Header{}
		}
		act.Headers.Set("Content-Type", a.ContentType)
	}
	act.Body, err = s.routeBody(ctx, a)
	return act, err
}

// routeBody is the answer's body: body, or bodyFile's content.
func (s *Server) routeBody(ctx context.Context, a *routeArgs) ([]byte, error) {
	switch {
	case a.Body != nil && a.BodyFile != "":
		return nil, &argError{"give body or bodyFile, not both"}
	case a.Body != nil && len(*a.Body) > maxRouteInlineBody:
		return nil, &argError{fmt.Sprintf("body of %d bytes: at most %d inline; save it to a file of your workspace and give bodyFile (up to %d bytes)", len(*a.Body), maxRouteInlineBody, browser.MaxRouteBody)}
	case a.Body != nil:
		return []byte(*a.Body), nil
	case a.BodyFile == "":
		return nil, nil
	}
	body, err := s.files.read(ctx, "bodyFile", a.BodyFile, browser.MaxRouteBody)
	if err != nil {
		return nil, err
	}
	return body, nil
}

// parseHeaderLines reads headers written "Name: Value".
func parseHeaderLines(lines []string) (http.Header, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, &argError{fmt.Sprintf("header %.60q: want 'Name: Value', such as 'X-Test: 1'", line)}
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// routeLine shows a route to its owner.
func routeLine(r browser.RouteInfo) string {
	scope := "every page of yours"
	if r.Page != 0 {
		scope = fmt.Sprintf("page %d", r.Page)
	}
	return fmt.Sprintf("%s on %s: %s", r.Pattern, scope, r.Action)
}

func (s *Server) routeList() tool {
	return newTool("route_list", "Lists your network routes (route): id, pattern, the pages each covers, what it does, and how many requests it acted on.", browserScope,
		func(ctx context.Context, c *call, _ *noArgs) error {
			owner, err := s.routeOwner(ctx)
			if err != nil {
				return err
			}
			routes := s.browser.Routes(owner)
			c.resp.say("## Routes")
			if len(routes) == 0 {
				c.resp.say("No routes.")
				return nil
			}
			for _, r := range routes {
				c.resp.say("id=%d %s; hits: %d", r.ID, routeLine(r), r.Hits)
			}
			return nil
		})
}

type unrouteArgs struct {
	Pattern string `json:"pattern,omitempty" jsonschema:"Remove the routes with this pattern, written as route was given it."`
	ID      int    `json:"id,omitempty" jsonschema:"Remove the route with this id (route_list shows them)."`
}

func (s *Server) unroute() tool {
	return newTool("unroute", "Removes network routes: those with a pattern, the one with an id, or, with neither, all of yours. The requests they cover go on untouched from now on.", browserScope,
		func(ctx context.Context, c *call, a *unrouteArgs) error {
			owner, err := s.routeOwner(ctx)
			if err != nil {
				return err
			}
			var del func(browser.RouteInfo) bool
			if a.Pattern != "" || a.ID != 0 {
				del = func(r browser.RouteInfo) bool {
					return (a.Pattern == "" || r.Pattern == a.Pattern) && (a.ID == 0 || r.ID == a.ID)
				}
			}
			gone, err := s.browser.RemoveRoutes(ctx, owner, del)
			if err != nil {
				s.log.Warn("narrowing the interception after unroute", "error", err)
			}
			switch {
			case len(gone) == 0 && a.ID != 0:
				return &argError{fmt.Sprintf("you have no route %d; route_list shows yours", a.ID)}
			case len(gone) == 0 && a.Pattern != "":
				c.resp.say("No route of yours has pattern %s; route_list shows yours.", a.Pattern)
			default:
				c.resp.say("Removed %d route(s).", len(gone))
			}
			for _, r := range gone {
				c.resp.say("id=%d %s; hits: %d", r.ID, routeLine(r), r.Hits)
			}
			return nil
		})
}

// routesGone removes the routes of an agent whose session ended.
func (s *Server) routesGone(agent string) {
	if agent == "" {
		return // a session taken over: its routes are the newer session's
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaveWait)
	defer cancel()
	if gone, err := s.browser.RemoveRoutes(ctx, agent, nil); err != nil || len(gone) > 0 {
		s.log.Info("removed a departed agent's routes", "agent", agent, "routes", len(gone), "error", err)
	}
}
