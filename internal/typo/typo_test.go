package typo

import "testing"

func TestNearest(t *testing.T) {
	t.Parallel()
	names := []string{"parallel", "lighthouse", "color-contrast", "image-alt"}
	for _, tt := range []struct {
		s     string
		limit int
		want  string
	}{
		{"paralel", 0, "parallel"},
		{"colour-contrast", 0, "color-contrast"},
		{"image-alt", 0, "image-alt"},
		{"xyz", 0, ""},
		{"lighthuose", 1, ""}, // two edits, over the cap
		{"lighthuose", 0, "lighthouse"},
	} {
		if got := Nearest(tt.s, names, tt.limit); got != tt.want {
			t.Errorf("Nearest(%q, limit %d) = %q, want %q", tt.s, tt.limit, got, tt.want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
