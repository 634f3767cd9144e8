package smoke

import (
	"bytes"
	"fmt"

	"github.com/pagemux/pagemux/storagestate"
)

// StorageState is a logged-in browser's cookies and localStorage, in the
// file Playwright's storageState() writes (and --storage-state reads), so a
// run can start where a login left off; the storage_state tool writes it
// too. Its values are never printed. The format lives in storagestate.
type StorageState = storagestate.State

// StateCookie is one cookie of a StorageState.
type StateCookie = storagestate.Cookie

// StateOrigin is the localStorage of one origin of a StorageState.
type StateOrigin = storagestate.Origin

// StateItem is one localStorage item of a StorageState.
type StateItem = storagestate.Item

// readStorageState reads and checks a --storage-state file. Its errors name
// the file, the entry and the cookie or item name, never a value.
func readStorageState(path string) (*StorageState, error) {
	st, err := storagestate.Read(path)
	if err != nil {
		return nil, fmt.Errorf("--storage-state: %w", err)
	}
	return st, nil
}

// lineOf is the line of byte offset off in b, from 1, for the errors of
// the files smoke reads (steps.go).
func lineOf(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}
