package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"k8s.io/utils/lru"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// The catalog answers tools/call itself rather than through mcp-go's
// server: the call's progress and log messages go on that request's own
// answer stream (mcp-go can drop the last notification of a call or send
// it on another stream), a caller's cancel reaches the upstream call, and
// a call costs what a REST execute costs. Everything else (initialize,
// tools/list, listening streams) stays mcp-go's. Nothing here is kept per
// session but the calls in flight and a caller's log level, both bounded,
// so any replica serves any caller.

// rpcMessage is what the catalog reads of an incoming JSON-RPC message.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	// rawParams is params as sent, for mcp-go's header validators.
	rawParams json.RawMessage
	Params    struct {
		Name      string                     `json:"name"`
		Arguments json.RawMessage            `json:"arguments"`
		Level     string                     `json:"level"`
		RequestID json.RawMessage            `json:"requestId"`
		Cursor    json.RawMessage            `json:"cursor"`
		Meta      map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// UnmarshalJSON decodes the message and keeps its params as sent.
func (m *rpcMessage) UnmarshalJSON(b []byte) error {
	var envelope struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(b, &envelope); err != nil {
		return err
	}
	m.JSONRPC, m.ID, m.Method, m.rawParams = envelope.JSONRPC, envelope.ID, envelope.Method, envelope.Params
	if len(envelope.Params) == 0 || string(envelope.Params) == "null" {
		return nil
	}
	return json.Unmarshal(envelope.Params, &m.Params)
}

// modern reports a request of the 2026-07-28 revision.
func (m *rpcMessage) modern(r *http.Request) bool {
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

// maxCallerSessions bounds the legacy sessions whose log level is kept.
const maxCallerSessions = 10000

// callerSessions is what the catalog keeps of callers' legacy sessions:
// the calls in flight (to cancel them on notifications/cancelled) and the
// log level each asked for.
type callerSessions struct {
	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc
	levels   *lru.Cache
}

func newCallerSessions() *callerSessions {
	return &callerSessions{inflight: map[string]context.CancelCauseFunc{}, levels: lru.New(maxCallerSessions)}
}

// track registers a call in flight so that a cancel can reach it; the
// returned func forgets it.
func (cs *callerSessions) track(session string, id json.RawMessage, cancel context.CancelCauseFunc) func() {
	if session == "" || len(id) == 0 {
		return func() {}
	}
	key := session + "\x00" + string(id)
	cs.mu.Lock()
	cs.inflight[key] = cancel
	cs.mu.Unlock()
	return func() {
		cs.mu.Lock()
		delete(cs.inflight, key)
		cs.mu.Unlock()
	}
}

// cancel ends the session's call with id, and reports whether this
// replica had it.
func (cs *callerSessions) cancel(session string, id json.RawMessage) bool {
	cs.mu.Lock()
	cancel, ok := cs.inflight[session+"\x00"+string(id)]
	cs.mu.Unlock()
	if ok {
		cancel(errCancelledByCaller)
	}
	return ok
}

func (cs *callerSessions) level(session string) string {
	if v, ok := cs.levels.Get(session); ok {
		return v.(string)
	}
	return ""
}

func (cs *callerSessions) setLevel(session, level string) {
	if session != "" {
		cs.levels.Add(session, level)
	}
}

// sessionOf names a caller's legacy session for what the catalog keeps of
// it: the session id, scoped to the endpoint and to the caller, so that
// one caller cannot cancel another's calls or set another's log level by
// presenting its session id. "" when the request names no session.
func sessionOf(r *http.Request, key viewKey) string {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return ""
	}
	identity := ""
	if who := callerFrom(r.Context()); who != nil {
		identity = who.identity
	}
	return strings.Join([]string{identity, menuLabel(key), id}, "\x00")
}

// notRelayed are the keys of a caller's _meta that do not go upstream
// besides those wire.RelayedMeta keeps back: baggage is not the catalog's
// to forward (docs/observability.md). A caller's traceparent and
// tracestate go on as they are unless the catalog traces, when mcpclient
// puts its own call span's there instead.
var notRelayed = []string{"baggage"}

var errCancelledByCaller = errors.New("the caller cancelled the call")

// serveCall is the MCP entry to a tool call (pipeline.go): it checks the
// request's wire, answers find_tools and unwraps call_tool when the menu
// is searched, and answers the call's result on its own answer stream,
// with the progress and log messages the caller asked for before it.
func (m *mcpHandlers) serveCall(w http.ResponseWriter, r *http.Request, key viewKey, msg *rpcMessage) {
	c := m.catalog
	ctx, end := c.beginCall(w, r, "mcp", "tools/call", msg.Params.Meta)
	defer end()
	modern := msg.modern(r)
	if modern {
		if problem := modernHeaderProblem(r, msg); problem != "" {
			writeRPCError(w, http.StatusBadRequest, msg.ID, mcp.HEADER_MISMATCH, problem)
			return
		}
	}
	vw, err := c.menus.view(ctx, key)
	if err != nil {
		writeRPCError(w, http.StatusServiceUnavailable, msg.ID, mcp.INTERNAL_ERROR, "the catalog cannot read its cache yet; retry")
		return
	}
	if vw.exposure.Search {
		var answered bool
		if msg, answered = m.serveSearchCall(ctx, w, key, msg, vw, modern); answered {
			return
		}
	}
	session := sessionOf(r, key)
	if session != "" {
		// A legacy session's caller cancels with a notification, which
		// may come to this replica; any other cancels by closing the
		// request, which ends ctx.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		defer m.sessions.track(session, msg.ID, cancel)()
	}

	stream := newCallStream(w, msg.ID, modern)
	defer stream.close()
	call := &callRequest{name: msg.Params.Name, arguments: msg.Params.Arguments, view: vw,
		opts: mcpclient.CallOptions{Meta: wire.RelayedMeta(msg.Params.Meta, notRelayed...)}}
	if modern {
		call.check = func(entry *menu.Entry) error {
			if problem := paramHeaderProblem(r, msg, entry.Tool.InputSchema.Raw); problem != "" {
				return &protocolError{code: mcp.HEADER_MISMATCH, message: problem}
			}
			return nil
		}
	}
	if token := msg.Params.Meta["progressToken"]; len(token) > 0 {
		call.opts.OnProgress = func(params json.RawMessage) {
			if params, err := wire.WithProgressToken(params, token); err == nil {
				stream.notify("notifications/progress", params)
			}
		}
	}
	level := msg.meta(mcp.MetaKeyLogLevel)
	if !modern {
		level = m.sessions.level(session)
	}
	if level != "" {
		call.opts.LogLevel = level
		call.opts.OnLog = func(params json.RawMessage) { stream.notify("notifications/message", params) }
	}
	_, envelope, err := c.runCall(ctx, key, call)
	var unknown *unknownToolError
	var protoErr *protocolError
	switch {
	case err == nil:
		stream.result(callAnswerOf(envelope, modern))
	case errors.Is(context.Cause(ctx), errCancelledByCaller):
		// A cancelled request gets no answer.
	case errors.As(err, &unknown):
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, fmt.Sprintf("tool %s not found", unknown.name))
	case errors.As(err, &protoErr):
		writeRPCError(w, http.StatusBadRequest, msg.ID, protoErr.code, protoErr.message)
	default:
		answerFailure(stream, err, modern)
	}
}

// answerFailure answers a failed tools/call, recorded already. What the
// model can act on (bad arguments: SEP-1303 in MCP 2025-11-25; a server
// down) is a tool result with isError; being told to slow down (the
// caller's rate, a busy server) or refused is a JSON-RPC error the
// client's code handles, as 429 and 403 are over REST.
func answerFailure(stream *callStream, err error, modern bool) {
	var reqErr *requestError
	var upErr *upstreamError
	switch outcome := outcomeOf(err); {
	case outcome == "rate_limited" || outcome == "busy":
	case errors.As(err, &reqErr):
		stream.result(resultOf(mcp.NewToolResultError(reqErr.message), modern))
		return
	case errors.As(err, &upErr):
		stream.result(resultOf(mcp.NewToolResultError(upErr.Error()), modern))
		return
	}
	stream.error(mcp.INTERNAL_ERROR, err.Error())
}

// modernHeaderProblem checks what the 2026-07-28 revision requires of a
// request's headers: the version in the header and in _meta alike, and
// Mcp-Method and Mcp-Name mirroring the body (mcp-go's validator).
func modernHeaderProblem(r *http.Request, msg *rpcMessage) string {
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

// resultOf is a tools/call result as a caller of the revision expects it.
// 2026-07-28 requires resultType; the revisions before it have none.
func resultOf(result *mcp.CallToolResult, modern bool) json.RawMessage {
	answer := *result
	answer.ResultType = ""
	if modern {
		answer.ResultType = mcp.ResultTypeComplete
	}
	raw, _ := json.Marshal(answer)
	return raw
}

// callAnswerOf is a tools/call result from the envelope, in one encoding:
// the content items and structured content as the server returned them
// (the catalog relays them, it does not reinterpret them), the error's
// text when an error came without content, the catalog's note last, and
// resultType for a 2026-07-28 caller. It is appended as bytes: the items
// are JSON values decoded from the server's answer (or encoded by the
// catalog), and json.Marshal would scan and compact each once more.
func callAnswerOf(env Envelope, modern bool) json.RawMessage {
	content := env.Content
	text := func(s string) json.RawMessage {
		raw, _ := json.Marshal(mcp.NewTextContent(s))
		return raw
	}
	if env.IsError && len(content) == 0 {
		content = []json.RawMessage{text(env.Error)}
	}
	if env.System != "" {
		content = append(content[:len(content):len(content)], text(env.System))
	}
	size := len(env.StructuredContent) + 80
	for _, item := range content {
		size += len(item) + 1
	}
	answer := make([]byte, 0, size)
	answer = append(answer, `{"content":[`...)
	for i, item := range content {
		if i > 0 {
			answer = append(answer, ',')
		}
		if len(item) == 0 {
			item = jsonNull // as json.Marshal writes a nil RawMessage
		}
		answer = append(answer, item...)
	}
	answer = append(answer, ']')
	if len(bytes.TrimSpace(env.StructuredContent)) > 0 {
		answer = append(answer, `,"structuredContent":`...)
		answer = append(answer, env.StructuredContent...)
	}
	if env.IsError {
		answer = append(answer, `,"isError":true`...)
	}
	if modern {
		answer = append(answer, `,"resultType":"`+string(mcp.ResultTypeComplete)+`"`...)
	}
	return append(answer, '}')
}

// callStream answers one call: a JSON answer, or, once a notification is
// sent, an event stream that carries the notifications and then the
// answer. It is an http.ResponseWriter only to pass through answerFailure.
type callStream struct {
	http.ResponseWriter
	id        json.RawMessage
	mu        sync.Mutex
	streaming bool
	done      bool
}

func newCallStream(w http.ResponseWriter, id json.RawMessage, _ bool) *callStream {
	return &callStream{ResponseWriter: w, id: id}
}

// notify sends a notification about the call, turning the answer into an
// event stream on the first one.
func (s *callStream) notify(method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	if !s.streaming {
		s.streaming = true
		h := s.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		s.WriteHeader(http.StatusOK)
	}
	raw, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", method, params})
	s.event(raw)
}

// close ends the answer for good, answered or not (a cancelled call gets
// none): a notification the upstream sent after its answer must not write
// to a response net/http has already reused.
func (s *callStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
}

func (s *callStream) event(data []byte) {
	// The answer relays the server's content as it came, line breaks
	// included, which WriteEvent makes one line.
	_ = wire.WriteEvent(s.ResponseWriter, "message", data)
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// jsonNull is what json.Marshal writes for an empty json.RawMessage.
var jsonNull = json.RawMessage("null")

// result answers with result, a JSON value (callAnswerOf's, which relays
// the server's content as it came, or resultOf's), appended into the
// JSON-RPC answer as it is: json.Marshal would scan it all again.
func (s *callStream) result(result json.RawMessage) {
	s.finish(resultAnswer(s.id, result))
}

// resultAnswer is the JSON-RPC answer to id with result, in a buffer of
// its exact size.
func resultAnswer(id, result json.RawMessage) []byte {
	if len(id) == 0 {
		id = jsonNull
	}
	if len(result) == 0 {
		result = jsonNull
	}
	const frame = len(`{"jsonrpc":"2.0","id":`) + len(`,"result":`) + len(`}`)
	answer := make([]byte, 0, len(id)+len(result)+frame)
	answer = append(answer, `{"jsonrpc":"2.0","id":`...)
	answer = append(answer, id...)
	answer = append(answer, `,"result":`...)
	answer = append(answer, result...)
	return append(answer, '}')
}

func (s *callStream) error(code int, message string) {
	raw, _ := json.Marshal(rpcErrorBody(s.id, code, message))
	s.finish(raw)
}

func (s *callStream) finish(raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.streaming {
		s.event(raw)
		return
	}
	s.Header().Set("Content-Type", "application/json")
	s.WriteHeader(http.StatusOK)
	_, _ = s.Write(raw)
}

type rpcErrorObject struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func rpcErrorBody(id json.RawMessage, code int, message string) rpcErrorObject {
	if len(id) == 0 {
		id = jsonNull
	}
	body := rpcErrorObject{JSONRPC: "2.0", ID: id}
	body.Error.Code, body.Error.Message = code, message
	return body
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(rpcErrorBody(id, code, message))
}
