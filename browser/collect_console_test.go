package browser

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/chromedp/cdproto/runtime"
)

// obj decodes a RemoteObject as Chrome sends it.
func obj(t *testing.T, js string) *runtime.RemoteObject {
	t.Helper()
	var o runtime.RemoteObject
	if err := json.Unmarshal([]byte(js), &o); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return &o
}

func TestConsoleText(t *testing.T) {
	// The objects are what Chrome sent for the calls named.
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"strings stay bare", []string{`{"type":"string","value":"hello"}`, `{"type":"string","value":"world"}`}, "hello world"},
		{"object from its preview", []string{`{"type":"string","value":"data"}`,
			`{"type":"object","className":"Object","description":"Object","objectId":"1","preview":{"type":"object","description":"Object","overflow":false,"properties":[{"name":"ok","type":"boolean","value":"true"}]}}`},
			`data {"ok":true}`},
		{"nested and cut previews", []string{
			`{"type":"object","className":"Object","description":"Object","objectId":"1","preview":{"type":"object","description":"Object","overflow":true,"properties":[{"name":"ok","type":"boolean","value":"true"},{"name":"b","type":"object","value":"Array(2)","subtype":"array"},{"name":"c","type":"object","value":"Object"},{"name":"s","type":"string","value":"x\"y"},{"name":"f","type":"function"}]}}`},
			`{"ok":true,"b":Array(2),"c":{…},"s":"x\"y","f":ƒ,…}`},
		{"array of objects", []string{
			`{"type":"object","subtype":"array","className":"Array","description":"Array(2)","objectId":"1","preview":{"type":"object","subtype":"array","description":"Array(2)","overflow":false,"properties":[{"name":"0","type":"object","value":"Object","valuePreview":{"type":"object","description":"Object","overflow":false,"properties":[{"name":"a","type":"number","value":"1"}]}},{"name":"1","type":"number","value":"2"}]}}`},
			`[{"a":1},2]`},
		{"printf directives", []string{`{"type":"string","value":"%s is %d and %o%c!"}`, `{"type":"string","value":"Bob"}`, `{"type":"number","value":42,"description":"42"}`,
			`{"type":"object","className":"Object","description":"Object","objectId":"2","preview":{"type":"object","description":"Object","overflow":false,"properties":[{"name":"a","type":"number","value":"1"}]}}`,
			`{"type":"string","value":"color: red"}`, `{"type":"string","value":"extra"}`},
			`Bob is 42 and {"a":1}! extra`},
		{"percent without args", []string{`{"type":"string","value":"100% %d"}`}, "100% %d"},
		{"error shows its message, not its stack", []string{`{"type":"object","subtype":"error","className":"Error","description":"Error: as arg\n    at http://x/a:9:15","objectId":"3"}`}, "Error: as arg"},
		{"primitives", []string{`{"type":"number","unserializableValue":"NaN","description":"NaN"}`, `{"type":"boolean","value":false}`,
			`{"type":"object","subtype":"null","value":null}`, `{"type":"undefined"}`, `{"type":"bigint","unserializableValue":"5n","description":"5n"}`},
			"NaN false null undefined 5n"},
		{"function", []string{`{"type":"function","className":"Function","description":"function greet(a) { return a }","objectId":"4"}`}, "ƒ greet()"},
		{"node by description", []string{`{"type":"object","subtype":"node","className":"HTMLDivElement","description":"div#main","objectId":"5"}`}, "div#main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args []*runtime.RemoteObject
			for _, a := range tt.args {
				args = append(args, obj(t, a))
			}
			if got := ConsoleText(args); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestConsoleMessageKinds(t *testing.T) {
	f := newFakeDoc()
	f.feed(navigated("L1"), &runtime.EventExecutionContextCreated{Context: &runtime.ExecutionContextDescription{ID: 1, UniqueID: "u1"}})
	f.feed(
		&runtime.EventConsoleAPICalled{Type: "warning", ExecutionContextID: 1, Args: []*runtime.RemoteObject{obj(t, `{"type":"string","value":"careful"}`)}},
		&runtime.EventConsoleAPICalled{Type: "assert", ExecutionContextID: 1, Args: []*runtime.RemoteObject{obj(t, `{"type":"string","value":"must hold"}`)}},
		&runtime.EventExceptionThrown{ExceptionDetails: &runtime.ExceptionDetails{Text: "Uncaught", ExecutionContextID: 1,
			Exception:  obj(t, `{"type":"object","subtype":"error","className":"Error","description":"Error: kaboom\n    at thrower (http://x/a:4:27)","objectId":"9"}`),
			StackTrace: &runtime.StackTrace{CallFrames: []*runtime.CallFrame{{FunctionName: "thrower", URL: "http://x/a", LineNumber: 3, ColumnNumber: 26}}}}},
		&runtime.EventExceptionThrown{ExceptionDetails: &runtime.ExceptionDetails{Text: "Uncaught (in promise)", ExecutionContextID: 1, Exception: obj(t, `{"type":"number","value":42,"description":"42"}`)}},
		&runtime.EventExceptionThrown{ExceptionDetails: &runtime.ExceptionDetails{Text: "Uncaught", ExecutionContextID: 1, Exception: obj(t, `{"type":"string","value":"raw"}`)}},
	)
	msgs, _ := f.con.List(false)
	var got []string
	for _, m := range msgs {
		got = append(got, "["+m.Type+"] "+m.Text)
	}
	want := []string{"[warn] careful", "[assert] Assertion failed: must hold", "[error] Uncaught Error: kaboom", "[error] Uncaught (in promise) 42", "[error] Uncaught raw"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if m := msgs[2]; m.URL != "http://x/a" || m.Line != 3 || m.Stack == nil {
		t.Errorf("exception located at %s:%d with stack %v", m.URL, m.Line, m.Stack)
	}
}

// Messages go to the document of their execution context, however late they
// arrive; context ids that a new renderer reuses name the new document.
func TestConsoleDocuments(t *testing.T) {
	log := func(ctx runtime.ExecutionContextID, text string) *runtime.EventConsoleAPICalled {
		return &runtime.EventConsoleAPICalled{Type: "log", ExecutionContextID: ctx, Args: []*runtime.RemoteObject{{Type: "string", Value: []byte(`"` + text + `"`)}}}
	}
	created := func(id runtime.ExecutionContextID, uniq string) *runtime.EventExecutionContextCreated {
		return &runtime.EventExecutionContextCreated{Context: &runtime.ExecutionContextDescription{ID: id, UniqueID: uniq}}
	}
	f := newFakeDoc()
	f.feed(navigated("L1"), created(1, "a"), log(1, "one"))
	// Same renderer: the new document's context is 2, and a message of the
	// old context 1 arrives after the commit.
	f.feed(navigated("L2"), created(2, "b"), log(1, "late from one"), log(2, "two"))
	// A new renderer: contexts cleared, and id 1 is reused by document 3.
	f.feed(&runtime.EventExecutionContextsCleared{}, navigated("L3"), created(1, "c"), log(1, "three"))
	// A message whose context nobody announced goes to the current document.
	f.feed(log(77, "unknown context"))

	byGen := map[uint64][]string{}
	all, _ := f.con.List(true)
	for _, m := range all {
		byGen[m.Gen] = append(byGen[m.Gen], m.Text)
	}
	want := map[uint64][]string{1: {"one", "late from one"}, 2: {"two"}, 3: {"three", "unknown context"}}
	for g, w := range want {
		if !slices.Equal(byGen[g], w) {
			t.Errorf("generation %d: %q, want %q", g, byGen[g], w)
		}
	}
	if cur, _ := f.con.List(false); len(cur) != 2 || cur[0].ID != 4 {
		t.Errorf("current document: %d messages starting at %d, want 2 from msgid 4", len(cur), cur[0].ID)
	}
	m, err := f.con.Get(2)
	if err != nil || m.Text != "late from one" {
		t.Fatalf("Get(2) = %v, %v", m, err)
	}
	f.closed = true
	f.feed(log(1, "after close"))
	if all2, _ := f.con.List(true); len(all2) != len(all) {
		t.Fatalf("a message after close was kept")
	}
}
