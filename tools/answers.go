package tools

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
)

// Typed answers: beside its text, a tool call can have its answer as data,
// an Answer in the result's structuredContent, when its request's _meta
// asks for it with StructuredMeta. The values are built by the query
// functions of this file (pageInfos, requestInfos, messageInfos, …), and the
// text formatters write the text from the same values, so that the text and
// the data say the same. Without the key a result is text alone, exactly as
// chrome-devtools-mcp's: plain clients see no change and pay no tokens.
//
// pagemux smoke reads pagemux's answers this way, in process; an MCP client
// may too.

// StructuredMeta is the key of a tools/call request's _meta that asks for
// the answer as data: {"_meta": {"pagemux.dev/structured": true}} adds an
// Answer as the result's structuredContent, on a success and on the errors
// that have a typed form (NavigationFailure). false, or no key, is text
// alone; any other value is refused before the call runs.
const StructuredMeta = "pagemux.dev/structured"

// Answer is a tool call's answer as data: the sections its text has, each
// set when the text shows it. It does not repeat the text's notes and
// hints, which are for a reader.
type Answer struct {
	// PageID is the page the call acted on; new_page's is the page it
	// opened. 0 for a browser-scope call that acted on none.
	PageID int `json:"pageId,omitempty"`
	// Pages is the "## Pages" section: list_pages, new_page, select_page,
	// close_page, navigate_page.
	Pages []PageInfo `json:"pages,omitzero"`
	// Dialog is the "# Open dialog" section: a JavaScript dialog that
	// blocks the page when the call ended, whatever the tool.
	Dialog *Dialog `json:"dialog,omitempty"`
	// Requests is list_network_requests' list.
	Requests *RequestList `json:"requests,omitempty"`
	// Messages is list_console_messages' list.
	Messages *MessageList `json:"messages,omitempty"`
	// Message is get_console_message's message.
	Message *ConsoleMessage `json:"message,omitempty"`
	// Script is evaluate_script's value.
	Script *ScriptResult `json:"script,omitempty"`
	// NavigationFailure is why navigate_page or new_page failed to load
	// its URL, on an error result.
	NavigationFailure *NavigationFailure `json:"navigationFailure,omitempty"`
	// TooBig stands for the sections above, but PageID, when their JSON
	// is past the server's bound (Bound).
	TooBig *TooBig `json:"tooBig,omitempty"`
}

// TooBig says that an answer's data was left out, as too big to send.
type TooBig struct {
	// Size is the length of its JSON; Limit the most sent, twice
	// --max-output.
	Size  int    `json:"size"`
	Limit int    `json:"limit"`
	Hint  string `json:"hint"`
}

// typedPerText is how many characters of JSON a typed answer may have for
// each character of text --max-output allows: JSON spells a record out in
// about twice the characters of its line.
const typedPerText = 2

// PageInfo is a page as list_pages shows it.
type PageInfo struct {
	ID    int    `json:"pageId"`
	URL   string `json:"url"`
	Title string `json:"title,omitempty"` // whole; the text cuts a long one
	// Selected marks the caller's selected page.
	Selected bool `json:"selected,omitempty"`
	// IsolatedContext names the page's browser context, "" for the default.
	IsolatedContext string `json:"isolatedContext,omitempty"`
}

// Dialog is a JavaScript dialog open on a page.
type Dialog struct {
	// Type is alert, confirm, prompt or beforeunload.
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Completeness says what a listing lacks: records dropped past the cap of
// each navigation (browser.BucketCap), and a page attached late.
type Completeness struct {
	Dropped int  `json:"dropped,omitempty"`
	Partial bool `json:"partial,omitempty"`
}

// RequestList is list_network_requests' answer: the requests shown (the
// page of them asked for), how many matched, and what the list lacks.
type RequestList struct {
	Requests []RequestInfo `json:"requests"`
	Total    int           `json:"total"`
	Completeness
}

// RequestInfo is one request as the list shows it.
type RequestInfo struct {
	ID     int    `json:"reqid"`
	Method string `json:"method"`
	URL    string `json:"url"` // whole; the text cuts a long one
	// ResourceType is Chrome's, in lower case, as resourceTypes filters.
	ResourceType string `json:"resourceType"`
	// Status is what the list shows in brackets: the HTTP status, else the
	// failure (net::ERR_…), else "pending".
	Status string `json:"status"`
	// HTTPStatus is the HTTP status, 0 for none yet or a failure.
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Failure    string `json:"failure,omitempty"`
	Pending    bool   `json:"pending,omitempty"`
	// ChangedAt is when what the list shows of the request last changed:
	// its start, response or failure, as a wall time by Chrome's clock
	// (Chrome gives a start both as a wall time and on the monotonic clock
	// of the later events). Zero when Chrome gave no start.
	ChangedAt time.Time `json:"changedAt,omitzero"`
}

// MessageList is list_console_messages' answer: the messages shown, equal
// ones in a row folded into one, how many entries there are, and what the
// list lacks.
type MessageList struct {
	Messages []MessageInfo `json:"messages"`
	Total    int           `json:"total"`
	Completeness
}

// MessageInfo is one entry of the console list.
type MessageInfo struct {
	ID   int    `json:"msgid"`
	Type string `json:"type"` // one of consoleTypes
	Text string `json:"text"`
	Args int    `json:"args"`
	// Count is how many equal messages in a row the entry stands for.
	Count int `json:"count"`
	// Stack is where it came from, with includeStackTraces.
	Stack []Frame `json:"stack,omitempty"`
}

// ConsoleMessage is one message whole, as get_console_message shows it.
type ConsoleMessage struct {
	ID   int    `json:"msgid"`
	Type string `json:"type"`
	Text string `json:"text"`
	// Source is the part of the browser that logged it ("network", …).
	Source string `json:"source,omitempty"`
	// URL is the script or resource it names, when it has no stack.
	URL string `json:"url,omitempty"`
	// Location is where it came from: its stack's first frame as
	// url:line:column (1-based), else URL; "" when Chrome told neither.
	Location string `json:"location,omitempty"`
	// Args are its arguments as the text shows them.
	Args  []string `json:"args,omitempty"`
	Stack []Frame  `json:"stack,omitempty"`
}

// Frame is one frame of a stack trace, positions 1-based.
type Frame struct {
	Function string `json:"function"` // "<anonymous>" for none
	URL      string `json:"url,omitempty"`
	Line     int64  `json:"line,omitempty"`
	Column   int64  `json:"column,omitempty"`
	// Async, on the first frame of an asynchronous part, names what led
	// to it ("Promise.then", "setTimeout"; "async" when Chrome said not).
	Async string `json:"async,omitempty"`
}

// ScriptResult is evaluate_script's value.
type ScriptResult struct {
	// Value is the value as JSON; absent for undefined, a cut value and
	// one saved to a file.
	Value     json.RawMessage `json:"value,omitempty"`
	Undefined bool            `json:"undefined,omitempty"`
	// Cut is the length, in characters of JSON, of a value too big to
	// show, whose head the text shows.
	Cut int `json:"cut,omitempty"`
	// SavedTo is the file filePath saved the value to.
	SavedTo string `json:"savedTo,omitempty"`
}

// NavigationFailure is why a navigation failed.
type NavigationFailure struct {
	URL string `json:"url,omitempty"`
	// TimedOut says the page was still loading when the wait ended.
	TimedOut bool `json:"timedOut,omitempty"`
	// Error is Chrome's error text, such as net::ERR_CONNECTION_REFUSED.
	Error string `json:"error,omitempty"`
}

// checkStructured refuses a StructuredMeta that is not a boolean, before
// the call runs.
func checkStructured(req mcp.CallToolRequest) error {
	m := req.Params.Meta
	if m == nil {
		return nil
	}
	if v, ok := m.AdditionalFields[StructuredMeta]; ok {
		if _, isBool := v.(bool); !isBool {
			return &argError{fmt.Sprintf("invalid _meta %q: %v; want true (the answer as data too, in structuredContent) or false", StructuredMeta, v)}
		}
	}
	return nil
}

// wantsStructured says whether the request asked for a typed answer.
func wantsStructured(req mcp.CallToolRequest) bool {
	m := req.Params.Meta
	return m != nil && m.AdditionalFields[StructuredMeta] == true
}

// withAnswer adds the call's typed answer to res as its structuredContent
// when the request asked for one and the call published one (render does,
// and a handler that failed in a typed way); res otherwise, unchanged. An
// answer whose JSON is past typedPerText times --max-output is sent as
// TooBig, as the text would be cut.
func (s *Server) withAnswer(c *call, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil || !wantsStructured(c.req) {
		return res
	}
	a := c.resp.typed.Load()
	if a == nil {
		return res
	}
	res.StructuredContent = a
	if s.maxOutput <= 0 {
		return res
	}
	b, err := json.Marshal(a)
	if limit := s.maxOutput * typedPerText; err != nil || len(b) > limit {
		res.StructuredContent = &Answer{PageID: a.PageID, TooBig: &TooBig{Size: len(b), Limit: limit,
			Hint: "ask for less (pageSize and pageIdx, types, resourceTypes, a smaller value) or start pagemux with a larger --max-output"}}
	}
	return res
}

// pageInfos are the pages of a list, selected marked.
func pageInfos(pages []*browser.Page, selected int) []PageInfo {
	out := make([]PageInfo, 0, len(pages))
	for _, p := range pages {
		out = append(out, pageInfo(p, selected))
	}
	return out
}

func pageInfo(p *browser.Page, selected int) PageInfo {
	return PageInfo{ID: p.ID, URL: p.URL(), Title: p.Title(), Selected: p.ID == selected, IsolatedContext: p.IsolatedContext()}
}

// dialogOf is the dialog open on p, nil for none.
func dialogOf(p *browser.Page) *Dialog {
	d := p.Dialog()
	if d == nil {
		return nil
	}
	return &Dialog{Type: string(d.Type), Message: d.Message}
}

// requestInfo is r as a list shows it.
func requestInfo(r browser.Request) RequestInfo {
	info := RequestInfo{ID: r.ID, Method: r.Method, URL: r.URL, ResourceType: strings.ToLower(string(r.Type)),
		Status: r.Status(), Failure: r.Failure, ChangedAt: changedAt(r)}
	switch {
	case r.Response != nil:
		info.HTTPStatus = int(r.Response.Status)
	case r.Failure == "" && r.ExtraStatus > 0:
		info.HTTPStatus = int(r.ExtraStatus)
	}
	info.Pending = info.Status == "pending"
	return info
}

// changedAt is when r last changed what a list shows of it, as a wall time
// (RequestInfo.ChangedAt).
func changedAt(r browser.Request) time.Time {
	if r.Sent.IsZero() || r.Start == 0 {
		return r.Sent
	}
	mono := r.Start
	switch {
	case r.Response != nil && r.ResponseAt != 0:
		mono = r.ResponseAt
	case r.Failure != "" && r.End != 0:
		mono = r.End
	}
	return r.Sent.Add(time.Duration((mono - r.Start).Float64() * float64(time.Second)))
}

// openByDesign says whether a request of this type stays open while the
// page lives (a websocket, an event stream).
func openByDesign(t network.ResourceType) bool {
	return t == network.ResourceTypeWebSocket || t == network.ResourceTypeEventSource
}

// messageInfos folds consecutive messages of equal type, text and number
// of arguments into one entry, as the DevTools console does; stacks says
// whether the entries carry their stacks.
func messageInfos(msgs []*browser.ConsoleMessage, stacks bool) []MessageInfo {
	var out []MessageInfo
	for _, m := range msgs {
		if n := len(out); n > 0 {
			prev := &out[n-1]
			if prev.Type == m.Type && prev.Text == m.Text && prev.Args == len(m.Args) {
				prev.Count++
				continue
			}
		}
		info := MessageInfo{ID: m.ID, Type: m.Type, Text: m.Text, Args: len(m.Args), Count: 1}
		if stacks {
			info.Stack = stackFrames(m.Stack)
		}
		out = append(out, info)
	}
	return out
}

// stackFrames are the frames of st, its asynchronous parents' after its
// own; nil for a nil stack.
func stackFrames(st *runtime.StackTrace) []Frame {
	var out []Frame
	for s := st; s != nil; s = s.Parent {
		for i, f := range s.CallFrames {
			fr := Frame{Function: cmp.Or(f.FunctionName, "<anonymous>"), URL: f.URL}
			if f.URL != "" {
				fr.Line, fr.Column = f.LineNumber+1, f.ColumnNumber+1
			}
			if s != st && i == 0 {
				fr.Async = cmp.Or(s.Description, "async")
			}
			out = append(out, fr)
		}
	}
	return out
}

// messageLocation is where a message came from (ConsoleMessage.Location).
func messageLocation(stack []Frame, url string) string {
	if len(stack) > 0 {
		if f := stack[0]; f.URL != "" {
			return fmt.Sprintf("%s:%d:%d", f.URL, f.Line, f.Column)
		}
		return ""
	}
	return url
}

// navigationFailure is the typed form of a navigation's error, nil for an
// error that is not about the page's load.
func navigationFailure(url string, err error) *NavigationFailure {
	var ne *browser.NavigationError
	switch {
	case errors.As(err, &ne):
		return &NavigationFailure{URL: ne.URL, Error: ne.Text}
	case errors.Is(err, browser.ErrNavigationTimeout):
		return &NavigationFailure{URL: url, TimedOut: true}
	}
	return nil
}

// failed publishes the typed form of a navigation's error on page p, if
// it has one, for the error result (withAnswer).
func (r *response) failed(p *browser.Page, url string, err error) {
	if f := navigationFailure(url, err); f != nil {
		r.answer.PageID, r.answer.NavigationFailure = p.ID, f
		r.publish()
	}
}
