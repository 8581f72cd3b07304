package mcpclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/tracing"
)

// TestTraceContextReachesTheServer: with tracing on, a call is a client
// span, child of the caller's, and the server gets that span as its parent
// in the request's _meta and in the traceparent header, in every revision.
func TestTraceContextReachesTheServer(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(sdktrace.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	for _, mode := range []testmcp.GoSDKMode{testmcp.GoSDKOnly2026, testmcp.GoSDKSessions} {
		t.Run(string(mode), func(t *testing.T) {
			g := startGoSDK(t, mode)
			g.AddMetaTool()
			s := connectT(t, Target{URL: g.URL(), Timeout: 5 * time.Second}, nil)
			ctx, parent := tracing.Tracer().Start(context.Background(), "the caller")
			result, err := s.CallTool(ctx, "meta", json.RawMessage(`{}`), CallOptions{Meta: map[string]any{"traceparent": "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"}})
			parent.End()
			if err != nil {
				t.Fatal(err)
			}
			call := endedChild(t, spans, "tools/call meta", parent)
			want := "00-" + call.SpanContext().TraceID().String() + "-" + call.SpanContext().SpanID().String() + "-01"
			var item struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(result.Content[0], &item)
			if !strings.Contains(item.Text, `"traceparent":"`+want+`"`) {
				t.Errorf("the server's _meta %s, want traceparent %s (the caller's own replaced)", item.Text, want)
			}
			var header string
			for _, r := range g.Requests() {
				if r.Method == "tools/call" {
					header = r.Header.Get("traceparent")
				}
			}
			if header != want {
				t.Errorf("traceparent header %q, want %q", header, want)
			}
			if m := call.Attributes(); !hasAttr(m, "gen_ai.tool.name", "meta") || !hasAttr(m, "mcp.method.name", "tools/call") ||
				!hasAttr(m, "gen_ai.operation.name", "execute_tool") || !hasAttr(m, "mcp.protocol.version", s.Info().ProtocolVersion) ||
				!hasAttrPrefix(m, "jsonrpc.request.id", "op-") {
				t.Errorf("span attributes %v", m)
			}
			// A request that is not a call is named for its method alone,
			// without the tool's attributes.
			if _, err := s.ListTools(ctx, DefaultLimits); err != nil {
				t.Fatal(err)
			}
			list := endedChild(t, spans, "tools/list", parent)
			if m := list.Attributes(); !hasAttr(m, "mcp.method.name", "tools/list") || hasAttrPrefix(m, "gen_ai.tool.name", "") {
				t.Errorf("tools/list span attributes %v", m)
			}
		})
	}
}

// endedChild is the last ended span named name under parent.
func endedChild(t *testing.T, spans *tracetest.SpanRecorder, name string, parent trace.Span) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	for _, sp := range spans.Ended() {
		if sp.Name() == name && sp.Parent().SpanID() == parent.SpanContext().SpanID() {
			found = sp
		}
	}
	if found == nil {
		t.Fatalf("no client span %s under the caller's span", name)
	}
	return found
}

// hasAttrPrefix reports an attribute key whose string value starts with prefix.
func hasAttrPrefix(attrs []attribute.KeyValue, key, prefix string) bool {
	for _, a := range attrs {
		if string(a.Key) == key && strings.HasPrefix(a.Value.AsString(), prefix) {
			return true
		}
	}
	return false
}

func hasAttr(attrs []attribute.KeyValue, key, value string) bool {
	for _, a := range attrs {
		if string(a.Key) == key && a.Value.AsString() == value {
			return true
		}
	}
	return false
}
