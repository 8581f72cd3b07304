package mcpclient

import (
	"net/http"
	"sync"
	"time"
)

// A manager holds one session per server that announces list changes,
// each with a stream open for as long as the server is Ready. Each with a
// connection pool of its own, the pools (net/http's Transport and the
// tables it fills on first use) cost the manager about 2 KB per server.
// Sessions opened to hear list changes from plain-HTTP servers (every
// session of the controllers' discovery) share a pool instead, one per
// egress policy and timeout. The pool keeps connections per server
// address, and a session's Close still ends its stream's connection with
// the stream; but Close and ReleaseIdle cannot close the idle connections
// of one session alone, and closing all of them would make the other
// sessions dial again mid-refresh. So a shared pool closes its idle
// connections itself, sharedIdleTimeout after their last use, and
// sessions leave them be. Sessions to https servers (TLS settings per
// server, HTTP/2 multiplexing) and sessions that do not listen (the
// catalog's, which reuse idle connections call after call) keep a pool
// of their own.

// sharedIdleTimeout is how long a shared pool keeps a connection nobody
// uses: long enough for the pages of one discovery, short enough that
// closed sessions leave little behind.
const sharedIdleTimeout = 2 * time.Second

// listeningTransports are the pools shared by sessions held for list
// changes.
var listeningTransports = &transportShare{byKey: map[transportKey]*http.Transport{}, max: maxSharedTransports}

// maxSharedTransports bounds the shared pools: timeouts come from specs,
// so their number is the users'. Past it sessions get pools of their own.
const maxSharedTransports = 32

type transportKey struct {
	egress  *EgressPolicy
	timeout time.Duration
}

type transportShare struct {
	mu    sync.Mutex
	byKey map[transportKey]*http.Transport
	max   int
}

// get returns the pool for sessions with this egress policy and timeout,
// and whether it is shared (past max, each session gets its own).
func (s *transportShare) get(egress *EgressPolicy, timeout time.Duration) (*http.Transport, bool) {
	key := transportKey{egress: egress, timeout: timeout}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tr, ok := s.byKey[key]; ok {
		return tr, true
	}
	if len(s.byKey) >= s.max {
		return newBaseTransport(egress, nil, timeout, false, true), false
	}
	tr := newBaseTransport(egress, nil, timeout, false, true)
	tr.IdleConnTimeout = sharedIdleTimeout
	s.byKey[key] = tr
	return tr, true
}
