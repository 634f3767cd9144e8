package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pagemux/pagemux/pagelock"
)

// cdmTools is chrome-devtools-mcp 1.11.0's own tools/list, as its server
// answered it (recorded with the MCP Inspector CLI, `--headless --isolated`).
const cdmTools = "testdata/cdm/tools-1.11.0.json"

// schemaProp is what TestCompatSchemas compares of a property.
type schemaProp struct {
	Type             string          `json:"type"`
	Enum             []any           `json:"enum"`
	Minimum          *float64        `json:"minimum"`
	Maximum          *float64        `json:"maximum"`
	ExclusiveMinimum *float64        `json:"exclusiveMinimum"`
	MinItems         *int            `json:"minItems"`
	Default          json.RawMessage `json:"default"`
	Items            *schemaProp     `json:"items"`
}

type schemaDoc struct {
	Properties map[string]schemaProp `json:"properties"`
	Required   []string              `json:"required"`
}

// Deliberate differences from chrome-devtools-mcp's schemas, each named in
// the README's compatibility section.
var (
	// pagemux-only parameters.
	extraParams = map[string]bool{"lighthouse_audit.categories": true, "take_snapshot.to": true, "lighthouse_audit.wait": true, "performance_start_trace.wait": true,
		"take_snapshot.mode": true, "take_snapshot.uid": true, "take_snapshot.format": true, "wait_for.format": true}
	// "No emulation" ends network throttling, as the description says.
	extraEnum = map[string][]any{"emulate.networkConditions": {"No emulation"}}
)

// zodBound is the ±2^53-1 bound zod writes for every integer: no bound.
const zodBound = 9007199254740991

// TestCompatSchemas: every tool, parameter, enum, bound, default and
// minItems of chrome-devtools-mcp 1.11 is in pagemux's schemas, with the
// same meaning. pageId is optional in pagemux (the selected page is the
// default) and integers are "integer" where the Node server says "number".
func TestCompatSchemas(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.FromSlash(cdmTools))
	if err != nil {
		t.Fatal(err)
	}
	var node struct {
		Tools []struct {
			Name        string    `json:"name"`
			InputSchema schemaDoc `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &node); err != nil {
		t.Fatal(err)
	}
	ours := map[string]schemaDoc{}
	for _, def := range definitions(t) {
		var d schemaDoc
		if err := json.Unmarshal(def.RawInputSchema, &d); err != nil {
			t.Fatal(err)
		}
		ours[def.Name] = d
	}
	for _, nt := range node.Tools {
		pt, ok := ours[nt.Name]
		if !ok {
			t.Errorf("chrome-devtools-mcp has %s; pagemux does not", nt.Name)
			continue
		}
		for _, r := range pt.Required {
			if !slices.Contains(nt.InputSchema.Required, r) {
				t.Errorf("%s: pagemux requires %q, chrome-devtools-mcp does not", nt.Name, r)
			}
		}
		for name, np := range nt.InputSchema.Properties {
			pp, ok := pt.Properties[name]
			if !ok {
				t.Errorf("%s: no parameter %q", nt.Name, name)
				continue
			}
			compareProp(t, nt.Name+"."+name, np, pp)
		}
		for name := range pt.Properties {
			if _, ok := nt.InputSchema.Properties[name]; !ok && name != "pageId" && name != idempotencyKeyArg && !extraParams[nt.Name+"."+name] {
				t.Errorf("%s: parameter %q is pagemux's own; list it in extraParams and the README", nt.Name, name)
			}
		}
	}
}

func compareProp(t *testing.T, where string, node, ours schemaProp) {
	t.Helper()
	if node.Type != ours.Type && !(node.Type == "number" && ours.Type == "integer") {
		t.Errorf("%s: type %q, chrome-devtools-mcp says %q", where, ours.Type, node.Type)
	}
	if want := append(slices.Clone(extraEnum[where]), node.Enum...); len(node.Enum) > 0 && !reflect.DeepEqual(ours.Enum, want) {
		t.Errorf("%s: enum %v, want %v", where, ours.Enum, want)
	}
	bound := func(name string, n, o *float64) {
		if n != nil && (*n == zodBound || *n == -zodBound) {
			n = nil
		}
		if fmt.Sprint(deref(n)) != fmt.Sprint(deref(o)) {
			t.Errorf("%s: %s %v, chrome-devtools-mcp says %v", where, name, deref(o), deref(n))
		}
	}
	bound("minimum", node.Minimum, ours.Minimum)
	bound("maximum", node.Maximum, ours.Maximum)
	bound("exclusiveMinimum", node.ExclusiveMinimum, ours.ExclusiveMinimum)
	if fmt.Sprint(derefInt(node.MinItems)) != fmt.Sprint(derefInt(ours.MinItems)) {
		t.Errorf("%s: minItems %v, chrome-devtools-mcp says %v", where, derefInt(ours.MinItems), derefInt(node.MinItems))
	}
	if len(node.Default) > 0 && string(node.Default) != string(ours.Default) {
		t.Errorf("%s: default %s, chrome-devtools-mcp says %s", where, ours.Default, node.Default)
	}
	if node.Items != nil {
		if ours.Items == nil {
			t.Errorf("%s: no items schema", where)
			return
		}
		compareProp(t, where+"[]", *node.Items, *ours.Items)
	}
}

func deref(f *float64) any {
	if f == nil {
		return "none"
	}
	return *f
}

func derefInt(i *int) any {
	if i == nil {
		return "none"
	}
	return *i
}

// TestWindowLikeNode: headless pages get chrome-devtools-mcp's window, wide
// enough that responsive sites show their navigation (its pages are 1905
// wide; Chrome's own headless screen gives 780). On the full Chrome, which
// pagemux's users run: the headless shell takes no --screen-info.
func TestWindowLikeNode(t *testing.T) {
	t.Parallel()
	e := sharedFullEnv(t)
	id := e.openPage(t, "/form.html")
	if got := e.eval(t, id, "() => [innerWidth, screen.width, screen.height].join('x')"); got != `"1905x3840x2160"` {
		t.Errorf("window and screen: %s, want 1905 wide on a 3840x2160 screen", got)
	}
}

// TestPageTitlesShown: a title is listed even where the URL contains it, as
// chrome-devtools-mcp lists "2: D (data:…)"; a title Chrome made from the
// URL is not repeated.
func TestPageTitlesShown(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": "data:text/html,<title>D</title><p>d"})
	list := e.ok(t, "list_pages", nil)
	if !strings.Contains(list, fmt.Sprintf("%d: D (data:text/html,", id)) {
		t.Errorf("the title D of a data: URL is missing:\n%s", list)
	}
	e.ok(t, "navigate_page", map[string]any{"pageId": id, "url": testSite.URL + "/network.html?notitle"})
	e.eval(t, id, "() => { document.title = ''; return 0 }")
	list = e.ok(t, "list_pages", nil)
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, fmt.Sprintf("%d: ", id)) && strings.Count(line, "/network.html") > 1 {
			t.Errorf("a page without title lists its URL twice: %s", line)
		}
	}
}

// TestOpenedPages: a click that opens a tab says so, as chrome-devtools-mcp
// does with "## Opened pages", and the tab can be used by its id.
func TestOpenedPages(t *testing.T) {
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	e.eval(t, id, `() => { const a = document.createElement('a'); a.href = '/page2.html'; a.target = '_blank'; a.textContent = 'Open two'; document.body.append(a); return 0 }`)
	link := e.uid(t, id, `link "Open two"`)
	text := e.ok(t, "click", map[string]any{"pageId": id, "uid": link})
	_, opened, ok := strings.Cut(text, "## Opened pages\n")
	if !ok || !strings.Contains(opened, "/page2.html") {
		t.Fatalf("the click's answer does not name the tab it opened:\n%s", text)
	}
	var newID int
	fmt.Sscanf(opened, "%d:", &newID)
	t.Cleanup(func() {
		e.client.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "close_page", Arguments: map[string]any{"pageId": newID}}})
	})
	if got := e.eval(t, newID, "() => location.pathname"); got != `"/page2.html"` {
		t.Errorf("the opened page %d answers %s", newID, got)
	}
	if again := e.ok(t, "click", map[string]any{"pageId": id, "uid": e.uid(t, id, `textbox "Name"`)}); strings.Contains(again, "## Opened pages") {
		t.Errorf("a click that opens nothing lists opened pages:\n%s", again)
	}
}

// TestSnapshotsMatchNode: snapshots of real pages (the Go spec and memory
// model, from the Go distribution, BSD licence in testdata/real) match
// chrome-devtools-mcp 1.11's own snapshots of them line for line, uids and
// pagemux's escaping of quotes, tabs and newlines aside. Its snapshots were
// recorded with its default window, which pagemux now has too.
func TestSnapshotsMatchNode(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	for _, name := range []string{"go_spec", "go_mem"} {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "cdm", "snapshots", name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			id := e.openPage(t, "/real/"+name+".html")
			dir, err := os.MkdirTemp("", "pagemux-snap")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			file := filepath.Join(dir, name+".txt")
			e.ok(t, "take_snapshot", map[string]any{"pageId": id, "filePath": file})
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			a, b := nodeLines(string(want), false), nodeLines(string(got), true)
			if len(a) != len(b) {
				t.Errorf("%d lines, chrome-devtools-mcp has %d", len(b), len(a))
			}
			diffs := 0
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					if diffs++; diffs <= 5 {
						t.Errorf("line %d:\n got %q\nwant %q", i+1, b[i], a[i])
					}
				}
			}
			if diffs > 0 {
				t.Errorf("%d lines differ", diffs)
			}
		})
	}
}

var (
	uidPrefix = regexp.MustCompile(`uid=\d+_\d+ `)
	openQuery = regexp.MustCompile(`\?open=\d+`)
	escaped   = regexp.MustCompile(`\\(.)`)
	testHost  = regexp.MustCompile(`url="http://127\.0\.0\.1:\d+`)
)

// nodeLines normalises a snapshot for the comparison: no uids, no test URL
// query, and (for pagemux's) its escapes written out as chrome-devtools-mcp
// writes them, raw.
func nodeLines(s string, unescape bool) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		line = uidPrefix.ReplaceAllString(line, "")
		line = openQuery.ReplaceAllString(line, "")
		if unescape {
			line = escaped.ReplaceAllStringFunc(line, func(m string) string {
				switch m[1] {
				case 'n':
					return "\n"
				case 't':
					return "\t"
				case 'r':
					return "\r"
				}
				return m[1:]
			})
		}
		line = testHost.ReplaceAllString(line, `url="http://test`)
		out = append(out, line)
	}
	return strings.Split(strings.Join(out, "\n"), "\n")
}

// TestSnapshotEndsWithNewline: a snapshot that ends the answer ends with a
// newline, as chrome-devtools-mcp's do.
func TestSnapshotEndsWithNewline(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	if text := e.ok(t, "take_snapshot", map[string]any{"pageId": id}); !strings.HasSuffix(text, "\n") || strings.HasSuffix(text, "\n\n") {
		t.Errorf("the snapshot ends %q", text[max(0, len(text)-30):])
	}
}
