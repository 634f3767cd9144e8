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
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// JoinOptions configure Join.
type JoinOptions struct {
	// Log receives the bridge's logs; nil discards them.
	Log *slog.Logger
	// Token is the bearer secret sent with every request, if any.
	Token string
	// Agent is the agent name sent in AgentHeader: bridges that give the
	// same name are one agent, and the newest takes over its pages. ""
	// sends none.
	Agent string
	// MaxLine bounds a message line from stdin; 0: DefaultMaxLine.
	MaxLine int
}

// Join bridges a stdio MCP client to a pagemux serving Streamable HTTP at
// url: each line read from in is POSTed, and every message of the answer
// (a JSON body or an event stream) is written to out as a line. Requests go
// on at once, each on its own HTTP request, numbered (CallNumberHeader) so
// that the server runs one client's tool calls in the order read. It ends
// when in ends and every answer was written, or ctx ends. A server that
// does not answer at all is an error that says how to start one.
func Join(ctx context.Context, url string, in io.Reader, out io.Writer, opts JoinOptions) error {
	j := &joiner{url: url, opts: opts, out: out, log: opts.Log, client: &http.Client{}}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	if err := j.probe(ctx); err != nil {
		return err
	}
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := bufio.NewReaderSize(in, 64<<10)
	var wg sync.WaitGroup
	for {
		line, err := readLine(r, maxLine, func() { j.writeError(nil, tooLongMessage(maxLine)) })
		if line = bytes.TrimSpace(line); len(line) > 0 {
			j.send(reqCtx, &wg, line)
		}
		if err != nil {
			break
		}
	}
	// End of input: the answers in flight get DefaultGrace, as over stdio.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(DefaultGrace):
		j.log.Warn("stdin closed with calls in flight; cancelling them")
		cancel()
		<-done
	case <-ctx.Done():
		cancel()
		<-done
	}
	j.endSession()
	return ctx.Err()
}

// endSession ends the bridge's MCP session on the server, so that its
// agent leaves now (its pages close) rather than after --agent-idle.
func (j *joiner) endSession() {
	j.mu.Lock()
	session := j.session
	j.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, j.url, nil)
	if err != nil {
		return
	}
	j.setHeaders(req)
	resp, err := j.client.Do(req)
	if err != nil {
		j.log.Warn("could not end the session on the server; its pages close after its idle time", "error", err)
		return
	}
	resp.Body.Close()
}

// joiner is one bridge.
type joiner struct {
	url    string
	opts   JoinOptions
	log    *slog.Logger
	client *http.Client
	calls  atomic.Uint64

	mu       sync.Mutex
	session  string // Mcp-Session-Id, once initialize answered
	protocol string // the protocol version initialize agreed on, or the last request's _meta named
	sessOK   chan struct{}
	// stateless are the requests in flight that named a stateless revision
	// (2026-07-28 and later) in their _meta, by id: over HTTP such a call
	// is cancelled by closing its request, not by a notification.
	stateless map[string]context.CancelFunc

	wmu sync.Mutex
	out io.Writer
}

// probe fails at once, with what to do, when nothing listens at the url.
func (j *joiner) probe(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, j.url, nil)
	if err != nil {
		return fmt.Errorf("--join %q: %w", j.url, err)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return fmt.Errorf("--join %s: nothing answers there (%v); start a shared pagemux first, for example: pagemux --http 127.0.0.1:8931 --lock-mode=page", j.url, op.Err)
		}
		return fmt.Errorf("--join %s: %w", j.url, err)
	}
	resp.Body.Close()
	return nil
}

// envelope is what the bridge reads of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// send POSTs one message; its answer is written when it comes.
func (j *joiner) send(ctx context.Context, wg *sync.WaitGroup, msg []byte) {
	var env envelope
	_ = json.Unmarshal(msg, &env)
	if j.cancelStateless(env) {
		return
	}
	isInit := env.Method == string(mcp.MethodInitialize)
	call := uint64(0)
	if env.Method == string(mcp.MethodToolsCall) {
		call = j.calls.Add(1)
	}
	version := metaVersion(env.Params)
	j.mu.Lock()
	if isInit {
		j.sessOK = make(chan struct{})
	}
	wait := j.sessOK
	if version != "" {
		j.protocol = version
	} else {
		version = j.protocol
	}
	postCtx, done := ctx, func() {}
	if key := idKey(env.ID); key != "" && mcp.IsModernProtocol(version) {
		var cancel context.CancelFunc
		postCtx, cancel = context.WithCancel(ctx)
		if j.stateless == nil {
			j.stateless = map[string]context.CancelFunc{}
		}
		j.stateless[key] = cancel
		done = func() {
			j.mu.Lock()
			delete(j.stateless, key)
			j.mu.Unlock()
			cancel()
		}
	}
	j.mu.Unlock()
	do := func() {
		defer done()
		if !isInit && wait != nil {
			select { // requests after initialize need its session id
			case <-wait:
			case <-ctx.Done():
				return
			}
		}
		j.post(postCtx, msg, env, version, call, isInit)
	}
	if isInit {
		do() // the session must exist before anything else is sent
		return
	}
	wg.Go(do)
}

// cancelStateless ends the request of a stateless revision that a
// notifications/cancelled names, and reports whether it did: over HTTP the
// revision cancels a call by closing its stream (its POST here), and
// expects no notification (the client sends one over stdio, as it must
// there). Any other notification goes on as it is.
func (j *joiner) cancelStateless(env envelope) bool {
	if env.Method != string(mcp.MethodNotificationCancelled) {
		return false
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	_ = json.Unmarshal(env.Params, &p)
	j.mu.Lock()
	cancel, ok := j.stateless[idKey(p.RequestID)]
	j.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// idKey is a request id as the bridge keys it, "" for none.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if len(id) == 0 || json.Compact(&b, id) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}

// metaVersion is the protocol version a message's params name in their
// _meta, as a request of a stateless revision does; "" if none.
func metaVersion(params json.RawMessage) string {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// post sends msg, of protocol version, and writes what comes back.
func (j *joiner) post(ctx context.Context, msg []byte, env envelope, version string, call uint64, isInit bool) {
	id := env.ID
	defer func() {
		if isInit {
			j.mu.Lock()
			close(j.sessOK)
			j.mu.Unlock()
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.url, bytes.NewReader(msg))
	if err != nil {
		j.writeError(id, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	j.setHeaders(req)
	if version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, version)
	}
	// A stateless revision asks the method and the name a request acts on
	// in headers too (Mcp-Method, Mcp-Name).
	for k, v := range mcp.StandardHeaders(version, mcp.MCPMethod(env.Method), env.Params) {
		req.Header.Set(k, v)
	}
	if call > 0 {
		req.Header.Set(CallNumberHeader, strconv.FormatUint(call, 10))
	}
	resp, err := j.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			j.writeError(id, fmt.Sprintf("the shared pagemux at %s did not answer: %v", j.url, err))
		}
		return
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get(server.HeaderKeySessionID); sid != "" {
		j.mu.Lock()
		j.session = sid
		j.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return // a notification or a response: nothing comes back
	case resp.StatusCode == http.StatusUnauthorized:
		j.writeError(id, "the shared pagemux refused the token (401): give --auth-token with a secret it knows")
		return
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		j.relayEvents(resp.Body, isInit)
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if len(bytes.TrimSpace(body)) == 0 {
			if resp.StatusCode >= 300 && len(id) > 0 {
				j.writeError(id, fmt.Sprintf("the shared pagemux answered %s", resp.Status))
			}
			return
		}
		j.relay(body, isInit)
	}
}

// relayEvents writes the data of each server-sent event as a line.
func (j *joiner) relayEvents(body io.Reader, isInit bool) {
	r := bufio.NewReaderSize(body, 64<<10)
	var data bytes.Buffer
	for {
		line, err := r.ReadBytes('\n')
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(trimmed) == 0:
			if data.Len() > 0 {
				j.relay(data.Bytes(), isInit)
				data.Reset()
			}
		case bytes.HasPrefix(trimmed, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(trimmed, []byte("data:")), []byte(" ")))
		}
		if err != nil {
			if data.Len() > 0 {
				j.relay(data.Bytes(), isInit)
			}
			return
		}
	}
}

// relay writes one message, noting the protocol version initialize chose.
func (j *joiner) relay(msg []byte, isInit bool) {
	if isInit {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
			j.mu.Lock()
			j.protocol = r.Result.ProtocolVersion
			j.mu.Unlock()
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, msg) != nil {
		j.log.Warn("the shared pagemux sent something that is not JSON; dropped", "message", truncate(string(msg), maxEcho))
		return
	}
	j.write(compact.Bytes())
}

func (j *joiner) writeError(id json.RawMessage, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": mcp.INTERNAL_ERROR, "message": msg}})
	j.write(b)
}

func (j *joiner) write(b []byte) {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if _, err := j.out.Write(append(b, '\n')); err != nil {
		j.log.Info("stdout closed", "error", err)
	}
}

// setHeaders gives req the bridge's token, agent name, session and the
// protocol version initialize agreed on (post sets each message's own).
func (j *joiner) setHeaders(req *http.Request) {
	if j.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+j.opts.Token)
	}
	if j.opts.Agent != "" {
		req.Header.Set(AgentHeader, j.opts.Agent)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.session != "" {
		req.Header.Set(server.HeaderKeySessionID, j.session)
	}
	if j.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", j.protocol)
	}
}
