package toolcatalog

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/tracing"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it keeps every span it is
// sent.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func startOTLPReceiver() *otlpReceiver {
	rcv := &otlpReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rcv.spans = append(rcv.spans, ss.Spans...)
			}
		}
		rcv.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	DeferCleanup(rcv.Close)
	return rcv
}

func (rcv *otlpReceiver) named(name string) *tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, s := range rcv.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func attributesOf(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}

// exportTo makes the process send its traces, at once, to rcv over real
// OTLP/HTTP, until the spec ends.
func exportTo(rcv *otlpReceiver) {
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.URL+"/v1/traces"), otlptracehttp.WithInsecure())
	Expect(err).NotTo(HaveOccurred())
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	DeferCleanup(func() {
		_ = provider.Shutdown(context.Background())
		otel.SetTracerProvider(sdktrace.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
}

var _ = Describe("Traces", func() {
	It("make one call a server span, the caller's child, with the upstream call under it; the trace reaches the server; no secret in any attribute", func() {
		rcv := startOTLPReceiver()
		exportTo(rcv)
		ns := env.Namespace()
		up := calcServer()
		up.SetRequiredHeader("Authorization", "Bearer trace-marker-secret")
		Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tok"},
			StringData: map[string]string{"v": "Bearer trace-marker-secret"}})).To(Succeed())
		readyServer(ns, "calc", up.URL(), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Headers = []mcpv1alpha1.HeaderSpec{{Name: "Authorization",
				ValueFrom: &mcpv1alpha1.HeaderValueSource{SecretKeyRef: mcpv1alpha1.KeyReference{Name: "tok", Key: "v"}}}}
		})
		collection(ns, "traced", "calc")

		const callerTrace, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
		r := callTo(catalog.URL, "/v1/namespaces/"+ns+"/toolcollections/traced/execute", `{"name":"mcp_calc_add","arguments":{"a":40,"b":2}}`,
			"traceparent", "00-"+callerTrace+"-"+callerSpan+"-01", "baggage", "caller.note=trace-marker-baggage")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))

		var server, client *tracepb.Span
		Eventually(func() bool {
			server, client = rcv.named("execute"), rcv.named("tools/call add")
			return server != nil && client != nil
		}).Should(BeTrue())
		Expect(hex.EncodeToString(server.TraceId)).To(Equal(callerTrace), "the caller's trace goes on")
		Expect(hex.EncodeToString(server.ParentSpanId)).To(Equal(callerSpan))
		Expect(server.Kind).To(Equal(tracepb.Span_SPAN_KIND_SERVER))
		Expect(client.TraceId).To(Equal(server.TraceId))
		Expect(client.Kind).To(Equal(tracepb.Span_SPAN_KIND_CLIENT))
		parent := client
		for parent != nil && string(parent.ParentSpanId) != string(server.SpanId) {
			parent = rcv.byID(parent.ParentSpanId)
		}
		Expect(parent).NotTo(BeNil(), "the upstream call is under the catalog's span")

		attrs := attributesOf(server)
		Expect(attrs).To(HaveKeyWithValue("gen_ai.tool.name", "mcp_calc_add"))
		Expect(attrs).To(HaveKeyWithValue("mcp_operator.server", ns+"/calc"))
		Expect(attrs).To(HaveKeyWithValue("mcp_operator.collection", ns+"/traced"))
		Expect(attrs).To(HaveKeyWithValue("mcp_operator.outcome", "success"))
		Expect(attributesOf(client)).To(HaveKeyWithValue("mcp.method.name", "tools/call"))

		By("the server got the catalog's call span as its parent")
		want := "00-" + hex.EncodeToString(client.TraceId) + "-" + hex.EncodeToString(client.SpanId) + "-01"
		Expect(up.HeaderValues("Traceparent")).To(ContainElement(want))
		Expect(up.HeaderValues("Baggage")).To(BeEmpty(), "a caller's baggage is not forwarded upstream")

		By("nothing secret, and no argument value, in any span")
		rcv.mu.Lock()
		dump, _ := json.Marshal(rcv.spans)
		rcv.mu.Unlock()
		Expect(string(dump)).NotTo(ContainSubstring("trace-marker-secret"))
		Expect(string(dump)).NotTo(ContainSubstring(`"a":40`))
		Expect(string(dump)).NotTo(ContainSubstring("trace-marker-baggage"))
	})

	It("continue the trace an MCP caller puts in _meta", func() {
		rcv := startOTLPReceiver()
		exportTo(rcv)
		ns := env.Namespace()
		calc := calcServer()
		calc.AddToolFunc("meta", "Answers the _meta it got", `{"type":"object"}`, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			got := map[string]any{}
			if req.Params.Meta != nil {
				got = req.Params.Meta.AdditionalFields
			}
			raw, err := json.Marshal(got)
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(string(raw)), nil
		})
		readyServer(ns, "calc", calc.URL())
		collection(ns, "traced", "calc")
		// The go-sdk client sends no trace context of its own: the agent's
		// trace is only what it put in _meta.
		caller := callerOf(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/traced/mcp", "2025-11-25")
		const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_calc_meta", Arguments: map[string]any{},
			Meta: sdk.Meta{"traceparent": "00-" + callerTrace + "-00f067aa0ba902b7-01", "baggage": "caller.note=meta-baggage",
				"vendor.example/tag": "kept"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse(), textOf(result))

		By("the server got the caller's own _meta, the catalog's trace context, and no baggage")
		var upstream map[string]any
		Expect(json.Unmarshal([]byte(textOf(result)), &upstream)).To(Succeed(), textOf(result))
		Expect(upstream).To(HaveKeyWithValue("vendor.example/tag", "kept"))
		Expect(upstream).NotTo(HaveKey("baggage"), "a caller's baggage is not forwarded upstream")
		Expect(upstream).To(HaveKey("traceparent"))
		Expect(upstream["traceparent"]).To(HavePrefix("00-"+callerTrace+"-"), "the upstream call stays in the caller's trace")
		Expect(upstream["traceparent"]).NotTo(HaveSuffix("-00f067aa0ba902b7-01"), "its parent is the catalog's span, not the caller's")
		Eventually(func() string {
			if span := rcv.named("tools/call mcp_calc_meta"); span != nil && span.Kind == tracepb.Span_SPAN_KIND_SERVER {
				return hex.EncodeToString(span.TraceId)
			}
			return ""
		}).Should(Equal(callerTrace))
	})
})

var _ = Describe("With tracing off", func() {
	It("starts no span, yet the caller's trace reaches the server and the audit trail names it", func() {
		// As a manager without OTEL_* settings: spans go nowhere, and no
		// propagator writes trace context of its own.
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		DeferCleanup(func() { otel.SetTracerProvider(sdktrace.NewTracerProvider()) })
		Expect(tracing.Enabled()).To(BeFalse())
		ns := env.Namespace()
		calc := calcServer()
		calc.AddToolFunc("meta", "Answers the _meta it got", `{"type":"object"}`, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			raw, err := json.Marshal(req.Params.Meta.AdditionalFields)
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(string(raw)), nil
		})
		readyServer(ns, "calc", calc.URL())
		collection(ns, "untraced", "calc")
		trail := &testenv.LockedBuffer{}
		cat, srv := newCatalog(Options{Audit: trail})
		base := srv.URL + "/v1/namespaces/" + ns + "/toolcollections/untraced"

		const restTrace, mcpTrace = "0af7651916cd43dd8448eb211c80319c", "4bf92f3577b34da6a3ce929d0e0e4736"
		r := callTo(srv.URL, "/v1/namespaces/"+ns+"/toolcollections/untraced/execute", `{"name":"mcp_calc_add","arguments":{"a":1,"b":2}}`,
			"traceparent", "00-"+restTrace+"-b7ad6b7169203331-01")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		caller := callerOf(base+"/mcp", "")
		result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_calc_meta", Arguments: map[string]any{},
			Meta: sdk.Meta{"traceparent": "00-" + mcpTrace + "-00f067aa0ba902b7-01"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse(), textOf(result))

		By("the server got the caller's trace context as it came")
		var upstream map[string]any
		Expect(json.Unmarshal([]byte(textOf(result)), &upstream)).To(Succeed(), textOf(result))
		Expect(upstream).To(HaveKeyWithValue("traceparent", "00-"+mcpTrace+"-00f067aa0ba902b7-01"))

		By("the catalog starts no span of its own, and keeps the caller's")
		req := httptest.NewRequest(http.MethodPost, "/v1/execute", nil)
		req.Header.Set("traceparent", "00-"+restTrace+"-b7ad6b7169203331-01")
		spanCtx, span := cat.startSpan(req.Context(), req, "execute", nil)
		Expect(span).To(BeIdenticalTo(tracing.NoSpan))
		Expect(trace.SpanContextFromContext(spanCtx).TraceID().String()).To(Equal(restTrace))
		Expect(trace.SpanContextFromContext(spanCtx).IsRemote()).To(BeTrue())

		By("each call's audit line names its caller's trace")
		cat.audit.flush()
		var traces []string
		for _, l := range strings.Split(strings.TrimSpace(trail.String()), "\n") {
			var rec AuditRecord
			Expect(json.Unmarshal([]byte(l), &rec)).To(Succeed(), l)
			traces = append(traces, rec.TraceID)
		}
		Expect(traces).To(Equal([]string{restTrace, mcpTrace}))
	})
})

func (rcv *otlpReceiver) byID(id []byte) *tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, s := range rcv.spans {
		if string(s.SpanId) == string(id) {
			return s
		}
	}
	return nil
}

var _ = Describe("The audit trail", func() {
	It("has one line per call, allowed or refused, with who, what and how it ended, and never a value or a header", func() {
		env.InstallCatalogRoles()
		ns := env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		collection(ns, "kit", "calc")
		caller := serviceAccountToken(ns, "auditee")
		bind(ns, "auditee", "catalog-caller", "auditee")
		reader := serviceAccountToken(ns, "looker")
		bind(ns, "looker", "catalog-reader", "looker")
		trail := &testenv.LockedBuffer{}
		cat, srv := newCatalog(Options{Auth: AuthKubernetes, Audit: trail, CallerRate: 0.001, CallerBurst: 3})
		path := "/v1/namespaces/" + ns + "/toolcollections/kit/execute"
		bearer := func(token string) []string { return []string{"Authorization", "Bearer " + token} }

		Expect(callTo(srv.URL, path, `{"name":"mcp_calc_add","arguments":{"a":"audit-marker-arg","b":1}}`, append(bearer(caller), "X-Request-Id", "req-1")...).code).To(Equal(422))
		Expect(callTo(srv.URL, path, `{"name":"mcp_calc_add","arguments":{"a":20,"b":22}}`, bearer(caller)...).code).To(Equal(200))
		Expect(callTo(srv.URL, path, `{"name":"mcp_calc_fail"}`, bearer(caller)...).code).To(Equal(200))
		Expect(callTo(srv.URL, path, `{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`, bearer(reader)...).code).To(Equal(403))
		Expect(callTo(srv.URL, path, `{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`, "Authorization", "Bearer audit-marker-token").code).To(Equal(401))
		// The caller's first three calls spent its burst; the rate refills
		// one call in 1000s, so the fourth is refused.
		mcp := connectMCP(srv.URL+"/v1/namespaces/"+ns+"/toolcollections/kit/mcp", map[string]string{"Authorization": "Bearer " + caller}, nil)
		_, _ = mcp.CallTool(ctx, "mcp_calc_add", json.RawMessage(`{"a":2,"b":3}`), mcpclient.CallOptions{})

		// The trail is written in batches, within auditFlushInterval of a
		// line; flushing then (as the catalog does when it stops) finds
		// nothing more.
		readLines := func(g Gomega) []AuditRecord {
			var lines []AuditRecord
			for _, l := range strings.Split(strings.TrimSpace(trail.String()), "\n") {
				var rec AuditRecord
				g.Expect(json.Unmarshal([]byte(l), &rec)).To(Succeed(), l)
				lines = append(lines, rec)
			}
			return lines
		}
		Eventually(readLines).Should(HaveLen(6))
		cat.audit.flush()
		lines := readLines(Default)
		Expect(lines).To(HaveLen(6))
		Expect(trail.String()).NotTo(ContainSubstring("audit-marker"), "an argument value or a token reached the trail")
		user := "system:serviceaccount:" + ns + ":auditee"
		Expect(lines[0]).To(MatchFields(user, "req-1", "rest", "mcp_calc_add", "invalid_arguments", 422))
		Expect(lines[1]).To(MatchFields(user, "", "rest", "mcp_calc_add", "success", 200))
		Expect(lines[1].ResultBytes).To(BeNumerically(">", 0))
		Expect(lines[1].OriginalName).To(Equal("add"))
		Expect(lines[1].Server).To(Equal(ns + "/calc"))
		Expect(lines[1].Collection).To(Equal(ns + "/kit"))
		Expect(lines[1].Groups).To(ContainElement("system:serviceaccounts"))
		Expect(lines[2]).To(MatchFields(user, "", "rest", "mcp_calc_fail", "tool_error", 200))
		Expect(lines[3]).To(MatchFields("system:serviceaccount:"+ns+":looker", "", "rest", "mcp_calc_add", "forbidden", 403))
		Expect(lines[4]).To(MatchFields("unauthenticated", "", "rest", "", "unauthorized", 401))
		Expect(lines[5].Via).To(Equal("mcp"))
		Expect(lines[5].Outcome).To(Equal("rate_limited"), "the caller's burst of three was spent")
	})
})

// MatchFields matches an audit line's user, request id (when given), way,
// tool, outcome and status.
func MatchFields(user, requestID, via, tool, outcome string, status int) OmegaMatcher {
	matchers := []OmegaMatcher{
		WithTransform(func(r AuditRecord) string { return r.User }, Equal(user)),
		WithTransform(func(r AuditRecord) string { return r.Via }, Equal(via)),
		WithTransform(func(r AuditRecord) string { return r.Tool }, Equal(tool)),
		WithTransform(func(r AuditRecord) string { return r.Outcome }, Equal(outcome)),
		WithTransform(func(r AuditRecord) int { return r.Status }, Equal(status)),
		WithTransform(func(r AuditRecord) string { return r.RequestID }, Not(BeEmpty())),
	}
	if requestID != "" {
		matchers = append(matchers, WithTransform(func(r AuditRecord) string { return r.RequestID }, Equal(requestID)))
	}
	return And(matchers...)
}
