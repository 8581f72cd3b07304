package mcpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Credentials authorize each request of a session (spec.auth).
type Credentials interface {
	// Authorization is the Authorization header value for one request made with ctx.
	Authorization(ctx context.Context) (string, error)
	// PerCaller says the value depends on the caller ctx carries (token exchange):
	// sessions must then not be shared between callers.
	PerCaller() bool
}

// forgetting is Credentials that can drop a value the server answered 401
// to, so that the next request gets a new token.
type forgetting interface {
	Forget(ctx context.Context, value string)
}

// CredentialsError is a Credentials' failure to authorize a request: the
// token service refused (ErrAuthRefused) or could not be asked
// (ErrAuthUnavailable). Its messages hold no token, no secret and no query
// of the token endpoint's URL: they go into conditions, Events and, with
// Public, to the callers of the server's tools. A request that fails so
// fails with an *Error of the same Kind.
type CredentialsError struct {
	// Kind is ErrAuthRefused or ErrAuthUnavailable.
	Kind ErrorKind
	// Code is the OAuth error code the token service answered with
	// (invalid_grant, invalid_client, ...), "" when none.
	Code string
	// Message says what failed, for the server's operators: it may name
	// the token endpoint (scheme, host and path).
	Message string
	// Public is Message as told to those who may only call the server's
	// tools: it names no endpoint. Empty: Message is public.
	Public string
	// Err is the cause, for logs and errors.Is; it holds no secret either.
	Err error
}

func (e *CredentialsError) Error() string { return e.Message }
func (e *CredentialsError) Unwrap() error { return e.Err }

func (e *CredentialsError) public() string {
	if e.Public != "" {
		return e.Public
	}
	return e.Message
}

// AuthErrorCode is the OAuth error code of a failure to get a token
// (ErrAuthRefused), "" for any other failure or a refusal without one.
func AuthErrorCode(err error) string {
	var e *CredentialsError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsEgressDenied reports a dial the egress policy refused, on a client
// from NewHTTPClient or a session's.
func IsEgressDenied(err error) bool { return errors.Is(err, errEgressDenied) }

// authFailure reports a request that could not be authorized.
func authFailure(err error) bool {
	kind := KindOf(err)
	return kind == ErrAuthRefused || kind == ErrAuthUnavailable
}

// credentialsFailure is the failure of a request that could not be
// authorized, doing what doing says: the token service's, not the
// server's. Nil when err is another failure.
func credentialsFailure(err error, t Target, doing string) *Error {
	var c *CredentialsError
	if !errors.As(err, &c) {
		return nil
	}
	kind := c.Kind
	if kind != ErrAuthRefused {
		kind = ErrAuthUnavailable
	}
	says := func(what string) string {
		return fmt.Sprintf("%s: no access token for %s: %s", doing, t.redactedURL(), what)
	}
	return &Error{Kind: kind, Message: says(c.Message), public: says(c.public()), Err: err, url: t.redactedURL()}
}

// authorizingTransport sets each request's Authorization header from the
// session's Credentials, asked with the request's own context. Requests a
// session makes on its own (its event stream, the DELETE that ends it)
// carry no caller's context: the values of the context the session was
// opened with stand in for those their own context lacks, so that such a
// request is authorized as whoever opened the session (the controller's
// discovery, or the one caller of a per-caller session).
type authorizingTransport struct {
	next    http.RoundTripper
	creds   Credentials
	session context.Context
}

func (t *authorizingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := valuesFrom{Context: req.Context(), fallback: t.session}
	value, err := t.creds.Authorization(ctx)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		var c *CredentialsError
		if !errors.As(err, &c) {
			// Credentials of another make: what they said may hold
			// anything, so it is kept for logs only.
			err = &CredentialsError{Kind: ErrAuthUnavailable, Message: "the credentials could not authorize the request", Err: err}
		}
		return nil, err
	}
	// A RoundTripper must not change the request it is given.
	authorized := *req
	authorized.Header = req.Header.Clone()
	if authorized.Header == nil {
		authorized.Header = http.Header{}
	}
	authorized.Header.Set("Authorization", value)
	resp, err := t.next.RoundTrip(&authorized)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		if f, ok := t.creds.(forgetting); ok {
			f.Forget(ctx, value)
		}
	}
	return resp, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport underneath.
func (t *authorizingTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// valuesFrom is a request's context whose values, where it has none of
// its own, are fallback's; its deadline and cancellation are the
// request's alone.
type valuesFrom struct {
	context.Context
	fallback context.Context
}

func (c valuesFrom) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	if c.fallback == nil {
		return nil
	}
	return c.fallback.Value(key)
}

// NewHTTPClient is an HTTP client for a server's token endpoint: the same
// egress policy and TLS settings as sessions, the dial, handshake and
// response headers bounded by timeout, and the whole exchange too, no
// proxy, and redirects refused (a 3xx is answered as it is).
func NewHTTPClient(egress *EgressPolicy, tlsConfig *tls.Config, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &http.Client{
		Transport:     newBaseTransport(egress, tlsConfig, timeout, true, false),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
