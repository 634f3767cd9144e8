package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/pagemux/pagemux/cdpcbor"
)

// The fixtures in testdata are raw Accessibility.getFullAXTree answers of
// Chromium 156 for small pages (value sources stripped), and what
// chrome-devtools-mcp 1.11 printed for the same pages (*.cdm.txt). Set
// UPDATE_GOLDEN=1 to rewrite our own expected output (*.golden.txt).

// axt describes a node of a synthetic tree: id is both its AX node id and
// its backend DOM node id.
type axt struct {
	id      int
	role    string
	name    string
	value   any
	desc    string
	ignored bool
	noDOM   bool  // no backend DOM node, like InlineTextBox
	props   []any // name, value, name, value …
	frame   cdp.FrameID
	kids    []axt
}

func rawJSON(t testing.TB, v any) jsonv2.Value {
	t.Helper()
	b, err := jsonv2.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flatten turns a synthetic tree into the flat list Chrome sends, root first.
func flatten(t testing.TB, root axt) []*accessibility.Node {
	t.Helper()
	var out []*accessibility.Node
	var walk func(n axt, parent accessibility.NodeID)
	walk = func(n axt, parent accessibility.NodeID) {
		id := accessibility.NodeID(fmt.Sprint(n.id))
		src := &accessibility.Node{NodeID: id, ParentID: parent, Ignored: n.ignored, FrameID: n.frame}
		if !n.noDOM {
			src.BackendDOMNodeID = cdp.BackendNodeID(n.id)
		}
		role := n.role
		if role == "" {
			role = "generic"
		}
		src.Role = &accessibility.Value{Type: "role", Value: rawJSON(t, role)}
		if n.name != "" {
			src.Name = &accessibility.Value{Type: "computedString", Value: rawJSON(t, n.name)}
		}
		if n.value != nil {
			src.Value = &accessibility.Value{Type: "string", Value: rawJSON(t, n.value)}
		}
		if n.desc != "" {
			src.Description = &accessibility.Value{Type: "computedString", Value: rawJSON(t, n.desc)}
		}
		for i := 0; i+1 < len(n.props); i += 2 {
			src.Properties = append(src.Properties, &accessibility.Property{
				Name:  accessibility.PropertyName(n.props[i].(string)),
				Value: &accessibility.Value{Type: "token", Value: rawJSON(t, n.props[i+1])},
			})
		}
		for _, k := range n.kids {
			src.ChildIDs = append(src.ChildIDs, accessibility.NodeID(fmt.Sprint(k.id)))
		}
		out = append(out, src)
		for _, k := range n.kids {
			walk(k, id)
		}
	}
	walk(root, "")
	return out
}

func loadAX(t testing.TB, name string) []*accessibility.Node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*accessibility.Node
	if err := jsonv2.Unmarshal(b, &nodes); err != nil {
		t.Fatal(err)
	}
	return nodes
}

func readAX(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := readAX(t, name); got != want {
		t.Errorf("%s differs (UPDATE_GOLDEN=1 rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// fixture loads a page's tree with its frames: the widgets page has a srcdoc
// iframe whose element has backend node id 442.
func fixture(t *testing.T, name string) *Frame {
	f := &Frame{Nodes: loadAX(t, name)}
	if name == "widgets" {
		f.Frames = map[cdp.BackendNodeID]*Frame{442: {Nodes: loadAX(t, "widgets.frame.442")}}
	}
	return f
}

// TestAXFixtures formats real trees, a plain snapshot then a verbose one as
// an agent would take them.
func TestAXFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"form", "widgets"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := NewUIDs()
			f := fixture(t, name)
			s1 := u.SnapshotFrames(f, false)
			s2 := u.SnapshotFrames(f, true)
			if s1.Seq != 1 || s2.Seq != 2 {
				t.Errorf("seqs = %d, %d; want 1, 2", s1.Seq, s2.Seq)
			}
			golden(t, name+".golden.txt", s1.Text)
			golden(t, name+".verbose.golden.txt", s2.Text)
		})
	}
}

// TestAXMatchesChromeDevtoolsMCP compares with what chrome-devtools-mcp
// printed for the same pages. We differ on purpose in two ways, undone here:
// we escape quotes, backslashes and newlines, and we give each InlineTextBox
// its own uid where it gives them all one (so later new uids of a verbose
// snapshot are numbered differently: verbose output is compared without uids).
func TestAXMatchesChromeDevtoolsMCP(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"form", "widgets"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := NewUIDs()
			f := fixture(t, name)
			got := unescapeAX(u.SnapshotFrames(f, false).Text)
			if want := readAX(t, name+".cdm.txt"); got != want {
				t.Errorf("plain snapshot differs\ngot:\n%s\nwant:\n%s", got, want)
			}
			got = withoutUIDs(unescapeAX(u.SnapshotFrames(f, true).Text))
			if want := withoutUIDs(readAX(t, name+".verbose.cdm.txt")); got != want {
				t.Errorf("verbose snapshot differs\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func unescapeAX(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func withoutUIDs(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "uid="); j >= 0 {
			k := strings.IndexByte(l[j:], ' ')
			if k < 0 {
				k = len(l) - j
			}
			lines[i] = l[:j] + l[j+k:]
		}
	}
	return strings.Join(lines, "\n")
}

// TestAXUIDsAcrossDOMChanges replays a page where a button is removed, one
// added, and one hidden then shown again. chrome-devtools-mcp forgets the uid
// of a node missing from one snapshot (its 4th snapshot says 4_0 for
// Gamma); we keep it, since the node never left the DOM.
func TestAXUIDsAcrossDOMChanges(t *testing.T) {
	t.Parallel()
	u := NewUIDs()
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("dyn.%d", i)
		s := u.Snapshot(loadAX(t, name), false)
		want := readAX(t, name+".cdm.txt")
		if i == 4 {
			want = strings.Replace(want, "uid=4_0 button", "uid=2_0 button", 1)
		}
		if s.Seq != i || s.Text != want {
			t.Errorf("snapshot %d (seq %d):\n%s\nwant:\n%s", i, s.Seq, s.Text, want)
		}
	}
}

func TestAXFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		root    axt
		verbose bool
		want    string
	}{{
		name: "root url and focused ignored on the root",
		root: axt{id: 1, role: "RootWebArea", name: "T", props: []any{"focusable", true, "focused", true, "url", "http://x/"}},
		want: `uid=1_0 RootWebArea "T" url="http://x/"` + "\n",
	}, {
		name: "uninteresting nodes are skipped and their children promoted",
		root: axt{id: 1, role: "RootWebArea", props: []any{"focusable", true}, kids: []axt{
			{id: 2, role: "none", ignored: true, kids: []axt{
				{id: 3, role: "generic", kids: []axt{
					{id: 4, role: "button", name: "Go"},
					{id: 5, role: "paragraph", kids: []axt{{id: 6, role: "StaticText", name: "Hi"}}},
				}},
			}},
			{id: 7, role: "button", name: "Hidden", props: []any{"hidden", true}},
		}},
		want: "uid=1_0 RootWebArea\n  uid=1_1 button \"Go\"\n  uid=1_2 \"Hi\"\n",
	}, {
		name:    "verbose shows every node, ignored ones as ignored",
		verbose: true,
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "none", ignored: true, kids: []axt{
				{id: 3, role: "button", name: "Go", kids: []axt{
					{id: 4, role: "StaticText", name: "Go", kids: []axt{{id: 5, role: "InlineTextBox", name: "Go", noDOM: true}}},
				}},
			}},
		}},
		want: "uid=1_0 RootWebArea\n  uid=1_1 ignored\n    uid=1_2 button \"Go\"\n      uid=1_3 \"Go\"\n        uid=1_4 InlineTextBox \"Go\"\n",
	}, {
		name: "text inside a control is left out",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "button", name: "Go", kids: []axt{{id: 3, role: "StaticText", name: "Go"}}},
		}},
		want: "uid=1_0 RootWebArea\n  uid=1_1 button \"Go\"\n",
	}, {
		name: "text spelling its parent's name is hidden but numbered",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "link", name: "Read more", props: []any{"focusable", true}, kids: []axt{
				{id: 3, role: "StaticText", name: "Read "},
				{id: 4, role: "StaticText", name: "more"},
			}},
			{id: 5, role: "link", name: "Other", props: []any{"focusable", true}, kids: []axt{
				{id: 6, role: "StaticText", name: "Else"},
			}},
		}},
		want: "uid=1_0 RootWebArea\n  uid=1_1 link \"Read more\"\n  uid=1_4 link \"Other\"\n    uid=1_5 \"Else\"\n",
	}, {
		name: "a named heading is a leaf unless it holds something focusable",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "heading", name: "Title", props: []any{"level", 2}, kids: []axt{{id: 3, role: "StaticText", name: "Title"}}},
			{id: 4, role: "heading", name: "Linked", props: []any{"level", 3}, kids: []axt{
				{id: 5, role: "link", name: "Linked", props: []any{"focusable", true}},
			}},
		}},
		want: "uid=1_0 RootWebArea\n  uid=1_1 heading \"Title\" level=\"2\"\n  uid=1_2 link \"Linked\"\n",
	}, {
		name: "states: capability words, sorted keys, tristates, tokens",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "combobox", name: "C", value: "red", props: []any{"expanded", false, "hasPopup", "menu", "required", false, "invalid", "false"}},
			{id: 3, role: "button", name: "B", props: []any{"disabled", true, "focused", true, "pressed", "mixed"}},
			{id: 4, role: "checkbox", name: "X", props: []any{"checked", "true", "invalid", "true", "readonly", true}},
			{id: 5, role: "checkbox", name: "Y", props: []any{"checked", "false"}},
			{id: 6, role: "tab", name: "T", props: []any{"selected", true}},
			{id: 7, role: "slider", name: "S", value: 0.5, props: []any{"valuemin", 0, "valuemax", 1e21, "valuetext", "", "orientation", "horizontal"}},
			{id: 8, role: "textbox", name: "Q", desc: "help", props: []any{"autocomplete", "list", "keyshortcuts", "Alt+Q", "roledescription", "query", "multiline", true}},
			{id: 9, role: "region", name: "R", props: []any{"live", "polite", "relevant", "additions text", "atomic", true, "busy", false}},
		}},
		want: `uid=1_0 RootWebArea
  uid=1_1 combobox "C" expandable haspopup="menu" value="red"
  uid=1_2 button "B" disableable disabled focusable focused pressed="mixed"
  uid=1_3 checkbox "X" checked invalid="true" readonly
  uid=1_4 checkbox "Y"
  uid=1_5 tab "T" selectable selected
  uid=1_6 slider "S" orientation="horizontal" value="0.5" valuemax="1e+21" valuemin="0" valuetext=""
  uid=1_7 textbox "Q" autocomplete="list" description="help" keyshortcuts="Alt+Q" multiline roledescription="query"
  uid=1_8 region "R" atomic live="polite" relevant="additions text"
`,
	}, {
		name: "options: no selectable, no value equal to the name",
		root: axt{id: 1, role: "RootWebArea", kids: []axt{
			{id: 2, role: "listbox", name: "L", kids: []axt{
				{id: 3, role: "option", name: "a", value: "a", props: []any{"focusable", true, "selected", true}},
				{id: 4, role: "option", name: "b", value: "x", props: []any{"focusable", true, "selected", false}},
			}},
		}},
		want: "uid=1_0 RootWebArea\n  uid=1_1 listbox \"L\"\n    uid=1_2 option \"a\" selected\n    uid=1_3 option \"b\"\n",
	}, {
		name: "escaping keeps one node a line",
		root: axt{id: 1, role: "RootWebArea", name: `Say "hi"`, kids: []axt{
			{id: 2, role: "textbox", name: `back\slash`, value: "line 1\nline 2\r\tend\x01", props: []any{"focusable", true}},
			{id: 3, role: "StaticText", name: "para\u2028sep ünï"},
			{id: 4, role: "LineBreak", name: "\n"},
		}},
		want: `uid=1_0 RootWebArea "Say \"hi\""
  uid=1_1 textbox "back\\slash" value="line 1\nline 2\r\tend\u0001"
  uid=1_2 "para\u2028sep ünï"
  uid=1_3 LineBreak "\n"
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := NewUIDs().Snapshot(flatten(t, tt.root), tt.verbose).Text
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestAXStableUIDs(t *testing.T) {
	t.Parallel()
	page := func(ids ...int) []*accessibility.Node {
		root := axt{id: 1, role: "RootWebArea", name: "P"}
		for _, id := range ids {
			root.kids = append(root.kids, axt{id: id, role: "button", name: fmt.Sprint("b", id)})
		}
		return flatten(t, root)
	}
	u := NewUIDs()
	steps := []struct {
		buttons []int
		want    string
	}{
		{[]int{10, 11}, "uid=1_0 RootWebArea \"P\"\n  uid=1_1 button \"b10\"\n  uid=1_2 button \"b11\"\n"},
		// 11 leaves (or hides), 12 and 13 arrive.
		{[]int{12, 10, 13}, "uid=1_0 RootWebArea \"P\"\n  uid=2_0 button \"b12\"\n  uid=1_1 button \"b10\"\n  uid=2_1 button \"b13\"\n"},
		// No change: a new seq, no new uid.
		{[]int{12, 10, 13}, "uid=1_0 RootWebArea \"P\"\n  uid=2_0 button \"b12\"\n  uid=1_1 button \"b10\"\n  uid=2_1 button \"b13\"\n"},
		// 11 is back and keeps its uid.
		{[]int{11, 14}, "uid=1_0 RootWebArea \"P\"\n  uid=1_2 button \"b11\"\n  uid=4_0 button \"b14\"\n"},
	}
	for i, s := range steps {
		snap := u.Snapshot(page(s.buttons...), false)
		if snap.Seq != i+1 || snap.Text != s.want {
			t.Fatalf("step %d: seq %d\n%s\nwant:\n%s", i+1, snap.Seq, snap.Text, s.want)
		}
	}
	for uid, want := range map[string]cdp.BackendNodeID{"1_0": 1, "1_1": 10, "1_2": 11, "2_0": 12, "2_1": 13, "4_0": 14} {
		if got, err := u.Lookup(uid); err != nil || got != want {
			t.Errorf("Lookup(%s) = %d, %v; want %d", uid, got, err, want)
		}
	}
}

func TestAXReset(t *testing.T) {
	t.Parallel()
	u := NewUIDs()
	tree := flatten(t, axt{id: 1, role: "RootWebArea", kids: []axt{{id: 2, role: "button", name: "A"}}})
	u.Snapshot(tree, false)
	u.Reset()
	_, err := u.Lookup("1_1")
	if !errors.Is(err, ErrStaleUID) || errors.Is(err, ErrUnknownUID) {
		t.Fatalf("Lookup after Reset: %v; want ErrStaleUID", err)
	}
	if want := "uid 1_1 is from before the page navigated; take a new snapshot"; err.Error() != want {
		t.Errorf("message %q; want %q", err, want)
	}
	// Never handed out, even though snapshot 1 is before the Reset.
	if _, err := u.Lookup("1_2"); !errors.Is(err, ErrUnknownUID) {
		t.Errorf("Lookup(1_2) = %v; want ErrUnknownUID", err)
	}
	// The same nodes in the new document get new uids.
	s := u.Snapshot(tree, false)
	if want := "uid=2_0 RootWebArea\n  uid=2_1 button \"A\"\n"; s.Seq != 2 || s.Text != want {
		t.Fatalf("after Reset: seq %d\n%s", s.Seq, s.Text)
	}
	if id, err := u.Lookup("2_1"); err != nil || id != 2 {
		t.Errorf("Lookup(2_1) = %d, %v", id, err)
	}
	if _, err := u.Lookup("1_1"); !errors.Is(err, ErrStaleUID) {
		t.Errorf("Lookup(1_1) after the new snapshot = %v; want ErrStaleUID", err)
	}
}

func TestAXLookupUnknown(t *testing.T) {
	t.Parallel()
	u := NewUIDs()
	u.Snapshot(flatten(t, axt{id: 1, role: "RootWebArea"}), false)
	for _, tt := range []struct{ uid, msg string }{
		{"9_9", "no element with uid 9_9 in the latest snapshot; take a new snapshot to get current uids"},
		{"1_1", "no element with uid 1_1 in the latest snapshot; take a new snapshot to get current uids"},
		{"", `no element with uid "" in the latest snapshot; take a new snapshot to get current uids`},
		{"button", `no element with uid "button" in the latest snapshot; take a new snapshot to get current uids`},
		{"0_0", `no element with uid "0_0" in the latest snapshot; take a new snapshot to get current uids`},
	} {
		_, err := u.Lookup(tt.uid)
		if !errors.Is(err, ErrUnknownUID) || err.Error() != tt.msg {
			t.Errorf("Lookup(%q) = %v; want ErrUnknownUID %q", tt.uid, err, tt.msg)
		}
	}
	for _, uid := range []string{"1_", "_0", "1_0_0", " 1_0", "1_0 ", "+1_0", "1_-0", "１_0", "1234567890_0", "uid=1_0"} {
		if _, err := u.Lookup(uid); !errors.Is(err, ErrUnknownUID) {
			t.Errorf("Lookup(%q) = %v; want ErrUnknownUID", uid, err)
		}
	}
	if id, err := u.Lookup("1_0"); err != nil || id != 1 {
		t.Errorf("Lookup(1_0) = %d, %v", id, err)
	}
}

// Nodes without a DOM node of their own keep their uids too, and resolve to
// their nearest ancestor that has one.
func TestAXNodesWithoutDOMNode(t *testing.T) {
	t.Parallel()
	tree := flatten(t, axt{id: 1, role: "RootWebArea", kids: []axt{
		{id: 2, role: "StaticText", name: "ab", kids: []axt{
			{id: 3, role: "InlineTextBox", name: "a", noDOM: true},
			{id: 4, role: "InlineTextBox", name: "b", noDOM: true},
		}},
		{id: 5, role: "link", name: "more", props: []any{"focusable", true}, kids: []axt{
			{id: 6, role: "StaticText", name: "›", noDOM: true}, // a ::after
		}},
	}})
	u := NewUIDs()
	s := u.Snapshot(tree, false)
	want := "uid=1_0 RootWebArea\n  uid=1_1 \"ab\"\n  uid=1_2 link \"more\"\n    uid=1_3 \"›\"\n"
	if s.Text != want {
		t.Fatalf("got:\n%s\nwant:\n%s", s.Text, want)
	}
	s = u.Snapshot(tree, true)
	want = `uid=1_0 RootWebArea
  uid=1_1 "ab"
    uid=2_0 InlineTextBox "a"
    uid=2_1 InlineTextBox "b"
  uid=1_2 link "more"
    uid=1_3 "›"
`
	if s.Text != want {
		t.Fatalf("got:\n%s\nwant:\n%s", s.Text, want)
	}
	if s := u.Snapshot(tree, true); s.Text != want {
		t.Errorf("uids changed:\n%s", s.Text)
	}
	for uid, want := range map[string]cdp.BackendNodeID{"2_0": 2, "2_1": 2, "1_3": 5} {
		if id, err := u.Lookup(uid); err != nil || id != want {
			t.Errorf("Lookup(%s) = %d, %v; want %d", uid, id, err, want)
		}
	}
}

func TestFrames(t *testing.T) {
	t.Parallel()
	main := flatten(t, axt{id: 1, role: "RootWebArea", name: "Top", frame: "MAIN", kids: []axt{
		{id: 2, role: "Iframe", name: "Inner", kids: []axt{{id: 4, role: "StaticText", name: "fallback"}}},
		{id: 3, role: "button", name: "After"},
	}})
	// An out-of-process frame: its backend node ids may repeat the main
	// frame's.
	child := flatten(t, axt{id: 1, role: "RootWebArea", name: "In", frame: "CHILD", kids: []axt{
		{id: 3, role: "button", name: "Inside"},
	}})
	u := NewUIDs()
	s := u.SnapshotFrames(&Frame{Nodes: main, Frames: map[cdp.BackendNodeID]*Frame{2: {Nodes: child}}}, false)
	want := `uid=1_0 RootWebArea "Top"
  uid=1_1 Iframe "Inner"
    uid=1_2 "fallback"
    uid=1_3 RootWebArea "In"
      uid=1_4 button "Inside"
  uid=1_5 button "After"
`
	if s.Text != want {
		t.Fatalf("got:\n%s\nwant:\n%s", s.Text, want)
	}
	for uid, want := range map[string]struct {
		frame cdp.FrameID
		id    cdp.BackendNodeID
	}{"1_4": {"CHILD", 3}, "1_5": {"MAIN", 3}, "1_3": {"CHILD", 1}} {
		frame, id, err := u.LookupFrame(uid)
		if err != nil || frame != want.frame || id != want.id {
			t.Errorf("LookupFrame(%s) = %s, %d, %v; want %v", uid, frame, id, err, want)
		}
	}
}

// Malformed trees must neither hang nor panic.
func TestAXMalformed(t *testing.T) {
	t.Parallel()
	cycle := flatten(t, axt{id: 1, role: "RootWebArea", kids: []axt{{id: 2, role: "button", name: "A"}}})
	cycle[1].ChildIDs = []accessibility.NodeID{"1", "2", "404"}
	tests := map[string][]*accessibility.Node{
		"empty":     nil,
		"nil node":  {nil},
		"cycle":     cycle,
		"no values": {{NodeID: "1", Role: &accessibility.Value{}, Name: &accessibility.Value{}, Properties: []*accessibility.Property{{Name: "focused"}, nil}}},
		"bad json":  {{NodeID: "1", Role: &accessibility.Value{Value: jsonv2.Value(`"`)}, Name: &accessibility.Value{Value: jsonv2.Value(`{"a":1}`)}}},
	}
	for name, nodes := range tests {
		for _, verbose := range []bool{false, true} {
			NewUIDs().Snapshot(nodes, verbose)
		}
		t.Logf("%s: ok", name)
	}
	if got := NewUIDs().Snapshot(cycle, true).Text; got != "uid=1_0 RootWebArea\n  uid=1_1 button \"A\"\n" {
		t.Errorf("cycle: %q", got)
	}
	if got := NewUIDs().Snapshot(tests["no values"], false).Text; got != "uid=1_0 focusable\n" {
		t.Errorf("no values: %q", got)
	}
}

// The registry forgets nodes unseen for longest once it is over its bound,
// never those of the latest snapshot.
func TestAXRegistryBound(t *testing.T) {
	t.Parallel()
	page := func(first int) []*accessibility.Node {
		// Two pages fit in the bound, three don't.
		nodes := make([]*accessibility.Node, 0, maxRememberedNodes/2)
		root := &accessibility.Node{NodeID: "root", BackendDOMNodeID: cdp.BackendNodeID(first), Role: &accessibility.Value{Value: jsonv2.Value(`"RootWebArea"`)}}
		nodes = append(nodes, root)
		for i := 1; i < maxRememberedNodes/2; i++ {
			id := accessibility.NodeID(fmt.Sprint(i))
			root.ChildIDs = append(root.ChildIDs, id)
			nodes = append(nodes, &accessibility.Node{NodeID: id, BackendDOMNodeID: cdp.BackendNodeID(first + i), Role: &accessibility.Value{Value: jsonv2.Value(`"button"`)}})
		}
		return nodes
	}
	u := NewUIDs()
	u.Snapshot(page(0), false)        // 1_*
	u.Snapshot(page(1_000_000), true) // 2_*: 1_* are now unseen
	if _, err := u.Lookup("1_5"); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	u.Snapshot(page(2_000_000), true) // 3_*: over the bound
	if _, err := u.Lookup("1_5"); !errors.Is(err, ErrUnknownUID) {
		t.Errorf("oldest unseen node kept: %v", err)
	}
	if _, err := u.Lookup("3_5"); err != nil {
		t.Errorf("node of the latest snapshot dropped: %v", err)
	}
	if n := len(u.byNode); n > maxRememberedNodes {
		t.Errorf("%d nodes remembered; bound %d", n, maxRememberedNodes)
	}
}

func TestAXConcurrent(t *testing.T) {
	t.Parallel()
	tree := flatten(t, axt{id: 1, role: "RootWebArea", kids: []axt{{id: 2, role: "button", name: "A"}}})
	u := NewUIDs()
	u.Snapshot(tree, false)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				switch i % 3 {
				case 0:
					u.Snapshot(tree, i%2 == 0)
				case 1:
					u.Lookup("1_1")
				default:
					if i == 2 {
						u.Reset()
					}
				}
			}
		})
	}
	wg.Wait()
	if s := u.Snapshot(tree, false); s.Seq < 2 {
		t.Errorf("seq %d", s.Seq)
	}
}

// bigTree is a page of n nodes: sections of paragraphs with text runs and
// their inline text boxes, links and buttons, inside ignored wrappers.
func bigTree(t testing.TB, n int) []*accessibility.Node {
	id := 1
	next := func() int { id++; return id }
	root := axt{id: 1, role: "RootWebArea", name: "Big", props: []any{"focusable", true, "url", "http://127.0.0.1/big"}}
	for count := 1; count < n; {
		sec := axt{id: next(), role: "none", ignored: true}
		for j := 0; j < 4 && count < n; j++ {
			p := axt{id: next(), role: "paragraph"}
			text := axt{id: next(), role: "StaticText", name: "Some text that says something"}
			text.kids = []axt{{id: next(), role: "InlineTextBox", name: "Some text that says something", noDOM: true}}
			link := axt{id: next(), role: "link", name: "a link", props: []any{"focusable", true, "url", "http://127.0.0.1/x"}}
			link.kids = []axt{{id: next(), role: "StaticText", name: "a link"}}
			p.kids = []axt{text, link}
			btn := axt{id: next(), role: "button", name: `Do "it"`, props: []any{"focusable", true, "disabled", false}}
			sec.kids = append(sec.kids, p, btn)
			count += 6
		}
		count++
		root.kids = append(root.kids, sec)
	}
	return flatten(t, root)
}

func BenchmarkAXSnapshot5000(b *testing.B) {
	nodes := bigTree(b, 5000)
	for _, verbose := range []bool{false, true} {
		b.Run(fmt.Sprintf("verbose=%v", verbose), func(b *testing.B) {
			u := NewUIDs()
			u.Snapshot(nodes, verbose)
			b.ReportAllocs()
			for b.Loop() {
				u.Snapshot(nodes, verbose)
			}
		})
	}
}

// TestAXBigTreeIsFast guards against quadratic work: formatting 5,000 nodes
// takes about a millisecond, so a second means something went wrong.
func TestAXBigTreeIsFast(t *testing.T) {
	t.Parallel()
	nodes := bigTree(t, 5000)
	if len(nodes) < 5000 {
		t.Fatalf("%d nodes", len(nodes))
	}
	u := NewUIDs()
	start := time.Now()
	const runs = 5
	for range runs {
		u.Snapshot(nodes, true)
	}
	if d := time.Since(start) / runs; d > time.Second {
		t.Errorf("%v per 5,000-node snapshot", d)
	}
	if s := NewUIDs().Snapshot(nodes, false); strings.Count(s.Text, "\n") < 2000 {
		t.Errorf("only %d lines", strings.Count(s.Text, "\n"))
	}
}

func TestAXAttrSlots(t *testing.T) {
	t.Parallel()
	for i, a := range axAttrInfo {
		if got := axAttrSlot(a.name); got != i {
			t.Errorf("axAttrSlot(%q) = %d; want %d", a.name, got, i)
		}
		if i > 0 && axAttrInfo[i-1].name >= a.name {
			t.Errorf("%q before %q: chrome-devtools-mcp prints keys sorted", axAttrInfo[i-1].name, a.name)
		}
	}
	for name, want := range map[string]int{"hasPopup": axAttrHaspopup, "HASPOPUP": axAttrHaspopup, "focusable": -1, "settable": -1, "": -1} {
		if got := axAttrSlot(name); got != want {
			t.Errorf("axAttrSlot(%q) = %d; want %d", name, got, want)
		}
	}
}

func TestAXDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw    string
		text   string
		truthy bool
	}{
		{``, "", false},
		{`null`, "", false},
		{`true`, "true", true},
		{`false`, "false", false},
		{`""`, "", false},
		{`"plain"`, "plain", true},
		{`"q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00"`, "q\"b\\s/n\nt\tu\u00e9\U0001F600", true},
		{`"lone \ud800 surrogate"`, "lone \ufffd surrogate", true},
		{`0`, "0", false},
		{`-0`, "0", false},
		{`0.0e5`, "0", false},
		{`42`, "42", true},
		{`-7`, "-7", true},
		{`0.5`, "0.5", true},
		{`1.50`, "1.5", true},
		{`100.0`, "100", true},
		{`1e21`, "1e+21", true},
		{`1e-7`, "1e-7", true},
		{`123456789012345678`, "123456789012345680", true},
		{`{"a":1}`, "", true},
		{`[]`, "", true},
	}
	for _, tt := range tests {
		v := axDecode(jsonv2.Value(tt.raw))
		if got := string(v.text()); got != tt.text {
			t.Errorf("axDecode(%s).text() = %q; want %q", tt.raw, got, tt.text)
		}
		if got := axTruthy(v); got != tt.truthy {
			t.Errorf("axTruthy(%s) = %v; want %v", tt.raw, got, tt.truthy)
		}
	}
}

// decodeRaw decodes a fixture as the streaming reader does.
func decodeRaw(t testing.TB, name string) *Doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var d jsonv2.Decoder
	d.Reset(strings.NewReader(`{"other":[1,{"a":2}],"nodes":`+string(b)+`}`), decodeOptions)
	doc, err := decodeAXResult(&d)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestAXStreamDecode checks that the streaming decoder and the decoded
// nodes give the same text, uid for uid, for every fixture.
func TestAXStreamDecode(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"form", "widgets", "widgets.frame.442", "dyn.1", "dyn.2", "dyn.3", "dyn.4"} {
		for _, verbose := range []bool{false, true} {
			want := NewUIDs().Snapshot(loadAX(t, name), verbose).Text
			got := NewUIDs().SnapshotFrames(&Frame{Doc: decodeRaw(t, name)}, verbose).Text
			if got != want {
				t.Errorf("%s verbose=%v: streamed tree differs\ngot:\n%s\nwant:\n%s", name, verbose, got, want)
			}
		}
	}
	// A synthetic tree with every kind of value, nodes without DOM nodes,
	// and properties without values.
	nodes := bigTree(t, 2000)
	nodes = append(nodes, nil)
	nodes[3].Properties = append(nodes[3].Properties, &accessibility.Property{Name: "busy"}, nil)
	nodes[4].Value = &accessibility.Value{Type: "string"}
	raw, err := jsonv2.Marshal(map[string]any{"nodes": nodes})
	if err != nil {
		t.Fatal(err)
	}
	var d jsonv2.Decoder
	d.Reset(strings.NewReader(string(raw)), decodeOptions)
	doc, err := decodeAXResult(&d)
	if err != nil {
		t.Fatal(err)
	}
	for _, verbose := range []bool{false, true} {
		want := NewUIDs().Snapshot(nodes, verbose).Text
		if got := NewUIDs().SnapshotFrames(&Frame{Doc: doc}, verbose).Text; got != want {
			t.Errorf("synthetic verbose=%v: streamed tree differs", verbose)
		}
	}
}

// BenchmarkAXSnapshotStream decodes and formats a big tree as a snapshot
// does, from JSON and from Chrome's CBOR (a CBOR pipe's answer, made by
// cdpcbor.FromJSON as Chrome makes it): a recorded getFullAXTree result
// from $PAGEMUX_AX_TREE (such as the 200,000-node page of cmd/bench,
// 100 MB), else a generated one of 100,000 nodes. Profile it with
// -memprofile.
func BenchmarkAXSnapshotStream(b *testing.B) {
	raw := []byte(nil)
	if path := os.Getenv("PAGEMUX_AX_TREE"); path != "" {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	} else {
		var err error
		if raw, err = jsonv2.Marshal(map[string]any{"nodes": bigTree(b, 100_000)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			var d jsonv2.Decoder
			d.Reset(bytes.NewReader(raw), decodeOptions)
			doc, err := decodeAXResult(&d)
			if err != nil {
				b.Fatal(err)
			}
			NewUIDs().SnapshotFrames(&Frame{Doc: doc}, false)
		}
	})
	msg, err := cdpcbor.FromJSON(nil, []byte(`{"id":1073741824,"result":`+string(raw)+`}`))
	if err != nil {
		b.Fatal(err)
	}
	msg = msg[7:] // the map, after the message's envelope, as the mux hands it over
	b.Run("cbor", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		b.ReportAllocs()
		for b.Loop() {
			doc, err := ReadCBORReply(bytes.NewReader(msg))
			if err != nil {
				b.Fatal(err)
			}
			NewUIDs().SnapshotFrames(&Frame{Doc: doc}, false)
		}
	})
}

// TestLineLabel: the role and name of a snapshot line, quoting undone.
func TestLineLabel(t *testing.T) {
	t.Parallel()
	for line, want := range map[string][2]string{
		` button "Place order" focusable`: {"button", "Place order"},
		` "Hello \"you\"\\n"`:             {"StaticText", `Hello "you"\n`},
		` generic`:                        {"generic", ""},
		` link "a\"b" url="x"`:            {"link", `a"b`},
		``:                                {"", ""},
	} {
		if role, name := LineLabel(line); role != want[0] || name != want[1] {
			t.Errorf("LineLabel(%q) = %q, %q; want %q, %q", line, role, name, want[0], want[1])
		}
	}
}

// TestUIDLine: a uid's own line is found after its indentation; a name
// that spells another node's line, or a longer uid, is not it.
func TestUIDLine(t *testing.T) {
	t.Parallel()
	text := "uid=1_0 RootWebArea \"Shop\"\n" +
		"  uid=1_10 button \"Continue\"\n" +
		"  uid=1_2 StaticText \"x uid=1_1 button \\\"Continue shopping\\\"\"\n" +
		"  uid=1_1 button \"Place order\" focusable\n"
	for uid, want := range map[string]string{"1_1": ` button "Place order" focusable`, "1_0": ` RootWebArea "Shop"`, "1_10": ` button "Continue"`, "1_9": "", "x": ""} {
		got, ok := UIDLine(text, uid)
		if got != want || ok != (want != "") {
			t.Errorf("UIDLine(%s) = %q, %v; want %q", uid, got, ok, want)
		}
	}
}
