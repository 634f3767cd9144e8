package main

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestSnapshotNodes(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		escaped    bool
		want       []string
	}{
		{"headings and uids left out", "## Latest page snapshot\nuid=1_0 RootWebArea \"T\" url=\"http://127.0.0.1/\"\n  uid=1_1 button \"OK\"\n    uid=1_2 \"OK\"\n",
			false, []string{`RootWebArea "T" url="http://127.0.0.1/"`, `  button "OK"`, `    "OK"`}},
		{"a raw newline continues its node", "uid=1_0 RootWebArea\n  uid=1_1 textbox value=\"a\nb\"\n  uid=1_2 button\n",
			false, []string{"RootWebArea", "  textbox value=\"a\nb\"", "  button"}},
		{"escapes undone", "uid=1_0 RootWebArea\n  uid=1_1 textbox \"say \\\"hi\\\"\" value=\"a\\nb\\\\c\"\n",
			true, []string{"RootWebArea", "  textbox \"say \"hi\"\" value=\"a\nb\\c\""}},
		{"escapes kept when the server prints raw", "uid=1_0 link \"a\\nb\"\n",
			false, []string{`link "a\nb"`}},
		{"a quoted uid", "uid=\"1_0\" RootWebArea\n", false, []string{"RootWebArea"}},
		{"no nodes", "## Latest page snapshot\n", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := snapshotNodes(tc.text, tc.escaped); !slices.Equal(got, tc.want) {
				t.Errorf("snapshotNodes(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestUnescapeQuoted(t *testing.T) {
	for in, want := range map[string]string{
		`button "OK"`:                   `button "OK"`,
		`textbox "a\"b" value="c\\d"`:   `textbox "a"b" value="c\d"`,
		`"\u0001\t"`:                    "\"\x01\t\"",
		`textbox "unterminated \" here`: `textbox "unterminated \" here`,
	} {
		if got := unescapeQuoted(in); got != want {
			t.Errorf("unescapeQuoted(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDiffNodes(t *testing.T) {
	ref := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name   string
		got    []string
		differ int
		first  string
	}{
		{"identical", []string{"a", "b", "c", "d"}, 0, ""},
		{"one changed", []string{"a", "B", "c", "d"}, 1, "@ node 1"},
		{"one missing", []string{"a", "b", "d"}, 1, "@ node 2"},
		{"two extra", []string{"a", "b", "x", "y", "c", "d"}, 2, "@ node 2"},
		{"none", nil, 4, "@ node 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := diffNodes(ref, tc.got)
			if d.Differ != tc.differ || d.Nodes != len(tc.got) || d.RefNodes != len(ref) || d.Approximate {
				t.Errorf("diffNodes = %+v, want %d differing", d, tc.differ)
			}
			if first := strings.Join(d.First[:min(1, len(d.First))], ""); first != tc.first {
				t.Errorf("first line %q, want %q", first, tc.first)
			}
		})
	}
}

// TestEditDistance checks Myers' count against a plain dynamic program.
func TestEditDistance(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seq := func() []string {
		s := make([]string, r.IntN(30))
		for i := range s {
			s[i] = string(rune('a' + r.IntN(4)))
		}
		return s
	}
	for range 500 {
		a, b := seq(), seq()
		got, ok := editDistance(a, b, len(a)+len(b))
		if want := len(a) + len(b) - 2*lcs(a, b); !ok || got != want {
			t.Fatalf("editDistance(%q, %q) = %d, %v; want %d", a, b, got, ok, want)
		}
	}
	if _, ok := editDistance([]string{"a", "b"}, []string{"c", "d"}, 3); ok {
		t.Error("editDistance over its limit said ok")
	}
}

func lcs(a, b []string) int {
	row := make([]int, len(b)+1)
	for i := range a {
		prev := 0
		for j := range b {
			cur := row[j+1]
			if a[i] == b[j] {
				row[j+1] = prev + 1
			} else {
				row[j+1] = max(row[j+1], row[j])
			}
			prev = cur
		}
	}
	return row[len(b)]
}

func TestServerDir(t *testing.T) {
	for in, want := range map[string]string{
		"pagemux --max-output=0":                          "pagemux_max-output=0",
		"pagemux --snapshot-source=chrome --max-output=0": "pagemux_snapshot-source=chrome_max-output=0",
		"chrome-devtools-mcp 1.11.0":                      "chrome-devtools-mcp_1.11.0",
		"@playwright/mcp 0.0.83":                          "playwright_mcp_0.0.83",
	} {
		if got := serverDir(in); got != want {
			t.Errorf("serverDir(%q) = %q, want %q", in, got, want)
		}
	}
}
