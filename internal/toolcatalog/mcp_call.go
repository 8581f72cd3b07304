package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

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

// notRelayed are the keys of a caller's _meta that do not go upstream
// besides those wire.RelayedMeta keeps back: baggage is not the catalog's
// to forward (docs/observability.md). A caller's traceparent and
// tracestate go on as they are unless the catalog traces, when mcpclient
// puts its own call span's there instead.
var notRelayed = []string{"baggage"}

var errCancelledByCaller = errors.New("the caller cancelled the call")

// serveCall is the MCP entry to a tool call (call_pipeline.go): it checks the
// request's wire, answers find_tools and unwraps call_tool when the menu
// is searched, and answers the call's result on its own answer stream,
// with the progress and log messages the caller asked for before it.
func (m *mcpHandlers) serveCall(w http.ResponseWriter, r *http.Request, key viewKey, msg *rpcMessage) {
	c := m.catalog
	ctx, end := c.beginCall(w, r, "mcp", "tools/call", msg.Params.Meta)
	defer end()
	stateless := msg.stateless(r)
	if stateless {
		if problem := statelessHeaderProblem(r, msg); problem != "" {
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
		if msg, answered = m.serveSearchCall(ctx, w, key, msg, vw, stateless); answered {
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

	stream := newCallStream(w, msg.ID)
	defer stream.close()
	token := msg.Params.Meta["progressToken"]
	level := msg.meta(mcp.MetaKeyLogLevel)
	if !stateless {
		level = m.sessions.level(session)
	}
	// current is the request serving the call now, what its progress and
	// log messages go to: a parked call's changes with each request
	// (mcp_park.go).
	served := serving{stream: stream, token: token, logs: level != ""}
	current := func() serving { return served }
	// answered runs before the call's answer is written.
	answered := func() {}
	call := &callRequest{name: msg.Params.Name, arguments: msg.Params.Arguments, view: vw,
		opts: mcpclient.CallOptions{Meta: wire.RelayedMeta(msg.Params.Meta, notRelayed...)}}
	// park is the call when it may be parked, or was: a 2026-07-28 caller's
	// that may answer what a server of an older revision asks.
	var park *parkedCall
	var resumed bool
	callCtx := ctx
	switch {
	case stateless:
		// A 2026-07-28 server's input_required is the caller's to answer
		// (mcp_input.go); an older server's request is asked of the caller
		// by parking the call (mcp_park.go).
		call.opts.KeepInputRequired = true
		asks := asksOfCapabilities(msg.Params.Meta[mcp.MetaKeyClientCapabilities])
		call.opts.ClientCapabilities = asks.capabilities()
		var answeredHere bool
		if park, answeredHere = m.takeAnswers(w, r, key, msg, vw, call); answeredHere {
			return
		}
		switch {
		case park != nil:
			resumed = true
		case asks&(asksElicitForm|asksElicitURL|asksSampling|asksSamplingTools) != 0:
			park, callCtx = m.parks.start(ctx, callerKeyOf(ctx), asks)
			call.opts.OnRequest = park.onRequest
		default:
			call.opts.OnRequest = refuseAsking(statelessCannotAnswer)
		}
		if park != nil {
			current = park.current
		}
	case r.Header.Get("Accept") != "" && !wire.AcceptsEventStream(r.Header.Get("Accept")):
		// A question goes on the call's answer, as an event stream (no
		// Accept at all accepts anything).
		call.opts.OnRequest = refuseAsking(noEventStream)
	default:
		asks, _ := asksOfSession(r.Header.Get("Mcp-Session-Id"))
		asker := m.relays.asker(session, asks, stream)
		call.opts.OnRequest = asker.onRequest
		call.opts.ClientCapabilities = asks.capabilities()
		call.askable = asks&(asksElicitForm|asksElicitURL|asksSampling|asksSamplingTools) != 0
		answered = asker.end
	}
	if stateless {
		call.check = func(entry *menu.Entry) error {
			if problem := paramHeaderProblem(r, msg, entry.Tool.InputSchema.Raw); problem != "" {
				return &protocolError{code: mcp.HEADER_MISMATCH, message: problem}
			}
			return nil
		}
	}
	if len(token) > 0 {
		call.opts.OnProgress = func(params json.RawMessage) {
			now := current()
			if len(now.token) == 0 {
				return // a request sent again without one
			}
			if params, err := wire.WithProgressToken(params, now.token); err == nil {
				now.stream.notify("notifications/progress", params)
			}
		}
	}
	if level != "" {
		call.opts.LogLevel = level
		call.opts.OnLog = func(params json.RawMessage) {
			if now := current(); now.logs {
				now.stream.notify("notifications/message", params)
			}
		}
	}
	var envelope Envelope
	if park != nil {
		if !resumed {
			go park.run(func() (Envelope, error) {
				_, envelope, err := c.runCall(callCtx, key, call)
				return envelope, err
			})
		}
		var ended bool
		park.servedBy(served)
		if resumed {
			park.answer(msg.Params.InputResponses)
		}
		if envelope, err, ended = park.serve(ctx, func(requests json.RawMessage) {
			stream.result(m.parkedAnswer(park, m.bindingOf(r, key, msg, vw), requests))
		}); !ended {
			return // parked, or the caller's request ended and cancelled it
		}
	} else {
		_, envelope, err = c.runCall(ctx, key, call)
	}
	answered()
	var unknown *unknownToolError
	var protoErr *protocolError
	switch {
	case err == nil && envelope.inputRequired != nil:
		stream.result(m.inputRequiredAnswer(r, key, msg, vw, envelope.inputRequired))
	case err == nil:
		stream.result(callAnswerOf(envelope, stateless))
	case errors.Is(context.Cause(ctx), errCancelledByCaller), errors.Is(context.Cause(callCtx), errCallerLeft):
		// A cancelled request gets no answer.
	case errors.As(err, &unknown):
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, fmt.Sprintf("tool %s not found", unknown.name))
	case errors.As(err, &protoErr):
		writeRPCError(w, http.StatusBadRequest, msg.ID, protoErr.code, protoErr.message)
	default:
		answerFailure(stream, err, stateless)
	}
}

// answerFailure answers a failed tools/call, recorded already. What the
// model can act on (bad arguments: SEP-1303 in MCP 2025-11-25; a server
// down; a collection's policy denying this tool or these arguments, whose
// rule says why) is a tool result with isError; being told to slow down
// (the caller's rate, a busy server) or refused access to the collection
// is a JSON-RPC error the client's code handles, as 429 and 403 are over
// REST.
func answerFailure(stream *callStream, err error, stateless bool) {
	var reqErr *requestError
	var upErr *upstreamError
	var denied *policyDeniedError
	switch outcome := outcomeOf(err); {
	case outcome == "rate_limited" || outcome == "busy":
	case errors.As(err, &reqErr):
		stream.result(resultOf(mcp.NewToolResultError(reqErr.message), stateless))
		return
	case errors.As(err, &denied):
		stream.result(resultOf(mcp.NewToolResultError(denied.message), stateless))
		return
	case errors.As(err, &upErr):
		stream.result(resultOf(mcp.NewToolResultError(upErr.Error()), stateless))
		return
	}
	stream.error(mcp.INTERNAL_ERROR, err.Error())
}

// resultOf is a tools/call result as a caller of the revision expects it.
// 2026-07-28 requires resultType; the revisions before it have none.
func resultOf(result *mcp.CallToolResult, stateless bool) json.RawMessage {
	answer := *result
	answer.ResultType = ""
	if stateless {
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
func callAnswerOf(env Envelope, stateless bool) json.RawMessage {
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
	if stateless {
		answer = append(answer, `,"resultType":"`+string(mcp.ResultTypeComplete)+`"`...)
	}
	return append(answer, '}')
}

// callStream answers one call: a JSON answer, or, once a notification is
// sent, an event stream that carries the notifications and then the
// answer.
type callStream struct {
	http.ResponseWriter
	id        json.RawMessage
	mu        sync.Mutex
	streaming bool
	done      bool
}

func newCallStream(w http.ResponseWriter, id json.RawMessage) *callStream {
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
	s.startStream()
	raw, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", method, params})
	s.event(raw)
}

// request sends a request to the caller about the call (a server's
// question, relay.go), turning the answer into an event stream; nothing
// once the call was answered.
func (s *callStream) request(id json.RawMessage, method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.startStream()
	s.event(wire.AppendRequest(nil, id, method, params))
}

// startStream turns the answer into an event stream, once.
func (s *callStream) startStream() {
	if s.streaming {
		return
	}
	s.streaming = true
	h := s.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	s.WriteHeader(http.StatusOK)
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
	const frame = len(`{"jsonrpc":"2.0","id":`) + len(`,"result":`) + len(`}`)
	size := len(id) + len(result) + frame
	if len(id) == 0 {
		size += len("null")
	}
	if len(result) == 0 {
		size += len("{}")
	}
	return wire.AppendResult(make([]byte, 0, size), id, result)
}

func (s *callStream) error(code int, message string) {
	raw := wire.AppendError(nil, s.id, wire.ErrorObject(code, message))
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
