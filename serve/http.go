package serve

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/pagelock"
	"golang.org/x/net/netutil"
)

// CallNumberHeader numbers a client's tools/call requests from 1, for a
// client whose requests may reach the server out of order: they take their
// places in the lock queues in number order (see pagelock.Line.TakeNumbered).
const CallNumberHeader = "Pagemux-Call"

// DefaultMaxBody bounds an HTTP request body unless HTTPOptions says otherwise.
const DefaultMaxBody = 4 << 20

// The bounds of one client's connection unless HTTPOptions says otherwise,
// so that no client, authenticated or not, holds the server's connections
// or a request by sending slowly or nothing at all. None bounds how long an
// answer takes: a tool call may run for minutes, and a GET stream for as
// long as its session.
const (
	// DefaultHeaderTimeout bounds the reading of a request's headers.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds the reading of a request's body, from the
	// end of its headers.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection that waited this
	// long for its next request.
	DefaultIdleTimeout = time.Minute
	// DefaultMaxConns bounds the connections open at once; past it a new
	// connection waits to be accepted until one closes.
	DefaultMaxConns = 512
)

// HTTPOptions configure the Streamable HTTP transport.
type HTTPOptions struct {
	// Log receives the transport's logs; nil discards them.
	Log *slog.Logger
	// Tokens are the bearer tokens that may call, by name. Empty: no
	// authentication, which ListenHTTP allows on loopback only.
	Tokens map[string]string
	// AllowedOrigins are the Origin values a browser-borne request may carry
	// besides none at all, such as "http://localhost:6274".
	AllowedOrigins []string
	// MaxBody bounds a request body in bytes; 0: DefaultMaxBody.
	MaxBody int64
	// Health reports whether the browser is up, for /healthz.
	Health func() (up bool, detail string)
	// Metrics, if set, is served at /metrics, behind the same tokens.
	Metrics http.Handler
	// Locks, if set, is served as JSON at /locks, behind the same tokens:
	// it is given a context with the caller's agents.Agent (Admin set for
	// an admin token), to show each agent what it may see.
	Locks func(ctx context.Context) any
	// AdminTokens are the names of tokens (of Tokens) whose agents see every
	// agent's locks by name (/locks, pagemux://locks). They give no rights
	// over other agents' pages.
	AdminTokens []string
	// IdleTTL ends a session that sent nothing for this long (its agent
	// leaves); 0: sessions end only by DELETE.
	IdleTTL time.Duration

	// HeaderTimeout, BodyTimeout and IdleTimeout bound the reading of a
	// request's headers, of its body, and the wait of a keep-alive
	// connection for its next request; 0: DefaultHeaderTimeout,
	// DefaultBodyTimeout, DefaultIdleTimeout. A request whose body is not
	// in within BodyTimeout is answered 408 and its connection closed.
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// MaxConns bounds the connections ServeHTTP keeps open at once;
	// 0: DefaultMaxConns.
	MaxConns int
	// SeesTask reports whether the agent of ctx (agents.From), on session,
	// may see the MCP task taskID: the streams of a session carry only the
	// status notifications of such tasks (tasknotes.go). nil: all of them.
	SeesTask func(ctx context.Context, session, taskID string) bool
	// UI, if set, is the live view (package ui), served at /ui to admin
	// tokens (AdminTokens) alone: no token 401, another token 403. Without
	// Tokens (loopback) it is everyone's. A browser logs in at /ui with a
	// form that keeps the secret in a cookie for /ui (uiauth).
	UI http.Handler
}

// AgentHeader names one of several agents that share a token (or, without
// tokens, an agent by name alone): sessions that give the same name are
// generations of one agent, and the newest takes over its pages.
const AgentHeader = "Pagemux-Agent"

// agentName reads AgentHeader.
func agentName(r *http.Request) (string, error) {
	name := r.Header.Get(AgentHeader)
	if err := CheckAgentName(name); err != nil {
		return "", fmt.Errorf("header %s: %w", AgentHeader, err)
	}
	return name, nil
}

// CheckAgentName fails for an agent name other than up to 64 ASCII
// letters, digits, '.', '_' or '-'.
func CheckAgentName(name string) error {
	if len(name) > 64 || strings.TrimFunc(name, func(c rune) bool {
		return c == '.' || c == '_' || c == '-' || c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c))
	}) != "" {
		return fmt.Errorf("agent name %.80q: want up to 64 letters, digits, '.', '_' or '-', such as lead", name)
	}
	return nil
}

// httpHandler is /mcp and /healthz.
type httpHandler struct {
	opts    HTTPOptions
	log     *slog.Logger
	mcp     *server.StreamableHTTPServer
	maxBody int64

	ids         idSwaps
	sessions    sessionTable // httpsession.go
	bodyTimeout time.Duration

	mu    sync.Mutex
	lines map[string]*pagelock.Line // by session, else agents.Agent.ID
}

// NewHTTP returns the Streamable HTTP handler of srv: MCP at /mcp, both
// protocol generations mcp-go serves (session-based, with Mcp-Session-Id, and
// the stateless 2026-07-28 revision), and /healthz without authentication.
// Every tools/call of an agent takes its ticket in that agent's line when its
// request arrives, so one agent's calls on a page run in arrival order.
func NewHTTP(srv *server.MCPServer, opts HTTPOptions) http.Handler {
	h := &httpHandler{opts: opts, log: opts.Log, maxBody: opts.MaxBody, lines: map[string]*pagelock.Line{},
		bodyTimeout: cmp.Or(opts.BodyTimeout, DefaultBodyTimeout)}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBody
	}
	hopts := []server.StreamableHTTPOption{
		server.WithEndpointPath("/mcp"),
		server.WithStreamableHTTPLogger(h.log),
		server.WithSessionIdManagerResolver(&h.sessions),
		server.WithHTTPContextFunc(withCallSession(srv)), // callstream.go
	}
	if opts.IdleTTL > 0 {
		hopts = append(hopts, server.WithSessionIdleTTL(opts.IdleTTL))
	}
	h.mcp = server.NewStreamableHTTPServer(srv, hopts...)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", h.healthz)
	mux.HandleFunc("/mcp", h.serveMCP)
	if opts.Metrics != nil {
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
			if _, ok := h.authenticate(w, r); ok {
				opts.Metrics.ServeHTTP(w, r)
			}
		})
	}
	if opts.Locks != nil {
		mux.HandleFunc("/locks", func(w http.ResponseWriter, r *http.Request) {
			token, ok := h.authenticate(w, r)
			if !ok {
				return
			}
			name, err := agentName(r)
			if err != nil {
				httpError(w, http.StatusBadRequest, err.Error())
				return
			}
			ctx := agents.With(r.Context(), h.agent(token, name, ""))
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(opts.Locks(ctx))
		})
	}
	if opts.UI != nil {
		mux.HandleFunc("/ui", h.serveUI)
		mux.HandleFunc("/ui/", h.serveUI)
	}
	return mux
}

// healthz says whether pagemux and its browser are up.
func (h *httpHandler) healthz(w http.ResponseWriter, r *http.Request) {
	up, detail := true, "no browser check"
	if h.opts.Health != nil {
		up, detail = h.opts.Health()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "chrome": up, "detail": detail})
}

// serveMCP checks the request, takes its ticket, and hands it to mcp-go.
func (h *httpHandler) serveMCP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(h.opts.AllowedOrigins, origin) {
		closeUnread(w, r)
		httpError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed; start pagemux with --allowed-origin %s to allow it", origin, origin))
		return
	}
	session := r.Header.Get(server.HeaderKeySessionID)
	// Every method needs the token, DELETE too: a session ends only by its
	// own token, so no one else can close an agent's pages. (mcp-go's
	// client sends its DELETE without the headers it was given: give it an
	// http.Client that adds the token, or its session ends at --agent-idle.)
	token, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	// A session is its token's: to any other it does not exist.
	if session != "" && !h.sessions.owns(session, token) {
		httpError(w, http.StatusNotFound, "unknown session: no session of yours has this Mcp-Session-Id (it ended, or it never was); start a new one with initialize")
		return
	}
	name, err := agentName(r)
	if err != nil {
		closeUnread(w, r)
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	agent := h.agent(token, name, session)
	ctx := agents.With(r.Context(), agent)
	if r.Method == http.MethodDelete && session != "" {
		defer h.forget(agent)
	}
	w = h.filterTaskNotes(ctx, w, session) // tasknotes.go
	if r.Method != http.MethodPost {
		h.mcp.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	// A client that may send its calls over several connections at once, as
	// --join does, numbers them so that they keep its order. A numbered
	// request takes its place whatever becomes of it, so that no later
	// number waits for it.
	var ticket *pagelock.Ticket
	if n, _ := strconv.ParseUint(r.Header.Get(CallNumberHeader), 10, 64); n > 0 {
		ticket = h.line(agent).TakeNumbered(n)
		defer ticket.Admit() // a call that never reached its Guard
	}
	body, err := readBody(w, r, h.maxBody, h.bodyTimeout)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %v; send it whole, at once", h.bodyTimeout))
			return
		}
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the %d MiB limit; save big inputs to a file and pass its path", h.maxBody>>20))
			return
		}
		httpError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		httpError(w, http.StatusBadRequest, "a JSON-RPC batch (an array of messages) is not MCP since revision 2025-06-18: send one message per request, at once if you like")
		return
	}
	var msg map[string]json.RawMessage // nil unless body is one JSON object
	_ = json.Unmarshal(body, &msg)
	if statelessNotification(r, msg) {
		h.log.Debug("stateless notification accepted", "method", strings.Trim(string(msg["method"]), `"`))
		w.WriteHeader(http.StatusAccepted)
		return
	}
	body, w, swapped := h.ids.swap(session, msg, body, w) // httpid.go
	defer swapped()
	if _, isRequest := msg["id"]; isRequest && isMethod(msg, mcp.MethodToolsCall) && !sessionTask(r, msg) {
		stream := newCallStream(w, h.log.Debug) // callstream.go
		defer stream.finish()
		ctx = context.WithValue(ctx, callStreamKey{}, stream)
		w = stream
	}
	if isMethod(msg, mcp.MethodToolsCall) {
		if ticket == nil {
			ticket = h.line(agent).TakeNumbered(0)
			defer ticket.Admit()
		}
		ctx = pagelock.WithTicket(ctx, ticket)
	}
	r = r.WithContext(ctx)
	r.Body = readCloser{bytes.NewReader(body)}
	h.mcp.ServeHTTP(w, r)
}

// statelessNotification reports whether msg is a notification of the
// stateless revision (2026-07-28 and later), by its MCP-Protocol-Version
// header or its _meta. pagemux accepts every such notification itself:
// mcp-go asks _meta of notifications as of requests, and refuses one
// without it (400), which ends the Go SDK's client, while the revision asks
// _meta of requests only. None has anything to act on, as there is no
// session: a call is cancelled by closing its own stream, as the revision
// says (the call's context ends with its connection), and handed on, a
// notifications/cancelled naming a bare request id would cancel whichever
// stateless client's call has that id, as mcp-go keys them all alike.
func statelessNotification(r *http.Request, msg map[string]json.RawMessage) bool {
	if _, isRequest := msg["id"]; isRequest || msg["method"] == nil {
		return false
	}
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return true
	}
	var params struct {
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(msg["params"], &params)
	v, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return mcp.IsModernProtocol(v)
}

// sessionTask reports whether msg is a task-augmented tools/call of a
// session (revision 2025-11-25). Such a call is answered at once with its
// task, and its work goes on after its POST stream ended: it gets no
// callStream, so that the progress of its work goes to its session's
// streams (the GET stream, or a POST the session has open), where the
// client can still hear it. The stateless revision has no tasks/result:
// there pagemux runs the call as a plain one, on its own stream.
func sessionTask(r *http.Request, msg map[string]json.RawMessage) bool {
	var params struct {
		Task json.RawMessage `json:"task"`
		Meta map[string]any  `json:"_meta"`
	}
	if json.Unmarshal(msg["params"], &params) != nil || len(params.Task) == 0 || string(params.Task) == "null" {
		return false
	}
	v, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return !mcp.IsModernProtocol(v) && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
}

// agent is the caller with a token name, an agent name and a session.
func (h *httpHandler) agent(token, name, session string) agents.Agent {
	return agents.Agent{ID: agents.Identity(token, name, session), Token: token, Session: session,
		Admin: token != "" && slices.Contains(h.opts.AdminTokens, token)}
}

// authenticate checks the bearer token, answering 401 when it is missing
// or wrong, and returns the token's name.
func (h *httpHandler) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	if len(h.opts.Tokens) == 0 {
		return "", true
	}
	// Every token is compared, so the time taken says nothing of which one
	// nearly matched.
	if name := h.tokenName(r); name != "" {
		return name, true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="pagemux"`)
	closeUnread(w, r)
	httpError(w, http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <secret of a --auth-token>")
	return "", false
}

// tokenName returns the name of the request's token, "" if it has none
// that is right.
func (h *httpHandler) tokenName(r *http.Request) string {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return h.tokenOf(got)
}

// tokenOf returns the name of the token whose secret is got, "" for none.
func (h *httpHandler) tokenOf(got string) string {
	if got == "" {
		return ""
	}
	name := ""
	for n, secret := range h.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1 {
			name = n
		}
	}
	return name
}

// line returns the arrival line of a's session, or of a stateless agent.
func (h *httpHandler) line(a agents.Agent) *pagelock.Line {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.lines[lineKey(a)]
	if !ok {
		l = new(pagelock.Line)
		h.lines[lineKey(a)] = l
	}
	return l
}

// lineKey is which line a's calls take their tickets in: its session's,
// else its identity's.
func lineKey(a agents.Agent) string {
	if a.Session != "" {
		return "session:" + a.Session
	}
	return a.ID
}

// forget drops the line of a session that ended.
func (h *httpHandler) forget(a agents.Agent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.lines, lineKey(a))
}

// readBody reads a body of at most max bytes, within timeout. The deadline
// is lifted once the body is in: net/http goes on reading the connection to
// see the client leave, and a deadline passing there would cancel a long
// tool call. After a failure it stays, so that net/http, which reads what
// is left of a body before it closes the connection, gives up at once.
func readBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) ([]byte, error) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	var b bytes.Buffer
	_, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	if deadline && err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return b.Bytes(), err
}

// closeUnread makes a request refused before its body was read close its
// connection after the answer, without reading the rest: net/http would
// otherwise read what is left of the body (before it sends the answer, for
// a body it can keep the connection after), so a client that sends its body
// slowly would hold the refusal back, or its connection open, until the
// body ends.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// httpError answers a request refused before MCP, as JSON-RPC would.
func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": mcp.INVALID_REQUEST, "message": msg}})
}

// ListenHTTP serves NewHTTP on addr until ctx ends, then shuts down within
// a second. It refuses a non-loopback address without tokens: anyone who can
// reach the port would drive the browser.
func ListenHTTP(ctx context.Context, addr string, srv *server.MCPServer, opts HTTPOptions) error {
	if err := CheckAddr(addr, len(opts.Tokens) > 0); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	return ServeHTTP(ctx, ln, srv, opts)
}

// ServeHTTP is ListenHTTP on a listener of the caller's, which it closes;
// it does not check the address. Connections are bounded by opts (see
// HTTPOptions.HeaderTimeout): no write timeout, so a long answer is never
// cut. On a loopback listener every request must name a loopback host
// (loopbackHostOnly).
func ServeHTTP(ctx context.Context, ln net.Listener, srv *server.MCPServer, opts HTTPOptions) error {
	hs := &http.Server{
		Handler: loopbackHostOnly(NewHTTP(srv, opts), ln.Addr(),
			", or serve on a non-loopback address with --auth-token"),
		ReadHeaderTimeout: cmp.Or(opts.HeaderTimeout, DefaultHeaderTimeout),
		IdleTimeout:       cmp.Or(opts.IdleTimeout, DefaultIdleTimeout),
	}
	ln = netutil.LimitListener(ln, cmp.Or(opts.MaxConns, DefaultMaxConns))
	if opts.Log != nil {
		opts.Log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "auth", len(opts.Tokens) > 0)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		hs.Close()
		return ctx.Err()
	}
}

// ListenMetrics serves h at /metrics on addr, loopback only, until ctx ends.
func ListenMetrics(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	if err := CheckAddr(addr, false); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return serveMetrics(ctx, ln, h, log)
}

// serveMetrics is ListenMetrics on a listener of the caller's, which it
// closes. Every request must name a loopback host (loopbackHostOnly).
func serveMetrics(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	if log != nil {
		log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	return serveLoopback(ctx, ln, mux, "--metrics-addr")
}

// serveLoopback serves mux on ln, to requests that name a loopback host
// (loopbackHostOnly; flag names the listener in the refusal), until ctx
// ends; it closes ln.
func serveLoopback(ctx context.Context, ln net.Listener, mux http.Handler, flag string) error {
	hs := &http.Server{Handler: loopbackHostOnly(mux, ln.Addr(), " ("+flag+" serves loopback only)"), ReadHeaderTimeout: DefaultHeaderTimeout}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return ctx.Err()
}

// CheckAddr refuses an address ListenHTTP would refuse: one beyond
// loopback without authentication, or one that is not host:port.
func CheckAddr(addr string, authenticated bool) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT, such as 127.0.0.1:8931", addr)
	}
	if !authenticated && !loopback(addr) {
		return fmt.Errorf("--http %s listens beyond this machine without authentication: anyone who reaches it drives the browser; bind 127.0.0.1 (--http 127.0.0.1:8931), or give --auth-token NAME=SECRET", addr)
	}
	return nil
}

// loopback reports whether addr (host:port) binds loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// loopbackHostOnly guards next, served on a listener at addr, against DNS
// rebinding: a web page at evil.example whose name its owner then points at
// 127.0.0.1 reaches a loopback listener from the user's browser as its own
// origin, so no Origin header gives it away (a same-origin GET carries
// none). Its requests still name evil.example in Host, which is what is
// checked. When addr is loopback, a request whose Host is not a loopback
// name (loopbackHost) is refused with 403 and what to do; beyond loopback
// next is served as it is, its tokens being the guard there. hint ends the
// refusal's advice, after "connect to ADDR".
//
// 403 rather than 421 Misdirected Request: the request is refused, as a
// disallowed Origin is (403 too), not sent to the wrong server of several
// sharing a connection, which is what 421 tells a client, and a client may
// retry a 421 on another connection, where it would be refused again.
func loopbackHostOnly(next http.Handler, addr net.Addr, hint string) http.Handler {
	if !loopback(addr.String()) {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			closeUnread(w, r)
			httpError(w, http.StatusForbidden, fmt.Sprintf("pagemux: Host %.80q is not a loopback name, and this listener is loopback only (a web page could reach it by DNS rebinding); connect to %s%s", r.Host, addr, hint))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether host, a request's Host (with or without a
// port), names loopback: localhost (a trailing dot too), an address of
// 127.0.0.0/8 or ::1 (in brackets, with a port), in any case. An empty Host
// (HTTP/1.0 without one; browsers always send it) names no one else's
// site, so it passes.
func loopbackHost(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
