package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagemux/pagemux/pagelock"
)

func TestCapOutput(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("uid=1_2 button \"é\"\n", 1000) // 19 runes a line
	tests := []struct {
		name  string
		parts []string
		limit int
		cut   int // which part is cut, -1 none
	}{
		{"fits", []string{"a", "b"}, 3, -1},
		{"no cap", []string{long}, 0, -1},
		{"runes not bytes", []string{strings.Repeat("é", 100)}, 100, -1},
		{"longest is cut", []string{"Successfully clicked", long, "## Pages\n1: about:blank"}, 5000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := append([]string(nil), tt.parts...)
			capOutput(parts, tt.limit, "pass filePath to save all of it")
			for i := range parts {
				if (i == tt.cut) != (parts[i] != tt.parts[i]) {
					t.Fatalf("part %d: cut=%v, want %v", i, parts[i] != tt.parts[i], i == tt.cut)
				}
			}
			if tt.cut < 0 {
				return
			}
			text := strings.Join(parts, "\n")
			body, note, _ := strings.Cut(parts[tt.cut], "\n… (cut: ")
			if n := utf8.RuneCountInString(text) - utf8.RuneCountInString(note); n > tt.limit+20 {
				t.Errorf("%d characters, want at most about %d", n, tt.limit)
			}
			if !strings.HasSuffix(body, `"é"`) {
				t.Errorf("the cut ends inside a line: %q", body[len(body)-20:])
			}
			want := fmt.Sprintf("the text is %d characters, the first %d shown; pass filePath to save all of it)", utf8.RuneCountInString(strings.Join(tt.parts, "\n")), utf8.RuneCountInString(strings.Join(tt.parts, "\n"))-utf8.RuneCountInString(tt.parts[tt.cut])+utf8.RuneCountInString(body))
			if note != want {
				t.Errorf("note %q\nwant %q", note, want)
			}
		})
	}
}

// bigPage serves a page with n buttons on a loopback server of its own.
func bigPage(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("<!doctype html><title>Big</title><main>")
	for i := range n {
		fmt.Fprintf(&b, "<p>Row %d <button>Buy %d</button></p>", i, i)
	}
	page := b.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/big"
}

// TestMaxOutput: a result longer than --max-output is cut with a note that
// says how much and what to do, over real MCP, and a snapshot outlined
// whole; filePath still saves all.
func TestMaxOutput(t *testing.T) {
	t.Parallel()
	const limit = 3000
	e := newEnv(t, envOptions{Locks: pagelock.Options{Mode: pagelock.PerPage, Timeout: time.Minute, MaxQueue: 64}, Server: Options{MaxOutput: limit}})
	url := bigPage(t, 600) // a snapshot of about 33,000 characters
	e.ok(t, "new_page", map[string]any{"url": url})
	id := e.b.SelectedID()

	// Too big: an outline of the whole page, its first rows and its last.
	snap := e.ok(t, "take_snapshot", map[string]any{"pageId": id})
	body := snap
	mustContain(t, snap, "## Latest page snapshot\nOutlined: the snapshot is ", "more than fits in --max-output (3000)",
		`button "Buy 0"`, `button "Buy 599"`, "take_snapshot uid=")
	if n := utf8.RuneCountInString(snap); n > limit || n < limit-1000 {
		t.Errorf("%d characters shown, want about %d", n, limit)
	}
	fold := regexp.MustCompile(`(?m)^ +… (\d+) nodes from uid=\S+ to uid=\S+ \(\d+ characters\): take_snapshot uid=(\S+) to=(\S+)$`).FindStringSubmatch(snap)
	if fold == nil {
		t.Fatalf("no fold of the rows between:\n%s", snap)
	}
	// The fold's own take_snapshot opens that run (outlined again, as it
	// is too big still); to must be a later sibling.
	run := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "uid": fold[2], "to": fold[3]})
	mustContain(t, run, "## Latest page snapshot (uid="+fold[2]+" to uid="+fold[3]+", and below)\nOutlined: the snapshot is "+fold[1]+" nodes")
	mustContain(t, e.fails(t, "take_snapshot", map[string]any{"pageId": id, "uid": fold[3], "to": fold[2]}), "is not uid "+fold[3]+" or a later sibling of it")
	// A subtree asked for is outlined the same way when it is too big.
	root := regexp.MustCompile(`uid=(\S+) main`).FindStringSubmatch(snap)
	if root == nil {
		t.Fatalf("no main landmark in the outline:\n%s", snap)
	}
	mustContain(t, e.ok(t, "take_snapshot", map[string]any{"pageId": id, "uid": root[1]}), "(uid="+root[1]+" and below)\nOutlined:", `button "Buy 599"`)

	path := filepath.Join(t.TempDir(), "big.txt")
	e.ok(t, "take_snapshot", map[string]any{"pageId": id, "filePath": path})
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), `button "Buy 599"`) || len(saved) < 10*limit {
		t.Errorf("the saved snapshot is not whole: %d bytes", len(saved))
	}

	long := e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 'x'.repeat(20000)"})
	// Cut inside the page, before it crossed CDP (script.go's pageCut).
	mustContain(t, long, "… (cut: the value is 20002 characters of JSON, the first ", "or pass filePath to save all of it)")
	if n := utf8.RuneCountInString(long); n > limit+300 {
		t.Errorf("evaluate_script answer of %d characters, want about %d", n, limit)
	}

	// Short answers are untouched, and a click's snapshot says where to get
	// the whole one.
	mustContain(t, e.ok(t, "evaluate_script", map[string]any{"pageId": id, "function": "() => 1"}), "```json\n1\n```")
	uid := uidIn(t, body, `button "Buy 3"`)
	clicked := e.ok(t, "click", map[string]any{"pageId": id, "uid": uid, "includeSnapshot": true})
	mustContain(t, clicked, "Successfully clicked on the element", "Outlined: the snapshot is ", `button "Buy 599"`)

	// An incremental snapshot after an outlined one compares with the whole
	// tree the server computed (TestIncrementalBigPage tells more): here,
	// after a change the outline did not show, the change alone, and its
	// folds say they may hold lines never seen. After one saved whole to a
	// file, they do not.
	e.eval(t, id, "() => { document.querySelectorAll('button')[300].textContent = 'Sold'; return 1 }")
	inc := e.ok(t, "take_snapshot", map[string]any{"pageId": id, "mode": "incremental"})
	mustContain(t, inc, "## Latest page snapshot (changes since your last one)\n1 changed; ", incrementalLegendUnseen, `button "Sold"`)
	if strings.Contains(inc, "Buy 599") || utf8.RuneCountInString(inc) > limit/3 {
		t.Errorf("an incremental snapshot after an outlined one unfolds what did not change:\n%s", inc)
	}
	e.ok(t, "take_snapshot", map[string]any{"pageId": id, "filePath": filepath.Join(t.TempDir(), "seen.txt")})
	e.eval(t, id, "() => { document.querySelectorAll('button')[400].textContent = 'Sold too'; return 1 }")
	inc = e.ok(t, "take_snapshot", map[string]any{"pageId": id, "mode": "incremental"})
	mustContain(t, inc, "1 changed; ", incrementalLegend, `button "Sold too"`)
}
