package bridge

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync"
	"time"
)

var errTooManySessions = errors.New("too many sessions")

// sessions is the table of client sessions. It is bounded twice: at most
// MaxSessions at once, and a session idle (no stream, no request) for
// SessionIdle ends, so the table cannot grow with what clients send.
type sessions struct {
	log   *slog.Logger
	max   int
	idle  time.Duration
	onEnd func(*session) // cancels the session's calls

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions(log *slog.Logger, max int, idle time.Duration) *sessions {
	return &sessions{log: log, max: max, idle: idle, byID: map[string]*session{}}
}

// open starts a session with a new random id.
func (t *sessions) open(sse bool) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) >= t.max {
		return nil, errTooManySessions
	}
	s := newSession(rand.Text(), sse, time.Now())
	t.byID[s.id] = s
	return s, nil
}

// get finds a live session; nil for an unknown, ended or expired id.
func (t *sessions) get(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// end removes a session, ends its streams and cancels its calls.
func (t *sessions) end(s *session) {
	t.mu.Lock()
	removed := t.byID[s.id] == s
	if removed {
		delete(t.byID, s.id)
	}
	t.mu.Unlock()
	s.end()
	if removed && t.onEnd != nil {
		t.onEnd(s)
	}
}

func (t *sessions) snapshot() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := make([]*session, 0, len(t.byID))
	for _, s := range t.byID {
		all = append(all, s)
	}
	return all
}

// broadcast queues a notification for every initialized session whose log
// level it passes (level -1: not a log message). An HTTP+SSE session that does
// not read its stream fast enough loses its answers too, so it is ended; a
// Streamable HTTP session only misses the notification.
func (t *sessions) broadcast(msg []byte, level int) {
	for _, s := range t.snapshot() {
		if !s.initialized() || !s.wants(level) || s.push(msg) {
			continue
		}
		if s.sse {
			t.log.Warn("Ending an SSE session whose client does not read its stream", "session", s.logID())
			t.end(s)
		} else {
			t.log.Debug("Dropped a notification for a session whose stream is full", "session", s.logID())
		}
	}
}

// expire ends idle sessions until ctx ends.
func (t *sessions) expire(ctx context.Context) {
	ticker := time.NewTicker(max(min(t.idle/2, time.Minute), 100*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			for _, s := range t.snapshot() {
				if s.idle(now, t.idle) {
					t.log.Debug("Ending an idle session", "session", s.logID())
					t.end(s)
				}
			}
		}
	}
}

// endAll ends every session, which closes their streams.
func (t *sessions) endAll() {
	for _, s := range t.snapshot() {
		t.end(s)
	}
}
