package tools

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
)

// toolError is the result for an error an agent should see.
func toolError(err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(errorText(err))
}

// errorText is the message of an error as an agent reads it, with the
// "Error: " that chrome-devtools-mcp puts before its errors.
func errorText(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "Error: the call was cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "Error: the call ran out of time"
	}
	return "Error: " + err.Error()
}
