package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/tracing"
)

// libraryTimeoutGrace keeps the MCP library's own timers (SSE endpoint and
// response waits) behind the target's deadline, so a timeout always comes
// back as our context's, never as the library's untyped text.
const libraryTimeoutGrace = 5 * time.Second

// Connect opens a session, in the newest revision both sides speak: the
// 2026-07-28 revision when the server answers server/discover for it, else
// initialize (2025-11-25 down to 2024-11-05) over Streamable HTTP, else the
// 2024-11-05 HTTP+SSE transport (Target.AnswersOnly tries initialize
// first). ctx bounds only the handshake; the session lives until Close.
// onListChanged, if not nil, is called (on the library's goroutine: keep
// it short) when the server says its tools, prompts or resources changed:
// whoever hears it lists them all again.
func Connect(ctx context.Context, t Target, onListChanged func()) (s *Session, err error) {
	ctx, span := tracing.Tracer().Start(ctx, "connect", trace.WithSpanKind(trace.SpanKindClient))
	defer func() {
		var e *Error
		if errors.As(err, &e) {
			_ = failSpan(span, e)
		}
		if s != nil {
			span.SetAttributes(tracing.ProtocolVersion.String(s.info.ProtocolVersion))
		}
		span.End()
	}()
	return connectAny(ctx, t, hearing{listChanged: onListChanged, stream: onListChanged != nil})
}

// hearing is what a session is opened to hear of its server.
type hearing struct {
	// listChanged, if not nil, is called when the server says its tools,
	// prompts or resources changed (see Connect).
	listChanged func()
	// stream says the session is held for a stream of the server's
	// notifications (list changes, a resource's updates): its HTTP client
	// is one for listening (httpClient).
	stream bool
}

func connectAny(ctx context.Context, t Target, h hearing) (*Session, error) {
	if t.Transport == TransportSSE {
		return connectInitialize(ctx, t, TransportSSE, h)
	}
	if t.AnswersOnly && !initializeRevision(t.Revision) {
		s, err := connectInitialize(ctx, t, TransportStreamableHTTP, h)
		switch {
		case err == nil && s.keepsSession():
			return s, nil
		case err == nil:
			s.Close() // a stateless server: in 2026-07-28 it can ask
		case !initializeRefused(err):
			// Unreachable (no second wait), or an answer that may pass
			// (5xx, 429): a stateless session now would be held in its
			// place for as long as the target does not change.
			return nil, err
		}
	}
	if !initializeRevision(t.Revision) {
		s, err := connectStateless(ctx, t, h)
		if !errors.Is(err, errNotStateless) {
			return s, err
		}
	}
	s, err := connectInitialize(ctx, t, TransportStreamableHTTP, h)
	switch {
	case err == nil:
		return s, nil
	case t.Transport != TransportStreamableHTTP && errors.Is(err, transport.ErrLegacySSEServer):
		// The MCP specification's backwards-compatibility rule: a 4xx to
		// the initialize POST means a legacy HTTP+SSE server.
		return connectInitialize(ctx, t, TransportSSE, h)
	case initializeRevision(t.Revision) && serverAnswered(err):
		// The server spoke an older revision last time; it may have moved on.
		if stateless, merr := connectStateless(ctx, t, h); merr == nil {
			return stateless, nil
		}
	}
	return nil, err
}

// initializeRefused reports a server that answered initialize with a
// refusal, one it will give again: a 4xx (which mcp-go's transport, when
// it may fall back to SSE, names ErrLegacySSEServer), or an answer that is
// no initialize result.
func initializeRefused(err error) bool {
	if errors.Is(err, transport.ErrLegacySSEServer) {
		return true
	}
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case ErrProtocol, ErrMalformedResponse, ErrUnsupportedVersion:
		return true
	case ErrHTTPStatus:
		return e.HTTPStatus >= 400 && e.HTTPStatus < 500 && e.HTTPStatus != http.StatusTooManyRequests
	}
	return false
}

// keepsSession reports whether the server gave the session an id: it
// keeps the session, and can send requests on it.
func (s *Session) keepsSession() bool {
	st, ok := s.client.GetTransport().(*transport.StreamableHTTP)
	return ok && st.GetSessionId() != ""
}

// initializeRevision reports a revision before 2026-07-28; "" is none known.
func initializeRevision(revision string) bool {
	return revision != "" && !mcp.IsModernProtocol(revision)
}

// connectInitialize opens a session over one transport with the initialize
// handshake: the transport, the event stream, then initialize.
func connectInitialize(ctx context.Context, t Target, kind Transport, h hearing) (*Session, error) {
	watch := newStreamWatch()
	// Only Streamable HTTP's listening GET follows initialize and carries
	// the revision it negotiated; HTTP+SSE's GET opens the session before
	// initialize, so its client must not wait for that revision.
	clientWatch := watch
	if kind == TransportSSE {
		clientWatch = nil
	}
	httpClient := t.httpClient(ctx, clientWatch, h.stream)
	tr, err := newTransport(t, kind, httpClient)
	if err != nil {
		return nil, &Error{Kind: ErrProtocol, Message: fmt.Sprintf("connecting: %s is not a usable URL", t.redactedURL()), Err: err}
	}
	s := newSession(t, kind, tr, h.listChanged)
	s.watch, s.http = watch, httpClient
	if kind == TransportStreamableHTTP {
		// mcp-go retries a failed listening stream every second without a
		// word; when the server cannot be reached or forgot the session, end
		// the session so its owner reconnects and lists what it missed.
		watch.lost = s.end
	}
	startCtx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	if err := s.start(startCtx); err != nil {
		return nil, err
	}
	if err := s.initialize(startCtx); err != nil {
		return nil, err
	}
	if kind == TransportStreamableHTTP && !s.info.listChanges().IsEmpty() {
		waitCtx, cancel := context.WithTimeout(startCtx, listenSettleTimeout)
		defer cancel()
		s.awaitListening(waitCtx)
		if !s.Listening() {
			// One stream carries every list change: none is heard.
			s.info.keepListChanges(mcp.SubscriptionFilter{})
		}
	}
	return s, nil
}

// listenSettleTimeout bounds the wait for a listening stream's first
// answer while connecting; one that takes longer counts as not (yet) open.
const listenSettleTimeout = 5 * time.Second

// newTransport makes mcp-go's client transport of the kind asked for, on
// the target's HTTP client.
func newTransport(t Target, kind Transport, httpClient *http.Client) (transport.Interface, error) {
	if kind == TransportSSE {
		return transport.NewSSE(t.URL,
			transport.WithHTTPClient(httpClient),
			transport.WithHeaders(t.Headers),
			transport.WithEndpointTimeout(t.timeout()+libraryTimeoutGrace),
			transport.WithResponseTimeout(t.timeout()+libraryTimeoutGrace),
			transport.WithSSELogger(quietLogger))
	}
	return transport.NewStreamableHTTP(t.URL,
		transport.WithHTTPBasicClient(httpClient),
		transport.WithHTTPHeaders(t.Headers),
		// The GET stream carries list_changed between requests in the
		// revisions before 2026-07-28, which this transport is for.
		transport.WithContinuousListening(), //nolint:staticcheck // see above
		transport.WithHTTPLogger(quietLogger))
}

func newSession(t Target, kind Transport, tr transport.Interface, onListChanged func()) *Session {
	s := &Session{target: t, closed: make(chan struct{}), answersOnStream: kind == TransportSSE, stop: func() {}, levelLock: make(chan struct{}, 1),
		watch: newStreamWatch(), routes: map[string]func(string, json.RawMessage){}}
	s.info.Transport = kind
	s.lost, s.loseWith = context.WithCancelCause(context.Background())
	if tr == nil {
		return s // 2026-07-28: no mcp-go client (post.go)
	}
	s.client = client.NewClient(tr, client.WithProtocolVersion(ProtocolVersion))
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		switch {
		case isListChanged(n.Method) && onListChanged != nil:
			onListChanged()
		case s.answersOnStream:
			s.routeProgress(n)
		}
	})
	s.client.OnConnectionLost(s.end) // SSE
	return s
}

// start opens the transport. The event stream of SSE belongs to the
// context given to Start, so the session gets its own, ended by Close,
// apart from the caller's deadline; the deadline still ends the attempt.
func (s *Session) start(ctx context.Context) error {
	ex := &exchange{}
	sessionCtx, stop := context.WithCancel(withExchange(context.Background(), ex))
	s.stop, s.streamCtx = stop, sessionCtx
	stopOnTimeout := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.DeadlineExceeded {
			stop()
		}
	})
	defer stopOnTimeout()
	if s.client == nil {
		return nil
	}
	if err := s.client.Start(sessionCtx); err != nil {
		s.Close()
		if ctx.Err() != nil {
			err = errors.Join(context.DeadlineExceeded, err)
		}
		return s.connectError(err, ex)
	}
	if tr, ok := s.client.GetTransport().(transport.BidirectionalInterface); ok {
		// After Start, which installs mcp-go's own handler.
		tr.SetRequestHandler(refuseServerRequest)
	}
	return nil
}

// initialize runs the handshake and keeps what the server said.
func (s *Session) initialize(ctx context.Context) error {
	ex := &exchange{}
	params := mcp.InitializeParams{ProtocolVersion: ProtocolVersion, ClientInfo: clientInfo}
	if !s.answersOnStream && !s.target.AnswersOnly {
		// Over SSE mcp-go drops a server's requests unread, and an
		// AnswersOnly session's callers cannot be asked: declaring what
		// could not be answered would have servers ask and wait.
		params.Capabilities = AskedCapabilities
	}
	result, err := s.client.Initialize(withExchange(ctx, ex), mcp.InitializeRequest{Params: params})
	if err != nil {
		s.Close()
		return s.connectError(err, ex)
	}
	s.info = ServerInfo{
		Name:            result.ServerInfo.Name,
		Version:         result.ServerInfo.Version,
		ProtocolVersion: result.ProtocolVersion,
		Transport:       s.info.Transport,
		ListChanged:     result.Capabilities.Tools != nil && result.Capabilities.Tools.ListChanged,
		Capabilities:    announced(result.Capabilities),
	}
	s.logging = result.Capabilities.Logging != nil
	s.watch.knowVersion(result.ProtocolVersion)
	return nil
}

// connectError keeps ErrLegacySSEServer visible to Connect's fallback.
func (s *Session) connectError(err error, ex *exchange) error {
	if errors.Is(err, transport.ErrLegacySSEServer) && s.target.Transport != s.info.Transport {
		return err
	}
	return classify(err, s.target, "connecting", ex)
}
