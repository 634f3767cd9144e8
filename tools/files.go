package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// workspace holds the directories that file paths given to tools (uploads,
// screenshots, saved bodies, traces, heap snapshots) must lie in, so an agent
// cannot make pagemux read or write elsewhere.
type workspace struct {
	roots []string // absolute, cleaned, symlinks resolved
}

// newWorkspace checks the roots; none means the OS temp dir and the working
// directory. Roots that do not exist are dropped with an error that says so.
func newWorkspace(dirs []string) (*workspace, error) {
	if len(dirs) == 0 {
		dirs = []string{os.TempDir()}
		if wd, err := os.Getwd(); err == nil {
			dirs = append(dirs, wd)
		}
	}
	w := &workspace{}
	var bad []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			bad = append(bad, d)
			continue
		}
		w.roots = append(w.roots, abs)
	}
	if len(bad) > 0 {
		return w, fmt.Errorf("workspace roots not found, ignored: %s", strings.Join(bad, ", "))
	}
	return w, nil
}

// inside reports whether the resolved path lies in a root.
func (w *workspace) inside(path string) bool {
	for _, r := range w.roots {
		if path == r || strings.HasPrefix(path, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func (w *workspace) refuse(path string) error {
	return &argError{fmt.Sprintf("path %q is outside the allowed roots (%s); give a path inside one of them, or start pagemux with --workspace DIR",
		path, strings.Join(w.roots, ", "))}
}

// output checks a path a tool is to write and returns it absolute. Its
// directory is made if missing; the path itself may not exist yet.
func (w *workspace) output(path string) (string, error) {
	if path == "" {
		return "", &argError{"empty file path"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	// Resolve the deepest existing ancestor, so a symlink cannot lead out.
	dir, rest := filepath.Dir(abs), []string{filepath.Base(abs)}
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
		dir = parent
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	full := filepath.Join(append([]string{real}, rest...)...)
	if !w.inside(full) {
		return "", w.refuse(path)
	}
	if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", w.refuse(path) // a symlink at the path itself could point anywhere
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", fmt.Errorf("create the directory of %s: %w", path, err)
	}
	return full, nil
}

// input checks a path a tool is to read and returns it resolved.
func (w *workspace) input(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &argError{fmt.Sprintf("cannot read %q: %v", path, err)}
	}
	if !w.inside(real) {
		return "", w.refuse(path)
	}
	return real, nil
}

// write saves data to a checked output path and returns where it went.
func (w *workspace) write(path string, data []byte) (string, error) {
	full, err := w.output(path)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(full, data, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return full, nil
}
