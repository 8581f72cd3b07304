package toolcatalog

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// A 2026-07-28 caller and a 2026-07-28 server: the server asks for input by
// answering "input_required", and the catalog passes that answer to the
// caller with its inputRequests as they came and the server's state sealed
// to the caller (request_state.go); the caller sends the call again with
// inputResponses and that state, which the catalog opens and passes to the
// server. A request the caller did not declare the capability for is not
// passed on: the call fails with a tool error saying so.

// takeAnswers reads the answers a 2026-07-28 call was sent again with into
// call, and reports whether the request was answered here already: its
// state belongs to another replica, which answered it, or is not valid.
func (m *mcpHandlers) takeAnswers(w http.ResponseWriter, r *http.Request, key viewKey, msg *rpcMessage, vw *view, call *callRequest) (answered bool) {
	call.opts.InputResponses = msg.Params.InputResponses
	state := msg.Params.RequestState
	if state == "" {
		return false
	}
	if owner, _, _, ok := stateOwner(state); ok && owner != m.states.self {
		body, err := io.ReadAll(r.Body) // route put the body back
		if err == nil && m.forward(w, r, owner, body) {
			return true
		}
	}
	server, err := m.states.open(state, m.bindingOf(r, key, msg, vw), time.Now())
	if err != nil {
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, err.Error())
		return true
	}
	call.opts.RequestState = server
	return false
}

// bindingOf is what a state sealed for msg's call is bound to, the tool
// read from the endpoint's menu as it is now.
func (m *mcpHandlers) bindingOf(r *http.Request, key viewKey, msg *rpcMessage, vw *view) string {
	identity := ""
	if who := callerFrom(r.Context()); who != nil {
		identity = who.identity
	}
	serverTool := ""
	if entry, ok := vw.byName[msg.Params.Name]; ok {
		serverTool = entry.Namespace + "/" + entry.Server + "/" + entry.Tool.OriginalName
	}
	return stateBinding(identity, menuLabel(key), msg.Params.Name, serverTool, msg.Params.Arguments)
}

// inputRequiredAnswer is the caller's "input_required" result for the
// server's, or, when the caller did not declare what a request needs, the
// tool error that says so.
func (m *mcpHandlers) inputRequiredAnswer(r *http.Request, key viewKey, msg *rpcMessage, vw *view, asked *inputRequired) json.RawMessage {
	if string(asked.requests) == "null" {
		asked.requests = nil
	}
	var requests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if len(asked.requests) > 0 && json.Unmarshal(asked.requests, &requests) != nil {
		return resultOf(mcp.NewToolResultError(fmt.Sprintf("%s asked for input its caller cannot read: the server's inputRequests are malformed", msg.Params.Name)), true)
	}
	declared := asksOfCapabilities(msg.Params.Meta[mcp.MetaKeyClientCapabilities])
	for _, request := range requests {
		need, capability, ok := passNeeds(request.Method, request.Params)
		if !ok || declared&need == 0 {
			if !ok {
				capability = "a capability for " + shortMethod(request.Method)
			}
			return resultOf(mcp.NewToolResultError(fmt.Sprintf(
				"%s needs input (%s) that its caller did not declare it can give (%s)", msg.Params.Name, shortMethod(request.Method), capability)), true)
		}
	}
	// Nothing asked, only a state: the server sheds load, and the caller
	// sends the call again later.
	answer := []byte(`{"resultType":"input_required"`)
	if len(asked.requests) > 0 {
		answer = append(answer, `,"inputRequests":`...)
		answer = append(answer, asked.requests...)
	}
	if asked.state != "" {
		answer = append(answer, `,"requestState":`...)
		answer = wire.AppendString(answer, m.states.seal(asked.state, m.bindingOf(r, key, msg, vw), time.Now()))
	}
	return append(answer, '}')
}

// passNeeds is what a 2026-07-28 caller must have declared to be passed a
// server's input request: what a legacy caller needs (askNeeds), and roots,
// which a 2026-07-28 server asks of each request, never of a shared
// session.
func passNeeds(method string, params json.RawMessage) (callerAsks, string, bool) {
	if method == string(mcp.MethodListRoots) {
		return asksRoots, "roots", true
	}
	return askNeeds(method, params)
}

// shortMethod is a server's method name as a message may quote it.
func shortMethod(method string) string {
	if len(method) > 64 {
		return method[:64] + "…"
	}
	return method
}
