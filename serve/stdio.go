// Package serve carries MCP messages between clients and one MCP server. It
// owns the wire: reading and bounding requests, keeping JSON-RPC ids exactly
// as the client sent them, the order in which calls take their locks, and
// how the server stops when the client goes. It knows nothing of Chrome.
package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/pagelock"
)

// Error is the type of the sentinel errors of this package.
type Error string

func (e Error) Error() string { return string(e) }

const (
	// ErrClientGone is returned when a write to the client failed: it closed
	// its end, so nothing more can be answered.
	ErrClientGone Error = "the client closed its end of the connection"
	// errInputClosed is the cause of the calls cancelled after the grace
	// that follows the end of input.
	errInputClosed Error = "the client closed stdin and the grace for calls in flight passed"
)

// Defaults of StdioOptions.
const (
	DefaultMaxLine = 16 << 20
	DefaultGrace   = 2 * time.Second
	// answerWait bounds how long cancelled calls get to write their answers
	// once the server stops.
	answerWait = time.Second
	// maxEcho bounds how much of a bad message an error quotes.
	maxEcho = 200
)

// StdioOptions configure ServeStdio. The zero value is the defaults.
type StdioOptions struct {
	// Log receives the transport's logs; nil discards them.
	Log *slog.Logger
	// MaxLine is the longest message line read, in bytes; a longer one is
	// refused with an error and skipped without being held. 0: DefaultMaxLine.
	MaxLine int
	// Grace is how long the calls read before stdin ended may go on before
	// they are cancelled. 0: DefaultGrace.
	Grace time.Duration
}

// ServeStdio speaks MCP on in and out, one JSON-RPC message a line, until in
// ends, ctx ends, or a write to out fails (ErrClientGone).
//
// Unlike mcp-go's stdio server it keeps every request id byte for byte as
// sent (a big integer, 1e400, or the string "7" beside the number 7), and
// gives each tools/call a pagelock.Ticket in the order the requests were read,
// so that calls take their places in the lock queues in that order whatever
// goroutine serves them. When in ends, the calls already read get Grace to
// finish, then are cancelled and answered. It never closes in or out.
func ServeStdio(ctx context.Context, srv *server.MCPServer, in io.Reader, out io.Writer, opts StdioOptions) error {
	c := newConn(ctx, srv, out, opts)
	defer c.stop()
	if err := srv.RegisterSession(ctx, c.session); err != nil {
		return fmt.Errorf("register the stdio session: %w", err)
	}
	defer srv.UnregisterSession(ctx, c.session.SessionID())
	go c.notify()

	eof := make(chan error, 1)
	go func() { eof <- c.read(in) }()
	select {
	case <-ctx.Done():
		c.cancelAll(context.Cause(ctx))
		c.waitIdle(answerWait)
		return ctx.Err()
	case <-c.gone:
		c.cancelAll(ErrClientGone)
		return ErrClientGone
	case err := <-eof:
		if err != nil {
			c.log.Warn("reading stdin", "error", err)
		}
		if !c.waitIdle(c.grace) {
			c.log.Warn("stdin closed with calls in flight; cancelling them", "grace", c.grace, "calls", c.inflightCount())
			c.cancelAll(errInputClosed)
			c.waitIdle(answerWait)
		}
		return nil
	}
}

// conn is one stdio connection: what is in flight and how to answer.
type conn struct {
	srv     *server.MCPServer
	log     *slog.Logger
	session *session
	maxLine int
	grace   time.Duration
	ctx     context.Context // the session's context for every request
	cancel  context.CancelCauseFunc
	line    pagelock.Line

	wmu  sync.Mutex
	out  io.Writer
	gone chan struct{} // closed when a write failed
	dead bool

	mu       sync.Mutex
	seq      int64
	inflight map[int64]*request
	idle     chan struct{} // closed when inflight becomes empty; nil while it is
}

// request is one request being served.
type request struct {
	id     json.RawMessage // as the client wrote it
	cancel context.CancelCauseFunc
	// byClient says the client cancelled it: MCP says such a request gets
	// no answer. Guarded by conn.mu.
	byClient bool
}

func newConn(ctx context.Context, srv *server.MCPServer, out io.Writer, opts StdioOptions) *conn {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &conn{
		srv:      srv,
		log:      log,
		session:  newSession(),
		maxLine:  opts.MaxLine,
		grace:    opts.Grace,
		out:      out,
		gone:     make(chan struct{}),
		inflight: make(map[int64]*request),
	}
	if c.maxLine <= 0 {
		c.maxLine = DefaultMaxLine
	}
	if c.grace <= 0 {
		c.grace = DefaultGrace
	}
	c.session.asks.write = c.write
	c.ctx, c.cancel = context.WithCancelCause(srv.WithContext(context.WithoutCancel(ctx), c.session))
	return c
}

// stop ends the session's context, and with it the notification writer.
func (c *conn) stop() { c.cancel(context.Canceled) }

// read reads messages until in ends and dispatches each. Requests are served
// on goroutines of their own; read itself never waits for a call.
func (c *conn) read(in io.Reader) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r, c.maxLine, func() { c.writeError(nil, mcp.INVALID_REQUEST, tooLongMessage(c.maxLine)) })
		if len(bytes.TrimSpace(line)) > 0 {
			c.dispatch(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine returns the next line, without its newline, of at most max
// bytes. Past max it calls tooLong at once, stops keeping the line and reads
// on to its end, holding nothing, and returns no line.
func readLine(r *bufio.Reader, max int, tooLong func()) (line []byte, err error) {
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > max+1 { // +1: the newline
				over, line = true, nil
				tooLong()
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// tooLongMessage is the error for a line past max bytes.
func tooLongMessage(max int) string {
	return fmt.Sprintf("message line longer than the %d MiB limit; skipping it unread: save big inputs to a file and pass its path", max>>20)
}

// dispatch handles one message line.
func (c *conn) dispatch(line []byte) {
	line = bytes.TrimSpace(line)
	if line[0] == '[' {
		c.writeError(nil, mcp.INVALID_REQUEST, "JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send one message a line")
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.writeError(nil, mcp.PARSE_ERROR, "parse error: not a JSON object: "+echo(line))
		return
	}
	id, hasID := m["id"]
	if hasID && string(id) == "null" {
		hasID = false
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case hasID && !validID(id):
		c.writeError(nil, mcp.INVALID_REQUEST, "invalid request: the id must be a string or a number, got "+echo(id))
	case hasMethod && (hasResult || hasError):
		var reply json.RawMessage
		if hasID {
			reply = id
		}
		c.writeError(reply, mcp.INVALID_REQUEST, "invalid request: a message has either a method or a result/error, not both")
	case hasMethod && hasID:
		c.serve(m, id)
	case hasMethod:
		c.notification(m, line)
	case hasID && (hasResult || hasError) && c.session.asks.answered(id, m):
	case hasID && (hasResult || hasError):
		c.log.Debug("ignoring a response to a request the server did not send", "id", echo(id))
	default:
		var reply json.RawMessage
		if hasID {
			reply = id
		}
		c.writeError(reply, mcp.INVALID_REQUEST, "invalid request: no method: "+echo(line))
	}
}

// isMethod reports whether msg, a decoded JSON-RPC message, calls method.
func isMethod(msg map[string]json.RawMessage, method mcp.MCPMethod) bool {
	return string(msg["method"]) == `"`+string(method)+`"`
}

// validID reports whether id is a JSON string or number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch b := id[0]; {
	case b == '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case b == '-' || b >= '0' && b <= '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

// serve starts a request on a goroutine of its own under an id of the
// server's, so that mcp-go never reads the client's id, and answers it with
// the client's id. A tools/call takes its ticket here, in reading order.
func (c *conn) serve(m map[string]json.RawMessage, id json.RawMessage) {
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.mu.Lock()
	c.seq++
	seq := c.seq
	c.inflight[seq] = &request{id: id, cancel: cancel}
	c.mu.Unlock()

	var ticket *pagelock.Ticket
	if isMethod(m, mcp.MethodToolsCall) {
		ticket = c.line.Take()
		ctx = pagelock.WithTicket(ctx, ticket)
	}
	m["id"] = json.RawMessage(fmt.Sprint(seq))
	msg, err := json.Marshal(m)
	go func() {
		defer c.done(seq)
		defer ticket.Admit() // a call that never reached its Guard
		defer cancel(context.Canceled)
		if err != nil {
			c.writeError(id, mcp.INVALID_REQUEST, "invalid request: "+err.Error())
			return
		}
		resp := c.handle(ctx, msg)
		if c.cancelledByClient(seq) {
			c.log.Debug("not answering a request the client cancelled", "id", echo(id))
			return
		}
		c.answer(id, resp)
	}()
}

// handle runs the message through the MCP server; a panic becomes an error
// response rather than the end of the process.
func (c *conn) handle(ctx context.Context, msg []byte) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("MCP handler panicked", "panic", r)
			resp = mcp.NewJSONRPCError(mcp.NewRequestId(0), mcp.INTERNAL_ERROR, fmt.Sprintf("internal error: %v", r), nil)
		}
	}()
	return c.srv.HandleMessage(ctx, msg)
}

// done forgets a finished request.
func (c *conn) done(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, seq)
	if len(c.inflight) == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// notification handles a message without an id. Cancellations are matched
// here against the client's own ids; the rest go to the server.
func (c *conn) notification(m map[string]json.RawMessage, line []byte) {
	if isMethod(m, mcp.MethodNotificationCancelled) {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		_ = json.Unmarshal(m["params"], &p)
		c.cancelRequest(p.RequestID, p.Reason)
		return
	}
	if resp := c.handle(c.ctx, line); resp != nil {
		c.writeMessage(resp)
	}
}

// cancelRequest cancels the requests in flight whose id is exactly id; they
// will not be answered.
func (c *conn) cancelRequest(id json.RawMessage, reason string) {
	if len(id) == 0 {
		return
	}
	cause := errors.New("cancelled by the client")
	if reason != "" {
		cause = fmt.Errorf("cancelled by the client: %s", truncate(reason, maxEcho))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.inflight {
		if sameID(r.id, id) {
			r.byClient = true
			r.cancel(cause)
		}
	}
}

// cancelledByClient reports whether the client cancelled request seq.
func (c *conn) cancelledByClient(seq int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.inflight[seq]
	return ok && r.byClient
}

// sameID reports whether two ids are the same JSON value: the string "7" is
// not the number 7, and 9007199254740993 is not 9007199254740992.
func sameID(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// cancelAll cancels every request in flight with cause.
func (c *conn) cancelAll(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.inflight {
		r.cancel(cause)
	}
}

// inflightCount is how many requests are being served.
func (c *conn) inflightCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight)
}

// waitIdle waits up to d for every request to be answered, and reports
// whether they were.
func (c *conn) waitIdle(d time.Duration) bool {
	c.mu.Lock()
	if len(c.inflight) == 0 {
		c.mu.Unlock()
		return true
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	case <-c.gone:
		return false
	}
}

// notify writes the server's notifications until the session ends.
func (c *conn) notify() {
	for {
		select {
		case n := <-c.session.notifications:
			c.writeMessage(n)
		case <-c.ctx.Done():
			return
		}
	}
}

// answer writes resp under the client's id.
func (c *conn) answer(id json.RawMessage, resp mcp.JSONRPCMessage) {
	if resp == nil {
		c.writeError(id, mcp.INTERNAL_ERROR, "internal error: the server gave no answer")
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		c.writeError(id, mcp.INTERNAL_ERROR, "internal error: the answer does not encode as JSON: "+err.Error())
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		c.writeError(id, mcp.INTERNAL_ERROR, "internal error: "+err.Error())
		return
	}
	m["id"] = id
	if e, ok := m["error"]; ok {
		m["error"] = boundError(e)
	}
	b, err = json.Marshal(m)
	if err != nil {
		c.writeError(id, mcp.INTERNAL_ERROR, "internal error: "+err.Error())
		return
	}
	c.write(b)
}

// boundError cuts the message of a JSON-RPC error object to maxEcho*5 bytes
// and drops data that would echo a big input back.
func boundError(e json.RawMessage) json.RawMessage {
	var obj struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if json.Unmarshal(e, &obj) != nil {
		return e
	}
	obj.Message = truncate(obj.Message, maxEcho*5)
	if len(obj.Data) > maxEcho*5 {
		obj.Data = nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return e
	}
	return b
}

// writeError writes a JSON-RPC error; id nil writes "id": null.
func (c *conn) writeError(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{mcp.JSONRPC_VERSION, id, map[string]any{"code": code, "message": msg}})
	c.write(b)
}

// writeMessage writes a message that carries no client id.
func (c *conn) writeMessage(m any) {
	b, err := json.Marshal(m)
	if err != nil {
		c.log.Error("encoding a message", "error", err)
		return
	}
	c.write(b)
}

// write writes one line. The first failed write marks the client gone and
// later writes are dropped.
func (c *conn) write(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dead {
		return
	}
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		c.dead = true
		c.log.Info("the client is gone: writing to stdout failed", "error", err)
		close(c.gone)
	}
}

// echo is a short quote of bad input for an error message.
func echo(b []byte) string { return truncate(string(b), maxEcho) }

// truncate cuts s to at most n bytes, saying how much was cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}
