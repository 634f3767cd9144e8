package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto"
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
