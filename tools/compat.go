package tools

import (
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/browser"
)

// What agents read in a tool's definition beyond its parameter names and
// types, kept in one place: the schema keywords that struct tags cannot say
// (enums, bounds, defaults, minItems), as chrome-devtools-mcp 1.11 states
// them, and every tool's annotations. TestCompatSchemas compares the
// schemas with the Node server's own tools/list (tools/testdata/cdm).

// schemaExtras adds JSON Schema keywords to properties, by tool. Tools whose
// file patches their own schema (emulate, lighthouse_audit) are not here.
var schemaExtras = map[string]map[string]map[string]any{
	"navigate_page": {
		"type":               {"enum": []string{"url", "back", "forward", "reload"}},
		"handleBeforeUnload": {"enum": []string{"accept", "dismiss"}},
	},
	"handle_dialog":   {"action": {"enum": []string{"accept", "dismiss"}}},
	"evaluate_script": {"format": {"enum": []string{"function", "script"}}},
	"take_snapshot":   {"mode": {"enum": []string{SnapshotFull, SnapshotIncremental}}},
	"list_console_messages": {
		"pageSize":                 {"exclusiveMinimum": 0},
		"pageIdx":                  {"minimum": 0},
		"types":                    {"items": enumOf(consoleTypes...)},
		"includePreservedMessages": {"default": false},
		"includeStackTraces":       {"default": false},
	},
	"list_network_requests": {
		"pageSize":                 {"exclusiveMinimum": 0},
		"pageIdx":                  {"minimum": 0},
		"resourceTypes":            {"items": enumOf(resourceTypes...)},
		"includePreservedRequests": {"default": false},
	},
	"performance_start_trace": {"reload": {"default": true}, "autoStop": {"default": true}},
	"take_screenshot": {
		"format":  {"enum": []string{"png", "jpeg", "webp"}, "default": "png"},
		"quality": {"minimum": 0, "maximum": 100},
	},
	"upload_file": {"filePaths": {"minItems": 1}},
	"route": { // routes.go
		"status":  {"minimum": 100, "maximum": 599},
		"abort":   {"enum": browser.AbortReasons},
		"delayMs": {"minimum": 0, "maximum": browser.MaxRouteDelay.Milliseconds()},
		"pattern": {"minLength": 1},
	},
	"unroute":  {"id": {"minimum": 1}},
	"wait_for": {"text": {"minItems": 1}},
}

// enumItems is the items schema of an array of enum strings.
type enumItems struct {
	Type string   `json:"type"`
	Enum []string `json:"enum"`
}

func enumOf(values ...string) enumItems { return enumItems{"string", values} }

// hints are a tool's annotations: what a client may assume of a call.
type hints struct {
	readOnly    bool // changes nothing an agent can see in the page
	destructive bool // may destroy state the agent cannot get back
	idempotent  bool // calling it twice with the same arguments does no more than once
	openWorld   bool // may reach beyond the page: navigate, submit, run arbitrary code
}

// annotations are every tool's hints. A tool missing here fails at start.
var annotations = map[string]hints{
	"list_pages":    {readOnly: true, idempotent: true},
	"new_page":      {openWorld: true},
	"select_page":   {idempotent: true},
	"close_page":    {destructive: true},
	"navigate_page": {openWorld: true},
	"wait_for":      {idempotent: true}, // read-only in TOOLS.md's terms: not list_/get_

	"take_snapshot":               {readOnly: true, idempotent: true},
	"click":                       {openWorld: true},
	"hover":                       {idempotent: true},
	"fill":                        {idempotent: true},
	"type_text":                   {},
	"press_key":                   {openWorld: true},
	"handle_dialog":               {},
	"fill_form":                   {idempotent: true},
	"drag":                        {},
	"upload_file":                 {idempotent: true},
	"evaluate_script":             {destructive: true, openWorld: true},
	"take_screenshot":             {readOnly: true, idempotent: true},
	"list_console_messages":       {readOnly: true, idempotent: true},
	"get_console_message":         {readOnly: true, idempotent: true},
	"list_network_requests":       {readOnly: true, idempotent: true},
	"get_network_request":         {readOnly: true, idempotent: true},
	"emulate":                     {idempotent: true},
	"resize_page":                 {idempotent: true},
	"performance_start_trace":     {openWorld: true},
	"performance_stop_trace":      {},
	"performance_analyze_insight": {idempotent: true},
	"take_heapsnapshot":           {},
	"lighthouse_audit":            {openWorld: true},
	"get_css_styles":              {readOnly: true, idempotent: true},
	"screencast_start":            {},
	"screencast_stop":             {},
	"route":                       {destructive: true}, // routes.go: it changes every matching request
	"route_list":                  {idempotent: true},  // read-only in the rules, not in TOOLS.md's terms: not list_/get_
	"unroute":                     {idempotent: true},
	"cookie_list":                 {idempotent: true}, // state.go: the browser state tools
	"cookie_get":                  {idempotent: true},
	"cookie_set":                  {idempotent: true},
	"cookie_delete":               {destructive: true, idempotent: true},
	"cookie_clear":                {destructive: true, idempotent: true},
	"localstorage_list":           {idempotent: true},
	"localstorage_get":            {idempotent: true},
	"localstorage_set":            {idempotent: true},
	"localstorage_delete":         {destructive: true, idempotent: true},
	"localstorage_clear":          {destructive: true, idempotent: true},
	"sessionstorage_list":         {idempotent: true},
	"sessionstorage_get":          {idempotent: true},
	"sessionstorage_set":          {idempotent: true},
	"sessionstorage_delete":       {destructive: true, idempotent: true},
	"sessionstorage_clear":        {destructive: true, idempotent: true},
	"indexeddb_list":              {idempotent: true},
	"storage_state":               {idempotent: true},
	"set_storage_state":           {idempotent: true},
	"har_start":                   {},
	"har_save":                    {idempotent: true}, // har.go: writes a file, changes nothing in the page
	"pdf_save":                    {idempotent: true}, // pdf.go: the same
}

// withCompat applies schemaExtras and annotations to every tool.
func withCompat(ts []tool) []tool {
	for i := range ts {
		t := &ts[i]
		if extra, ok := schemaExtras[t.def.Name]; ok {
			patchSchema(t, extra)
		}
		h, ok := annotations[t.def.Name]
		if !ok {
			panic(fmt.Sprintf("tool %s has no entry in the annotations table (tools/compat.go)", t.def.Name))
		}
		t.def.Annotations = mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(h.readOnly),
			DestructiveHint: mcp.ToBoolPtr(h.destructive),
			IdempotentHint:  mcp.ToBoolPtr(h.idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(h.openWorld),
		}
	}
	return ts
}
