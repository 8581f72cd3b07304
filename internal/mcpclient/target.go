package mcpclient

import (
	"crypto/tls"
	"net/url"
	"time"
)

// Transport names an MCP transport over HTTP.
type Transport string

const (
	// TransportAuto tries Streamable HTTP and falls back to SSE.
	TransportAuto Transport = "Auto"
	// TransportSSE is the 2024-11-05 HTTP+SSE transport.
	TransportSSE Transport = "SSE"
	// TransportStreamableHTTP is the 2025-03-26 Streamable HTTP transport.
	TransportStreamableHTTP Transport = "StreamableHTTP"
)

// Target is everything needed to dial one MCP server.
type Target struct {
	// URL of the MCP endpoint (the /sse stream for SSE servers).
	URL string
	// Transport to use; empty means TransportAuto.
	Transport Transport
	// Headers sent on every request. Their values are treated as secrets:
	// they never appear in errors.
	Headers map[string]string
	// TLS configures certificate verification; nil uses the system roots.
	TLS *tls.Config
	// Timeout bounds connecting, each request and the wait for response
	// headers.
	Timeout time.Duration
	// Egress, if set, limits the addresses dialed.
	Egress *EgressPolicy
	// MaxResponseBytes caps the body of each answer to a POST, JSON or
	// event stream, and each event of a long-lived GET stream (default
	// 16 MiB), so a broken or hostile server cannot exhaust memory.
	MaxResponseBytes int64
	// Fingerprint identifies everything that shapes the connection (secret
	// values only as a hash). A Pool opens a new session when it changes.
	Fingerprint string
	// Credentials, if set, give every request its Authorization header
	// (spec.auth); it is asked before each HTTP request a session makes.
	// The Fingerprint must change with them.
	Credentials Credentials
	// Revision is the MCP revision the server spoke last time, if known: a
	// revision before 2026-07-28 skips the 2026-07-28 probe (and is tried
	// again should initialize fail).
	Revision string
	// AnswersOnly says the requests made on the session want the
	// server's answers and nothing else: no progress, no log messages, no
	// question for their caller. The session then declares no client
	// capability, so that a server takes the path it takes for a client
	// that cannot be asked. And with a server that speaks 2026-07-28 it
	// is a session of the newest revision before (initialize) when the
	// server keeps one (answers initialize with a session id), which
	// servers serve cheaper than stateless requests; one that keeps none,
	// or does not initialize, is spoken to in 2026-07-28 as without it.
	// (A 2026-07-28 request that wants more is made apart: mcp-go's
	// servers send sampling, roots and, at random, progress and log
	// messages on a session's listening stream, where no call owns them.)
	AnswersOnly bool
}

// DefaultMaxResponseBytes is the cap on one answer's body.
const DefaultMaxResponseBytes = 16 << 20

// redactedURL is the target as errors may show it: no user info, no query.
func (t Target) redactedURL() string {
	u, err := url.Parse(t.URL)
	if err != nil {
		return "the configured URL"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

func (t Target) timeout() time.Duration {
	if t.Timeout <= 0 {
		return 30 * time.Second
	}
	return t.Timeout
}

func (t Target) maxResponseBytes() int64 {
	if t.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return t.MaxResponseBytes
}
