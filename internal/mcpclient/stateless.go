package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/tracing"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// The 2026-07-28 revision ("stateless"): no initialize and no session; the
// client discovers the server (server/discover), and every request carries
// the protocol version and the client's identity and capabilities in its
// _meta and the method (and tool name) in headers; list changes arrive on
// a subscriptions/listen stream. mcp-go's client speaks it only through its
// typed methods, which would re-encode tool schemas, so the few requests
// the operator makes are decorated here on mcp-go's transport.

// RevisionStateless is the stateless revision.
const RevisionStateless = mcp.ProtocolVersion20260728

// Revisions are the MCP revisions the operator speaks, newest first.
var Revisions = mcp.ValidProtocolVersions

// errNotStateless says a server answered the 2026-07-28 probe as a server of
// an older revision does: the caller goes on with initialize.
var errNotStateless = errors.New("the server does not speak 2026-07-28")

// codeUnsupportedVersion is what a server of 2026-07-28 or later answers a
// revision it does not speak with.
const codeUnsupportedVersion = mcp.UNSUPPORTED_PROTOCOL_VERSION

// connectStateless opens a 2026-07-28 session: server/discover, and when
// the server announces list changes, a subscriptions/listen stream.
func connectStateless(ctx context.Context, t Target, h hearing) (*Session, error) {
	watch := newStreamWatch()
	httpClient := t.httpClient(ctx, watch, h.stream)
	if _, err := url.Parse(t.URL); err != nil {
		return nil, &Error{Kind: ErrProtocol, Message: fmt.Sprintf("connecting: %s is not a usable URL", t.redactedURL()), Err: err}
	}
	// No mcp-go transport: requests go out through post.go.
	s := newSession(t, TransportStreamableHTTP, nil, nil)
	s.stateless, s.watch, s.http = true, watch, httpClient
	startCtx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	if err := s.start(startCtx); err != nil {
		return nil, err
	}
	if err := s.discover(startCtx); err != nil {
		s.Close()
		return nil, err
	}
	// The server's acknowledgement names the list changes it will send.
	var acked atomic.Pointer[mcp.SubscriptionFilter]
	if want := s.info.listChanges(); !want.IsEmpty() && h.listChanged != nil {
		go s.listen(h.listChanged, want, &acked)
		s.awaitListening(startCtx)
	}
	var delivered mcp.SubscriptionFilter
	if got := acked.Load(); got != nil {
		delivered = *got
	}
	s.info.keepListChanges(delivered)
	return s, nil
}

// discover asks the server what it speaks. An answer that is not the
// 2026-07-28 revision's is errNotStateless.
func (s *Session) discover(ctx context.Context) error {
	raw, err := s.request(ctx, call{method: string(mcp.MethodServerDiscover)}, "connecting")
	if err != nil {
		if statelessRefusal(err) {
			return err
		}
		if serverAnswered(err) {
			return fmt.Errorf("%w: %w", errNotStateless, err)
		}
		return err
	}
	var result struct {
		SupportedVersions []string `json:"supportedVersions"`
		Capabilities      struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
			Logging json.RawMessage `json:"logging"`
			surfaceCapabilities
		} `json:"capabilities"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		return fmt.Errorf("%w: %w", errNotStateless, err)
	}
	if !slices.Contains(result.SupportedVersions, RevisionStateless) {
		// A server of an older revision that knows the method (go-sdk's
		// default server) lists what it does speak.
		return fmt.Errorf("%w: it offers %s", errNotStateless, strings.Join(result.SupportedVersions, ", "))
	}
	var server mcp.Implementation
	_ = json.Unmarshal(result.Meta[mcp.MetaKeyServerInfo], &server)
	s.info.Name, s.info.Version, s.info.ProtocolVersion = server.Name, server.Version, RevisionStateless
	s.info.ListChanged = result.Capabilities.Tools != nil && result.Capabilities.Tools.ListChanged
	s.info.Capabilities = result.Capabilities.read()
	s.logging = len(result.Capabilities.Logging) > 0
	return nil
}

// serverAnswered reports a failure that is the server's answer (an HTTP status
// or a JSON-RPC error), as opposed to not reaching it at all.
func serverAnswered(err error) bool {
	switch KindOf(err) {
	case ErrHTTPStatus, ErrProtocol, ErrMalformedResponse, ErrUnsupportedVersion:
		return true
	}
	return false
}

// statelessRefusal reports a 2026-07-28 server refusing the request for a
// reason of the protocol: there is no point in falling back.
func statelessRefusal(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.RPCCode == mcp.HEADER_MISMATCH || e.RPCCode == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY
}

// encode builds the JSON-RPC request for c: its params with _meta, and in
// the 2026-07-28 revision the protocol's keys and headers.
func (s *Session) encode(ctx context.Context, id string, c call) (transport.JSONRPCRequest, error) {
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: c.method}
	meta := c.meta
	if trace.SpanContextFromContext(ctx).IsValid() {
		// The trace goes on in the request's _meta, as 2026-07-28 documents
		// (and in its HTTP headers, see recordingTransport).
		carried := tracing.MetaCarrier{}
		otel.GetTextMapPropagator().Inject(ctx, carried)
		if len(carried) > 0 {
			with := make(map[string]any, len(meta)+len(carried))
			for k, v := range meta {
				with[k] = v
			}
			for k, v := range carried {
				with[k] = v
			}
			meta = with
		}
	}
	var rawMeta json.RawMessage
	var err error
	switch {
	case s.stateless && len(meta) == 0:
		// Most calls: only the keys every 2026-07-28 request carries,
		// encoded once.
		rawMeta = statelessMeta
	case s.stateless:
		rawMeta, err = json.Marshal(protocolMeta(meta))
	case len(meta) == 0:
		req.Params = c.params
		return req, nil
	default:
		rawMeta, err = json.Marshal(meta)
	}
	if err != nil {
		return req, err
	}
	params, err := paramsWithMeta(c.params, rawMeta)
	if err != nil {
		return req, err
	}
	req.Params = params
	if s.stateless {
		// Sized for what post adds: its three headers and the target's.
		req.Header = make(http.Header, 5+len(s.target.Headers))
		for k, v := range standardHeaders(c, params) {
			req.Header.Set(k, v)
		}
		if bytes.Contains(c.schema, []byte("x-mcp-header")) {
			for k, v := range mcp.GenerateParamHeaders(&mcp.Tool{RawInputSchema: c.schema}, params) {
				req.Header.Set(k, v)
			}
		}
	}
	return req, nil
}

// standardHeaders are the Mcp-Method and Mcp-Name headers of a 2026-07-28
// request. A tool call names its tool from what is in hand, where mcp-go
// would decode the params (arguments and all) again to find it.
func standardHeaders(c call, params json.RawMessage) map[string]string {
	if c.method != string(mcp.MethodToolsCall) || c.tool == "" {
		return mcp.StandardHeaders(RevisionStateless, mcp.MCPMethod(c.method), params)
	}
	headers := map[string]string{mcp.HeaderMethod: c.method}
	if encoded, ok := mcp.EncodeHeaderValue(c.tool); ok {
		headers[mcp.HeaderName] = encoded
	}
	return headers
}

// paramsWithMeta is params, a JSON object, with rawMeta (encoded) as its
// _meta. The common case appends the key to the encoded object, on the
// call path of every tool call; params that carry a _meta of their own are
// decoded and the key replaced.
func paramsWithMeta(params any, rawMeta json.RawMessage) (json.RawMessage, error) {
	var err error
	raw := []byte("{}")
	if params != nil {
		if raw, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' || bytes.Contains(raw, []byte(`"_meta"`)) {
		fields := map[string]json.RawMessage{}
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, err
		}
		fields["_meta"] = rawMeta
		return json.Marshal(fields)
	}
	out := make([]byte, 0, len(raw)+len(rawMeta)+10)
	out = append(out, raw[:len(raw)-1]...)
	if len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"_meta":`...)
	out = append(out, rawMeta...)
	return append(out, '}'), nil
}

// statelessMeta is the _meta of a 2026-07-28 request that carries nothing
// else. Shared by every request: only ever read (clipped, so that an
// append copies).
var statelessMeta = func() json.RawMessage {
	raw, _ := json.Marshal(protocolMeta(nil))
	return slices.Clip(raw)
}()

// protocolMeta adds the keys every 2026-07-28 request carries.
func protocolMeta(meta map[string]any) map[string]any {
	out := make(map[string]any, len(meta)+3)
	for k, v := range meta {
		out[k] = v
	}
	out[mcp.MetaKeyProtocolVersion] = RevisionStateless
	out[mcp.MetaKeyClientInfo] = clientInfo
	if _, declared := out[mcp.MetaKeyClientCapabilities]; !declared {
		out[mcp.MetaKeyClientCapabilities] = map[string]any{}
	}
	return out
}

// listen holds a subscriptions/listen stream for the list changes in want
// until the session ends. The server's acknowledgement names those it will
// send (stored in acked); any makes the session Listening. When the stream
// ends the session ends too, so that its owner reconnects and lists what
// it missed.
func (s *Session) listen(onListChanged func(), want mcp.SubscriptionFilter, acked *atomic.Pointer[mcp.SubscriptionFilter]) {
	req, err := s.listenRequest(s.streamCtx, want)
	if err != nil {
		s.watch.settle()
		s.end(fmt.Errorf("%w: %w", errStreamLost, err))
		return
	}
	resp, err := s.http.Do(req)
	if err != nil {
		s.watch.settle()
		s.end(fmt.Errorf("%w: %w", errStreamLost, err))
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// No subscription: the server is polled instead.
		s.watch.settle()
		return
	}
	// A small buffer: the stream is held for the session's life, mostly
	// waiting for an event of a hundred bytes.
	_ = wire.ReadEvents(resp.Body, 256, func(data []byte) bool {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Notifications mcp.SubscriptionFilter `json:"notifications"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &msg) != nil {
			return false
		}
		switch {
		case msg.Method == "notifications/subscriptions/acknowledged":
			// Only what was asked for counts, whatever else it names.
			got := sharedListChanges(want, msg.Params.Notifications)
			acked.Store(&got)
			if !got.IsEmpty() {
				s.watch.listening.Store(true)
			}
			s.watch.settle()
		case isListChanged(msg.Method):
			onListChanged()
		}
		return false
	})
	s.watch.settle()
	s.end(fmt.Errorf("%w: the subscription to list changes ended", errStreamLost))
}

// listenRequest is the POST that opens a subscriptions/listen stream for
// the notifications want names, with the headers of a 2026-07-28 request.
func (s *Session) listenRequest(ctx context.Context, want mcp.SubscriptionFilter) (*http.Request, error) {
	params, err := json.Marshal(map[string]any{
		"_meta":         statelessMeta,
		"notifications": want,
	})
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": "listen", "method": string(mcp.MethodSubscriptionsListen), "params": json.RawMessage(params)})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.target.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range s.target.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", RevisionStateless)
	req.Header.Set("Mcp-Method", string(mcp.MethodSubscriptionsListen))
	return req, nil
}
