package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/chromedp"
)

// HeapSnapshot takes a snapshot of the page's JavaScript heap and writes it
// to w as Chrome sends it, chunk by chunk, so the snapshot never sits in
// memory whole. It returns the bytes written. It does not collect garbage
// first, nor check that w received valid JSON.
func (cp Capture) HeapSnapshot(ctx context.Context, w io.Writer) (int64, error) {
	p := cp.p
	if err := p.Ready(ctx); err != nil {
		return 0, err
	}
	sink := newChunkSink(w)
	done := make(chan struct{})
	go func() { defer close(done); sink.drain() }()
	err := p.await(ctx, func(ctx context.Context) error {
		// Listen's fn runs in the tab's event loop: it only queues the chunk.
		// Chrome sends every chunk before it answers takeHeapSnapshot, so the
		// queue is complete when the call returns.
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		if err := chromedp.Listen(lctx, func(ev any) {
			if c, ok := ev.(*heapprofiler.EventAddHeapSnapshotChunk); ok {
				sink.push(c.Chunk)
			}
		}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, heapprofiler.TakeHeapSnapshot, heapprofiler.TakeHeapSnapshotParams{ReportProgress: new(false)})
		return err
	})
	sink.close()
	<-done
	if err != nil {
		return sink.written, fmt.Errorf("take a heap snapshot: %w", err)
	}
	if sink.err != nil {
		return sink.written, sink.err
	}
	if sink.written == 0 {
		return 0, errors.New("take a heap snapshot: chrome sent no data")
	}
	return sink.written, nil
}

// chunkSink queues chunks from the event loop and writes them to w from a
// goroutine of its own, in order. After a write error it drops the rest.
type chunkSink struct {
	w       io.Writer
	mu      sync.Mutex
	queue   []string
	closed  bool
	wake    chan struct{}
	written int64 // read after drain returned
	err     error // read after drain returned
}

func newChunkSink(w io.Writer) *chunkSink {
	return &chunkSink{w: w, wake: make(chan struct{}, 1)}
}

// push queues a chunk; it never blocks.
func (s *chunkSink) push(chunk string) {
	s.mu.Lock()
	s.queue = append(s.queue, chunk)
	s.mu.Unlock()
	s.signal()
}

// close says no chunk follows; drain returns once the queue is written.
func (s *chunkSink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
}

func (s *chunkSink) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// drain writes the queued chunks until close, then returns.
func (s *chunkSink) drain() {
	for {
		s.mu.Lock()
		batch, closed := s.queue, s.closed
		s.queue = nil
		s.mu.Unlock()
		for _, c := range batch {
			if s.err != nil {
				break
			}
			n, err := io.WriteString(s.w, c)
			s.written += int64(n)
			s.err = err
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) == 0 {
			<-s.wake
		}
	}
}
