package toolcatalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/policy"
	"github.com/toolmesh/mcp-operator/internal/tracing"
)

// One record of each tool call: its metrics, its log line, its audit line
// and its span's attributes, all from record, so that they agree.

// callNote is what the handling of one request learns of its tool call
// for that record. It travels in the request's context.
type callNote struct {
	requestID   string
	via         string
	started     time.Time
	status      int
	resultBytes int
	// reason is why a call to the server failed (upstreamError's kind:
	// Unreachable, Timeout, NotReady, NotFound, ...), for the debug log.
	reason string
	// policy is the collection's policy's decision, when it has one.
	policy *policy.Decision
}

type callNoteKey struct{}

func noteOf(ctx context.Context) *callNote {
	if n, ok := ctx.Value(callNoteKey{}).(*callNote); ok {
		return n
	}
	return &callNote{started: time.Now()}
}

// beginCall starts the record of a tool call: its request id (also on the
// answer), its start, and its server span, whose parent is the caller's
// trace context from the headers or, over MCP, from the request's _meta.
func (c *Catalog) beginCall(w http.ResponseWriter, r *http.Request, via, name string, meta map[string]json.RawMessage) (context.Context, func()) {
	note := &callNote{requestID: requestID(w, r), via: via, started: time.Now()}
	ctx := context.WithValue(r.Context(), callNoteKey{}, note)
	ctx, span := c.startSpan(ctx, r, name, meta)
	return ctx, func() { span.End() }
}

// callerTrace reads a caller's trace context: traceparent and tracestate
// only. A caller's baggage is not taken in, since whatever is in the
// context goes on to the upstream servers, and a caller's entries are not
// the catalog's to forward.
var callerTrace = propagation.TraceContext{}

// callerTraceKeys are the _meta keys callerTrace reads.
var callerTraceKeys = callerTrace.Fields()

// startSpan starts a server span for a request, a child of the caller's
// trace: the W3C headers, or the _meta of an MCP request.
func (c *Catalog) startSpan(ctx context.Context, r *http.Request, name string, meta map[string]json.RawMessage) (context.Context, trace.Span) {
	propagator := callerTrace
	ctx = propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	if !trace.SpanContextFromContext(ctx).IsValid() && len(meta) > 0 {
		var carried tracing.MetaCarrier
		for _, k := range callerTraceKeys {
			raw, ok := meta[k]
			var v string
			if !ok || json.Unmarshal(raw, &v) != nil || v == "" {
				continue
			}
			if carried == nil {
				carried = tracing.MetaCarrier{}
			}
			carried[k] = v
		}
		if carried != nil {
			ctx = propagator.Extract(ctx, carried)
		}
	}
	if !tracing.Enabled() {
		// The caller's trace context (if any) stays in ctx, and the audit
		// line names its trace. (With no provider there is no propagator
		// either: only an MCP caller's _meta carries it upstream.)
		return ctx, tracing.NoSpan
	}
	return tracing.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
}

// traced gives each REST request a server span, named by the route the
// mux gives it. Tool calls and MCP requests start their own (beginCall,
// the MCP handler), since a call's parent may be in its body's _meta.
func (c *Catalog) traced(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || strings.HasSuffix(r.URL.Path, "/mcp") {
			next.ServeHTTP(w, r)
			return
		}
		_, pattern := mux.Handler(r)
		if pattern == "" {
			next.ServeHTTP(w, r)
			return
		}
		ctx, span := c.startSpan(r.Context(), r, pattern, nil)
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refused audits a tool call refused for its token (401), before any
// route saw it: which tool is not known then.
func (c *Catalog) refused(w http.ResponseWriter, r *http.Request, err error) {
	if r.Method != http.MethodPost {
		return
	}
	via := "rest"
	if strings.HasSuffix(r.URL.Path, "/mcp") {
		via = "mcp"
	}
	status, outcome := statusOf(err), "unauthorized"
	if status != http.StatusUnauthorized {
		outcome = "auth_unavailable"
	}
	c.audit.write(AuditRecord{Time: auditTime(time.Now()), RequestID: requestID(w, r), User: "unauthenticated", Via: via,
		Outcome: outcome, Status: status})
}

// recordFailure records a call that failed with err. A failure upstream
// is logged with its kind, never its message: a server's error text may
// quote the call's arguments.
func (c *Catalog) recordFailure(ctx context.Context, key viewKey, tool string, entry *menu.Entry, err error) {
	var upErr *upstreamError
	if errors.As(err, &upErr) {
		noteOf(ctx).reason = upErr.kind
	}
	c.record(ctx, key, tool, entry, outcomeOf(err))
}

// maxRecordedName is how much of an unknown tool name is logged and
// audited.
const maxRecordedName = 128

// record counts one call, logs it, audits it and names it on its span.
// Argument and result values are never recorded.
func (c *Catalog) record(ctx context.Context, key viewKey, tool string, entry *menu.Entry, outcome string) {
	note := noteOf(ctx)
	known := entry != nil || tool == findToolsName || tool == callToolName
	if !known && len(tool) > maxRecordedName {
		// A name the menu does not have is the caller's text: kept for the
		// audit, but not at any length.
		tool = tool[:maxRecordedName] + "…"
	}
	elapsed := time.Since(note.started)
	server, original := "", ""
	if entry != nil {
		server, original = entry.Namespace+"/"+entry.Server, entry.Tool.OriginalName
		toolCalls.WithLabelValues(server, original, outcome).Inc()
		toolCallDuration.WithLabelValues(server).Observe(elapsed.Seconds())
	}
	collection := ""
	if key.kind == collectionView {
		collection = key.namespace + "/" + key.name
	}
	// Debug level: the audit trail is the record of every call; this line
	// is for following calls among the manager's other logs.
	if debug := c.log.V(1); debug.Enabled() { // its values are not built otherwise
		values := []any{"collection", collection, "tool", tool, "server", server,
			"duration", elapsed.String(), "outcome", outcome, "requestId", note.requestID}
		if note.reason != "" {
			values = append(values, "reason", note.reason)
		}
		debug.Info("Tool call", values...)
	}

	span := trace.SpanFromContext(ctx)
	if span.IsRecording() { // its name and attributes are not built otherwise
		if known && note.via == "mcp" {
			// Named for the tool only now that the menu vouched for the name.
			span.SetName("tools/call " + tool)
		}
		span.SetAttributes(tracing.ToolName.String(tool), tracing.OperationName.String("execute_tool"),
			tracing.Outcome.String(outcome), attribute.String("mcp_operator.request_id", note.requestID))
		if server != "" {
			span.SetAttributes(tracing.Server.String(server))
		}
		if collection != "" {
			span.SetAttributes(tracing.Collection.String(collection))
		}
		if outcome != "success" && outcome != "tool_error" && outcome != "input_required" {
			span.SetStatus(codes.Error, outcome)
		}
	}
	var decided *AuditPolicy
	if note.policy != nil {
		decided = policyRecord(note.policy)
		decided.count(collection)
		if span.IsRecording() {
			span.SetAttributes(decided.attributes()...)
		}
	}

	user, groups, issuer := "anonymous", []string(nil), ""
	if who := callerFrom(ctx); who != nil {
		user, groups, issuer = who.username, who.groups, who.issuer
	}
	c.audit.write(AuditRecord{
		Time: auditTime(time.Now()), RequestID: note.requestID, User: user, Groups: groups, Issuer: issuer, Via: note.via,
		Collection: collection, Tool: tool, OriginalName: original, Server: server, Outcome: outcome, Status: note.status, Policy: decided,
		DurationMs: float64(elapsed.Microseconds()) / 1000, ResultBytes: note.resultBytes,
		TraceID: traceIDOf(span),
	})
}

func traceIDOf(span trace.Span) string {
	if sc := span.SpanContext(); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// resultSize is the size of an envelope's text and content, for the
// audit trail.
func resultSize(env Envelope) int {
	n := len(env.Output) + len(env.StructuredContent)
	for _, item := range env.Content {
		n += len(item)
	}
	return n
}

// recordSurface is record for prompts/get, resources/read and
// completion/complete: counted, logged, audited and on the span alike.
func (c *Catalog) recordSurface(ctx context.Context, key viewKey, method string, target surfaceTarget, err error) {
	note := noteOf(ctx)
	outcome := "success"
	if err != nil {
		outcome = outcomeOf(err)
		var protoErr *protocolError
		if errors.As(err, &protoErr) {
			outcome = cmp.Or(protoErr.outcome, "invalid_request")
		}
	}
	elapsed := time.Since(note.started)
	server, prompt, resource, original := "", "", "", ""
	if target.kind == promptsKind {
		prompt, original = recordedName(target.exposed), target.original
	} else {
		resource, original = recordedURI(target.exposed), recordedURI(target.original)
	}
	if target.server != nil {
		server = target.server.key()
	}
	surfaceRequests.WithLabelValues(method, outcome).Inc()
	collection := ""
	if key.kind == collectionView {
		collection = key.namespace + "/" + key.name
	}
	if debug := c.log.V(1); debug.Enabled() {
		debug.Info("MCP request", "method", method, "collection", collection, "server", server,
			"duration", elapsed.String(), "outcome", outcome, "requestId", note.requestID)
	}
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.SetAttributes(tracing.Outcome.String(outcome), attribute.String("mcp_operator.request_id", note.requestID))
		if server != "" {
			span.SetAttributes(tracing.Server.String(server))
		}
		if collection != "" {
			span.SetAttributes(tracing.Collection.String(collection))
		}
		if outcome != "success" {
			span.SetStatus(codes.Error, outcome)
		}
	}
	user, groups, issuer := "anonymous", []string(nil), ""
	if who := callerFrom(ctx); who != nil {
		user, groups, issuer = who.username, who.groups, who.issuer
	}
	c.audit.write(AuditRecord{
		Time: auditTime(time.Now()), RequestID: note.requestID, User: user, Groups: groups, Issuer: issuer, Via: note.via,
		Collection: collection, Method: method, Prompt: prompt, Resource: resource, OriginalName: original, Server: server,
		Outcome: outcome, DurationMs: float64(elapsed.Microseconds()) / 1000, TraceID: traceIDOf(span),
	})
}

// recordedName is a name as records keep it: not at any length.
func recordedName(name string) string {
	if len(name) > maxRecordedName {
		return name[:maxRecordedName] + "…"
	}
	return name
}

// recordedURI is a URI as records and errors name it: without its query,
// its fragment and any user information (user:password@), which may carry
// secrets, and not at any length.
func recordedURI(uri string) string {
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	if scheme, rest, ok := strings.Cut(uri, "://"); ok {
		authority, path, _ := strings.Cut(rest, "/")
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			uri = scheme + "://" + authority[at+1:]
			if len(rest) > len(authority) {
				uri += "/" + path
			}
		}
	}
	return recordedName(uri)
}
