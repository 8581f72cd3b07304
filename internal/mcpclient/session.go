package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// ProtocolVersion is the revision the operator asks for. It is the newest
// one that still has sessions and server-to-client notifications on a
// long-lived stream, which list_changed needs; servers that only speak an
// older revision negotiate down.
const ProtocolVersion = "2025-11-25"

// clientInfo is how the operator introduces itself to servers.
var clientInfo = mcp.Implementation{Name: "mcp-operator", Version: "v1alpha1"}

// quietLogger keeps the MCP library from logging on its own: it logs
// payloads, and the callers log what matters with their own context.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// ServerInfo is what a server said about itself while connecting.
type ServerInfo struct {
	Name            string
	Version         string
	ProtocolVersion string
	Transport       Transport
	// ListChanged is true when the server announced tools.listChanged.
	ListChanged bool
}

// Session is one initialized connection to an MCP server. It is safe for
// concurrent use.
type Session struct {
	endpoint Endpoint
	client   *client.Client
	info     ServerInfo
	status   *statusRecorder
	// stop ends the long-lived context that owns the server's event stream.
	stop context.CancelFunc
	// lost ends, with the cause, when the event stream breaks. Over SSE
	// answers arrive on that stream, so requests waiting on it fail then.
	lost            context.Context
	loseWith        context.CancelCauseFunc
	answersOnStream bool
	closed          chan struct{}
	closeOne        sync.Once
	nextID          atomic.Int64
}

// Connect opens and initializes a session. ctx bounds only the handshake;
// the session lives until Close. onToolsChanged, if not nil, is called (on
// the library's goroutine: keep it short) when the server sends
// notifications/tools/list_changed.
func Connect(ctx context.Context, ep Endpoint, onToolsChanged func()) (*Session, error) {
	switch ep.Transport {
	case TransportStreamableHTTP, TransportSSE:
		return connect(ctx, ep, ep.Transport, onToolsChanged)
	default:
		// The MCP specification's backwards-compatibility rule: POST
		// initialize first; a 4xx answer means a legacy HTTP+SSE server.
		s, err := connect(ctx, ep, TransportStreamableHTTP, onToolsChanged)
		if err == nil || !errors.Is(err, transport.ErrLegacySSEServer) {
			return s, err
		}
		return connect(ctx, ep, TransportSSE, onToolsChanged)
	}
}

func connect(ctx context.Context, ep Endpoint, kind Transport, onToolsChanged func()) (*Session, error) {
	status := &statusRecorder{}
	httpClient := ep.httpClient(status)
	var (
		tr  transport.Interface
		err error
	)
	if kind == TransportSSE {
		tr, err = transport.NewSSE(ep.URL,
			transport.WithHTTPClient(httpClient),
			transport.WithHeaders(ep.Headers),
			transport.WithEndpointTimeout(ep.timeout()),
			transport.WithResponseTimeout(ep.timeout()),
			transport.WithSSELogger(quietLogger))
	} else {
		tr, err = transport.NewStreamableHTTP(ep.URL,
			transport.WithHTTPBasicClient(httpClient),
			transport.WithHTTPHeaders(ep.Headers),
			// The GET stream carries list_changed between requests. It needs
			// a pre-2026-07-28 revision, which ProtocolVersion pins anyway.
			transport.WithContinuousListening(), //nolint:staticcheck // see above

			transport.WithHTTPLogger(quietLogger))
	}
	if err != nil {
		return nil, &Error{Kind: ErrProtocol, Message: fmt.Sprintf("connecting: %s is not a usable URL", ep.redactedURL()), Err: err}
	}

	// The SSE stream belongs to the context given to Start, so the session
	// gets its own, ended by Close, apart from the caller's deadline.
	sessionCtx, stop := context.WithCancel(context.Background())
	s := &Session{endpoint: ep, status: status, stop: stop, closed: make(chan struct{}), answersOnStream: kind == TransportSSE}
	s.lost, s.loseWith = context.WithCancelCause(context.Background())
	s.client = client.NewClient(tr, client.WithProtocolVersion(ProtocolVersion))
	if onToolsChanged != nil {
		s.client.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationToolsListChanged) {
				onToolsChanged()
			}
		})
	}
	lose := func(err error) {
		s.loseWith(err)
		s.markClosed()
	}
	s.client.OnConnectionLost(lose) // SSE
	if kind == TransportStreamableHTTP {
		// mcp-go retries a failed listening stream every second without a
		// word; when the server cannot be reached or forgot the session, end
		// the session so its owner reconnects and lists what it missed.
		status.listenerLost = lose
	}

	startCtx, cancel := context.WithTimeout(ctx, ep.timeout())
	defer cancel()
	stopOnStartTimeout := context.AfterFunc(startCtx, func() {
		// Start on SSE dials with the session context; make the caller's
		// deadline end it too while the handshake runs.
		if startCtx.Err() == context.DeadlineExceeded {
			stop()
		}
	})
	defer stopOnStartTimeout()
	if err := s.client.Start(sessionCtx); err != nil {
		s.Close()
		if startCtx.Err() != nil {
			err = errors.Join(context.DeadlineExceeded, err)
		}
		return nil, wrapConnect(err, ep, kind, status)
	}
	result, err := s.client.Initialize(startCtx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      clientInfo,
	}})
	if err != nil {
		s.Close()
		return nil, wrapConnect(err, ep, kind, status)
	}
	s.info = ServerInfo{
		Name:            result.ServerInfo.Name,
		Version:         result.ServerInfo.Version,
		ProtocolVersion: result.ProtocolVersion,
		Transport:       kind,
		ListChanged:     result.Capabilities.Tools != nil && result.Capabilities.Tools.ListChanged,
	}
	return s, nil
}

// wrapConnect keeps ErrLegacySSEServer visible to Connect's fallback.
func wrapConnect(err error, ep Endpoint, kind Transport, status *statusRecorder) error {
	if errors.Is(err, transport.ErrLegacySSEServer) && ep.Transport != kind {
		return err
	}
	return classify(err, ep, "connecting", status)
}

// Info returns what the server said about itself.
func (s *Session) Info() ServerInfo { return s.info }

// Done is closed when the session ends: Close was called, or an SSE stream
// was lost.
func (s *Session) Done() <-chan struct{} { return s.closed }

func (s *Session) markClosed() {
	s.closeOne.Do(func() {
		close(s.closed)
		s.loseWith(errSessionClosed)
	})
}

var (
	// errSessionClosed is why a request on a closed session failed.
	errSessionClosed = errors.New("the session was closed")
	// errSessionForgotten is why a session whose server answered 404 ended.
	errSessionForgotten = errors.New("the server no longer knows the session")
	// errStreamLost marks a request whose answer's stream broke.
	errStreamLost = errors.New("the event stream ended")
)

// Close ends the session and its streams.
func (s *Session) Close() {
	s.markClosed()
	s.stop()
	_ = s.client.Close()
}

// Limits bound how much of a server's tool list is read.
type Limits struct {
	// MaxPages is the most tools/list pages read.
	MaxPages int
	// MaxTools is the most tools kept.
	MaxTools int
}

// DefaultLimits are generous for any real server and keep a broken or
// hostile one from exhausting memory.
var DefaultLimits = Limits{MaxPages: 1000, MaxTools: 5000}

// ToolList is the result of listing a server's tools.
type ToolList struct {
	// Tools in the order the server sent them.
	Tools []Tool
	// Truncated says a limit was hit: the server offers more than Tools.
	Truncated bool
}

// ListTools reads every page of tools/list, following nextCursor until the
// server has no more or a limit is hit. Each page is bounded by the
// endpoint's timeout.
func (s *Session) ListTools(ctx context.Context, limits Limits) (ToolList, error) {
	var (
		list   ToolList
		cursor string
		seen   = map[string]bool{}
		names  = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == limits.MaxPages {
			list.Truncated = true
			return list, nil
		}
		result, err := s.request(ctx, string(mcp.MethodToolsList), cursorParams(cursor), "listing tools")
		if err != nil {
			return ToolList{}, err
		}
		var decoded struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(result, &decoded); err != nil {
			return ToolList{}, classify(err, s.endpoint, "listing tools", s.status)
		}
		for _, raw := range decoded.Tools {
			if len(list.Tools) == limits.MaxTools {
				list.Truncated = true
				return list, nil
			}
			tool, err := decodeTool(raw)
			if err != nil {
				return ToolList{}, classify(err, s.endpoint, "listing tools", s.status)
			}
			// A name listed twice (a list that shifted between pages) is one
			// tool: calls address tools by name.
			if names[tool.Name] {
				continue
			}
			names[tool.Name] = true
			list.Tools = append(list.Tools, tool)
		}
		if decoded.NextCursor == "" {
			return list, nil
		}
		if seen[decoded.NextCursor] {
			return ToolList{}, &Error{Kind: ErrProtocol, Message: fmt.Sprintf("listing tools: %s sent the same nextCursor twice", s.endpoint.redactedURL())}
		}
		seen[decoded.NextCursor] = true
		cursor = decoded.NextCursor
	}
}

func cursorParams(cursor string) any {
	if cursor == "" {
		return nil
	}
	return map[string]string{"cursor": cursor}
}

// request sends one JSON-RPC request through the transport, which returns
// the raw result: the client's typed methods re-encode tool schemas through
// a narrower struct and would lose keys.
func (s *Session) request(ctx context.Context, method string, params any, doing string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.endpoint.timeout())
	defer cancel()
	if s.answersOnStream {
		defer context.AfterFunc(s.lost, cancel)()
	}
	s.status.reset()
	resp, err := s.client.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		// String ids never collide with the client's own numeric ones.
		ID:     mcp.NewRequestId("op-" + strconv.FormatInt(s.nextID.Add(1), 10)),
		Method: method,
		Params: params,
	})
	if err != nil {
		if cause := context.Cause(s.lost); s.answersOnStream && cause != nil {
			// The stream that would carry the answer broke: say why.
			err = fmt.Errorf("%w: %w", errStreamLost, cause)
		}
		return nil, classify(err, s.endpoint, doing, s.status)
	}
	if resp.Error != nil {
		return nil, rpcError(resp.Error, s.endpoint, doing)
	}
	return resp.Result, nil
}

// CallResult is a tools/call result as the server sent it.
type CallResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
}

// CallTool calls a tool by its name on the server, with arguments as a JSON
// object. A JSON-RPC error answer is an *Error with RPCCode set.
func (s *Session) CallTool(ctx context.Context, name string, arguments json.RawMessage) (CallResult, error) {
	params := struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{name, arguments}
	raw, err := s.request(ctx, string(mcp.MethodToolsCall), params, "calling tool "+name)
	if err != nil {
		return CallResult{}, err
	}
	var result CallResult
	if err := json.Unmarshal(raw, &result); err != nil {
		return CallResult{}, classify(err, s.endpoint, "calling tool "+name, s.status)
	}
	return result, nil
}
