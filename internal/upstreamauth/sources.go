package upstreamauth

import (
	"slices"
	"sync"
	"time"

	"k8s.io/utils/lru"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// Sources hands out each server's Credentials and keeps them, with the
// tokens they hold, for as long as the server's auth config stays the
// same: reconciles and re-reads of the target get the same Credentials,
// and a changed spec.auth or client secret new ones. One Sources serves
// the process; it is safe for concurrent use. It keeps the Credentials of
// at most MaxServers servers and the exchanged tokens of at most
// MaxCallers callers (all servers together), the least recently used
// going first.
type Sources struct {
	mu      sync.Mutex
	servers *lru.Cache
	// exchanged holds the exchanged tokens of every server, keyed by
	// callerToken.
	exchanged *lru.Cache
	now       func() time.Time
	// exchangeURLs are the token endpoints callers' tokens may be sent to.
	exchangeURLs []string
}

// sourceKey identifies one server's Credentials: its name and everything
// its Credentials are made of.
type sourceKey struct {
	server, fingerprint string
	egress              *mcpclient.EgressPolicy
	timeout             time.Duration
}

// NewSources makes the Sources of a process. exchangeURLs are the token
// endpoints callers' tokens may be sent to for an exchange (the
// operator's --token-exchange-urls): a namespace's tenant chooses
// spec.auth.tokenExchange.tokenURL, and a caller's token is a credential
// (a ServiceAccount's, or one the API server trusts), so it goes only
// where the operator said. None: token exchange is refused.
func NewSources(exchangeURLs ...string) *Sources {
	s := newSources(MaxServers, MaxCallers, time.Now)
	s.exchangeURLs = exchangeURLs
	return s
}

// ExchangesAt says callers' tokens may be sent to tokenURL.
func (s *Sources) ExchangesAt(tokenURL string) bool {
	return slices.Contains(s.exchangeURLs, tokenURL)
}

func newSources(servers, callers int, now func() time.Time) *Sources {
	return &Sources{
		servers: lru.NewWithEvictionFunc(servers, func(_ lru.Key, value any) {
			// Its sessions keep what they hold; its idle connections to
			// the token endpoint go.
			if c, ok := value.(interface{ client() *client }); ok {
				c.client().http.CloseIdleConnections()
			}
		}),
		exchanged: lru.New(callers),
		now:       now,
	}
}

// Credentials returns the Credentials of server (namespace/name) with
// cfg, the same for as long as fingerprint is: fingerprint must identify
// all of cfg but Egress and Timeout (secret values as a hash, the TLS
// settings by what they are read from).
func (s *Sources) Credentials(server, fingerprint string, cfg Config) mcpclient.Credentials {
	key := sourceKey{server: server, fingerprint: fingerprint, egress: cfg.Egress, timeout: cfg.timeout()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if creds, ok := s.servers.Get(key); ok {
		return creds.(mcpclient.Credentials)
	}
	creds := s.newCredentials(cfg)
	s.servers.Add(key, creds)
	return creds
}

func (s *Sources) newCredentials(cfg Config) mcpclient.Credentials {
	c := &client{cfg: cfg, http: mcpclient.NewHTTPClient(cfg.Egress, cfg.TLS, cfg.timeout()), now: s.now}
	service := &serviceToken{c: c}
	if cfg.Grant != GrantTokenExchange {
		return service
	}
	return &exchanged{c: c, service: service, tokens: s.exchanged, allowed: s.ExchangesAt(cfg.TokenURL)}
}

func (s *serviceToken) client() *client { return s.c }
func (e *exchanged) client() *client    { return e.c }

// held counts the servers whose Credentials are kept (tests read it).
func (s *Sources) held() int { return s.servers.Len() }

// heldCallers counts the exchanged tokens kept (tests read it).
func (s *Sources) heldCallers() int { return s.exchanged.Len() }
