package snapshot

import (
	"strings"
	"testing"
)

// TestReadPageTree reads trees as page.js writes them: the text and the
// uids' nodes follow the refs and child counts, and a node without a DOM
// node of its own (ref 0) is named by its owner.
func TestReadPageTree(t *testing.T) {
	t.Parallel()
	const tree = `[7,"RootWebArea","Doc",null,null,["focusable",true,"url","http://x/"],2,` +
		`8,"navigation","Menu",null,null,null,2,` +
		`9,"link","Home",null,null,["focusable",true,"url","http://x/home"],1,` +
		`10,"StaticText","Home",null,null,null,0,` +
		`0,"StaticText","›",null,null,null,0,` +
		`11,"textbox","Name","Ada \"L\"",null,["focusable",true,"editable","plaintext","required",true],0]`
	doc, err := ReadPageTree([]byte(tree), "F")
	if err != nil {
		t.Fatal(err)
	}
	u := NewUIDs()
	got := u.SnapshotFrames(&Frame{Doc: doc}, false).Text
	want := `uid=1_0 RootWebArea "Doc" url="http://x/"
  uid=1_1 navigation "Menu"
    uid=1_2 link "Home" url="http://x/home"
    uid=1_4 "›"
  uid=1_5 textbox "Name" required value="Ada \"L\""
`
	if got != want {
		t.Errorf("text:\n%s\nwant\n%s", got, want)
	}
	for uid, ref := range map[string]int64{"1_0": 7, "1_2": 9, "1_5": 11} {
		frame, id, err := u.LookupFrame(uid)
		if r, ok := PageRef(id); err != nil || !ok || r != ref || frame != "F" {
			t.Errorf("uid %s: frame %q, ref %d (%v), %v; want ref %d of F", uid, frame, r, ok, err, ref)
		}
	}
	// The text after the link has no node of its own: it is the
	// navigation's first such node.
	if _, id, _ := u.LookupFrame("1_4"); id != -8 {
		t.Errorf("the generated text resolves to %d, want its owner's -8", id)
	}
	if _, ok := PageRef(5); ok {
		t.Error("a backend id of Chrome's tree was taken for a ref")
	}
	// A second snapshot of the same refs gives the same uids.
	if again := u.SnapshotFrames(&Frame{Doc: doc}, false).Text; again != want {
		t.Errorf("second snapshot:\n%s\nwant the same uids:\n%s", again, want)
	}
}

// TestReadPageTreeBad: a result that is not such a tree is an error, never
// a tree that lies about its shape.
func TestReadPageTreeBad(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"not an array":       `{"a":1}`,
		"cut short":          `[1,"RootWebArea",null,null,null,null`,
		"negative ref":       `[-1,"RootWebArea",null,null,null,null,0]`,
		"string ref":         `["1","RootWebArea",null,null,null,null,0]`,
		"negative count":     `[1,"RootWebArea",null,null,null,null,-1]`,
		"too few children":   `[1,"RootWebArea",null,null,null,null,2,2,"generic",null,null,null,null,0]`,
		"two roots":          `[1,"RootWebArea",null,null,null,null,0,2,"generic",null,null,null,null,0]`,
		"props not in pairs": `[1,"RootWebArea",null,null,null,[true],0]`,
		"empty":              ``,
	} {
		if _, err := ReadPageTree([]byte(raw), ""); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "page tree: ") {
			t.Errorf("%s: %v; want an error that says it is the page tree's", name, err)
		}
	}
	if _, err := ReadPageTree([]byte(`null`), ""); err != ErrNotWalked {
		t.Errorf("null: %v, want ErrNotWalked", err)
	}
	doc, err := ReadPageTree([]byte(`[]`), "")
	if err != nil || len(doc.nodes) != 0 {
		t.Errorf("an empty tree: %v, %v", doc, err)
	}
}

// TestPageNodeScript: the expression names the ref as a number; nothing of
// a caller's gets into the script but that number.
func TestPageNodeScript(t *testing.T) {
	t.Parallel()
	if s := PageNodeScript(42); !strings.Contains(s, "S.refs.get(42)") {
		t.Errorf("PageNodeScript(42) = %s", s)
	}
}

// PageScriptAuto's word that Chrome's tree is the quicker is an error of
// its own, not a tree.
func TestReadPageTreeChromeQuicker(t *testing.T) {
	t.Parallel()
	if _, err := ReadPageTree([]byte(`"chrome"`), "F"); err != ErrChromeQuicker {
		t.Errorf("%v, want ErrChromeQuicker", err)
	}
}
