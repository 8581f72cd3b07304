package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

const (
	// eventQueue bounds the messages waiting for a session's stream.
	eventQueue = 256
	// maxSessionCalls bounds the requests one session has in flight.
	maxSessionCalls = 256
)

// session is one client's MCP session with the bridge. Its requests share
// the child's one session with every other client's.
type session struct {
	id  string
	sse bool // HTTP+SSE (2024-11-05); otherwise Streamable HTTP
	// events holds what goes on the session's stream: for an HTTP+SSE
	// session every message, answers included; for Streamable HTTP the
	// notifications its listening GET stream carries.
	events chan []byte
	slots  chan struct{} // one per request in flight
	// ctx ends with the session, and with it the session's streams and
	// the requests it has in flight.
	ctx context.Context
	end context.CancelFunc

	mu       sync.Mutex
	revision string // negotiated at initialize; "" before
	// caps are the capabilities the client declared at initialize, which
	// decide whether the server's requests may be relayed to it.
	caps     clientCaps
	logLevel int // rank of the level it asked for; -1: everything
	lastSeen time.Time
	streams  int
}

func newSession(id string, sse bool, now time.Time) *session {
	ctx, end := context.WithCancel(context.Background())
	return &session{id: id, sse: sse, events: make(chan []byte, eventQueue),
		slots: make(chan struct{}, maxSessionCalls), ctx: ctx, end: end, logLevel: -1, lastSeen: now}
}

// logID is enough of the session's id to tell sessions apart in a log; the
// whole id would let a reader of the log use the session.
func (s *session) logID() string { return s.id[:min(6, len(s.id))] }

func (s *session) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastSeen = time.Now()
}

// setInitialized records what initialize settled: the revision and the
// capabilities the client declared.
func (s *session) setInitialized(revision string, caps clientCaps) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revision, s.caps = revision, caps
}

func (s *session) capabilities() clientCaps {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// initialized reports whether the client has been answered initialize; only
// then does it get notifications.
func (s *session) initialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revision != ""
}

func (s *session) setLogLevel(level string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logLevel = wire.LogLevelRank(level)
}

// wants reports whether a log message of rank level passes the session's
// level; -1 means the message is no log message.
func (s *session) wants(level int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return level < 0 || s.logLevel < 0 || level >= s.logLevel
}

// push queues a message for the session's stream without waiting; false
// when the queue is full.
func (s *session) push(msg []byte) bool {
	select {
	case s.events <- msg:
		return true
	case <-s.ctx.Done():
		return true // nobody to deliver to any more
	default:
		return false
	}
}

// pushWait queues an answer for an HTTP+SSE session's stream, waiting up to
// writeTimeout for room; false when the session ended or its client does
// not read.
func (s *session) pushWait(msg []byte) bool {
	timer := time.NewTimer(writeTimeout)
	defer timer.Stop()
	select {
	case s.events <- msg:
		return true
	case <-s.ctx.Done():
		return false
	case <-timer.C:
		return false
	}
}

// openStream attaches a stream; a session has at most one, so no message is
// sent twice or split between two.
func (s *session) openStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams > 0 {
		return false
	}
	s.streams++
	return true
}

func (s *session) closeStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams--
	s.lastSeen = time.Now()
}

// acquire takes a slot for a request; false when the session has
// maxSessionCalls in flight.
func (s *session) acquire() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *session) release() {
	<-s.slots
	s.touch()
}

// idle reports whether the session has done nothing for longer than limit:
// no stream, no request in flight.
func (s *session) idle(now time.Time, limit time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams == 0 && len(s.slots) == 0 && now.Sub(s.lastSeen) > limit
}
