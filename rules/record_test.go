package rules

import "testing"

// record: false keeps the first matching entry's agents out of the
// records; an entry without it, a true one, or no entry keeps them in; a
// value that is no boolean is refused.
func TestRecords(t *testing.T) {
	s, err := Parse("r.yaml", []byte(`agents:
  - agent: bob
    record: false
  - agent: carol
    record: true
  - agent: b*
    tools: [list_pages]
`))
	if err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string]bool{"bob": false, "carol": true, "bill": true, "alice": true} {
		if got := s.Records(agent); got != want {
			t.Errorf("Records(%q) = %v, want %v", agent, got, want)
		}
	}
	if _, err := Parse("r.yaml", []byte("agents:\n  - agent: bob\n    record: sometimes\n")); err == nil {
		t.Error("record: sometimes was taken")
	}
}
