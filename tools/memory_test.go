package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

// A heap snapshot streams to the file, which holds the snapshot's JSON.
func TestHeapSnapshot(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	e.eval(t, id, "() => { window.pagemuxLeak = Array.from({length: 1000}, (_, i) => ({i, s: 'x'.repeat(100)})); return 1 }")
	path := filepath.Join(t.TempDir(), "sub", "page.heapsnapshot")
	text := e.ok(t, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": path})
	if !regexp.MustCompile(`^Heap snapshot saved to ` + regexp.QuoteMeta(path) + ` \([0-9.]+ [kM]?B\)\.`).MatchString(text) {
		t.Fatalf("answer: %q", text)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var snap struct {
		Snapshot map[string]json.RawMessage `json:"snapshot"`
		Nodes    []int64                    `json:"nodes"`
		Strings  []string                   `json:"strings"`
	}
	if err := json.NewDecoder(f).Decode(&snap); err != nil {
		t.Fatalf("the snapshot is not JSON: %v", err)
	}
	if snap.Snapshot["meta"] == nil || len(snap.Nodes) == 0 {
		t.Fatalf("snapshot without meta or nodes: %d nodes", len(snap.Nodes))
	}
	found := false
	for _, s := range snap.Strings {
		if s == "pagemuxLeak" {
			found = true
			break
		}
	}
	if !found {
		t.Fatal("the snapshot does not hold the page's global pagemuxLeak")
	}
}

// Bad paths are refused and leave no file behind.
func TestHeapSnapshotPaths(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/form.html")
	mustContain(t, e.fails(t, "take_heapsnapshot", map[string]any{"pageId": id}), `missing required argument "filePath"`)
	mustContain(t, e.fails(t, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": "/proc/pagemux.heapsnapshot"}), "outside the allowed roots")
	mustContain(t, e.fails(t, "take_heapsnapshot", map[string]any{"pageId": id, "filePath": ""}), "empty file path")
}
