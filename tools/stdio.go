package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
)

// drain lets the requests a client sent before closing stdin finish: mcp-go
// cancels every call in flight when its input ends, so a client that writes
// its requests and closes the pipe (a script, a CI job) would lose them. It
// counts the requests read and the responses written, and holds back the end
// of input until all are answered or ctx ends.
type drain struct {
	ctx  context.Context
	in   io.Reader
	out  io.Writer
	mu   sync.Mutex
	cond *sync.Cond
	// asked and answered count requests read and responses written.
	asked, answered int
	inBuf, outBuf   []byte
}

func newDrain(ctx context.Context, in io.Reader, out io.Writer) *drain {
	d := &drain{ctx: ctx, in: in, out: out}
	d.cond = sync.NewCond(&d.mu)
	context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.cond.Broadcast()
	})
	return d
}

// message is what drain reads of a JSON-RPC line.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// count calls fn for each whole line in buf and keeps the rest.
func count(buf *[]byte, p []byte, fn func(message)) {
	*buf = append(*buf, p...)
	for {
		i := bytes.IndexByte(*buf, '\n')
		if i < 0 {
			return
		}
		var m message
		if json.Unmarshal((*buf)[:i], &m) == nil && len(m.ID) > 0 && string(m.ID) != "null" {
			fn(m)
		}
		*buf = (*buf)[i+1:]
	}
}

func (d *drain) Read(p []byte) (int, error) {
	n, err := d.in.Read(p)
	d.mu.Lock()
	defer d.mu.Unlock()
	count(&d.inBuf, p[:n], func(m message) {
		if m.Method != "" {
			d.asked++
		}
	})
	if err == io.EOF {
		for d.answered < d.asked && d.ctx.Err() == nil {
			d.cond.Wait()
		}
	}
	return n, err
}

func (d *drain) Write(p []byte) (int, error) {
	n, err := d.out.Write(p)
	d.mu.Lock()
	defer d.mu.Unlock()
	count(&d.outBuf, p[:n], func(m message) {
		if m.Method == "" {
			d.answered++
			d.cond.Broadcast()
		}
	})
	return n, err
}
