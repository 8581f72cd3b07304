package toolcatalog

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/utils/lru"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

// maxExchangeSessions bounds the sessions one server with
// spec.auth.tokenExchange holds, one per caller: past it the least
// recently used caller's goes (it closes once its calls end).
const maxExchangeSessions = 1024

// exchangeSessions are the session keys of a server whose requests carry
// each caller's exchanged token: a session is the caller's alone, since a
// server may bind a session to the user that opened it. Evicting a key
// drops its session from the pool.
type exchangeSessions struct {
	pool *mcpclient.Pool
	mu   sync.Mutex
	// keys is made on first use: every server has an exchangeSessions,
	// few ever exchange, and an LRU per server was 20 bytes per tool.
	keys *lru.Cache
}

func newExchangeSessions(pool *mcpclient.Pool) *exchangeSessions {
	return &exchangeSessions{pool: pool}
}

// add tracks key, dropping the least recently used caller's session past
// maxExchangeSessions.
func (s *exchangeSessions) add(key string) {
	s.mu.Lock()
	if s.keys == nil {
		s.keys = lru.NewWithEvictionFunc(maxExchangeSessions, func(key lru.Key, _ any) {
			s.pool.Drop(key.(string))
		})
	}
	keys := s.keys
	s.mu.Unlock()
	keys.Add(key, nil)
}

// clear drops every caller's session.
func (s *exchangeSessions) clear() {
	s.mu.Lock()
	keys := s.keys
	s.mu.Unlock()
	if keys != nil {
		keys.Clear()
	}
}

// asCaller readies a call to a server whose token is exchanged for the
// caller's: ctx carries the caller's validated token for the exchange
// (never the request, which gets the exchanged token), and the key names
// the caller's own session.
func (up *upstream) asCaller(ctx context.Context) (context.Context, string, error) {
	who := callerFrom(ctx)
	if who == nil || who.token == "" {
		return ctx, "", &upstreamError{code: http.StatusForbidden, kind: string(mcpclient.ErrAuthRefused),
			err: fmt.Errorf("MCPServer %s is called with a token exchanged for the caller's (spec.auth.tokenExchange), and this call has no authenticated caller: the catalog runs with --catalog-auth=none", up.key)}
	}
	key := up.key + "\x00" + who.identity
	if up.sessions != nil {
		up.sessions.add(key)
	}
	return upstreamauth.WithCaller(ctx, upstreamauth.Caller{Identity: who.identity, Token: who.token}), key, nil
}
