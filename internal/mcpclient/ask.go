package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// A server's requests to its client while it serves a call: elicitation
// (ask the user), sampling (ask the client's model) and roots. In the
// revisions before 2026-07-28 a server sends them on the call's own answer
// stream (go-sdk, the TypeScript SDK, mcp-go's elicitation), so the tap on
// that stream (tappedBody) sees which call they belong to and hands them
// to the call's CallOptions.OnRequest, which asks the call's caller. The
// answer goes back in a POST of the session's own (answer), bounded by the
// call's time, not by mcp-go's 30 seconds for a request's handler, and
// not cut when the call's stream ends.
//
// A call's stream that broke and resumed (a GET with Last-Event-ID) is
// tapped the same way, and ping is answered at once. A request that comes
// anywhere else (the listening GET stream, where mcp-go's servers send
// sampling and roots) belongs to no call: refuseServerRequest answers it
// at once, so the server never waits. Over the 2024-11-05 SSE transport
// mcp-go drops a server's requests unread, so nothing is declared there
// and servers do not ask.

// Answer is a client's answer to a server's request: Result, or Error (a
// JSON-RPC error object), each as the client sent it.
type Answer struct {
	Result json.RawMessage
	Error  json.RawMessage
}

// Refusal is the answer that refuses a request with code and message.
func Refusal(code int, message string) Answer {
	return Answer{Error: wire.ErrorObject(code, message)}
}

// AskedCapabilities are the client capabilities the operator declares to
// servers in initialize over Streamable HTTP, so that a server may ask
// the caller of a call:
// elicitation in both modes, and sampling. Never roots: a pooled session
// is shared by many callers, and servers keep the roots they were given
// for the whole session. Discovery declares the same, so the tools a
// server lists for it are the tools its calls see.
var AskedCapabilities = mcp.ClientCapabilities{
	Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
	Sampling:    &mcp.SamplingCapability{},
}

// serveAsk asks onRequest for the answer to the server's request id and
// sends it. ctx is the call's: when the call ends first, onRequest ends
// its wait and refuses.
func (s *Session) serveAsk(ctx context.Context, id json.RawMessage, method string, params json.RawMessage,
	onRequest func(context.Context, string, json.RawMessage) Answer) {
	answer := Answer{Result: json.RawMessage("{}")} // ping is the client's to answer, at once
	if method != string(mcp.MethodPing) {
		answer = onRequest(ctx, method, params)
	}
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.target.timeout())
	defer cancel()
	_ = s.answer(sendCtx, id, answer)
}

// answer POSTs the answer to the server's request id, on the session, as
// mcp-go sends its own messages: the target's headers, the session id and
// the negotiated revision; the session's HTTP client adds credentials.
func (s *Session) answer(ctx context.Context, id json.RawMessage, a Answer) error {
	var body []byte
	if len(a.Error) > 0 && string(a.Error) != "null" {
		body = wire.AppendError(nil, id, a.Error)
	} else {
		body = wire.AppendResult(nil, id, a.Result)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.target.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range s.target.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", s.info.ProtocolVersion)
	if st, ok := s.client.GetTransport().(*transport.StreamableHTTP); ok {
		if id := st.GetSessionId(); id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return resp.Body.Close()
}

// refuseServerRequest replaces mcp-go's handler of a server's requests
// (which would answer with handlers the operator does not register): a
// request the call's tap took is answered there (nothing is sent here),
// ping is answered, and any other is refused, saying why.
func refuseServerRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if ex := exchangeOf(ctx); ex != nil && ex.ask != nil {
		return nil, nil
	}
	if req.Method == string(mcp.MethodPing) {
		return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: json.RawMessage("{}")}, nil
	}
	return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, outsideACall, nil), nil
}

// outsideACall is why a server's request that came outside the answer
// stream of a call is refused.
const outsideACall = "mcp-operator relays a server's requests (elicitation, sampling) only on the answer stream of the tool call they belong to: " +
	"its session with this server is shared by many callers, so a request sent anywhere else has no caller to go to"
