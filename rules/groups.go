package rules

import (
	"maps"
	"slices"
)

// AllTools are the tools rules may name: pagemux's, which are
// chrome-devtools-mcp's. The tools package's tests check that the two
// lists agree.
var AllTools = []string{
	"list_pages", "new_page", "select_page", "close_page", "navigate_page", "wait_for", "resize_page",
	"take_snapshot", "take_screenshot", "get_css_styles",
	"click", "hover", "fill", "fill_form", "type_text", "press_key", "drag", "handle_dialog", "upload_file",
	"evaluate_script",
	"list_console_messages", "get_console_message", "list_network_requests", "get_network_request",
	"emulate",
	"performance_start_trace", "performance_stop_trace", "performance_analyze_insight",
	"take_heapsnapshot", "lighthouse_audit", "screencast_start", "screencast_stop",
	"har_start", "har_save", "pdf_save",
	"cookie_list", "cookie_get", "cookie_set", "cookie_delete", "cookie_clear",
	"localstorage_list", "localstorage_get", "localstorage_set", "localstorage_delete", "localstorage_clear",
	"sessionstorage_list", "sessionstorage_get", "sessionstorage_set", "sessionstorage_delete", "sessionstorage_clear",
	"indexeddb_list", "storage_state", "set_storage_state",
	"route", "route_list", "unroute",
}

// Groups name sets of tools for rules. "files" also takes in any call
// that names a file of the host (an argument of fileArgs), whatever its
// tool.
var Groups = map[string][]string{
	"all": AllTools,
	// read-only: tools that change nothing an agent can see in the page.
	"read-only": {"list_pages", "take_snapshot", "take_screenshot", "get_css_styles", "wait_for",
		"list_console_messages", "get_console_message", "list_network_requests", "get_network_request", "har_save", "pdf_save",
		"cookie_list", "cookie_get", "localstorage_list", "localstorage_get", "sessionstorage_list", "sessionstorage_get", "indexeddb_list",
		"performance_analyze_insight", "route_list"},
	"navigation": {"new_page", "select_page", "close_page", "navigate_page"},
	"input":      {"click", "hover", "fill", "fill_form", "type_text", "press_key", "drag", "handle_dialog", "upload_file"},
	"scripts":    {"evaluate_script"},
	"files":      {"upload_file", "take_heapsnapshot", "storage_state", "set_storage_state", "har_save", "pdf_save"},
	"audits": {"lighthouse_audit", "performance_start_trace", "performance_stop_trace", "performance_analyze_insight",
		"take_heapsnapshot", "screencast_start", "screencast_stop", "har_start", "har_save"},
	"emulation": {"emulate", "resize_page"},
	// routes: the network routes that mock, fail, delay or change requests.
	"routes": {"route", "route_list", "unroute"},
	// The groups below are --tools' profiles as much as the rules': one
	// vocabulary for both (tools/profiles.go).
	// core: pages, navigation and input, what an agent that only browses needs with snapshot.
	"core": {"list_pages", "new_page", "select_page", "close_page", "navigate_page", "wait_for",
		"click", "hover", "fill", "fill_form", "type_text", "press_key", "drag", "handle_dialog", "upload_file"},
	"snapshot":    {"take_snapshot", "take_screenshot", "get_css_styles"},
	"console":     {"list_console_messages", "get_console_message"},
	"network":     {"list_network_requests", "get_network_request"},
	"performance": {"performance_start_trace", "performance_stop_trace", "performance_analyze_insight"},
	"memory":      {"take_heapsnapshot"},
	"screencast":  {"screencast_start", "screencast_stop"},
	"har":         {"har_start", "har_save"},
	"pdf":         {"pdf_save"},
	// storage: the cookies, web storage and storage state of a page's browser context.
	"storage": {"cookie_list", "cookie_get", "cookie_set", "cookie_delete", "cookie_clear",
		"localstorage_list", "localstorage_get", "localstorage_set", "localstorage_delete", "localstorage_clear",
		"sessionstorage_list", "sessionstorage_get", "sessionstorage_set", "sessionstorage_delete", "sessionstorage_clear",
		"indexeddb_list", "storage_state", "set_storage_state"},
}

// fileArgs are the arguments that name a file of the host, to read or
// write: take_snapshot's, take_screenshot's, the traces', the heap
// snapshot's and screencast_start's filePath, evaluate_script's filePath
// and sourcePath, get_network_request's requestFilePath and
// responseFilePath, upload_file's filePaths, lighthouse_audit's
// outputDirPath, route's bodyFile.
var fileArgs = []string{"filePath", "filePaths", "sourcePath", "requestFilePath", "responseFilePath", "outputDirPath", "path", "filename", "bodyFile"}

// GroupNames are the groups' names, sorted.
func GroupNames() []string { return slices.Sorted(maps.Keys(Groups)) }

// toolSet is a set of tool names and groups, expanded; nil matches any
// tool.
type toolSet struct {
	tools map[string]bool
	files bool // the "files" group: calls that name a host file too
}

func newToolSet(names []string) *toolSet {
	if len(names) == 0 {
		return nil
	}
	s := &toolSet{tools: map[string]bool{}}
	for _, n := range names {
		if g, ok := Groups[n]; ok {
			for _, t := range g {
				s.tools[t] = true
			}
			s.files = s.files || n == "files" || n == "all"
			continue
		}
		s.tools[n] = true
	}
	return s
}

// has reports whether the set takes in the call.
func (s *toolSet) has(c *Call) bool {
	if s == nil {
		return true
	}
	if s.tools[c.Tool] {
		return true
	}
	if s.files {
		for _, a := range fileArgs {
			if namesFile(c.Args[a]) {
				return true
			}
		}
	}
	return false
}

// namesFile reports whether an argument's value names a file: a string
// that is not empty, or a list that is not (upload_file's filePaths).
func namesFile(v any) bool {
	switch v := v.(type) {
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case []string:
		return len(v) > 0
	}
	return false
}
