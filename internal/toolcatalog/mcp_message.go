package toolcatalog

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// rpcMessage is what the catalog reads of an incoming JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	// rawParams is params as sent, for mcp-go's header validators.
	rawParams json.RawMessage
	Params    struct {
		Name      string                     `json:"name"`
		Arguments json.RawMessage            `json:"arguments"`
		Level     string                     `json:"level"`
		RequestID json.RawMessage            `json:"requestId"`
		Cursor    json.RawMessage            `json:"cursor"`
		Meta      map[string]json.RawMessage `json:"_meta"`
		// InputResponses and RequestState come with a 2026-07-28 call sent
		// again with the answers to what its server asked.
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   string          `json:"requestState"`
	} `json:"params"`
	// listen is the resources a 2026-07-28 subscriptions/listen names that
	// its caller may subscribe to (mcp_subscribe.go), nil when it names none.
	listen *listenResources
}

// UnmarshalJSON decodes the message and keeps its params as sent.
func (m *rpcMessage) UnmarshalJSON(b []byte) error {
	var envelope wire.Message
	if err := json.Unmarshal(b, &envelope); err != nil {
		return err
	}
	m.ID, m.Method, m.rawParams = envelope.ID, envelope.Method, envelope.Params
	if len(envelope.Params) == 0 || string(envelope.Params) == "null" {
		return nil
	}
	return json.Unmarshal(envelope.Params, &m.Params)
}

// stateless reports a request of the 2026-07-28 revision.
func (m *rpcMessage) stateless(r *http.Request) bool {
	// As mcp-go tells: a 2026-07-28 (or later) version in the header or in
	// _meta; an older one in _meta is a legacy request.
	return mcp.IsModernProtocol(r.Header.Get("MCP-Protocol-Version")) || mcp.IsModernProtocol(m.meta(mcp.MetaKeyProtocolVersion))
}

func (m *rpcMessage) meta(key string) string {
	raw, ok := m.Params.Meta[key]
	if !ok {
		return "" // not decoded: json.Unmarshal of nothing builds an error
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// statelessHeaderProblem checks what the 2026-07-28 revision requires of a
// request's headers: the version in the header and in _meta alike, and
// Mcp-Method and Mcp-Name mirroring the body (mcp-go's validator).
func statelessHeaderProblem(r *http.Request, msg *rpcMessage) string {
	header, meta := r.Header.Get("MCP-Protocol-Version"), msg.meta(mcp.MetaKeyProtocolVersion)
	switch {
	case header == "" || meta == "":
		return "header mismatch: MCP-Protocol-Version and _meta." + mcp.MetaKeyProtocolVersion + " are both required"
	case header != meta:
		return fmt.Sprintf("header mismatch: MCP-Protocol-Version %q, _meta says %q", header, meta)
	}
	if err := mcp.ValidateStandardHeaders(r.Header.Get, header, mcp.MCPMethod(msg.Method), msg.rawParams); err != nil {
		return err.Error()
	}
	return ""
}

// paramHeaderProblem checks the Mcp-Param-* headers a 2026-07-28 call
// must send for the arguments its tool's schema binds to headers
// (x-mcp-header), with mcp-go's validator.
func paramHeaderProblem(r *http.Request, msg *rpcMessage, inputSchema json.RawMessage) string {
	lookup := func(name string) (string, bool) {
		values, ok := r.Header[http.CanonicalHeaderKey(name)]
		if !ok || len(values) == 0 {
			return "", false
		}
		return values[0], true
	}
	if err := mcp.ValidateParamHeadersLookup(lookup, &mcp.Tool{RawInputSchema: inputSchema}, msg.rawParams); err != nil {
		return err.Error()
	}
	return ""
}

// writeRPCError answers a request with a JSON-RPC error.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(wire.AppendError(nil, id, wire.ErrorObject(code, message)), '\n'))
}
