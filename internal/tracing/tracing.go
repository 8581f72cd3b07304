// Package tracing sets the operator up to send OpenTelemetry traces, as
// the standard OTEL_* environment variables say (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, …), over OTLP/HTTP; with none of
// them set it sends nothing. It also names the attributes the operator's
// spans carry, after OpenTelemetry's semantic conventions for MCP and
// generative AI tools. Spans never carry argument or result values, nor
// header values.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of the operator's spans.
const Name = "github.com/toolmesh/mcp-operator"

// Attribute keys, from the semantic conventions for MCP and gen_ai.
const (
	MethodName      = attribute.Key("mcp.method.name")
	ProtocolVersion = attribute.Key("mcp.protocol.version")
	SessionID       = attribute.Key("mcp.session.id")
	ToolName        = attribute.Key("gen_ai.tool.name")
	OperationName   = attribute.Key("gen_ai.operation.name")
	RequestID       = attribute.Key("jsonrpc.request.id")
	ErrorType       = attribute.Key("error.type")
	// The operator's own: which MCPServer and ToolCollection (namespace/name).
	Server     = attribute.Key("mcp_operator.server")
	Collection = attribute.Key("mcp_operator.collection")
	// Outcome is how a catalog call ended (the metrics' outcome label).
	Outcome = attribute.Key("mcp_operator.outcome")
)

// Tracer is the operator's tracer: a no-op until Setup installs a
// provider.
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// untraced is the provider otel serves until one is installed.
var untraced = otel.GetTracerProvider()

// Enabled reports whether spans go anywhere: a provider is installed
// (Setup, or a test) and it is not a no-op. Until then the call path
// starts no spans of its own: spans that record nothing still cost every
// call measurable time (docs/performance-notes.md). A caller's trace
// context stays in the request's context all the same, for the audit
// trail, and an MCP caller's _meta goes upstream as it came.
func Enabled() bool {
	p := otel.GetTracerProvider()
	if _, off := p.(noop.TracerProvider); off {
		return false
	}
	return p != untraced
}

// NoSpan is what a request that starts no span ends: nothing.
var NoSpan = trace.SpanFromContext(context.Background())

// Configured reports whether the environment asks for traces.
func Configured() bool {
	if os.Getenv("OTEL_SDK_DISABLED") == "true" || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs a tracer provider that exports over OTLP/HTTP as the
// environment says, and the W3C trace context and baggage propagators. It
// returns what flushes and stops it; when the environment asks for no
// traces it installs nothing and returns a no-op.
func Setup(ctx context.Context, version string, force bool) (shutdown func(context.Context) error, err error) {
	if !force && !Configured() {
		return func(context.Context) error { return nil }, nil
	}
	if err := checkProtocol(); err != nil {
		return nil, err
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", serviceName()), attribute.String("service.version", version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("describing the process for traces: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return provider.Shutdown, nil
}

// checkProtocol refuses an OTLP protocol other than the one the manager
// exports with, rather than sending OTLP/HTTP to a gRPC port and losing
// every span in silence.
func checkProtocol() error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := os.Getenv(name); v != "" && v != "http/protobuf" {
			return fmt.Errorf("%s=%q: the manager exports traces over OTLP/HTTP only; set it to http/protobuf (or unset it) and point the endpoint at the collector's OTLP/HTTP port (4318)", name, v)
		}
	}
	return nil
}

// serviceName is OTEL_SERVICE_NAME, or mcp-operator.
func serviceName() string {
	if name := os.Getenv("OTEL_SERVICE_NAME"); name != "" {
		return name
	}
	return "mcp-operator"
}

// MetaCarrier carries trace context in an MCP request's _meta (traceparent,
// tracestate, baggage), as the 2026-07-28 revision documents.
type MetaCarrier map[string]any

func (m MetaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m MetaCarrier) Set(key, value string) { m[key] = value }

func (m MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
