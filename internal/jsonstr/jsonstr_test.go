package jsonstr

import "testing"

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		in         string
		escapeHTML bool
		want       string
	}{
		{`a "b" <c> & d`, false, `"a \"b\" <c> & d"`},
		{`a "b" <c> & d`, true, `"a \"b\" \u003cc\u003e \u0026 d"`},
		{"line\nbreak\tand é", false, `"line\nbreak\tand é"`},
		{"", false, `""`},
	} {
		if got := Quote(tc.in, tc.escapeHTML); got != tc.want {
			t.Errorf("Quote(%q, %v) = %s, want %s", tc.in, tc.escapeHTML, got, tc.want)
		}
	}
}
