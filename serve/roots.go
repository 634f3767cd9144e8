package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A stdio client may offer the directories it works in (MCP roots): the
// server asks with roots/list, and the client answers on stdin. This file
// sends those requests and matches the answers; it asks nothing by itself.

var _ server.SessionWithRoots = (*session)(nil)

// asks are the requests the server sent the client and waits to be answered.
type asks struct {
	mu      sync.Mutex
	write   func([]byte) // set by the connection
	next    int64
	pending map[string]chan askAnswer
}

type askAnswer struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

// ListRoots asks the client for its roots and waits for its answer or ctx.
func (s *session) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	raw, err := s.asks.ask(ctx, mcp.MethodListRoots)
	if err != nil {
		return nil, err
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the client's roots/list answer: %w", err)
	}
	return &res, nil
}

// ask sends a request with an id of the server's own and waits for the answer.
func (a *asks) ask(ctx context.Context, method mcp.MCPMethod) (json.RawMessage, error) {
	a.mu.Lock()
	if a.write == nil {
		a.mu.Unlock()
		return nil, fmt.Errorf("%s: the connection is not ready", method)
	}
	a.next++
	id := "pagemux-" + strconv.FormatInt(a.next, 10)
	ch := make(chan askAnswer, 1)
	if a.pending == nil {
		a.pending = map[string]chan askAnswer{}
	}
	a.pending[id] = ch
	write := a.write
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.pending, id)
		a.mu.Unlock()
	}()
	b, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "method": method})
	if err != nil {
		return nil, err
	}
	write(b)
	select {
	case ans := <-ch:
		if ans.err != nil {
			return nil, fmt.Errorf("%s: the client answered %d %s", method, ans.err.Code, ans.err.Message)
		}
		return ans.result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer from the client: %w", method, context.Cause(ctx))
	}
}

// answered hands the client's response to the request it answers, and
// reports whether there was one.
func (a *asks) answered(id json.RawMessage, m map[string]json.RawMessage) bool {
	var key string
	if json.Unmarshal(id, &key) != nil {
		return false
	}
	a.mu.Lock()
	ch, ok := a.pending[key]
	a.mu.Unlock()
	if !ok {
		return false
	}
	var ans askAnswer
	if e, has := m["error"]; has {
		ans.err = &mcp.JSONRPCErrorDetails{}
		if json.Unmarshal(e, ans.err) != nil {
			ans.err.Message = "an error that does not decode"
		}
	} else {
		ans.result = m["result"]
	}
	select {
	case ch <- ans:
	default: // answered twice
	}
	return true
}
