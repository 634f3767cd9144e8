package tail

import (
	"strings"
	"testing"
)

func TestBuffer(t *testing.T) {
	b := &Buffer{Size: 8}
	b.Write([]byte("  hello "))
	if got := b.String(); got != "hello" {
		t.Fatalf("got %q", got)
	}
	b.Write([]byte("world, and more\n"))
	if got := b.String(); got != "nd more" {
		t.Fatalf("got %q, want the last 8 bytes trimmed", got)
	}
	var z Buffer
	z.Write([]byte(strings.Repeat("x", 10000)))
	if len(z.String()) != 4<<10 {
		t.Fatalf("zero value kept %d bytes", len(z.String()))
	}
}
