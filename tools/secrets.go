package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/secrets"
	"github.com/pagemux/pagemux/storagestate"
)

// Secrets (--secrets): an agent writes ${NAME} where a tool types or stores
// a value, the call gets the value (expandSecrets, before the call queues),
// and every answer shows ${NAME} where the value would be (maskResult, the
// last stage of every call, and the files the workspace writes). An
// agent's names are those of its token's file (Options.AgentSecrets), else
// of Options.Secrets; the masks hide every agent's values from every agent.

// secretTools are the tools whose arguments may name secrets, and the
// fields of each that may hold one bare (the whole value a secret's name).
// Every string in their arguments may hold ${NAME}.
var secretTools = map[string][]string{
	"fill":               {"value"},
	"fill_form":          {"value"},
	"type_text":          {"text"},
	"cookie_set":         {"value"},
	"localstorage_set":   {"value"},
	"sessionstorage_set": {"value"},
	"route":              {"body"},
	"set_storage_state":  nil, // and the file's values: expandState
	"handle_dialog":      {"promptText"},
}

// secretsFor is the set the agent of ctx names secrets from.
func (s *Server) secretsFor(ctx context.Context) *secrets.Set {
	if a, ok := s.agentOf(ctx); ok && a.Token != "" {
		if set, ok := s.agentSecrets[a.Token]; ok {
			return set
		}
	}
	return s.secrets
}

// expandSecrets returns the arguments of a call to tool with the agent's
// secrets in place of their names. Arguments of other tools come back as
// they are: a secret never goes where a tool would show it back (a URL, a
// script).
func (s *Server) expandSecrets(ctx context.Context, tool string, args []byte) ([]byte, error) {
	bare, ok := secretTools[tool]
	set := s.secretsFor(ctx)
	if !ok || set.Len() == 0 || len(args) == 0 {
		return args, nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, fmt.Errorf("invalid arguments for %s: %v", tool, err)
	}
	v, err := expandIn(v, "", bare, set)
	if err != nil {
		return nil, &argError{fmt.Sprintf("%s: %v", tool, err)}
	}
	return json.Marshal(v)
}

// expandIn expands every string in v; key is the object key v is under.
func expandIn(v any, key string, bare []string, set *secrets.Set) (any, error) {
	switch x := v.(type) {
	case string:
		return set.Expand(x, slices.Contains(bare, key))
	case []any:
		for i := range x {
			var err error
			if x[i], err = expandIn(x[i], key, bare, set); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k := range x {
			var err error
			if x[k], err = expandIn(x[k], k, bare, set); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// maskResult returns res with every secret hidden: its texts, resources
// and structured content. It leaves res as it was (a once-only record may
// share it) and returns a copy, or res itself without secrets.
func (s *Server) maskResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	if s.masker == nil || res == nil {
		return res
	}
	cp := *res
	res = &cp
	res.Content = slices.Clone(res.Content)
	for i, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			c.Text = s.masker.Mask(c.Text)
			res.Content[i] = c
		case mcp.EmbeddedResource:
			if t, ok := c.Resource.(mcp.TextResourceContents); ok {
				t.Text = s.masker.Mask(t.Text)
				c.Resource = t
				res.Content[i] = c
			}
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			var v any
			if json.Unmarshal([]byte(s.masker.Mask(string(b))), &v) == nil {
				res.StructuredContent = v
			}
		}
	}
	return res
}

// maskedOnce is res masked, unless masked says it is already.
func (s *Server) maskedOnce(res *mcp.CallToolResult, masked bool) *mcp.CallToolResult {
	if masked {
		return res
	}
	return s.maskResult(res)
}

// expandState puts the agent's secrets in the cookie and localStorage
// values of a storage state file set_storage_state reads. A file
// storage_state saved shows ${NAME} where a value was (the workspace masks
// what it writes), so it restores as it was, for an agent with that
// secret.
func (s *Server) expandState(ctx context.Context, st *storagestate.State) error {
	set := s.secretsFor(ctx)
	if set.Len() == 0 {
		return nil
	}
	for i, c := range st.Cookies {
		v, err := set.Expand(c.Value, false)
		if err != nil {
			return &argError{fmt.Sprintf("cookies[%d] (%s): %v", i, c.Name, err)}
		}
		st.Cookies[i].Value = v
	}
	for _, o := range st.Origins {
		for j, it := range o.LocalStorage {
			v, err := set.Expand(it.Value, false)
			if err != nil {
				return &argError{fmt.Sprintf("origins %s localStorage %s: %v", o.Origin, it.Name, err)}
			}
			o.LocalStorage[j].Value = v
		}
	}
	return nil
}
