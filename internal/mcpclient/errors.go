package mcpclient

import (
	"cmp"
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
	"regexp"
	"slices"
	"strconv"
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
	// ErrUnsupportedVersion: the server speaks no MCP revision the
	// operator does.
	ErrUnsupportedVersion ErrorKind = "UnsupportedProtocolVersion"
	// ErrAuthRefused: the token service of the target's Credentials
	// answered with an OAuth error (AuthErrorCode says which), or the
	// request had no caller whose token could be exchanged. The request
	// was not sent.
	ErrAuthRefused ErrorKind = "AuthRefused"
	// ErrAuthUnavailable: the token service of the target's Credentials
	// could not be reached, failed (5xx), did not answer in time or
	// answered something that is not a token. The request was not sent.
	ErrAuthUnavailable ErrorKind = "AuthUnavailable"
)

// Error is a failure talking to a server. Message is stable (no addresses of
// ephemeral sockets, no timestamps) and never contains a header value, so it
// can go into a condition or an Event; it names the server by its URL, for
// those who run it (Named tells the failure to those who only call it).
// Err keeps the cause for logs.
type Error struct {
	Kind    ErrorKind
	Message string
	// RPCCode is the JSON-RPC error code when the server answered the
	// request with an error object; zero otherwise.
	RPCCode int
	// HTTPStatus is the status of the HTTP answer that failed, when one
	// came (a JSON-RPC error comes with 200); zero otherwise.
	HTTPStatus int
	Err        error
	// url is the server as Message names it (redactedURL), "" when Message
	// was not made here from a target; public is Message less what the
	// network library said, "" when that is all of Message.
	url, public string
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Named is e as told to someone who may call the server's tools but not
// learn where it runs: the server is called name instead of by its URL
// (for a server in the cluster, the address of a Service), and what the
// network library said, which names the addresses it dialled, is left
// out. Kind and RPCCode stay; it wraps e, whose Message says it all.
func (e *Error) Named(name string) *Error {
	return &Error{Kind: e.Kind, Message: e.naming(name), RPCCode: e.RPCCode, Err: e}
}

func (e *Error) naming(name string) string {
	if e.url == "" {
		// Not knowing where Message names the server, say only what
		// kind of failure it was.
		return fmt.Sprintf("%s failed (%s)", name, e.Kind)
	}
	told := strings.ReplaceAll(cmp.Or(e.public, e.Message), e.url, name)
	// The server's own words (an HTTP body, a JSON-RPC message) may name
	// where it runs in another form, or a proxy's view of the network.
	if u, err := url.Parse(e.url); err == nil && u.Hostname() != "" {
		told = strings.ReplaceAll(told, u.Host, name)
		told = strings.ReplaceAll(told, u.Hostname(), name)
	}
	return networkAddress.ReplaceAllString(told, "an address")
}

// networkAddress matches an IPv4 address, with its port if it has one:
// what a proxy or a server's error page says of the network behind it.
var networkAddress = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b`)

// URL is the server's URL as Message names it, with no user info and no
// query, or "" when Message names none.
func (e *Error) URL() string { return e.url }

// KindOf returns the kind of err, or "" when it is not from this package
// (a CredentialsError is: its own kind).
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var c *CredentialsError
	if errors.As(err, &c) {
		return c.Kind
	}
	return ""
}

// maxDetail bounds how much of a server's own text is repeated.
const maxDetail = 200

// failure is what one explanation makes of an error: its kind and what to
// say after "doing: ". ok is false when the explanation does not apply.
type failure struct {
	kind ErrorKind
	why  string
}

// explanation recognizes one family of failures. ex is what the failed
// request saw on the wire; it may be nil.
type explanation func(err error, t Target, ex *exchange) (failure, bool)

// explanations are tried in order; the first that applies wins. The order
// matters: a broken stream explains the error the library made of it, a
// TLS failure is also a network error, a timeout may carry any status.
var explanations = []explanation{
	brokenStream, overCap, egressDenied, tlsFailure, timedOut, httpRefusal,
	networkFailure, versionRefused, httpStatus, malformed, rpcFailure, overCapDropped,
}

// classify turns whatever the MCP library or the network returned into an
// Error whose message says what was being done and what to check.
func classify(err error, t Target, doing string, ex *exchange) *Error {
	var already *Error
	if errors.As(err, &already) {
		return already
	}
	if e := credentialsFailure(err, t, doing); e != nil {
		// Whatever else went wrong after (a timeout was the token
		// service's), the request was never sent.
		return e
	}
	for _, explain := range explanations {
		if f, ok := explain(err, t, ex); ok {
			return &Error{Kind: f.kind, Message: doing + ": " + f.why, HTTPStatus: ex.lastStatus(), Err: err, url: t.redactedURL()}
		}
	}
	failed := fmt.Sprintf("%s: %s failed", doing, t.redactedURL())
	return &Error{Kind: ErrProtocol, Err: err, url: t.redactedURL(), public: failed,
		Message: failed + ": " + detail(err.Error(), t)}
}

func brokenStream(err error, t Target, _ *exchange) (failure, bool) {
	switch {
	case errors.Is(err, errStreamLost) && errors.Is(err, errResponseTooLarge):
		return failure{ErrMalformedResponse, fmt.Sprintf("the event stream of %s ended before the answer came: it carried an event of more than %d bytes", t.redactedURL(), t.maxResponseBytes())}, true
	case errors.Is(err, errStreamLost):
		return failure{ErrUnreachable, fmt.Sprintf("the event stream of %s ended before the answer came", t.redactedURL())}, true
	case errors.Is(err, errNotSent):
		return failure{ErrUnreachable, fmt.Sprintf("the session with %s ended before the request was sent", t.redactedURL())}, true
	case errors.Is(err, errSessionClosed):
		return failure{ErrUnreachable, fmt.Sprintf("the session with %s was closed before the answer came", t.redactedURL())}, true
	}
	return failure{}, false
}

func overCap(err error, t Target, _ *exchange) (failure, bool) {
	if !errors.Is(err, errResponseTooLarge) {
		return failure{}, false
	}
	return failure{ErrMalformedResponse, fmt.Sprintf("%s answered with more than %d bytes", t.redactedURL(), t.maxResponseBytes())}, true
}

func egressDenied(err error, t Target, _ *exchange) (failure, bool) {
	if !errors.Is(err, errEgressDenied) {
		return failure{}, false
	}
	return failure{ErrEgressDenied, fmt.Sprintf("%s resolves to an address the egress policy denies (--egress-deny-cidrs, --egress-allow-cidrs)", t.redactedURL())}, true
}

func tlsFailure(err error, t Target, _ *exchange) (failure, bool) {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostnameErr      x509.HostnameError
		invalidCert      x509.CertificateInvalidError
		verifyErr        *tls.CertificateVerificationError
		recordErr        tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr), errors.As(err, &invalidCert), errors.As(err, &verifyErr):
		return failure{ErrTLS, fmt.Sprintf("the TLS certificate of %s is not trusted (%s); set spec.tls.caSecretRef or caConfigMapRef to its CA", t.redactedURL(), tlsDetail(err))}, true
	case errors.As(err, &recordErr):
		return failure{ErrTLS, fmt.Sprintf("%s does not speak TLS; use an http:// URL or check the port", t.redactedURL())}, true
	}
	return failure{}, false
}

func timedOut(err error, t Target, _ *exchange) (failure, bool) {
	var netErr net.Error
	if !errors.Is(err, context.DeadlineExceeded) && (!errors.As(err, &netErr) || !netErr.Timeout()) {
		return failure{}, false
	}
	return failure{ErrTimeout, fmt.Sprintf("%s did not answer within %s", t.redactedURL(), t.timeout())}, true
}

// httpRefusal is a 401 or 403: the credentials in spec.headers.
func httpRefusal(err error, t Target, ex *exchange) (failure, bool) {
	var authErr *transport.AuthorizationRequiredError
	switch {
	case errors.As(err, &authErr) || errors.Is(err, transport.ErrUnauthorized) || ex.lastStatus() == http.StatusUnauthorized:
		return failure{ErrUnauthorized, fmt.Sprintf("%s answered HTTP 401 Unauthorized; check the credentials in spec.headers", t.redactedURL())}, true
	case ex.lastStatus() == http.StatusForbidden:
		return failure{ErrForbidden, fmt.Sprintf("%s answered HTTP 403 Forbidden; the credentials in spec.headers are not allowed", t.redactedURL())}, true
	}
	return failure{}, false
}

func networkFailure(err error, t Target, _ *exchange) (failure, bool) {
	var (
		dnsErr *net.DNSError
		opErr  *net.OpError
		urlErr *url.Error
	)
	switch {
	case errors.As(err, &dnsErr):
		return failure{ErrUnreachable, fmt.Sprintf("the host of %s could not be resolved", t.redactedURL())}, true
	case errors.Is(err, syscall.ECONNREFUSED):
		return failure{ErrUnreachable, fmt.Sprintf("%s refused the connection", t.redactedURL())}, true
	case (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && errors.As(err, &urlErr):
		// The connection ended during the HTTP exchange; an EOF outside one
		// is a truncated body, which is malformed JSON below.
		return failure{ErrUnreachable, fmt.Sprintf("%s closed the connection before answering", t.redactedURL())}, true
	case errors.As(err, &opErr) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH):
		return failure{ErrUnreachable, fmt.Sprintf("%s could not be reached", t.redactedURL())}, true
	}
	return failure{}, false
}

// versionRefused is a server that speaks no revision the operator does:
// its initialize answer names one the operator does not know, or it
// refuses the request's revision in so many words.
func versionRefused(err error, t Target, ex *exchange) (failure, bool) {
	var unsupported mcp.UnsupportedProtocolVersionError
	switch {
	case errors.As(err, &unsupported):
		return failure{ErrUnsupportedVersion, fmt.Sprintf("%s speaks MCP revision %s; the operator speaks %s", t.redactedURL(),
			detail(unsupported.Version, t), strings.Join(Revisions, ", "))}, true
	case ex.lastStatus() >= 400 && refusedRevisions(ex.errorBody()) != nil:
		return failure{ErrUnsupportedVersion, fmt.Sprintf("%s speaks none of the MCP revisions the operator does (%s); it named %s", t.redactedURL(),
			strings.Join(Revisions, ", "), detail(strings.Join(refusedRevisions(ex.errorBody()), ", "), t))}, true
	case ex.lastStatus() >= 400 && strings.Contains(strings.ToLower(ex.errorBody()), "unsupported protocol version"):
		return failure{ErrUnsupportedVersion, fmt.Sprintf("%s refused the protocol revision: %s", t.redactedURL(), detail(ex.errorBody(), t))}, true
	}
	return failure{}, false
}

// refusedRevisions reads the revisions a JSON-RPC "unsupported protocol
// version" error (-32022) names, or nil when body is not one.
func refusedRevisions(body string) []string {
	var answer struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &answer) != nil || answer.Error.Code != codeUnsupportedVersion || len(answer.Error.Data.Supported) == 0 {
		return nil
	}
	return answer.Error.Data.Supported
}

// httpStatus is any other answer that was not a success, with the start of
// what the server said.
func httpStatus(_ error, t Target, ex *exchange) (failure, bool) {
	code := ex.lastStatus()
	if code < 300 {
		return failure{}, false
	}
	why := fmt.Sprintf("%s answered HTTP %d %s", t.redactedURL(), code, http.StatusText(code))
	if body := detail(ex.errorBody(), t); body != "" {
		why += ": " + body
	}
	return failure{ErrHTTPStatus, why}, true
}

func malformed(err error, t Target, _ *exchange) (failure, bool) {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	if !errors.As(err, &syntaxErr) && !errors.As(err, &typeErr) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return failure{}, false
	}
	return failure{ErrMalformedResponse, fmt.Sprintf("%s answered with malformed JSON-RPC", t.redactedURL())}, true
}

func rpcFailure(err error, t Target, _ *exchange) (failure, bool) {
	if !isJSONRPCError(err) {
		return failure{}, false
	}
	return failure{ErrProtocol, fmt.Sprintf("%s answered with a JSON-RPC error: %s", t.redactedURL(), detail(err.Error(), t))}, true
}

// overCapDropped: the MCP library dropped the read error ("unexpected nil
// response"), but this request's capped body saw the overflow.
func overCapDropped(_ error, t Target, ex *exchange) (failure, bool) {
	if !ex.overCap() {
		return failure{}, false
	}
	return failure{ErrMalformedResponse, fmt.Sprintf("%s answered with more than %d bytes", t.redactedURL(), t.maxResponseBytes())}, true
}

// rpcError reports a JSON-RPC error object the server answered with.
func rpcError(details *mcp.JSONRPCErrorDetails, t Target, doing string) *Error {
	if details.Code == codeUnsupportedVersion {
		var data struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}
		raw, _ := json.Marshal(details.Data)
		_ = json.Unmarshal(raw, &data)
		return &Error{Kind: ErrUnsupportedVersion, RPCCode: details.Code, Err: details.AsError(), url: t.redactedURL(),
			Message: fmt.Sprintf("%s: %s does not speak MCP revision %s; it named %s: %s", doing, t.redactedURL(), detail(data.Requested, t),
				detail(strings.Join(data.Supported, ", "), t), detail(details.Message, t))}
	}
	return &Error{
		Kind:    ErrProtocol,
		Message: fmt.Sprintf("%s: %s answered with JSON-RPC error %d: %s", doing, t.redactedURL(), details.Code, detail(details.Message, t)),
		RPCCode: details.Code,
		Err:     details.AsError(),
		url:     t.redactedURL(),
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

// detail shortens a server's own text, or an error's, and removes from it
// the target's secrets (secretsOf), bearer tokens and JWTs, and the query
// of any URL it names (an SSE session's message endpoint carries its
// session id there): a server may echo a request back in its error, and
// net/http and mcp-go name URLs in full in theirs. A query value of 4
// bytes or more is redacted wherever it appears, ordinary words too
// ("json" from ?format=json): better a message that says less than one
// that says a key.
func detail(text string, t Target) string {
	secrets := secretsOf(t)
	long := len(text) > detailWindow
	if long {
		text = withoutSecretStart(text[:detailWindow], secrets)
	}
	for _, secret := range secrets {
		text = strings.ReplaceAll(text, secret, "[redacted]")
	}
	text = urlQuery.ReplaceAllString(text, "$1?[redacted]")
	// A server may echo the Authorization it was sent, which with
	// spec.auth holds a token no target knows.
	text = bearerToken.ReplaceAllString(text, "${1}[redacted]")
	text = jwt.ReplaceAllString(text, "[redacted]")
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > maxDetail {
		cut := maxDetail
		for cut > 0 && !isRuneStart(text[cut]) {
			cut--
		}
		text, long = text[:cut], true
	}
	if long {
		text += "…"
	}
	return text
}

// detailWindow is how much of a text detail reads. It shows maxDetail
// bytes at most, and a server's text (a JSON-RPC error's message) may run
// to the response cap, megabytes that every replacement would read.
const detailWindow = 4096

// withoutSecretStart is text, cut short, less any start of a secret it
// ends with: the rest of that secret was cut off, so no replacement can
// find it.
func withoutSecretStart(text string, secrets []string) string {
	for trimmed := true; trimmed; {
		trimmed = false
		for _, secret := range secrets {
			for k := min(len(secret)-1, len(text)); k > 0; k-- {
				if strings.HasSuffix(text, secret[:k]) {
					text, trimmed = text[:len(text)-k], true
					break
				}
			}
		}
	}
	return text
}

// urlQuery is a URL's query in a text: up to a space, a quote or the
// backslash %q puts before one.
var urlQuery = regexp.MustCompile(`(https?://[^\s"'?#]*)\?[^\s"'\\]+`)

// bearerToken is a bearer token in a text, as an Authorization header
// carries it: long enough not to be a word ("bearer token required").
var bearerToken = regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{16,}=*`)

// jwt is a JSON Web Token in a text, whatever precedes it.
var jwt = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`)

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// secretsOf is what no message may show of t, longest first so that no
// part of a longer one is left: its header values, and what its URL holds
// besides the scheme, host and path (user info, query, fragment), as
// written, decoded, and as %q writes them (net/http's url.Error does).
// Values shorter than 4 bytes would redact ordinary words and are left.
func secretsOf(t Target) []string {
	var secrets []string
	add := func(s string) {
		if len(s) < 4 {
			return
		}
		secrets = append(secrets, s)
		if quoted := strconv.Quote(s); quoted[1:len(quoted)-1] != s {
			secrets = append(secrets, quoted[1:len(quoted)-1])
		}
	}
	for _, value := range t.Headers {
		add(value)
	}
	if u, err := url.Parse(t.URL); err == nil {
		add(u.RawQuery)
		add(u.EscapedFragment())
		add(u.Fragment)
		add(u.User.Username())
		escapedUser, _, _ := strings.Cut(u.User.String(), ":")
		add(escapedUser)
		if password, ok := u.User.Password(); ok {
			add(password)
		}
		// Each part of the query, bare keys and parts after a ";" too
		// (which url.Values drops), as written and decoded.
		for _, part := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
			_, value, found := strings.Cut(part, "=")
			if !found {
				value = part
			}
			add(value)
			if decoded, err := url.QueryUnescape(value); err == nil {
				add(decoded)
			}
		}
	}
	slices.SortStableFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return secrets
}

// RPCErrorOf returns the JSON-RPC error code and message of an error the
// server answered with, or ok=false for any other failure. The message is
// one the server's caller may read: secret-free, and calling the server
// "the server", not naming its URL.
func RPCErrorOf(err error) (code int, message string, ok bool) {
	var e *Error
	if errors.As(err, &e) && e.RPCCode != 0 && e.Kind == ErrProtocol {
		return e.RPCCode, e.naming("the server"), true
	}
	return 0, "", false
}

// NotDelivered reports a failure that certainly happened before the server
// saw the request (connection refused, unknown host, a session that ended
// or that the server no longer knows), so that sending it again on a new
// session cannot run it twice.
func NotDelivered(err error) bool {
	var dnsErr *net.DNSError
	return errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, errNotSent) || errors.As(err, &dnsErr)
}
