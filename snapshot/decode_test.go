package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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
	for _, name := range []string{"form", "widgets", "dyn.1", "dyn.4"} {
		nodes, err := os.ReadFile(filepath.Join("testdata", name+".json"))
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
