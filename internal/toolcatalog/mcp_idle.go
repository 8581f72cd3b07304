package toolcatalog

import (
	"context"
	"maps"
	"math"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// defaultSessionIdleTimeout is how long a legacy session with no request
// and no open stream is kept (Options.SessionIdleTimeout).
const defaultSessionIdleTimeout = 5 * time.Minute

// sessionMemory is what a legacy session's records cost, and to spare
// (6,000 abandoned sessions added 60 MB of live heap: about 10 KiB each).
const sessionMemory = 16 << 10

// defaultMaxSessions is how many legacy sessions a replica keeps unless
// told otherwise (Options.MaxSessions): as many as a quarter of its heap
// limit has room for, or 65,536 with no limit.
func defaultMaxSessions() int { return maxSessionsFor(debug.SetMemoryLimit(-1)) }

// maxSessionsFor is the default cap for a heap limit (math.MaxInt64:
// none); never below 64.
func maxSessionsFor(heap int64) int {
	if heap == math.MaxInt64 {
		return 1 << 16
	}
	return int(max(heap/4/sessionMemory, 64))
}

// idleSessions reclaims the legacy sessions clients abandon. mcp-go keeps
// a record of every session from its initialize until a DELETE (about
// 10 KiB); a client that crashes, or never sends DELETE, would keep it for
// good. A session is idle when no request has named it at its endpoint for
// the idle timeout and no listening stream of it is open there; an idle
// session is ended as a DELETE would end it. Its id stays valid: session
// ids are not kept (relay.go), so the client's next request is served as
// before, on any replica. What the client loses is nothing it can
// observe: the catalog keeps log levels itself, and a session's streams
// are the catalog's (stream_writer.go).
//
// The table holds the sessions mcp-go registered on initialize and the
// streams open, so caller input cannot grow it beyond what mcp-go itself
// keeps and the stream cap allows; requests naming unknown ids touch
// nothing. So that clients initializing without end (or crashing, faster
// than the idle timeout reclaims their sessions) cannot grow mcp-go's
// records without bound either, a replica keeps at most max sessions with
// no open stream (a session with one counts against the stream cap, whose
// memory budget includes its record): past it, the least recently named
// are ended (trim), down to nine tenths of max. Their clients lose
// nothing they can observe, as above.
type idleSessions struct {
	timeout time.Duration
	max     int
	mu      sync.Mutex
	// trimming is true while a trim is under way.
	trimming bool
	// known are the registered sessions, and when a request last named
	// each; streaming counts those with a stream open.
	known     map[sessionKey]time.Time
	streaming int
	// streams are the open listening streams of each session.
	streams map[sessionKey]map[*streamHold]struct{}
	// ending are the sessions being ended now; a stream that opens on one
	// waits until it is over, then holds the session.
	ending map[sessionKey]chan struct{}
}

// sessionKey is a session at one endpoint: the same id may be used at
// several (a client that initialized at one and listens at another), and
// each endpoint's mcp-go server keeps its own record.
type sessionKey struct {
	handler *mcpHandler
	id      string
}

func newIdleSessions(timeout time.Duration, maxSessions int) *idleSessions {
	return &idleSessions{timeout: timeout, max: maxSessions, known: map[sessionKey]time.Time{},
		streams: map[sessionKey]map[*streamHold]struct{}{}, ending: map[sessionKey]chan struct{}{}}
}

// registered records a session mcp-go registered at h (on its initialize),
// and has the table trimmed once it holds more than max sessions with no
// stream.
func (s *idleSessions) registered(h *mcpHandler, id string) {
	key := sessionKey{h, id}
	s.mu.Lock()
	if _, ok := s.known[key]; !ok && len(s.streams[key]) > 0 {
		s.streaming++
	}
	s.known[key] = time.Now()
	trim := len(s.known)-s.streaming > s.max && !s.trimming
	s.trimming = s.trimming || trim
	s.mu.Unlock()
	if trim {
		go s.trim()
	}
}

// trim ends the least recently named sessions with no open stream, until
// nine tenths of max are left, and again while sessions registered
// meanwhile keep them over max. One round frees a tenth of max, so that
// its sort is paid once for that many sessions, not once for each.
func (s *idleSessions) trim() {
	type aged struct {
		key  sessionKey
		last time.Time
	}
	for {
		s.mu.Lock()
		if len(s.known)-s.streaming <= s.max {
			s.trimming = false
			s.mu.Unlock()
			return
		}
		idle := make([]aged, 0, len(s.known)-s.streaming)
		for key, last := range s.known {
			if len(s.streams[key]) == 0 {
				idle = append(idle, aged{key, last})
			}
		}
		excess := len(idle) - (s.max - s.max/10)
		s.mu.Unlock()
		// Sorted without the lock, which every legacy request takes.
		slices.SortFunc(idle, func(a, b aged) int { return a.last.Compare(b.last) })
		s.mu.Lock()
		var ended []sessionKey
		for _, a := range idle {
			if len(ended) >= excess {
				break
			}
			// Not named, nor streaming, nor ended since.
			if last, ok := s.known[a.key]; ok && last.Equal(a.last) && len(s.streams[a.key]) == 0 {
				ended = append(ended, a.key)
				s.endingLocked(a.key)
			}
		}
		if len(ended) == 0 {
			s.trimming = false // every one was named since: the next registration looks again
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.end(ended, "capacity")
	}
}

// registeredAt says whether mcp-go holds a record of the session at h.
func (s *idleSessions) registeredAt(h *mcpHandler, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.known[sessionKey{h, id}]
	return ok
}

// unregistered forgets a session mcp-go let go of.
func (s *idleSessions) unregistered(h *mcpHandler, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(sessionKey{h, id})
}

// forgetLocked forgets a known session.
func (s *idleSessions) forgetLocked(key sessionKey) {
	if _, ok := s.known[key]; ok && len(s.streams[key]) > 0 {
		s.streaming--
	}
	delete(s.known, key)
}

// endStreams ends the session's streams open at h: its client ended it.
// Ending a stream writes to it, so not under the lock.
func (s *idleSessions) endStreams(h *mcpHandler, id string) {
	s.mu.Lock()
	holds := slices.Collect(maps.Keys(s.streams[sessionKey{h, id}]))
	s.mu.Unlock()
	for _, hold := range holds {
		hold.end()
	}
}

// touch records a request naming the session at h (nil: the endpoint has
// no handler yet, so no session).
func (s *idleSessions) touch(h *mcpHandler, id string) {
	if h == nil || id == "" {
		return
	}
	key := sessionKey{h, id}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[key]; ok {
		s.known[key] = time.Now()
	}
}

// streamHold is a listening stream's hold on its session: a session with
// a stream open is never idle.
type streamHold struct {
	sessions *idleSessions
	key      sessionKey
	// end ends the stream.
	end func()
}

// streamOpened records a listening stream of session id at h, which end
// ends, waiting first for the session's ending if one is under way, so
// that a stream's session is never ended under it. release records the
// stream's close.
func (s *idleSessions) streamOpened(h *mcpHandler, id string, end func()) *streamHold {
	hold := &streamHold{sessions: s, key: sessionKey{h, id}, end: end}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		ending, ok := s.ending[hold.key]
		if !ok {
			break
		}
		s.mu.Unlock()
		<-ending
		s.mu.Lock()
	}
	s.holdLocked(hold)
	return hold
}

func (s *idleSessions) holdLocked(hold *streamHold) {
	if s.streams[hold.key] == nil {
		s.streams[hold.key] = map[*streamHold]struct{}{}
		if _, ok := s.known[hold.key]; ok {
			s.streaming++
		}
	}
	s.streams[hold.key][hold] = struct{}{}
}

func (h *streamHold) release() {
	s := h.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	holds := s.streams[h.key]
	if _, ok := holds[h]; !ok {
		return // released already
	}
	delete(holds, h)
	if len(holds) == 0 {
		delete(s.streams, h.key)
		if _, ok := s.known[h.key]; ok {
			s.streaming--
		}
	}
	if _, ok := s.known[h.key]; ok {
		s.known[h.key] = time.Now()
	}
}

// forget drops the sessions of a handler that is going away.
func (s *idleSessions) forget(h *mcpHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key := range s.known {
		if key.handler == h {
			s.forgetLocked(key)
		}
	}
}

// sweep ends the sessions idle since before now minus the timeout.
func (s *idleSessions) sweep(now time.Time) {
	var ended []sessionKey
	s.mu.Lock()
	for key, last := range s.known {
		if len(s.streams[key]) == 0 && now.Sub(last) >= s.timeout {
			ended = append(ended, key)
			s.endingLocked(key)
		}
	}
	s.mu.Unlock()
	s.end(ended, "idle")
}

// endingLocked marks a known session as being ended: a stream that opens
// on it meanwhile waits (streamOpened).
func (s *idleSessions) endingLocked(key sessionKey) {
	s.forgetLocked(key)
	if _, ok := s.ending[key]; !ok {
		s.ending[key] = make(chan struct{})
	}
}

// end ends sessions marked as being ended, for reason (a label of
// mcp_catalog_sessions_ended_total).
func (s *idleSessions) end(ended []sessionKey, reason string) {
	for _, key := range ended {
		key.handler.end(key.id)
		endedSessions.WithLabelValues(reason).Inc()
		s.mu.Lock()
		if ending, ok := s.ending[key]; ok { // the first of two ends of one key closes it
			close(ending)
			delete(s.ending, key)
		}
		s.mu.Unlock()
	}
}

// sweepEvery sweeps until ctx ends, a quarter of the timeout apart: an
// idle session goes at most a quarter past its timeout.
func (s *idleSessions) sweepEvery(ctx context.Context) {
	tick := time.NewTicker(max(s.timeout/4, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.sweep(now)
		}
	}
}

// end ends a session of the handler as the client's DELETE would: mcp-go
// drops what it keeps of the session, and the unregister hook the
// session's entry in idleSessions.
func (h *mcpHandler) end(id string) {
	r, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, h.path, http.NoBody)
	if err != nil {
		return // h.path is the handler's own, always a valid URL
	}
	r.Header.Set("Mcp-Session-Id", id)
	h.http.ServeHTTP(discardResponse{header: http.Header{}}, r)
}

// discardResponse is where the answer to a DELETE the catalog sends itself
// goes.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header       { return d.header }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}
