package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// libraryTimeoutGrace keeps the MCP library's own timers (SSE endpoint and
// response waits) behind the target's deadline, so a timeout always comes
// back as our context's, never as the library's untyped text.
const libraryTimeoutGrace = 5 * time.Second

// Connect opens and initializes a session. ctx bounds only the handshake;
// the session lives until Close. onToolsChanged, if not nil, is called (on
// the library's goroutine: keep it short) when the server sends
// notifications/tools/list_changed.
func Connect(ctx context.Context, t Target, onToolsChanged func()) (*Session, error) {
	switch t.Transport {
	case TransportStreamableHTTP, TransportSSE:
		return connect(ctx, t, t.Transport, onToolsChanged)
	default:
		// The MCP specification's backwards-compatibility rule: POST
		// initialize first; a 4xx answer means a legacy HTTP+SSE server.
		s, err := connect(ctx, t, TransportStreamableHTTP, onToolsChanged)
		if err == nil || !errors.Is(err, transport.ErrLegacySSEServer) {
			return s, err
		}
		return connect(ctx, t, TransportSSE, onToolsChanged)
	}
}

// connect opens a session over one transport: the transport, the event
// stream, then the initialize handshake.
func connect(ctx context.Context, t Target, kind Transport, onToolsChanged func()) (*Session, error) {
	watch := &streamWatch{}
	tr, err := newTransport(t, kind, watch)
	if err != nil {
		return nil, &Error{Kind: ErrProtocol, Message: fmt.Sprintf("connecting: %s is not a usable URL", t.redactedURL()), Err: err}
	}
	s := newSession(t, kind, tr, onToolsChanged)
	s.watch = watch
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
	return s, nil
}

// newTransport makes mcp-go's client transport of the kind asked for, on
// the target's HTTP client.
func newTransport(t Target, kind Transport, watch *streamWatch) (transport.Interface, error) {
	httpClient := t.httpClient(watch)
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
		// The GET stream carries list_changed between requests. It needs
		// a pre-2026-07-28 revision, which ProtocolVersion pins anyway.
		transport.WithContinuousListening(), //nolint:staticcheck // see above
		transport.WithHTTPLogger(quietLogger))
}

func newSession(t Target, kind Transport, tr transport.Interface, onToolsChanged func()) *Session {
	s := &Session{target: t, closed: make(chan struct{}), answersOnStream: kind == TransportSSE, stop: func() {}}
	s.info.Transport = kind
	s.lost, s.loseWith = context.WithCancelCause(context.Background())
	s.client = client.NewClient(tr, client.WithProtocolVersion(ProtocolVersion))
	if onToolsChanged != nil {
		s.client.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationToolsListChanged) {
				onToolsChanged()
			}
		})
	}
	s.client.OnConnectionLost(s.end) // SSE
	return s
}

// start opens the transport. The event stream of SSE belongs to the
// context given to Start, so the session gets its own, ended by Close,
// apart from the caller's deadline; the deadline still ends the attempt.
func (s *Session) start(ctx context.Context) error {
	ex := &exchange{}
	sessionCtx, stop := context.WithCancel(withExchange(context.Background(), ex))
	s.stop = stop
	stopOnTimeout := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.DeadlineExceeded {
			stop()
		}
	})
	defer stopOnTimeout()
	if err := s.client.Start(sessionCtx); err != nil {
		s.Close()
		if ctx.Err() != nil {
			err = errors.Join(context.DeadlineExceeded, err)
		}
		return s.connectError(err, ex)
	}
	return nil
}

// initialize runs the handshake and keeps what the server said.
func (s *Session) initialize(ctx context.Context) error {
	ex := &exchange{}
	result, err := s.client.Initialize(withExchange(ctx, ex), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      clientInfo,
	}})
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
	}
	return nil
}

// connectError keeps ErrLegacySSEServer visible to Connect's fallback.
func (s *Session) connectError(err error, ex *exchange) error {
	if errors.Is(err, transport.ErrLegacySSEServer) && s.target.Transport != s.info.Transport {
		return err
	}
	return classify(err, s.target, "connecting", ex)
}
