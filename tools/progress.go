package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Progress of long calls. A client that sends a progressToken in a
// tools/call's _meta hears, on the call's own stream, notifications/progress
// for it: what the tool says of its steps (Lighthouse's, a trace's), and,
// for any call still going after progressQuiet, what it is doing and for
// how long, every progressQuiet while nothing else was said: waiting for
// its locks, or running. A call that ends sooner sends nothing, so short
// calls cost nothing. A task's progress comes with its token as well, on
// the session's streams, as the call's own stream ended with the create
// result (serve/http.go). No progress follows a call's answer, nor its
// cancellation (for a task: tasks/cancel, its TTL).

// progressQuiet is how long a call may go without telling its progress.
const progressQuiet = time.Second

// progress is one call's reporter. A nil *progress does nothing, as for a
// call without a progressToken.
type progress struct {
	ctx   context.Context
	srv   *server.MCPServer
	token mcp.ProgressToken
	tool  string
	start time.Time
	stop  chan struct{}
	done  chan struct{}

	mu    sync.Mutex
	n     int       // notifications sent: the progress value, which must grow
	last  time.Time // when the last one was sent
	doing string    // what the heartbeat says the call does
	ended bool
}

// startProgress returns the reporter of a call, nil when the client asked
// for no progress. Call end before the call answers.
func (s *Server) startProgress(ctx context.Context, req mcp.CallToolRequest) *progress {
	meta, srv := req.Params.Meta, server.ServerFromContext(ctx)
	if meta == nil || meta.ProgressToken == nil || srv == nil {
		return nil
	}
	now := time.Now()
	p := &progress{ctx: ctx, srv: srv, token: meta.ProgressToken, tool: req.Params.Name, start: now, last: now,
		doing: "starting", stop: make(chan struct{}), done: make(chan struct{})}
	go p.heartbeat()
	return p
}

// heartbeat tells what the call does whenever it went progressQuiet
// without a word.
func (p *progress) heartbeat() {
	defer close(p.done)
	t := time.NewTimer(progressQuiet)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		quiet := time.Since(p.last)
		msg := fmt.Sprintf("%s: %s (%s)", p.tool, p.doing, time.Since(p.start).Round(time.Second))
		p.mu.Unlock()
		if quiet >= progressQuiet {
			p.send(msg)
			quiet = 0
		}
		t.Reset(progressQuiet - quiet)
	}
}

// say sends msg as the next step of the call.
func (p *progress) say(msg string) {
	if p != nil {
		p.send(msg)
	}
}

// phase sets what the heartbeat says the call does.
func (p *progress) phase(doing string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doing = doing
}

func (p *progress) send(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock() // held while sending, so values reach the client in order
	// A call cancelled, or a task cancelled or past its TTL (terminal, as
	// its client sees it), is told no more, though its work may take a
	// moment to stop.
	if p.ended || p.ctx.Err() != nil {
		return
	}
	p.n++
	p.last = time.Now()
	// A client that went away cannot be told; the call goes on until its
	// cancellation reaches it.
	_ = p.srv.SendNotificationToClient(p.ctx, "notifications/progress", map[string]any{
		"progressToken": p.token, "progress": p.n, "message": msg,
	})
}

// end stops the reporter and waits for its heartbeat: nothing is sent
// after it returns.
func (p *progress) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	close(p.stop)
	<-p.done
}

// progressKey is the context key of a call's progress.
type progressKey struct{}

func withProgress(ctx context.Context, p *progress) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, p)
}

// progressFrom returns the call's reporter, nil if it has none.
func progressFrom(ctx context.Context) *progress {
	p, _ := ctx.Value(progressKey{}).(*progress)
	return p
}
