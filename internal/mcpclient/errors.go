package mcpclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// ErrorKind says what went wrong in a way a condition reason can carry.
type ErrorKind string

const (
	ErrUnreachable       ErrorKind = "Unreachable"
	ErrTimeout           ErrorKind = "Timeout"
	ErrTLS               ErrorKind = "TLSError"
	ErrUnauthorized      ErrorKind = "Unauthorized"
	ErrForbidden         ErrorKind = "Forbidden"
	ErrHTTPStatus        ErrorKind = "HTTPError"
	ErrProtocol          ErrorKind = "ProtocolError"
	ErrMalformedResponse ErrorKind = "MalformedResponse"
	ErrEgressDenied      ErrorKind = "EgressDenied"
)

// Error is a failure talking to a server. Message is stable (no addresses of
// ephemeral sockets, no timestamps) and never contains a header value, so it
// can go into a condition or an Event; Err keeps the cause for logs.
type Error struct {
	Kind    ErrorKind
	Message string
	// RPCCode is the JSON-RPC error code when the server answered the
	// request with an error object; zero otherwise.
	RPCCode int
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err, or "" when it is not from this package.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// maxDetail bounds how much of a server's own error text is repeated.
const maxDetail = 200

// classify turns whatever the MCP library or the network returned into an
// Error whose message says what was being done and what to check.
func classify(err error, ep Endpoint, doing string, status *statusRecorder) *Error {
	var already *Error
	if errors.As(err, &already) {
		return already
	}
	target := ep.redactedURL()
	e := &Error{Err: err}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostnameErr      x509.HostnameError
		invalidCert      x509.CertificateInvalidError
		verifyErr        *tls.CertificateVerificationError
		recordErr        tls.RecordHeaderError
		authErr          *transport.AuthorizationRequiredError
		dnsErr           *net.DNSError
		opErr            *net.OpError
		syntaxErr        *json.SyntaxError
		typeErr          *json.UnmarshalTypeError
		netErr           net.Error
		urlErr           *url.Error
	)
	switch {
	case errors.Is(err, errResponseTooLarge):
		e.Kind, e.Message = ErrMalformedResponse, fmt.Sprintf("%s: %s answered with more than %d bytes", doing, target, ep.maxResponseBytes())
	case errors.Is(err, errStreamLost):
		e.Kind, e.Message = ErrUnreachable, fmt.Sprintf("%s: the event stream of %s ended before the answer came", doing, target)
	case errors.Is(err, errEgressDenied):
		e.Kind, e.Message = ErrEgressDenied, fmt.Sprintf("%s: %s resolves to an address the egress policy denies (--egress-deny-cidrs, --egress-allow-cidrs)", doing, target)
	case errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr), errors.As(err, &invalidCert),
		errors.As(err, &verifyErr):
		e.Kind, e.Message = ErrTLS, fmt.Sprintf("%s: the TLS certificate of %s is not trusted (%s); set spec.tls.caSecretRef or caConfigMapRef to its CA", doing, target, tlsDetail(err))
	case errors.As(err, &recordErr):
		e.Kind, e.Message = ErrTLS, fmt.Sprintf("%s: %s does not speak TLS; use an http:// URL or check the port", doing, target)
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout waiting for") ||
		(errors.As(err, &netErr) && netErr.Timeout()):
		e.Kind, e.Message = ErrTimeout, fmt.Sprintf("%s: %s did not answer within %s", doing, target, ep.timeout())
	case errors.As(err, &authErr) || errors.Is(err, transport.ErrUnauthorized) || status.last() == http.StatusUnauthorized:
		e.Kind, e.Message = ErrUnauthorized, fmt.Sprintf("%s: %s answered HTTP 401 Unauthorized; check the credentials in spec.headers", doing, target)
	case status.last() == http.StatusForbidden:
		e.Kind, e.Message = ErrForbidden, fmt.Sprintf("%s: %s answered HTTP 403 Forbidden; the credentials in spec.headers are not allowed", doing, target)
	case errors.As(err, &dnsErr):
		e.Kind, e.Message = ErrUnreachable, fmt.Sprintf("%s: the host of %s could not be resolved", doing, target)
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind, e.Message = ErrUnreachable, fmt.Sprintf("%s: %s refused the connection", doing, target)
	case (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && errors.As(err, &urlErr):
		// The connection ended during the HTTP exchange; an EOF outside one
		// is a truncated body, which is malformed JSON below.
		e.Kind, e.Message = ErrUnreachable, fmt.Sprintf("%s: %s closed the connection before answering", doing, target)
	case errors.As(err, &opErr) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH):
		e.Kind, e.Message = ErrUnreachable, fmt.Sprintf("%s: %s could not be reached", doing, target)
	case status.last() >= 300:
		code := status.last()
		e.Kind, e.Message = ErrHTTPStatus, fmt.Sprintf("%s: %s answered HTTP %d %s", doing, target, code, http.StatusText(code))
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "unmarshal"),
		strings.Contains(err.Error(), "decode"):
		e.Kind, e.Message = ErrMalformedResponse, fmt.Sprintf("%s: %s answered with malformed JSON-RPC", doing, target)
	case isJSONRPCError(err):
		e.Kind, e.Message = ErrProtocol, fmt.Sprintf("%s: %s answered with a JSON-RPC error: %s", doing, target, detail(err.Error(), ep))
	case status.tooLarge.Load():
		// The MCP library dropped the read error ("unexpected nil
		// response"); the capped body saw the overflow.
		e.Kind, e.Message = ErrMalformedResponse, fmt.Sprintf("%s: %s answered with more than %d bytes", doing, target, ep.maxResponseBytes())
	default:
		e.Kind, e.Message = ErrProtocol, fmt.Sprintf("%s: %s failed: %s", doing, target, detail(err.Error(), ep))
	}
	return e
}

// rpcError reports a JSON-RPC error object the server answered with.
func rpcError(details *mcp.JSONRPCErrorDetails, ep Endpoint, doing string) *Error {
	return &Error{
		Kind:    ErrProtocol,
		Message: fmt.Sprintf("%s: %s answered with JSON-RPC error %d: %s", doing, ep.redactedURL(), details.Code, detail(details.Message, ep)),
		RPCCode: details.Code,
		Err:     details.AsError(),
	}
}

func isJSONRPCError(err error) bool {
	for _, sentinel := range []error{mcp.ErrParseError, mcp.ErrInvalidRequest, mcp.ErrMethodNotFound,
		mcp.ErrInvalidParams, mcp.ErrInternalError, mcp.ErrResourceNotFound} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	var unsupported mcp.UnsupportedProtocolVersionError
	return errors.As(err, &unsupported)
}

func tlsDetail(err error) string {
	var hostnameErr x509.HostnameError
	if errors.As(err, &hostnameErr) {
		return "it is not valid for this host name"
	}
	var invalidCert x509.CertificateInvalidError
	if errors.As(err, &invalidCert) && invalidCert.Reason == x509.Expired {
		return "it has expired or is not yet valid"
	}
	return "signed by an unknown authority"
}

// detail shortens a server's own text and removes every header value from it:
// a server may echo a request back in its error.
func detail(text string, ep Endpoint) string {
	for _, value := range ep.Headers {
		if len(value) >= 4 {
			text = strings.ReplaceAll(text, value, "[redacted]")
		}
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > maxDetail {
		text = text[:maxDetail] + "…"
	}
	return text
}

// RPCErrorOf returns the JSON-RPC error code and message of an error the
// server answered with, secret-free, or ok=false for any other failure.
func RPCErrorOf(err error) (code int, message string, ok bool) {
	var e *Error
	if errors.As(err, &e) && e.RPCCode != 0 {
		return e.RPCCode, e.Message, true
	}
	return 0, "", false
}

// NotDelivered reports a failure that certainly happened before the server
// saw the request (connection refused, unknown host, session the server no
// longer knows), so that sending it again on a new session cannot run it
// twice.
func NotDelivered(err error) bool {
	var dnsErr *net.DNSError
	return errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.As(err, &dnsErr)
}
