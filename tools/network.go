package tools

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/network"
	"github.com/pagemux/pagemux/browser"
)

// networkTools lists the network tools. The list reads what the page's
// collector recorded, so an open dialog does not block it; the details
// fetch bodies from the page, which a dialog blocks.
func (s *Server) networkTools() []tool {
	list := s.listNetworkRequests()
	list.answersDialogs = true
	return []tool{list, s.getNetworkRequest()}
}

// resourceTypes are the types list_network_requests filters by, as in
// chrome-devtools-mcp: Chrome's resource types in lower case.
var resourceTypes = []string{"document", "stylesheet", "image", "media", "font", "script", "texttrack", "xhr", "fetch",
	"prefetch", "eventsource", "websocket", "manifest", "signedexchange", "ping", "cspviolationreport", "preflight", "fedcm", "other"}

type listNetworkArgs struct {
	pageArg
	PageSize                 *int     `json:"pageSize,omitempty" jsonschema:"Maximum number of requests to return. When omitted, returns all requests."`
	PageIdx                  *int     `json:"pageIdx,omitempty" jsonschema:"Page number to return (0-based). When omitted, returns the first page."`
	ResourceTypes            []string `json:"resourceTypes,omitempty" jsonschema:"Filter requests to only return requests of the specified resource types. When omitted or empty, returns all requests. Types: document, stylesheet, image, media, font, script, texttrack, xhr, fetch, prefetch, eventsource, websocket, manifest, signedexchange, ping, cspviolationreport, preflight, fedcm, other."`
	IncludePreservedRequests bool     `json:"includePreservedRequests,omitempty" jsonschema:"Set to true to return the preserved requests over the last 3 navigations."`
}

// maxListedURL is the longest URL a list line shows whole.
const maxListedURL = 255

func (s *Server) listNetworkRequests() tool {
	return newTool("list_network_requests", "Lists the most recent requests for the target page since the last navigation. Collected from the moment pagemux attached to the page: a page it opened is complete, a page opened by another (a popup, a tab of an attached browser) lacks the requests it made before its first tool call.", pageScope,
		func(ctx context.Context, c *call, a *listNetworkArgs) error {
			// Attaches to a page met but not used yet: recording starts here.
			if err := c.page.Ready(ctx); err != nil {
				return err
			}
			if err := checkTypes("resourceTypes", a.ResourceTypes, resourceTypes); err != nil {
				return err
			}
			if err := checkPaging(a.PageSize, a.PageIdx); err != nil {
				return err
			}
			list := requestList(c.page.Network(), a)
			c.resp.say("## Network requests")
			if list.Total == 0 {
				c.resp.say("No requests found.")
			} else {
				var lines []string
				list.Requests, lines = paginate(list.Requests, a.PageSize, a.PageIdx)
				c.resp.lines = append(c.resp.lines, lines...)
				for _, r := range list.Requests {
					c.resp.say("%s", requestLine(r))
				}
			}
			completenessNotes(c.resp, list.Completeness, "requests")
			c.resp.answer.Requests = list
			return nil
		})
}

// requestList is the page's requests of the resource types a asks for (all
// when none), before paging.
func requestList(n *browser.Network, a *listNetworkArgs) *RequestList {
	reqs, info := n.List(a.IncludePreservedRequests)
	list := &RequestList{Requests: []RequestInfo{}, Completeness: Completeness(info)}
	for _, r := range reqs {
		ri := requestInfo(r)
		if len(a.ResourceTypes) == 0 || slices.Contains(a.ResourceTypes, ri.ResourceType) {
			list.Requests = append(list.Requests, ri)
		}
	}
	list.Total = len(list.Requests)
	return list
}

// requestLine is a request as a list shows it: reqid=2 GET url [200].
func requestLine(r RequestInfo) string {
	url := r.URL
	if len(url) > maxListedURL {
		url = url[:maxListedURL] + "... <truncated>"
	}
	return fmt.Sprintf("reqid=%d %s %s [%s]", r.ID, r.Method, url, r.Status)
}

type getNetworkArgs struct {
	pageArg
	ReqID            *int   `json:"reqid,omitempty" jsonschema:"The reqid of the network request. If omitted, the latest request of the page's current navigation (pagemux has no DevTools Network panel to select one in)."`
	RequestFilePath  string `json:"requestFilePath,omitempty" jsonschema:"The absolute or relative path to a .network-request file to save the request body to. If omitted, the body is returned inline."`
	ResponseFilePath string `json:"responseFilePath,omitempty" jsonschema:"The absolute or relative path to a .network-response file to save the response body to. If omitted, the body is returned inline."`
}

func (s *Server) getNetworkRequest() tool {
	return newTool("get_network_request", "Gets a network request by an optional reqid, if omitted returns the latest request of the page. Useful for inspecting request headers (including 'Cookie') and response headers (including 'Set-Cookie' and directives), status, timing and bodies.", pageScope,
		func(ctx context.Context, c *call, a *getNetworkArgs) error {
			// Attaches to a page met but not used yet: recording starts here.
			if err := c.page.Ready(ctx); err != nil {
				return err
			}
			for _, p := range []string{a.RequestFilePath, a.ResponseFilePath} {
				if p != "" {
					if _, err := s.files.output(ctx, p); err != nil {
						return err
					}
				}
			}
			r, err := s.pickRequest(c, a.ReqID)
			if err != nil {
				return err
			}
			d := requestDetails{s: s, c: c, r: r}
			return d.render(ctx, a)
		})
}

// pickRequest finds the request a call names, or the latest one.
func (s *Server) pickRequest(c *call, id *int) (browser.Request, error) {
	n := c.page.Network()
	if id != nil {
		return n.Get(*id)
	}
	r, ok := n.Latest()
	if !ok {
		return r, fmt.Errorf("page %d made no request since its last navigation; pass a reqid from list_network_requests (includePreservedRequests shows earlier ones)", c.page.ID)
	}
	c.resp.say("No reqid given: this is the latest request of the page (reqid=%d); pagemux has no DevTools Network panel selection, so pass a reqid to pick another.", r.ID)
	return r, nil
}

// requestDetails renders one request for get_network_request.
type requestDetails struct {
	s *Server
	c *call
	r browser.Request
}

// maxInlineBody is the longest body shown inline, in characters, as in
// chrome-devtools-mcp; longer ones are cut with a note.
const maxInlineBody = 10000

func (d requestDetails) render(ctx context.Context, a *getNetworkArgs) error {
	r, resp := d.r, d.c.resp
	resp.say("## Request %s", r.URL)
	resp.say("Status: %s", r.Status())
	resp.say("Method: %s", r.Method)
	resp.say("Resource type: %s", strings.ToLower(string(r.Type)))
	resp.say("Timing: %s", timing(r))
	resp.say("### Request Headers")
	resp.lines = append(resp.lines, headerLines(r.Headers)...)
	if r.HasPostData || a.RequestFilePath != "" {
		body, err := d.c.page.RequestBody(ctx, r)
		if err := d.body(ctx, "Request", body, err, a.RequestFilePath); err != nil {
			return err
		}
	}
	headers := r.ResponseHeaders
	if headers == nil && r.Response != nil {
		headers = r.Response.Headers
	}
	if headers != nil {
		resp.say("### Response Headers")
		resp.lines = append(resp.lines, headerLines(headers)...)
	}
	if r.Response != nil || a.ResponseFilePath != "" {
		body, err := d.c.page.ResponseBody(ctx, r)
		if err := d.body(ctx, "Response", body, err, a.ResponseFilePath); err != nil {
			return err
		}
	}
	if r.Failure != "" {
		resp.say("### Request failed with")
		resp.say("%s", r.Failure)
	}
	d.redirects()
	return nil
}

// body shows or saves one body; only errors that are not about the body
// itself (a bad path, a closed page, a dialog) fail the call.
func (d requestDetails) body(ctx context.Context, what string, body []byte, err error, path string) error {
	resp := d.c.resp
	resp.say("### %s Body", what)
	if err != nil {
		if !errors.Is(err, browser.ErrNoBody) {
			return err
		}
		reason := strings.TrimPrefix(err.Error(), browser.ErrNoBody.Error()+": ")
		if path != "" {
			resp.say("<%s body not available: %s; nothing was saved to %s>", strings.ToLower(what), reason, path)
		} else {
			resp.say("<%s body not available: %s>", strings.ToLower(what), reason)
		}
		return nil
	}
	if path != "" {
		full, err := d.s.files.write(ctx, path, body)
		if err != nil {
			return err
		}
		resp.say("Saved to %s (%d bytes).", full, len(body))
		return nil
	}
	flag := map[string]string{"Request": "requestFilePath", "Response": "responseFilePath"}[what]
	switch {
	case len(body) == 0:
		resp.say("<empty %s>", strings.ToLower(what))
	case !utf8.Valid(body):
		resp.say("<binary data, %d bytes; pass %s to save it>", len(body), flag)
	case utf8.RuneCount(body) > maxInlineBody:
		runes := []rune(string(body))
		resp.say("%s", string(runes[:maxInlineBody]))
		resp.say("... <truncated: the body is %d bytes; pass %s to save all of it>", len(body), flag)
	default:
		resp.say("%s", body)
	}
	return nil
}

// redirects shows the hops before this one, oldest first, and where it led.
func (d requestDetails) redirects() {
	var chain []browser.Request
	for id := d.r.RedirectFrom; id != 0; {
		prev, err := d.c.page.Network().Get(id)
		if err != nil {
			break
		}
		chain = append([]browser.Request{prev}, chain...)
		id = prev.RedirectFrom
	}
	if len(chain) > 0 {
		d.c.resp.say("### Redirect chain")
		for i, r := range chain {
			d.c.resp.say("%s%s", strings.Repeat("  ", i), requestLine(requestInfo(r)))
		}
	}
	if d.r.RedirectTo != 0 {
		d.c.resp.say("Redirected to reqid=%d.", d.r.RedirectTo)
	}
}

// headerLines are "- name:value" lines, names in lower case (as
// chrome-devtools-mcp shows them) and sorted; a value Chrome joined with
// newlines (a repeated header) gives a line each.
func headerLines(h network.Headers) []string {
	values := map[string][]string{}
	for k, v := range h {
		name := strings.ToLower(k)
		values[name] = append(values[name], strings.Split(fmt.Sprint(v), "\n")...)
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(values)) {
		for _, v := range values[name] {
			out = append(out, fmt.Sprintf("- %s:%s", name, v))
		}
	}
	return out
}

// timing says how long the request took, from Chrome's monotonic clock.
func timing(r browser.Request) string {
	msSince := func(t float64) int64 { return int64((t - float64(r.Start)) * 1000) }
	var parts []string
	if r.ResponseAt > 0 {
		parts = append(parts, fmt.Sprintf("response headers after %d ms", msSince(float64(r.ResponseAt))))
	}
	switch {
	case r.Finished && r.End > 0:
		// Chrome stamps the events in different processes: keep the order.
		parts = append(parts, fmt.Sprintf("done after %d ms", msSince(max(float64(r.End), float64(r.ResponseAt)))))
	case !r.Finished && !r.Sent.IsZero():
		parts = append(parts, fmt.Sprintf("still pending, started %s ago", time.Since(r.Sent).Round(time.Millisecond)))
	}
	if r.EncodedLength > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes received", int64(r.EncodedLength)))
	}
	if r.FromCache {
		parts = append(parts, "from the memory cache")
	}
	if !r.Sent.IsZero() {
		parts = append(parts, "started at "+r.Sent.UTC().Format("15:04:05.000")+" UTC")
	}
	return strings.Join(parts, ", ")
}
