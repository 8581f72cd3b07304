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
// call, or hands them to the parked call its state names (mcp_park.go),
// returned; answered reports that the request was answered here already:
// its state belongs to another replica, which answered it, or is not
// valid, or names a parked call that is gone.
func (m *mcpHandlers) takeAnswers(w http.ResponseWriter, r *http.Request, key viewKey, msg *rpcMessage, vw *view, call *callRequest) (parked *parkedCall, answered bool) {
	call.opts.InputResponses = msg.Params.InputResponses
	state := msg.Params.RequestState
	if state == "" {
		return nil, false
	}
	if owner, _, _, ok := stateOwner(state); ok && owner != m.states.self {
		body, err := io.ReadAll(r.Body) // route put the body back
		if err == nil && m.forward(w, r, owner, body) {
			return nil, true
		}
	}
	sealed, err := m.states.open(state, m.bindingOf(r, key, msg, vw), time.Now())
	if err != nil {
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, err.Error())
		return nil, true
	}
	if sealed.Parked != "" {
		// Its answers are handed over once it knows the request serving it.
		if parked = m.parks.resume(sealed.Parked); parked == nil {
			writeParkedGone(w, msg.ID)
			return nil, true
		}
		return parked, false
	}
	call.opts.RequestState = sealed.State
	return nil, false
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

// inputRequestsProblem says why a server's inputRequests cannot go to the
// caller of tool, which declared it answers declared: they cannot be read,
// or one needs what the caller did not declare; "" when they can go.
func inputRequestsProblem(tool string, requests json.RawMessage, declared callerAsks) string {
	if len(requests) == 0 || string(requests) == "null" {
		return "" // only a state: the server sheds load
	}
	var asked map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(requests, &asked) != nil {
		return fmt.Sprintf("%s asked for input its caller cannot read: the server's inputRequests are malformed", tool)
	}
	for _, request := range asked {
		need, capability, ok := passNeeds(request.Method, request.Params)
		if !ok {
			capability = "a capability for " + shortMethod(request.Method)
		}
		if !ok || declared&need == 0 {
			return fmt.Sprintf("%s needs input (%s) that its caller did not declare it can give (%s)", tool, shortMethod(request.Method), capability)
		}
	}
	return ""
}

// inputRequiredAnswer is the caller's "input_required" result for the
// server's (inputRequestsProblem found none), its state sealed.
func (m *mcpHandlers) inputRequiredAnswer(r *http.Request, key viewKey, msg *rpcMessage, vw *view, asked *inputRequired) json.RawMessage {
	// Nothing asked, only a state: the server sheds load, and the caller
	// sends the call again later.
	answer := []byte(`{"resultType":"input_required"`)
	if len(asked.requests) > 0 && string(asked.requests) != "null" {
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
	if cut := runeCut(method, 64); cut < len(method) {
		return method[:cut] + "…"
	}
	return method
}
