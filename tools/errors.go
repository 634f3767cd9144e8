package tools

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/cluster"
)

// maxErrorText bounds an error's text: errors quote bad input, and a 10 MB
// URL must not come back as a 10 MB error.
const maxErrorText = 2000

// toolError is the result for an error an agent should see.
func toolError(err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(capText(errorText(err), maxErrorText))
}

// capText cuts s to at most n bytes, on a rune boundary, saying how much
// was cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes of this error cut)", s[:cut], len(s)-cut)
}

// errorText is the message of an error as an agent reads it, with the
// "Error: " that chrome-devtools-mcp puts before its errors.
func errorText(err error) string {
	var bound *boundError
	switch {
	case errors.Is(err, browser.ErrUnresponsive), errors.As(err, &bound),
		errors.Is(err, cluster.ErrUnavailable), errors.Is(err, cluster.ErrLockLost):
		// Before the cancellations: the calls that Chrome's freeze, the
		// tool's bound or etcd ended wrap the context's errors too, and
		// say more.
		return "Error: " + err.Error()
	case errors.Is(err, context.Canceled):
		return "Error: the call was cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "Error: the call ran out of time"
	}
	return "Error: " + err.Error()
}
