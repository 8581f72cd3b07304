package tracing

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestSetupRefusesProtocolsItCannotSpeak(t *testing.T) {
	for _, tc := range []struct {
		name, variable, value string
		refused               bool
	}{
		{"http/protobuf is what it speaks", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", false},
		{"grpc would lose every span", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", true},
		{"http/json is not offered", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", true},
		{"the traces-only variable counts too", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(tc.variable, tc.value)
			shutdown, err := Setup(context.Background(), "test", false)
			if !tc.refused {
				if err != nil {
					t.Fatalf("Setup refused %s=%s: %v", tc.variable, tc.value, err)
				}
				// Nothing was recorded, so nothing is sent to the closed port.
				if err := shutdown(context.Background()); err != nil {
					t.Fatalf("shutdown: %v", err)
				}
				return
			}
			if err == nil {
				_ = shutdown(context.Background())
				t.Fatalf("Setup accepted %s=%s", tc.variable, tc.value)
			}
			if !strings.Contains(err.Error(), tc.variable) || !strings.Contains(err.Error(), "http/protobuf") {
				t.Fatalf("the error should name %s and what to set instead: %v", tc.variable, err)
			}
		})
	}
}

// TestEnabled: spans are made only once a provider that sends them is
// installed; otel's own provider and a no-op one send nothing.
func TestEnabled(t *testing.T) {
	saved, savedUntraced := otel.GetTracerProvider(), untraced
	t.Cleanup(func() {
		untraced = savedUntraced
		otel.SetTracerProvider(saved)
	})
	// What Enabled compares with is otel's own provider, captured before
	// anything could install another (this package's other tests do).
	if got := fmt.Sprintf("%T", savedUntraced); got != "*global.tracerProvider" {
		t.Fatalf("untraced is a %s, not otel's own provider", got)
	}
	// Whatever this process has installed now stands for otel's own.
	untraced = otel.GetTracerProvider()
	if Enabled() {
		t.Error("Enabled with no provider installed")
	}
	otel.SetTracerProvider(sdktrace.NewTracerProvider())
	if !Enabled() {
		t.Error("not Enabled with an SDK provider installed")
	}
	otel.SetTracerProvider(noop.NewTracerProvider())
	if Enabled() {
		t.Error("Enabled with a no-op provider installed")
	}
}
