//go:build !unix

package tools

import "io/fs"

// ownedByUs reports whether this process's user owns the file; without Unix
// owners, the directory's ACLs decide.
func ownedByUs(fs.FileInfo) bool { return true }
