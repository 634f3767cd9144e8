package mcptest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// inProcess is an initialized client of a server with two tools: "parts"
// answers two text parts around an image, "refuse" an error result.
func inProcess(t *testing.T) *client.Client {
	t.Helper()
	srv := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("parts"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			mcp.NewTextContent("one\n"), mcp.NewImageContent("aW1n", "image/png"), mcp.NewTextContent("two"),
		}}, nil
	})
	srv.AddTool(mcp.NewTool("refuse"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("no: do this instead"), nil
	})
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: t.Name(), Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// Call joins text parts with nothing between them, keeps images apart,
// reports a tool's refusal as IsError and a protocol error as Err.
func TestCall(t *testing.T) {
	t.Parallel()
	c := inProcess(t)
	r := Call(t.Context(), c, "parts", nil)
	if r.Err != nil || r.IsError || r.Text != "one\ntwo" || len(r.Images) != 1 || r.Images[0].Data != "aW1n" {
		t.Errorf("parts: %+v", r)
	}
	if r := Call(t.Context(), c, "refuse", nil); r.Err != nil || !r.IsError || r.Text != "no: do this instead" {
		t.Errorf("refuse: %+v", r)
	}
	if r := Call(t.Context(), c, "missing", nil); r.Err == nil || r.Text != "" {
		t.Errorf("a tool that does not exist: %+v", r)
	}
	if got := Text(nil); got != "" {
		t.Errorf("Text(nil) = %q", got)
	}
	if r := Answer(nil, errors.New("broken")); r.Err == nil {
		t.Errorf("Answer with an error: %+v", r)
	}
}

// WaitFor returns once the condition holds.
func TestWaitFor(t *testing.T) {
	t.Parallel()
	start := time.Now()
	WaitFor(t, "50 ms to pass", func() bool { return time.Since(start) > 50*time.Millisecond })
}

// LockedBuffer takes writes from several goroutines while it is read.
func TestLockedBuffer(t *testing.T) {
	t.Parallel()
	var b LockedBuffer
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			fmt.Fprintf(&b, "%d", i)
			_ = b.String()
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 10 {
		t.Errorf("%d bytes written, want 10: %q", got, b.String())
	}
}
