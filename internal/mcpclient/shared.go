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
// Sessions held for list changes to plain-HTTP servers share a pool
// instead, one per egress policy and timeout: the pool keeps connections
// per server address, so a server's connections remain its own, and a
// session's Close still closes its stream's connection with the stream.
// What sharing adds: Close and ReleaseIdle close every idle connection of
// the pool, other servers' too. Held sessions keep no idle connection
// between refreshes anyway (see Session.ReleaseIdle), so at worst one
// re-dials. Sessions to https servers (TLS settings per server, HTTP/2
// multiplexing) and sessions not held (the catalog's, which reuse idle
// connections call after call) keep a pool of their own.

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

// get returns the pool for sessions with this egress policy and timeout.
func (s *transportShare) get(egress *EgressPolicy, timeout time.Duration) *http.Transport {
	key := transportKey{egress: egress, timeout: timeout}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tr, ok := s.byKey[key]; ok {
		return tr
	}
	tr := newBaseTransport(egress, nil, timeout, false, true)
	if len(s.byKey) < s.max {
		s.byKey[key] = tr
	}
	return tr
}
