package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// everyPageTool: bob calls every tool that takes a pageId, with arguments
// its schema accepts, on alice's page, and each is refused as her page's,
// before it acts: her cookie, storage and title are as she left them. New
// tools are covered as they come, with no list to keep.
func everyPageTool(t *testing.T, e *isoEnv) {
	alice, bob := e.as(t, aliceSecret, "every-tool"), e.as(t, bobSecret, "every-tool")
	a := newPageWith(t, alice, testSite.URL+"/form.html", nil)
	const state = "() => { document.cookie = 'who=alice-every'; localStorage.setItem('who', 'alice-every'); document.title = 'alice-every'; return 'set' }"
	evalAs(t, alice, a, state)
	newPageWith(t, bob, testSite.URL+"/form.html", nil) // bob has a page of his own
	tried := 0
	for _, def := range e.srv.Tools() {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		raw, _ := json.Marshal(def.InputSchema)
		if len(def.RawInputSchema) > 0 {
			raw = def.RawInputSchema
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("%s's schema: %v", def.Name, err)
		}
		if _, ok := schema.Properties["pageId"]; !ok {
			continue
		}
		args := map[string]any{"pageId": a}
		for _, name := range schema.Required {
			if name == "pageId" {
				continue
			}
			args[name] = exampleOf(t, def.Name+"."+name, schema.Properties[name])
		}
		tried++
		text, failed := use(t, bob, def.Name, args)
		if !failed || !strings.Contains(text, "belongs to another agent") {
			t.Errorf("bob's %s on alice's page %d (%v): %s", def.Name, a, args, text)
		}
	}
	if tried < 40 {
		t.Errorf("only %d tools take a pageId", tried)
	}
	if got := evalAs(t, alice, a, "() => [document.cookie, localStorage.getItem('who'), document.title].join(' | ')"); !strings.Contains(got, `"who=alice-every | alice-every | alice-every"`) {
		t.Errorf("alice's page after bob's calls: %s", got)
	}
}

// exampleOf is a value the JSON schema s accepts: an enum's first value,
// a number at its minimum, a string of its least length, an array of one
// item, an object of its required properties.
func exampleOf(t *testing.T, where string, s json.RawMessage) any {
	var sc struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Minimum    *float64                   `json:"minimum"`
		MinLength  int                        `json:"minLength"`
		Items      json.RawMessage            `json:"items"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(s, &sc); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if len(sc.Enum) > 0 {
		return sc.Enum[0]
	}
	typ, _ := sc.Type.(string)
	if types, ok := sc.Type.([]any); ok {
		i := slices.IndexFunc(types, func(v any) bool { return v != "null" })
		typ, _ = types[i].(string)
	}
	switch typ {
	case "integer", "number":
		if sc.Minimum != nil {
			return *sc.Minimum
		}
		return 1
	case "boolean":
		return false
	case "array":
		return []any{exampleOf(t, where+"[]", sc.Items)}
	case "object":
		o := map[string]any{}
		for _, name := range sc.Required {
			o[name] = exampleOf(t, where+"."+name, sc.Properties[name])
		}
		return o
	}
	return strings.Repeat("x", max(sc.MinLength, 1))
}
