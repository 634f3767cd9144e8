package browser

import "testing"

// The log of closed pages keeps the latest maxGone reasons; older ids are
// forgotten (and read as closed by pagemux), and the record stays bounded.
func TestGoneLogBounded(t *testing.T) {
	var g goneLog
	for id := 1; id <= 3*maxGone; id++ {
		g.add(id, ClosedOutside)
	}
	g.add(3*maxGone, ClosedRestart) // told twice: the latest reason, one slot
	if len(g.why) != maxGone || len(g.ring) != maxGone {
		t.Fatalf("%d reasons in %d slots after %d pages, want %d", len(g.why), len(g.ring), 3*maxGone, maxGone)
	}
	for _, tc := range []struct {
		id   int
		want CloseReason
	}{
		{1, ClosedByPagemux},
		{2 * maxGone, ClosedByPagemux},
		{2*maxGone + 1, ClosedOutside},
		{3*maxGone - 1, ClosedOutside},
		{3 * maxGone, ClosedRestart},
	} {
		if got := g.reason(tc.id); got != tc.want {
			t.Errorf("page %d: reason %d, want %d", tc.id, got, tc.want)
		}
	}
}
