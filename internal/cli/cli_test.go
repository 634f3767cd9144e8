package cli

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestParseInterspersed: flags before, between and after the arguments;
// a misspelled flag named as the user wrote it.
func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	n := fs.Int("parallel", 1, "")
	v := fs.Bool("v", false, "")
	args, err := ParseInterspersed(fs, []string{"-v", "https://a/", "--parallel", "8", "https://b/"}, &bytes.Buffer{})
	if err != nil || !slices.Equal(args, []string{"https://a/", "https://b/"}) || *n != 8 || !*v {
		t.Errorf("got %q, %v; parallel %d, v %v", args, err, *n, *v)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("parallel", 1, "")
	_, err = ParseInterspersed(fs, []string{"https://a/", "--paralel", "8"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "unknown flag --paralel: did you mean --parallel?") {
		t.Errorf("a misspelled flag after an argument: %v", err)
	}
}
