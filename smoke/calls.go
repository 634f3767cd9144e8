package smoke

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// agent calls pagemux's tools over MCP, as an agent would; it reads their
// answers as text, the only contract the tools have.
type agent struct{ c *client.Client }

// ToolError is a tool's answer with isError set: what an agent would be
// told, such as a navigation that timed out.
type ToolError struct {
	Tool string
	Text string
}

func (e *ToolError) Error() string {
	return e.Tool + ": " + strings.TrimPrefix(strings.TrimSpace(e.Text), "Error: ")
}

// call runs one tool and returns its text; a tool error is a *ToolError.
func (a *agent) call(ctx context.Context, tool string, args map[string]any) (string, error) {
	res, err := a.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.IsError {
		return "", &ToolError{Tool: tool, Text: b.String()}
	}
	return b.String(), nil
}

// request is one line of list_network_requests: "reqid=2 GET url [200]".
type request struct {
	id     int
	method string
	url    string
	// status is the HTTP status, a net::ERR_… failure, or "pending".
	status string
}

var requestLine = regexp.MustCompile(`^reqid=(\d+) (\S+) (.*) \[([^\]]*)\]$`)

func parseRequests(text string) []request {
	var out []request
	for _, line := range strings.Split(text, "\n") {
		m := requestLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		out = append(out, request{id: id, method: m[2], url: m[3], status: m[4]})
	}
	return out
}

// httpStatus is the request's HTTP status, 0 if it has none.
func (r request) httpStatus() int {
	n, err := strconv.Atoi(r.status)
	if err != nil {
		return 0
	}
	return n
}

func (r request) pending() bool { return r.status == "pending" }

// message is one entry of list_console_messages:
// "msgid=3 [error] Uncaught Error: kaboom (0 args)", maybe "[2 times]".
type message struct {
	id    int
	typ   string
	text  string
	count int
}

var messageEntry = regexp.MustCompile(`(?s)^msgid=(\d+) \[(\w+)\] (.*) \(\d+ args\)(?: \[(\d+) times\])?$`)

// parseMessages reads the entries; a text with newlines spans lines, so an
// entry runs to the next msgid= line or the notes after the list.
func parseMessages(text string) []message {
	var blocks []string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "msgid="):
			blocks = append(blocks, line)
		case strings.HasPrefix(line, "Note: "), strings.HasPrefix(line, "Showing "), len(blocks) == 0:
		default:
			blocks[len(blocks)-1] += "\n" + line
		}
	}
	var out []message
	for _, b := range blocks {
		m := messageEntry.FindStringSubmatch(b)
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		n := 1
		if m[4] != "" {
			n, _ = strconv.Atoi(m[4])
		}
		out = append(out, message{id: id, typ: m[2], text: m[3], count: n})
	}
	return out
}

// sourceIn finds where get_console_message says a message came from: the
// first frame of its stack, else its URL line; "" if neither.
func sourceIn(text string) string {
	inStack := false
	for _, line := range strings.Split(text, "\n") {
		if u, ok := strings.CutPrefix(line, "URL: "); ok {
			return u
		}
		if line == "### Stack trace" {
			inStack = true
			continue
		}
		if inStack && strings.HasPrefix(line, "at ") {
			if i := strings.LastIndex(line, " ("); i >= 0 && strings.HasSuffix(line, ")") {
				return line[i+2 : len(line)-1]
			}
			return ""
		}
	}
	return ""
}

// scriptResult is the value evaluate_script returned, JSON-decoded into v.
func scriptResult(text string, v any) error {
	_, rest, ok := strings.Cut(text, "```json\n")
	body, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		return fmt.Errorf("evaluate_script: unexpected answer %q", text)
	}
	return json.Unmarshal([]byte(body), v)
}

// droppedNote is the note of a listing that lost its oldest records to
// pagemux's cap (tools.completenessNotes).
var droppedNote = regexp.MustCompile(`(?m)^Note: (\d+) older \w+ of the listed navigations were dropped`)

// droppedIn is how many records the listing says it dropped.
func droppedIn(text string) int {
	m := droppedNote.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
