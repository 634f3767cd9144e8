// Package tail keeps the last bytes a process wrote, for error messages that
// say what Chrome or the Lighthouse runner printed before it failed.
package tail

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that keeps only the last Size bytes written to it.
// It is safe for concurrent use. The zero value keeps 4 KiB.
type Buffer struct {
	// Size is how many bytes to keep; 0 means 4 KiB.
	Size int

	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p and what came before it, up to Size bytes. It
// never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	size := b.Size
	if size <= 0 {
		size = 4 << 10
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > size {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-size:]...)
	}
	return len(p), nil
}

// String returns what is kept, without surrounding space.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}
