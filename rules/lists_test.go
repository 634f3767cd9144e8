package rules

import "testing"

// TestLists: an agent's entry lists the tools its tools take in and its
// deny does not name; a group expands; no entry lists everything.
func TestLists(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `
agents:
  - agent: "reader*"
    tools: [snapshot, navigation]
    deny: [close_page]
  - agent: "nofiles"
    deny: [files]
`)
	for _, tc := range []struct {
		agent, tool string
		want        bool
	}{
		{"reader-1", "take_snapshot", true},
		{"reader-1", "navigate_page", true},
		{"reader-1", "close_page", false},
		{"reader-1", "evaluate_script", false},
		{"nofiles", "take_heapsnapshot", false},
		{"nofiles", "take_screenshot", true}, // listed: a call that names a file is still refused
		{"someone", "evaluate_script", true},
	} {
		if got := s.Lists(tc.agent, tc.tool); got != tc.want {
			t.Errorf("Lists(%q, %q) = %v, want %v", tc.agent, tc.tool, got, tc.want)
		}
	}
}
