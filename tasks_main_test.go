package main

import (
	"io"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/tools"
)

// --max-tasks defaults to tools.DefaultMaxTasks and wants 1 or more.
func TestMaxTasksFlag(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.maxTasks != tools.DefaultMaxTasks {
		t.Fatalf("default --max-tasks: %v, %v", c, err)
	}
	if c, err := parseFlags([]string{"--max-tasks=9"}, io.Discard); err != nil || c.maxTasks != 9 {
		t.Errorf("--max-tasks=9: %v, %v", c, err)
	}
	for _, bad := range []string{"0", "-1"} {
		if _, err := parseFlags([]string{"--max-tasks=" + bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "want 1 or more") {
			t.Errorf("--max-tasks=%s: %v", bad, err)
		}
	}
}
