// Package mcptest has what tests of several packages need to talk MCP to a
// pagemux over HTTP: mcp-go's own Streamable HTTP client, started and
// initialized. It is for tests only.
package mcptest

import (
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// HTTPClient connects mcp-go's Streamable HTTP client to the endpoint url
// (…/mcp) with headers, initializes it in protocol ("" for the newest, the
// stateless revision), and closes it when the test ends.
func HTTPClient(t testing.TB, url string, headers map[string]string, protocol string) *client.Client {
	t.Helper()
	if protocol == "" {
		protocol = mcp.LATEST_PROTOCOL_VERSION
	}
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: protocol, ClientInfo: mcp.Implementation{Name: t.Name(), Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}
