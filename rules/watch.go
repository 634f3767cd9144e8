package rules

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// Watch reloads the rules file at path into e each time it changes, until
// ctx ends: a file that parses is swapped in at once (Engine.Swap); one
// that does not, or is gone, leaves the rules in force. reloaded, if not
// nil, is told of each attempt: the new set, or why it was not taken. The
// directory is watched, not the file, so that an editor's save by rename
// is seen too. Watch returns once it watches, or with why it cannot.
func Watch(ctx context.Context, path string, e *Engine, reloaded func(*Set, error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("rules: watching %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		w.Close()
		return err
	}
	if err := w.Add(filepath.Dir(abs)); err != nil {
		w.Close()
		return fmt.Errorf("rules: watching %s: %w", path, err)
	}
	last, _ := os.ReadFile(abs)
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) != abs || ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) == 0 {
					continue
				}
				b, err := os.ReadFile(abs)
				if err == nil && string(b) == string(last) {
					continue // touched, not changed
				}
				var s *Set
				if err == nil {
					last = b
					s, err = Parse(path, b)
				} else {
					err = fmt.Errorf("rules: %w", err)
				}
				if err == nil {
					e.Swap(s)
				}
				if reloaded != nil {
					reloaded(s, err)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				if reloaded != nil {
					reloaded(nil, fmt.Errorf("rules: watching %s: %w", path, err))
				}
			}
		}
	}()
	return nil
}
