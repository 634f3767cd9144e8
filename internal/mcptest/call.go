package mcptest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Result is one tool call's answer as tests read it.
type Result struct {
	// Text is the answer's text parts joined with nothing between them.
	Text string
	// IsError is the answer's isError: the tool refused or failed, and
	// Text says why.
	IsError bool
	// Images are the answer's image parts, in order.
	Images []mcp.ImageContent
	// Err is a protocol or transport error: the call got no answer, and
	// the other fields are zero.
	Err error
}

// Call calls tool with args as c and returns its answer. It does not fail
// the test on any error, so it may run in a goroutine: a caller that needs
// the call to succeed checks Err and IsError itself.
func Call(ctx context.Context, c *client.Client, tool string, args map[string]any) Result {
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	return Answer(res, err)
}

// Answer is a Result made of what CallTool (or any call that answers a
// CallToolResult) returned.
func Answer(res *mcp.CallToolResult, err error) Result {
	if err != nil {
		return Result{Err: err}
	}
	r := Result{Text: Text(res), IsError: res.IsError}
	for _, c := range res.Content {
		if img, ok := c.(mcp.ImageContent); ok {
			r.Images = append(r.Images, img)
		}
	}
	return r
}

// Text joins the text parts of res with nothing between them, as Call
// does; it is "" for a nil res and skips parts of other kinds.
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// WaitFor polls cond every 20 ms until it holds, and fails the test with
// what after a minute. The minute is a bound for a broken run, not a
// measure: a test waits for the event it needs, never for a time, and one
// that checks how soon something happens measures that itself.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute, still waiting for %s", what)
		}
	}
}

// LockedBuffer is an io.Writer safe for concurrent use: a process's or a
// logger's output that the test reads while it is written. Its zero value
// is an empty buffer ready to use; it has no reader but String.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
