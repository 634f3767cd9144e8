package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Over a session (revision 2025-11-25 and before), mcp-go gives every
// request of a session, and its GET stream, one notification channel, and
// each of them reads it: a notification a tool call sends goes on whichever
// stream took it first, the GET stream or any POST of the session, and
// notifications split between streams reach the client out of order. The
// revision asks that a request's notifications go on its own stream. So a
// tool call of a session gets a session of its own in its context, whose
// notifications pagemux writes on the call's POST stream, in order and before
// the answer, and none of them reach the channel the other streams read.

// callStream is the response of one tools/call POST of a session: it writes
// the call's notifications as events of a stream, and mcp-go's answer after
// them, as the last event when the notifications made it a stream.
type callStream struct {
	w     http.ResponseWriter
	hdr   http.Header // mcp-go's, apart: the writer sets w's meanwhile
	notes chan mcp.JSONRPCNotification
	stop  chan struct{} // closed when the answer comes: write what is left
	done  chan struct{} // closed when the writer has written every notification
	once  sync.Once

	mu       sync.Mutex
	streamed bool         // the event-stream header is out
	wrap     bool         // mcp-go answers in JSON after it: wrapped in an event
	answer   bytes.Buffer // that JSON answer
	broken   bool         // a write failed: the client is gone
	log      func(msg string, args ...any)
}

func newCallStream(w http.ResponseWriter, log func(string, ...any)) *callStream {
	c := &callStream{w: w, hdr: http.Header{}, notes: make(chan mcp.JSONRPCNotification, 100),
		stop: make(chan struct{}), done: make(chan struct{}), log: log}
	go c.writeNotes()
	return c
}

// writeNotes writes each notification as it comes, until the answer comes,
// and then those still in the channel. It is the only reader of the
// channel, so the notifications keep the order they were sent in.
func (c *callStream) writeNotes() {
	defer close(c.done)
	for {
		select {
		case n := <-c.notes:
			c.writeNote(n)
		case <-c.stop:
			for {
				select {
				case n := <-c.notes:
					c.writeNote(n)
				default:
					return
				}
			}
		}
	}
}

func (c *callStream) writeNote(n mcp.JSONRPCNotification) {
	data, err := json.Marshal(n)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken {
		return
	}
	if !c.streamed {
		h := c.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		c.w.WriteHeader(http.StatusOK)
		c.streamed = true
	}
	if _, err := fmt.Fprintf(c.w, "event: message\ndata: %s\n\n", data); err != nil {
		c.broken = true
		c.log("the call's notifications could not be written; the rest are dropped", "error", err)
		return
	}
	c.flush()
}

// answering lets every notification sent so far out before the answer.
// All of them were sent before the answer was written, as the call's
// handler sent them and returned before mcp-go writes its answer.
func (c *callStream) answering() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// finish writes a JSON answer that came after notifications, as the last
// event of the stream. It runs once mcp-go is done with the request.
func (c *callStream) finish() {
	c.answering()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wrap && c.answer.Len() > 0 {
		fmt.Fprintf(c.w, "event: message\ndata: %s\n\n", bytes.TrimSpace(c.answer.Bytes()))
		c.flush()
	}
}

func (c *callStream) Header() http.Header { return c.hdr }

// WriteHeader is mcp-go's: the header of its answer, unless it is an event
// stream (its own notifications, of the session's channel). Once the
// call's notifications made the response a stream, the header is out: a
// JSON answer becomes the stream's last event.
func (c *callStream) WriteHeader(status int) {
	stream := c.hdr.Get("Content-Type") == "text/event-stream"
	if !stream {
		c.answering()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.streamed:
		maps.Copy(c.w.Header(), c.hdr)
		c.w.WriteHeader(status)
		c.streamed = stream
	case !stream:
		c.wrap = true
	}
}

// Write is mcp-go's: a JSON answer, or an event of a stream, each in one
// Write. An event that answers the call comes after its notifications.
func (c *callStream) Write(b []byte) (int, error) {
	if isAnswerEvent(b) {
		c.answering()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wrap {
		return c.answer.Write(b)
	}
	return c.w.Write(b)
}

// Flush lets the stream's events through as they come.
func (c *callStream) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flush()
}

func (c *callStream) flush() {
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap serves http.ResponseController.
func (c *callStream) Unwrap() http.ResponseWriter { return c.w }

// isAnswerEvent reports whether b is an event of a stream that carries a
// JSON-RPC response (no method) rather than a notification or request.
func isAnswerEvent(b []byte) bool {
	_, data, ok := bytes.Cut(b, []byte("\ndata: "))
	if !ok {
		return false
	}
	var m struct {
		Method *string `json:"method"`
	}
	return json.Unmarshal(bytes.TrimSpace(data), &m) == nil && m.Method == nil
}

// callSession is a tool call's view of its session: the session, but with
// a notification channel of the call's own, which its callStream writes.
type callSession struct {
	server.SessionWithClientInfo
	stream *callStream
}

func (s callSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.stream.notes }

// callStreamKey is where serveMCP puts a call's callStream for
// withCallSession to find.
type callStreamKey struct{}

// withCallSession is the StreamableHTTPServer's HTTPContextFunc: for a
// tools/call of a session (serveMCP gave it a callStream), it puts the
// call's own session in ctx, where the tools find it to send their
// notifications.
func withCallSession(srv *server.MCPServer) server.HTTPContextFunc {
	return func(ctx context.Context, r *http.Request) context.Context {
		stream, _ := ctx.Value(callStreamKey{}).(*callStream)
		sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
		if stream == nil || !ok {
			return ctx
		}
		return srv.WithContext(ctx, callSession{SessionWithClientInfo: sess, stream: stream})
	}
}
