package upstreamauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/oauth2"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// errNoCaller is a call to a server whose tokens are exchanged, made for
// nobody.
var errNoCaller = errors.New("no authenticated caller")

// errNotAllowed is a token exchange at an endpoint not in the operator's
// --token-exchange-urls.
var errNotAllowed = errors.New("token endpoint not allowed for token exchange")

// errNotAToken is an answer of the token endpoint that holds no usable
// token.
var errNotAToken = errors.New("the answer holds no usable token")

// oauthError is the token endpoint's refusal: its OAuth error code (kept
// only when it is spelled as one) and HTTP status; never its
// description, which may echo what it was sent.
type oauthError struct {
	code   string
	status int
}

func (e *oauthError) Error() string {
	if e.code == "" {
		return fmt.Sprintf("the token endpoint refused, HTTP %d", e.status)
	}
	return fmt.Sprintf("the token endpoint refused: %s, HTTP %d", e.code, e.status)
}

// errorCode is how RFC 6749 error codes are spelled in practice; anything
// else is not repeated.
var errorCode = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// cleanCode is code if it is spelled as an OAuth error code and holds none
// of secrets, else "".
func cleanCode(code string, secrets ...string) string {
	if !errorCode.MatchString(code) {
		return ""
	}
	for _, secret := range secrets {
		if len(secret) >= 4 && strings.Contains(code, secret) {
			return ""
		}
	}
	return code
}

// callerRefusals are the OAuth error codes of a token exchange that
// refuse the caller (its token, or what it may get), not the client: the
// caller is answered 403. Any other refusal (invalid_client,
// unauthorized_client, a refused client credentials grant) is the
// operator's to fix, and the caller is answered 502.
var callerRefusals = map[string]bool{"invalid_grant": true, "invalid_target": true, "access_denied": true, "invalid_scope": true}

// refused is a refusal by the token endpoint of what doing asked for.
func (c Config) refused(doing string, e *oauthError) error {
	why := "refused " + doing
	if e.code != "" {
		why += ": " + e.code
	}
	why += fmt.Sprintf(" (HTTP %d)", e.status)
	kind := mcpclient.ErrAuthUnavailable
	if doing == doingExchange && callerRefusals[e.code] {
		kind = mcpclient.ErrAuthRefused
	}
	return &mcpclient.CredentialsError{Kind: kind, Code: e.code,
		Message: fmt.Sprintf("the token endpoint %s %s", c.endpoint(), why),
		Public:  "the token endpoint " + why, Err: e}
}

// unavailable is a token endpoint that could not be asked for a token:
// why says what happened, after "the token endpoint <URL> ".
func (c Config) unavailable(why string, cause error) error {
	return &mcpclient.CredentialsError{Kind: mcpclient.ErrAuthUnavailable,
		Message: fmt.Sprintf("the token endpoint %s %s", c.endpoint(), why),
		Public:  "the token endpoint " + why, Err: cause}
}

// failure explains a failed request to the token endpoint for doing ("the
// client credentials grant", "the token exchange"). secrets are what the
// request carried that no message may show.
func (c Config) failure(doing string, err error, secrets ...string) error {
	var (
		retrieve   *oauth2.RetrieveError
		refusal    *oauthError
		credErr    *mcpclient.CredentialsError
		netErr     net.Error
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		record     tls.RecordHeaderError
		dnsErr     *net.DNSError
		statusCode int
	)
	switch {
	case errors.As(err, &credErr):
		return err
	case errors.As(err, &retrieve):
		if retrieve.Response != nil {
			statusCode = retrieve.Response.StatusCode
		}
		return c.answered(doing, statusCode, cleanCode(retrieve.ErrorCode, secrets...))
	case errors.As(err, &refusal):
		return c.answered(doing, refusal.status, refusal.code)
	case mcpclient.IsEgressDenied(err):
		return c.unavailable("resolves to an address the egress policy denies (--egress-deny-cidrs, --egress-allow-cidrs)", safeCause(err))
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return c.unavailable("has a TLS certificate that is not trusted; set tls.caSecretRef or tls.caConfigMapRef of spec.auth to its CA", safeCause(err))
	case errors.As(err, &record):
		return c.unavailable("does not speak TLS", safeCause(err))
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return c.unavailable(fmt.Sprintf("did not answer within %s", c.timeout()), safeCause(err))
	case errors.Is(err, context.Canceled):
		return c.unavailable("was being asked when the request ended", safeCause(err))
	case errors.As(err, &dnsErr):
		return c.unavailable("could not be resolved", safeCause(err))
	case errors.Is(err, errNotAToken):
		return c.unavailable("answered "+doing+" with no usable access token", nil)
	default:
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			return c.unavailable("could not be reached", safeCause(err))
		}
		// What oauth2 says of an answer it could not read (no
		// access_token, not JSON): its words name no secret.
		return c.unavailable("answered "+doing+" with something that is not a token", nil)
	}
}

// answered is the token endpoint's answer with an error status, or an
// OAuth error: a refusal when it gave an OAuth error code or refused the
// client (401, 403), else a failure of its own.
func (c Config) answered(doing string, status int, code string) error {
	switch {
	case status >= http.StatusInternalServerError, status == http.StatusTooManyRequests,
		code == "temporarily_unavailable", code == "server_error":
		// The token service failed or is overloaded, whatever OAuth code
		// it put in the answer: not a refusal of this client or caller.
		why := "answered " + doing + " with"
		if status != 0 {
			why += fmt.Sprintf(" HTTP %d %s", status, http.StatusText(status))
		}
		if code != "" {
			why += " " + code
		}
		return c.unavailable(why, nil)
	case code != "", status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusBadRequest:
		return c.refused(doing, &oauthError{code: code, status: status})
	case status == 0:
		return c.unavailable("answered "+doing+" with something that is not a token", nil)
	}
	return c.unavailable(fmt.Sprintf("answered %s with HTTP %d %s", doing, status, http.StatusText(status)), nil)
}

// safeCause keeps err for logs and errors.Is, with the URL net/http names
// cut to its scheme, host and path.
func safeCause(err error) error {
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		return err
	}
	redacted := "the token endpoint"
	if u, perr := url.Parse(urlErr.URL); perr == nil {
		redacted = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	}
	return &url.Error{Op: urlErr.Op, URL: redacted, Err: urlErr.Err}
}
