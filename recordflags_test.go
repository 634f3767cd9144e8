package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/record"
)

// --record and --record-max-bytes as parsed: the default cap, one too small
// to hold a step refused with the least there is, and `pagemux record`'s
// usage errors.
func TestRecordFlags(t *testing.T) {
	c, err := parseFlags([]string{"--record", t.TempDir()}, &bytes.Buffer{})
	if err != nil || c.record.maxBytes != record.DefaultMaxBytes {
		t.Fatalf("--record: %v, cap %d", err, c.record.maxBytes)
	}
	if c, err := parseFlags(nil, &bytes.Buffer{}); err != nil || c.record.viewer() != nil {
		t.Errorf("no --record: %v", err)
	}
	_, err = parseFlags([]string{"--record", t.TempDir(), "--record-max-bytes", "100"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--record-max-bytes 100: a record needs 65536 bytes at least") {
		t.Errorf("a cap of 100 bytes: %v", err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, recordUsage, "Usage: pagemux record list DIR"},
		{[]string{"exprot"}, recordUsage, `unknown command "exprot"`},
		{[]string{"export", t.TempDir()}, recordUsage, "name one record and the format"},
		{[]string{"export", t.TempDir(), "--steps"}, recordUsage, "has no meta.json; give the directory of one session's record"},
		{[]string{"export", "--steps", "--nope", "x"}, recordUsage, "unknown flag --nope"},
		{[]string{"list", "/nonexistent/records"}, recordUsage, "no such file or directory"},
	} {
		var out, errb bytes.Buffer
		code := runRecord(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("pagemux record %q: exit %d\n%s", tc.args, code, errb.String())
		}
	}
}

// A --record directory that cannot be made stops pagemux at start, naming
// the flag.
func TestRecordDirUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	c := recordConfig{dir: filepath.Join(file, "records"), maxBytes: record.DefaultMaxBytes}
	_, err := c.observers(nil, slog.New(slog.DiscardHandler), &secretsConfig{}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "--record: ") {
		t.Errorf("a record directory under a file: %v", err)
	}
}
