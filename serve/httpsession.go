package serve

import (
	"crypto/rand"
	"errors"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
)

// An MCP session over HTTP (revision 2025-06-18 and before) is bound to the
// bearer token that opened it: a request that names the session with
// another token, or none on a server with tokens, is told the session is
// unknown (404), as if it never existed, so that a session id that leaked
// (a log, a shared proxy) gives no one else the agent's pages. mcp-go's own
// session managers either check only the id's shape or know nothing of
// tokens; sessionTable is pagemux's.

// sessionTable is the live sessions of one handler and the token name each
// was opened with ("" on a server without tokens). It is the
// server.SessionIdManagerResolver of its StreamableHTTPServer. It is safe
// for concurrent use.
type sessionTable struct {
	mu    sync.Mutex
	token map[string]string // session id → token name
}

// errUnknownSession is what mcp-go answers 404 for.
var errUnknownSession = errors.New("unknown session")

// owns reports whether session is live and was opened with token.
func (t *sessionTable) owns(session, token string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	got, ok := t.token[session]
	return ok && got == token
}

// ResolveSessionIdManager returns the sessions as the caller of r, whose
// agent (token) serveMCP put in its context, may use them. r is nil for
// mcp-go's idle sweeper, which may end any session.
func (t *sessionTable) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return sessionView{t: t, any: true}
	}
	a, _ := agents.From(r.Context())
	// Only an initialize (a POST) opens a session: a GET without one gets
	// an id of its own from mcp-go for its one stream, which nothing can name.
	return sessionView{t: t, token: a.Token, opens: r.Method == http.MethodPost}
}

// sessionView is sessionTable as one request (or the sweeper) sees it.
type sessionView struct {
	t     *sessionTable
	token string
	opens bool // Generate records the session
	any   bool // the sweeper: may end any session
}

// Generate makes an id of 128 random bits and binds it to the caller's token.
func (v sessionView) Generate() string {
	id := "mcp-session-" + rand.Text()
	if v.opens {
		v.t.mu.Lock()
		if v.t.token == nil {
			v.t.token = map[string]string{}
		}
		v.t.token[id] = v.token
		v.t.mu.Unlock()
	}
	return id
}

// Validate fails for a session that is not live or is another token's.
func (v sessionView) Validate(id string) (isTerminated bool, err error) {
	if !v.t.owns(id, v.token) {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate forgets a session of the caller's token (serveMCP refused any
// other before), or, for the sweeper, any.
func (v sessionView) Terminate(id string) (isNotAllowed bool, err error) {
	v.t.mu.Lock()
	defer v.t.mu.Unlock()
	if got, ok := v.t.token[id]; ok && (v.any || got == v.token) {
		delete(v.t.token, id)
		return false, nil
	}
	if v.any {
		return false, nil
	}
	return false, errUnknownSession
}
