package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspace(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	w, err := newWorkspace([]string{root}, noProfiles)
	ctx := t.Context()
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(root, "escape"))
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(outside, "out.txt"), []byte("x"), 0o644)

	if p, err := w.write(ctx, filepath.Join(root, "sub", "dir", "f.png"), []byte("png")); err != nil || !strings.HasPrefix(p, root) {
		t.Fatalf("write inside: %s %v", p, err)
	}
	if _, err := w.input(ctx, filepath.Join(root, "in.txt")); err != nil {
		t.Fatalf("read inside: %v", err)
	}
	var ae *argError
	for _, bad := range []string{
		filepath.Join(outside, "f.png"),
		filepath.Join(root, "..", filepath.Base(outside), "f.png"),
		filepath.Join(root, "escape", "f.png"),
		filepath.Join(root, "escape", "new", "f.png"),
	} {
		if _, err := w.output(ctx, bad); !errors.As(err, &ae) || !strings.Contains(err.Error(), "outside the allowed roots") || !strings.Contains(err.Error(), root) {
			t.Errorf("output %s: %v", bad, err)
		}
	}
	if _, err := w.input(ctx, filepath.Join(root, "escape", "out.txt")); !errors.As(err, &ae) {
		t.Errorf("input through a symlink out: %v", err)
	}
	if _, err := w.input(ctx, filepath.Join(root, "missing.txt")); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("input missing: %v", err)
	}
	if _, err := newWorkspace([]string{filepath.Join(root, "nope")}, noProfiles); err == nil {
		t.Error("a missing root was accepted silently")
	}
}

func noProfiles() []string { return nil }
