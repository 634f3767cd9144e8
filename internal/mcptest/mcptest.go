// Package mcptest has what tests of several packages need to talk MCP to a
// pagemux over HTTP: mcp-go's own Streamable HTTP client, started and
// initialized. It is for tests only.
package mcptest

import (
	"net/http"
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
	// The client's own DELETE carries none of WithHTTPHeaders: the http.Client
	// adds them to every request, so that closing the client ends the
	// session, which needs its token.
	hc := &http.Client{Transport: headerTransport(headers)}
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers), transport.WithHTTPBasicClient(hc))
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

// headerTransport adds its headers to each request it sends.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}
