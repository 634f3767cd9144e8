package serve

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// session is the one client of a stdio connection, as mcp-go sees it. Each
// connection has its own, so two servers in one process do not share their
// notifications.
type session struct {
	id            string
	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
	asks          asks // requests to the client (roots.go)

	mu    sync.Mutex
	info  mcp.Implementation
	caps  mcp.ClientCapabilities
	level mcp.LoggingLevel
}

// sessionSeq numbers the sessions of a process.
var sessionSeq atomic.Int64

func newSession() *session {
	return &session{
		id:            "stdio-" + strconv.FormatInt(sessionSeq.Add(1), 10),
		notifications: make(chan mcp.JSONRPCNotification, 100),
		level:         mcp.LoggingLevelInfo,
	}
}

func (s *session) SessionID() string                                   { return s.id }
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }
func (s *session) Initialize()                                         { s.initialized.Store(true) }
func (s *session) Initialized() bool                                   { return s.initialized.Load() }

func (s *session) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *session) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = info
}

func (s *session) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *session) SetClientCapabilities(caps mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps = caps
}

func (s *session) SetLogLevel(level mcp.LoggingLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.level = level
}

func (s *session) GetLogLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}
