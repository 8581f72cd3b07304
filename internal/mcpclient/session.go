package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/tracing"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// ProtocolVersion is the revision the operator offers in initialize, to
// servers that do not speak 2026-07-28 (see Connect): the newest with the
// handshake; servers that only speak an older one negotiate down.
const ProtocolVersion = mcp.ProtocolVersion20251125

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
	// ListChanged is true when the server announced tools.listChanged
	// and its changes have a stream to arrive on (see Listening).
	ListChanged bool
	// Capabilities are what it announced besides tools.
	Capabilities Capabilities
}

// Session is one initialized connection to an MCP server. It is safe for
// concurrent use: what one request saw on the wire travels with that
// request, never in the session.
type Session struct {
	target Target
	client *client.Client
	info   ServerInfo
	// stop ends the long-lived context that owns the server's event stream.
	stop context.CancelFunc
	// lost ends, with the cause, when the session ends: closed, its event
	// stream broke, or the server forgot it. Over SSE answers arrive on
	// that stream, so requests waiting on it fail then.
	lost            context.Context
	loseWith        context.CancelCauseFunc
	answersOnStream bool
	// watch hears about the stream notifications arrive on.
	watch *streamWatch
	// http is the session's HTTP client; streamCtx lives as long as the
	// session and owns its streams.
	http      *http.Client
	streamCtx context.Context
	// stateless is true in the 2026-07-28 revision, which has no session on the wire.
	stateless bool
	// logging is true when the server offers log messages; logLevel is
	// the session-wide level a legacy server accepted so far, and
	// levelFailed when it last refused a raise, both held by levelLock.
	logging     bool
	levelLock   chan struct{}
	logLevel    string
	levelFailed time.Time
	routesMu    sync.Mutex
	// routes hands progress on a shared stream (SSE) to its call, by
	// token; entries live as long as their call.
	routes      map[string]func(method string, params json.RawMessage)
	progressSeq atomic.Int64
	closed      chan struct{}
	endOnce     sync.Once
	closeOnce   sync.Once
	nextID      atomic.Int64
	// inflight counts requests under way; a retired session closes when
	// the last one ends.
	inflight atomic.Int64
	retiring atomic.Bool
}

var (
	// errSessionClosed is why a request on a closed session failed.
	errSessionClosed = errors.New("the session was closed")
	// errSessionForgotten is why a session whose server answered 404 ended.
	errSessionForgotten = errors.New("the server no longer knows the session")
	// errStreamLost marks a request whose answer's stream broke.
	errStreamLost = errors.New("the event stream ended")
	// errNotSent marks a request refused because its session had ended.
	errNotSent = errors.New("the session had ended before the request was sent")
)

// Info returns what the server said about itself.
func (s *Session) Info() ServerInfo { return s.info }

// Listening reports whether the server's notifications have a stream to
// arrive on: always over SSE, once the listening GET opened over
// Streamable HTTP (servers may not offer one).
func (s *Session) Listening() bool {
	return s.answersOnStream || s.watch.listening.Load()
}

// awaitListening waits (bounded by ctx) until the first attempt to open
// the notification stream has an outcome, so that Info says whether list
// changes are pushed or polled.
func (s *Session) awaitListening(ctx context.Context) {
	select {
	case <-s.watch.settled:
	case <-ctx.Done():
	case <-s.closed:
	}
}

func (s *Session) nextProgress() string { return strconv.FormatInt(s.progressSeq.Add(1), 10) }

// Done is closed when the session ends: Close was called, its event stream
// was lost, or the server forgot it. An ended session is never reused.
func (s *Session) Done() <-chan struct{} { return s.closed }

// end marks the session over, with why; requests still waiting on its
// stream fail with that cause.
func (s *Session) end(cause error) {
	s.endOnce.Do(func() {
		s.loseWith(cause)
		close(s.closed)
	})
}

// Close ends the session and its streams, cancelling requests in flight.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.end(errSessionClosed)
		s.stop()
		if s.client != nil {
			_ = s.client.Close()
		}
		if s.http != nil {
			// Left idle, the session's connections would hold a socket at
			// both ends, two goroutines and their buffers until
			// IdleConnTimeout, per refresh of every server that is not
			// held (a shared pool's idle timeout is short; see shared.go).
			s.http.CloseIdleConnections()
		}
	})
}

// ReleaseIdle closes the session's connections that carry nothing now,
// keeping its listening stream: a session held for its list changes but
// asked something only once per refresh would otherwise keep a second
// connection (a socket at both ends, its buffers and goroutines) per
// server between refreshes. A shared pool closes them itself, shortly
// (see shared.go).
func (s *Session) ReleaseIdle() {
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
}

// retire closes the session once no request is in flight, so that a
// replaced or dropped session finishes the calls it carries. The close
// runs on a goroutine of its own: a legacy session's sends a DELETE that
// may take its timeout, and neither whoever retires the session (an
// informer's handler, a caller connecting afresh) nor the last call it
// carried should wait on it.
func (s *Session) retire() {
	s.retiring.Store(true)
	if s.inflight.Load() == 0 {
		go s.Close()
	}
}

func (s *Session) requestStarted() { s.inflight.Add(1) }

func (s *Session) requestDone() {
	if s.inflight.Add(-1) == 0 && s.retiring.Load() {
		go s.Close() // see retire
	}
}

// call is one request to send.
type call struct {
	method string
	params any
	// tool is the name of a called tool, for its span.
	tool string
	// meta goes into params._meta; in the 2026-07-28 revision the
	// protocol's own keys are added to it.
	meta map[string]any
	// schema is the input schema of a called tool, for the Mcp-Param-*
	// headers of the 2026-07-28 revision.
	schema json.RawMessage
	// tap hears each notification that arrives on this request's own
	// answer stream.
	tap func(method string, params json.RawMessage)
	// onRequest answers the requests the server sends on this request's
	// own answer stream (ask.go).
	onRequest func(ctx context.Context, method string, params json.RawMessage) Answer
}

// request sends one JSON-RPC request through the transport, which returns
// the raw result: the client's typed methods re-encode tool schemas through
// a narrower struct and would lose keys.
func (s *Session) request(ctx context.Context, c call, doing string) (json.RawMessage, error) {
	s.requestStarted()
	defer s.requestDone()
	select {
	case <-s.closed:
		return nil, classify(fmt.Errorf("%w: %w", errNotSent, context.Cause(s.lost)), s.target, doing, nil)
	default:
	}
	// The deadline is a timer of ours rather than a context deadline: the
	// library would race its own untyped timeout against a deadline it can
	// see, and a timeout must always read as one.
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer time.AfterFunc(s.target.timeout(), func() { cancel(context.DeadlineExceeded) }).Stop()
	switch {
	case s.answersOnStream:
		defer context.AfterFunc(s.lost, func() { cancel(errStreamLost) })()
	case s.stateless && s.streamCtx != nil:
		// Close ends the requests in flight (mcp-go's transport did so
		// for the revisions before); a lost subscription does not.
		defer context.AfterFunc(s.streamCtx, func() { cancel(errSessionClosed) })()
	}
	id := "op-" + strconv.FormatInt(s.nextID.Add(1), 10)
	ctx, span := s.startSpan(ctx, id, c)
	defer span.End()
	req, err := s.encode(ctx, id, c)
	if err != nil {
		return nil, &Error{Kind: ErrProtocol, Message: doing + ": the request could not be encoded", Err: err}
	}
	ex := &exchange{tap: c.tap}
	if c.onRequest != nil && !s.stateless && !s.answersOnStream {
		ex.ask = func(id json.RawMessage, method string, params json.RawMessage) {
			go s.serveAsk(ctx, id, method, params, c.onRequest)
		}
	}
	var resp *transport.JSONRPCResponse
	if s.stateless {
		resp, err = s.post(withExchange(ctx, ex), req)
	} else {
		resp, err = s.client.GetTransport().SendRequest(withExchange(ctx, ex), req)
	}
	if err != nil {
		switch cause := context.Cause(s.lost); {
		case s.answersOnStream && cause != nil:
			// The stream that would carry the answer broke: say why.
			err = fmt.Errorf("%w: %w", errStreamLost, cause)
		case errors.Is(context.Cause(ctx), errSessionClosed):
			// Whatever the read saw of it, the session was closed.
			err = errSessionClosed
		case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
			err = errors.Join(context.DeadlineExceeded, err)
			s.cancelUpstream(id, "the request timed out")
		case parent.Err() != nil:
			err = errors.Join(parent.Err(), err)
			s.cancelUpstream(id, "the caller went away")
		}
		if errors.Is(err, transport.ErrSessionTerminated) {
			// The server forgot the session: it is over for every caller.
			// (2026-07-28 has no session: a 404 there answers its request,
			// which the server may have acted on, as any other status.)
			s.end(errSessionForgotten)
		}
		return nil, failSpan(span, classify(err, s.target, doing, ex))
	}
	if resp.Error != nil {
		if resp.Error.Code == codeAnswerTooLarge && resp.Error.Message == messageAnswerTooLarge {
			return nil, failSpan(span, classify(errResponseTooLarge, s.target, doing, ex))
		}
		return nil, failSpan(span, rpcError(resp.Error, s.target, doing))
	}
	return resp.Result, nil
}

// startSpan starts the client span of one request, named as the MCP
// semantic conventions name it: the method, and the tool for a call.
// With tracing off (tracing.Enabled) no span is started at all; otherwise
// its full name and attributes are set only on a span that records (the
// sampler kept it). A sampler thus decides on the method name alone; the ones tracing.Setup installs (from
// OTEL_TRACES_SAMPLER) go by trace id and parent, never attributes.
func (s *Session) startSpan(ctx context.Context, id string, c call) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return ctx, tracing.NoSpan // see tracing.Enabled
	}
	ctx, span := tracing.Tracer().Start(ctx, c.method, trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(tracing.MethodName.String(c.method), tracing.RequestID.String(id),
		tracing.ProtocolVersion.String(s.info.ProtocolVersion))
	if c.tool != "" {
		span.SetName(c.method + " " + c.tool)
		span.SetAttributes(tracing.ToolName.String(c.tool), tracing.OperationName.String("execute_tool"))
	}
	return ctx, span
}

// failSpan marks the span failed with the error's kind, never its text
// (which may quote the server).
func failSpan(span trace.Span, err *Error) *Error {
	span.SetStatus(codes.Error, string(err.Kind))
	span.SetAttributes(tracing.ErrorType.String(string(err.Kind)))
	return err
}

// cancelUpstream tells a server of a revision before 2026-07-28 that the
// request with id is off: closing its HTTP request is not a cancel there.
// In 2026-07-28 it is, and nothing more is sent.
func (s *Session) cancelUpstream(id, reason string) {
	if s.stateless {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.target.timeout())
		defer cancel()
		_ = s.client.GetTransport().SendNotification(ctx, mcp.JSONRPCNotification{
			JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: string(mcp.MethodNotificationCancelled),
				Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}}},
		})
	}()
}

// Limits bound how much of a server's listing (tools, prompts, resources
// or resource templates) is read.
type Limits struct {
	// MaxPages is the most pages of one listing read.
	MaxPages int
	// MaxTools is the most items of one listing kept: tools, or prompts,
	// resources or resource templates.
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
	// TTL is how long the server said the list stays fresh (2026-07-28
	// ttlMs, the longest of its pages): the earliest useful refresh.
	TTL time.Duration
	// Digest is the SHA-256 of the entries of Tools as the server sent
	// them, each with its length: two lists with the same Digest decode
	// to the same Tools. A caller can tell a list it already holds from
	// it without decoding or hashing a schema again.
	Digest [sha256.Size]byte
}

// ListTools reads every page of tools/list, following nextCursor until the
// server has no more or a limit is hit. Each page is bounded by the
// target's timeout.
func (s *Session) ListTools(ctx context.Context, limits Limits) (ToolList, error) {
	var (
		list   ToolList
		names  = map[string]bool{}
		digest = newItemDigest()
	)
	truncated, err := s.paginate(ctx, string(mcp.MethodToolsList), "listing tools", limits.MaxPages, func(result json.RawMessage) (string, bool, error) {
		var decoded struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
			TTLMs      *int64            `json:"ttlMs"`
		}
		if err := json.Unmarshal(result, &decoded); err != nil {
			return "", false, classify(err, s.target, "listing tools", nil)
		}
		if decoded.TTLMs != nil && *decoded.TTLMs > 0 {
			list.TTL = max(list.TTL, time.Duration(*decoded.TTLMs)*time.Millisecond)
		}
		// Room for the page at once: growing by appends was 3.5% of the
		// manager's CPU in BenchmarkScale's quiet window (20 tools a page).
		if room := limits.MaxTools - len(list.Tools); room > 0 {
			list.Tools = slices.Grow(list.Tools, min(len(decoded.Tools), room))
		}
		for _, raw := range decoded.Tools {
			if len(list.Tools) == limits.MaxTools {
				return "", true, nil
			}
			tool, err := decodeTool(raw)
			if err != nil {
				return "", false, classify(err, s.target, "listing tools", nil)
			}
			// A name listed twice (a list that shifted between pages) is one
			// tool: calls address tools by name.
			if names[tool.Name] {
				continue
			}
			names[tool.Name] = true
			list.Tools = append(list.Tools, tool)
			digest.add(raw)
		}
		return decoded.NextCursor, false, nil
	})
	if err != nil {
		return ToolList{}, err
	}
	list.Truncated = truncated
	digest.sum(&list.Digest)
	return list, nil
}

// paginate reads the pages of one listing, following nextCursor: page
// takes each page's result and returns its nextCursor ("" for the last),
// or full when a limit on what is kept was hit. It reports truncated when
// a limit (full, or maxPages pages) cut the listing. A server that sends a
// cursor twice is refused: it would be listed forever.
func (s *Session) paginate(ctx context.Context, method, doing string, maxPages int, page func(result json.RawMessage) (next string, full bool, err error)) (truncated bool, err error) {
	cursor := ""
	seen := map[string]bool{}
	for n := 0; ; n++ {
		if n == maxPages {
			return true, nil
		}
		result, err := s.request(ctx, call{method: method, params: cursorParams(cursor)}, doing)
		if err != nil {
			return false, err
		}
		next, full, err := page(result)
		switch {
		case err != nil || full:
			return full, err
		case next == "":
			return false, nil
		case seen[next]:
			return false, s.protocolError(doing, "%s sent the same nextCursor twice", s.target.redactedURL())
		}
		seen[next] = true
		cursor = next
	}
}

// itemDigest is a listing's Digest: the SHA-256 of each item kept, as
// sent, after its length.
type itemDigest struct {
	h      hash.Hash
	length [8]byte
}

func newItemDigest() *itemDigest { return &itemDigest{h: sha256.New()} }

func (d *itemDigest) add(raw json.RawMessage) {
	binary.BigEndian.PutUint64(d.length[:], uint64(len(raw)))
	d.h.Write(d.length[:])
	d.h.Write(raw)
}

func (d *itemDigest) sum(into *[sha256.Size]byte) { d.h.Sum(into[:0]) }

func cursorParams(cursor string) any {
	if cursor == "" {
		return nil
	}
	return map[string]string{"cursor": cursor}
}

// CallResult is a tools/call result as the server sent it.
type CallResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
	// ResultType is the 2026-07-28 revision's: "complete" (or absent), or
	// "input_required" when the server asks the client for input
	// (elicitation, sampling, roots) before it can answer (mrtr.go).
	ResultType string `json:"resultType,omitempty"`
	// InputRequests and RequestState come with "input_required": what the
	// server asks, by key, and the state to send back with the answers.
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	RequestState  string          `json:"requestState,omitempty"`
}

// InputRequired is the 2026-07-28 resultType of a call that needs input
// from the client before the server can answer it.
const InputRequired = "input_required"

// CallOptions carry what a caller asked of one call besides the tool and
// its arguments. The zero value asks for nothing more.
type CallOptions struct {
	// Meta goes upstream in the request's _meta (traceparent, tracestate,
	// baggage…); the protocol's own keys are the session's to set.
	Meta map[string]any
	// OnProgress, when set, asks the server for progress; it hears the
	// params of each notifications/progress, with the caller's token for
	// the session's own.
	OnProgress func(params json.RawMessage)
	// LogLevel, with OnLog, asks for the server's log messages of this
	// level or above (debug … emergency) that come with the call.
	LogLevel string
	OnLog    func(params json.RawMessage)
	// InputSchema is the tool's input schema, for the headers the
	// 2026-07-28 revision derives from arguments (x-mcp-header).
	InputSchema json.RawMessage
	// OnRequest, when set, answers each request the server sends back
	// while it serves the call (elicitation/create, sampling/createMessage,
	// roots/list), given its method and params as sent; it runs on a
	// goroutine of its own, with a context that ends with the call. Without
	// it such a request is refused (ask.go).
	OnRequest func(ctx context.Context, method string, params json.RawMessage) Answer
	// KeepInputRequired returns a 2026-07-28 server's "input_required"
	// answer as it came, for the caller to answer (a 2026-07-28 caller),
	// rather than fulfil it through OnRequest.
	KeepInputRequired bool
	// InputResponses and RequestState go in the call's params: a
	// 2026-07-28 caller's answers to what the server asked, sent again.
	InputResponses json.RawMessage
	RequestState   string
	// ClientCapabilities, for a 2026-07-28 server, are the client
	// capabilities the call declares in its _meta: what its caller can
	// answer, so that a server asks only what can be answered. None
	// declares nothing ({}). Servers of the revisions before hear the
	// session's (AskedCapabilities).
	ClientCapabilities json.RawMessage
}

// CallTool calls a tool by its name on the server, with arguments as a JSON
// object. A JSON-RPC error answer is an *Error with RPCCode set. A
// 2026-07-28 server's "input_required" answer is fulfilled through
// opts.OnRequest and the call sent again with the answers (mrtr.go); a
// request OnRequest refuses ends the call with an *InputRefused.
func (s *Session) CallTool(ctx context.Context, name string, arguments json.RawMessage, opts CallOptions) (CallResult, error) {
	params := toolCallParams{Name: name, Arguments: arguments, InputResponses: opts.InputResponses, RequestState: opts.RequestState}
	c := call{method: string(mcp.MethodToolsCall), params: params, tool: name, schema: opts.InputSchema, meta: wire.RelayedMeta(opts.Meta),
		onRequest: opts.OnRequest}
	if s.stateless && len(opts.ClientCapabilities) > 0 && string(opts.ClientCapabilities) != "{}" {
		// ({} is what every request declares already, encoded once.)
		c.meta[mcp.MetaKeyClientCapabilities] = opts.ClientCapabilities
	}
	release := s.relay(ctx, &c, opts)
	defer release()
	// The answers of every round within the target's timeout, as the one
	// answer of a server of an older revision is asked within its call's.
	asksUntil := time.Now().Add(s.target.timeout())
	for round := 1; ; round++ {
		raw, err := s.request(ctx, c, "calling tool "+name)
		if err != nil {
			return CallResult{}, err
		}
		var result CallResult
		if err := json.Unmarshal(raw, &result); err != nil {
			return CallResult{}, classify(err, s.target, "calling tool "+name, nil)
		}
		if result.ResultType != InputRequired || opts.KeepInputRequired || opts.OnRequest == nil || round == maxInputRounds {
			return result, nil
		}
		askCtx, cancel := context.WithDeadline(ctx, asksUntil)
		answers, err := fulfil(askCtx, result.InputRequests, opts.OnRequest)
		if err == nil && len(answers) == 0 {
			// Nothing asked, only a state: the server sheds load and
			// wants the call again, later.
			err = backOff(askCtx, round)
		}
		cancel()
		if err != nil {
			return CallResult{}, err
		}
		if params.InputResponses, err = json.Marshal(answers); err != nil {
			return CallResult{}, &Error{Kind: ErrProtocol, Message: "calling tool " + name + ": the answers could not be encoded", Err: err}
		}
		params.RequestState = result.RequestState
		c.params = params
	}
}

// toolCallParams are a tools/call's params: the tool and its arguments,
// and in a 2026-07-28 call sent again, the answers to what the server
// asked and the state it gave.
type toolCallParams struct {
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string          `json:"requestState,omitempty"`
}
