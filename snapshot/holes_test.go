package snapshot

import (
	"strings"
	"testing"
)

// readNodes decodes a getFullAXTree-shaped answer, as Chrome sends
// queryAXTree's and getPartialAXTree's.
func readNodes(t *testing.T, nodes string) *Doc {
	t.Helper()
	doc, done, err := ReadReply(strings.NewReader(`{"id":1,"result":{"nodes":[` + nodes + `]}}`))
	if err != nil || !done {
		t.Fatalf("%v (done %v)", err, done)
	}
	return doc
}

// Fill puts Chrome's subtrees in the place of the page tree's holes: an
// element's subtree under its root, a gap's one node or nothing; their
// uids name Chrome's backend nodes beside the page's refs.
func TestFill(t *testing.T) {
	t.Parallel()
	const tree = `[7,"RootWebArea","Doc",null,null,["focusable",true,"url","http://x/"],5,` +
		`8,"#hole",null,null,null,null,0,` +
		`9,"StaticText","a",null,null,null,0,` +
		`10,"#gap",null,null,null,null,0,` +
		`11,"#gap",null,null,null,null,0,` +
		`12,"#hole",null,null,null,null,0]`
	doc, err := ReadPageTree([]byte(tree), "F")
	if err != nil {
		t.Fatal(err)
	}
	holes := doc.Holes()
	want := []Hole{{8, false}, {10, true}, {11, true}, {12, false}}
	if len(holes) != len(want) {
		t.Fatalf("holes %v, want %v", holes, want)
	}
	for i := range want {
		if holes[i] != want[i] {
			t.Fatalf("holes %v, want %v", holes, want)
		}
	}
	// The button's subtree, its parent first as queryAXTree gives it
	// (parentId outside the answer), then a gap Chrome shows, one it
	// leaves out, and an element gone meanwhile.
	button := readNodes(t, `{"nodeId":"40","ignored":false,"role":{"type":"role","value":"button"},"name":{"type":"computedString","value":"Go"},"properties":[{"name":"focusable","value":{"type":"booleanOrUndefined","value":true}}],"parentId":"3","childIds":["41"],"backendDOMNodeId":40},`+
		`{"nodeId":"41","ignored":false,"role":{"type":"internalRole","value":"StaticText"},"name":{"type":"computedString","value":"Go"},"parentId":"40","childIds":["-100"],"backendDOMNodeId":41},`+
		`{"nodeId":"-100","ignored":false,"role":{"type":"internalRole","value":"InlineTextBox"},"name":{"type":"computedString","value":"Go"},"parentId":"41","childIds":[]}`)
	shown := readNodes(t, `{"nodeId":"50","ignored":false,"role":{"type":"internalRole","value":"StaticText"},"name":{"type":"computedString","value":" "},"childIds":["-101"],"backendDOMNodeId":50}`)
	left := readNodes(t, `{"nodeId":"0","ignored":true,"role":{"type":"role","value":"none"}}`)
	if err := doc.Fill([]*Doc{button, left, shown}); err == nil {
		t.Fatal("three subtrees for four holes: no error")
	}
	if err := doc.Fill([]*Doc{button, left, shown, nil}); err != nil {
		t.Fatal(err)
	}
	u := NewUIDs()
	got := u.SnapshotFrames(&Frame{Doc: doc}, false).Text
	wantText := `uid=1_0 RootWebArea "Doc" url="http://x/"
  uid=1_1 button "Go"
  uid=1_2 "a"
  uid=1_3 " "
`
	if got != wantText {
		t.Errorf("text:\n%s\nwant\n%s", got, wantText)
	}
	for uid, id := range map[string]int64{"1_0": -7, "1_1": 40, "1_2": -9, "1_3": 50} {
		if frame, got, err := u.LookupFrame(uid); err != nil || int64(got) != id || frame != "F" {
			t.Errorf("uid %s: %d of %q, %v; want %d of F", uid, got, frame, err, id)
		}
	}
	if len(doc.Holes()) != 0 {
		t.Errorf("holes left after Fill: %v", doc.Holes())
	}
}
