package main

import (
	"io"
	"strings"
	"testing"
)

// TestSnapshotFlags: --snapshot-format takes default or compact, and
// nothing else; unset, the tools read "" as the default.
func TestSnapshotFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
		err  string
	}{
		{nil, "", ""},
		{[]string{"--snapshot-format", "compact"}, "compact", ""},
		{[]string{"--snapshot-format=default"}, "default", ""},
		{[]string{"--snapshot-format", "yaml"}, "", `"yaml": want default or compact`},
		{[]string{"--snapshot-format", ""}, "default", ""},
	} {
		c, err := parseFlags(tt.args, io.Discard)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "snapshot-format") {
				t.Errorf("%v: %v; want an error with %q", tt.args, err, tt.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case c.snapshots.format != tt.want:
			t.Errorf("%v: format %q; want %q", tt.args, c.snapshots.format, tt.want)
		}
	}
}
