package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto"

	"github.com/pagemux/pagemux/cdpcbor"
)

// TestReadReply reads the protocol messages that reach browser/'s streamed
// snapshot: the answer, with members in any order around its result, an
// error answer, and an event.
func TestReadReply(t *testing.T) {
	t.Parallel()
	nodes, err := os.ReadFile(filepath.Join("testdata", "form.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, done, err := ReadReply(strings.NewReader(`{"id":1,"sessionId":"S","result":{"nodes":` + string(nodes) + `}}`))
	if err != nil || !done {
		t.Fatalf("answer: done %v, %v", done, err)
	}
	want := NewUIDs().Snapshot(loadAX(t, "form"), false).Text
	if got := NewUIDs().SnapshotFrames(&Frame{Doc: doc}, false).Text; got != want {
		t.Errorf("the answer read gives\n%s\nwant\n%s", got, want)
	}

	_, done, err = ReadReply(strings.NewReader(`{"id":1,"error":{"code":-32000,"message":"Agent is not enabled"}}`))
	var cerr *cdproto.Error
	if !done || !errors.As(err, &cerr) || cerr.Message != "Agent is not enabled" {
		t.Errorf("error answer: done %v, %v; want a *cdproto.Error", done, err)
	}

	doc, done, err = ReadReply(strings.NewReader(`{"method":"Inspector.detached","params":{"reason":"x"}}`))
	if done || err != nil || doc != nil {
		t.Errorf("event: %v, done %v, %v; want not done", doc, done, err)
	}

	if _, _, err := ReadReply(strings.NewReader(`[1]`)); err == nil {
		t.Error("a message that is not an object gave no error")
	}
}

// TestReadCBORReply reads the recorded trees as Chrome encodes them on a
// CBOR pipe (cdpcbor.FromJSON makes the same bytes as Chrome's own
// conversion), and an error answer: the text is the JSON answer's, byte
// for byte, verbose or not.
func TestReadCBORReply(t *testing.T) {
	t.Parallel()
	// An ignored button with a name, a value and a description: shown only
	// if "ignored" is lost.
	const ignored = `[{"nodeId":"1","ignored":false,"role":{"type":"internalRole","value":"RootWebArea"},"name":{"type":"computedString","value":"T"},"childIds":["2","3"],"backendDOMNodeId":1,"frameId":"F"},` +
		`{"nodeId":"2","ignored":true,"role":{"type":"role","value":"button"},"name":{"type":"computedString","value":"Hidden"},"childIds":[],"backendDOMNodeId":2},` +
		`{"nodeId":"3","ignored":false,"role":{"type":"role","value":"slider"},"name":{"type":"computedString","value":"S"},"description":{"type":"computedString","value":"D"},"value":{"type":"number","value":0.5},"properties":[{"name":"focusable","value":{"type":"booleanOrUndefined","value":true}}],"childIds":[],"backendDOMNodeId":3}]`
	for _, name := range []string{"form", "widgets", "dyn.1", "dyn.4", "ignored"} {
		nodes, err := os.ReadFile(filepath.Join("testdata", name+".json"))
		if name == "ignored" {
			nodes, err = []byte(ignored), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		msg := `{"id":1073741900,"result":{"nodes":` + string(nodes) + `},"sessionId":"S"}`
		jdoc, _, err := ReadReply(strings.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		cb, err := cdpcbor.FromJSON(nil, []byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		// Divert hands over the map, after the message's envelope.
		cdoc, err := ReadCBORReply(bytes.NewReader(cb[7:]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cdoc.frame != jdoc.frame || !slices.Equal(cdoc.ids, jdoc.ids) || !slices.Equal(cdoc.kids, jdoc.kids) {
			t.Errorf("%s: frame %q, ids %d, kids %d; want %q, %d, %d", name, cdoc.frame, len(cdoc.ids), len(cdoc.kids), jdoc.frame, len(jdoc.ids), len(jdoc.kids))
		}
		for i := range min(len(cdoc.nodes), len(jdoc.nodes)) {
			if c, j := cdoc.nodes[i], jdoc.nodes[i]; c.backend != j.backend || c.ignored != j.ignored {
				t.Errorf("%s: node %d: backend %d, ignored %v; want %d, %v", name, i, c.backend, c.ignored, j.backend, j.ignored)
			}
		}
		for _, verbose := range []bool{false, true} {
			want := NewUIDs().SnapshotFrames(&Frame{Doc: jdoc}, verbose).Text
			if got := NewUIDs().SnapshotFrames(&Frame{Doc: cdoc}, verbose).Text; got != want {
				t.Errorf("%s verbose=%v: from CBOR\n%s\nwant\n%s", name, verbose, got, want)
			}
		}
	}
	cb, _ := cdpcbor.FromJSON(nil, []byte(`{"id":1,"error":{"code":-32000,"message":"Agent is not enabled"}}`))
	_, err := ReadCBORReply(bytes.NewReader(cb[7:]))
	var cerr *cdproto.Error
	if !errors.As(err, &cerr) || cerr.Code != -32000 || cerr.Message != "Agent is not enabled" {
		t.Errorf("error answer: %v; want a *cdproto.Error", err)
	}
	for _, bad := range [][]byte{cb[7:20], {0x01}} {
		if _, err := ReadCBORReply(bytes.NewReader(bad)); err == nil {
			t.Errorf("% x: no error", bad)
		}
	}
}
