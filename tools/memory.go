package tools

import (
	"context"
	"fmt"
	"os"
)

func (s *Server) memoryTools() []tool { return []tool{s.takeHeapSnapshot()} }

type heapSnapshotArgs struct {
	pageArg
	FilePath string `json:"filePath" jsonschema:"A path to a .heapsnapshot file to save the heapsnapshot to."`
}

func (s *Server) takeHeapSnapshot() tool {
	return newTool("take_heapsnapshot",
		"Capture a heap snapshot of the target page. Use to analyze the memory distribution of JavaScript objects and debug memory leaks.",
		pageScope, func(ctx context.Context, c *call, a *heapSnapshotArgs) error {
			path, err := s.files.output(ctx, a.FilePath)
			if err != nil {
				return err
			}
			f, err := os.Create(path)
			if err != nil {
				return fmt.Errorf("create %s: %w", a.FilePath, err)
			}
			progressFrom(ctx).phase("writing the heap snapshot")
			n, err := c.page.Capture().HeapSnapshot(ctx, f)
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("write %s: %w", a.FilePath, cerr)
			}
			if err != nil {
				os.Remove(path) // a partial snapshot would not load anywhere
				return err
			}
			c.resp.say("Heap snapshot saved to %s (%s).", path, byteSize(n))
			return nil
		})
}

// byteSize writes a file size for people.
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
