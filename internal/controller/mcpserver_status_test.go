package controller

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

func TestReviewText(t *testing.T) {
	tests := []struct {
		name, tool, description string
		limit                   int
		wantDescription         string
		wantWarnings            []string
	}{
		{"plain text passes", "read", "Reads a file.\nSafely.", 100, "Reads a file.\nSafely.", nil},
		{"a long description is cut", "read", strings.Repeat("a", 20), 8, strings.Repeat("a", 8),
			[]string{"the description was cut from 20 to 8 bytes"}},
		{"a cut never splits a character", "read", "ééééé", 5, "éé",
			[]string{"the description was cut from 10 to 4 bytes"}},
		{"zero-width and bidi characters are reported once each", "read", "ok\u200bhidden\u202eevil\u200b", 100, "ok\u200bhidden\u202eevil\u200b",
			[]string{"the description contains invisible characters: U+200B, U+202E"}},
		{"an invisible name is reported", "re\u200dad", "fine", 100, "fine",
			[]string{"the name contains invisible characters: U+200D"}},
		{"no limit keeps everything", "read", strings.Repeat("a", 20), 0, strings.Repeat("a", 20), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			description, warnings := reviewText(tt.tool, tt.description, tt.limit)
			if description != tt.wantDescription || !reflect.DeepEqual(warnings, tt.wantWarnings) {
				t.Errorf("got %q %q, want %q %q", description, warnings, tt.wantDescription, tt.wantWarnings)
			}
		})
	}
}

func TestRetryDelayBacksOffUpToTheRefreshInterval(t *testing.T) {
	downFor := func(d time.Duration, refresh time.Duration) *mcpv1alpha1.MCPServer {
		srv := &mcpv1alpha1.MCPServer{}
		srv.Spec.RefreshInterval = &metav1.Duration{Duration: refresh}
		srv.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			LastTransitionTime: metav1.NewTime(time.Now().Add(-d))}}
		return srv
	}
	tests := []struct {
		name     string
		srv      *mcpv1alpha1.MCPServer
		min, max time.Duration
	}{
		{"a new failure is retried after a second", downFor(0, time.Minute), time.Second, time.Second},
		{"the delay grows with how long the server has been down", downFor(8*time.Second, time.Minute), 8 * time.Second, 9 * time.Second},
		{"never past the refresh interval", downFor(time.Hour, 30*time.Second), 30 * time.Second, 30 * time.Second},
		{"the refresh interval defaults to a minute", &mcpv1alpha1.MCPServer{Status: downFor(time.Hour, 0).Status}, time.Minute, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryDelay(tt.srv); got < tt.min || got > tt.max {
				t.Errorf("got %s, want between %s and %s", got, tt.min, tt.max)
			}
		})
	}
}

// TestPublishedSchemasAreCanonical: status holds a tool's schemas as the
// API server stores them (keys sorted, no white space), so that an
// unchanged schema at the next refresh is equal to status's byte for byte
// and the comparison need not decode either. The hash is the tool's.
func TestPublishedSchemasAreCanonical(t *testing.T) {
	tool := mcpclient.Tool{Name: "forecast",
		InputSchema:  json.RawMessage(`{"type":"object", "properties":{"where":{"type":"string"}},"required":["where"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"t":{"type":"number"}}}`)}
	published := publishedTools("wx", []mcpclient.Tool{tool}, nil, 0)[0]
	wantIn := `{"properties":{"where":{"type":"string"}},"required":["where"],"type":"object"}`
	wantOut := `{"properties":{"t":{"type":"number"}},"type":"object"}`
	if string(published.InputSchema.Raw) != wantIn || published.OutputSchema == nil || string(published.OutputSchema.Raw) != wantOut {
		t.Errorf("published schemas %s and %v, want %s and %s", published.InputSchema.Raw, published.OutputSchema, wantIn, wantOut)
	}
	if published.Hash != tool.Hash() {
		t.Errorf("published hash %s, the tool's %s", published.Hash, tool.Hash())
	}
	without := publishedTools("wx", []mcpclient.Tool{{Name: "bare", InputSchema: json.RawMessage(`{}`)}}, nil, 0)[0]
	if without.OutputSchema != nil {
		t.Errorf("a tool without an output schema was published with %s", without.OutputSchema.Raw)
	}
}

// BenchmarkRefreshOfAnUnchangedServer is what a refresh of an unchanged
// server costs the controller past the upstream's answer when it
// publishes: its 20 tools published (mcp-go's key order, type first) and
// the status compared twice, as publish and commit do, with a status as
// the API server returns it. (On b2c3fcd, before schemas were published
// in canonical form, the same took 720–870 µs and 356 KB; e2ff198,
// 280–290 µs and 111 KB.) A refresh that finds the object as when the
// last compare found nothing to write skips all of it (lastequal.go);
// this is the first refresh after a change, and any refresh of a
// workload.
func BenchmarkRefreshOfAnUnchangedServer(b *testing.B) {
	var discovered []mcpclient.Tool
	for i := range 20 {
		discovered = append(discovered, mcpclient.Tool{Name: fmt.Sprintf("tool%d", i), Description: "Does a thing with the input it is given.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text"},"count":{"type":"integer","minimum":1}},"required":["text"]}`)})
	}
	stored := publishedTools("p", discovered, nil, 0)
	for i := range stored {
		// As the API server re-encodes it.
		var v any
		if err := json.Unmarshal(stored[i].InputSchema.Raw, &v); err != nil {
			b.Fatal(err)
		}
		stored[i].InputSchema.Raw, _ = json.Marshal(v)
	}
	before := mcpv1alpha1.MCPServerStatus{Tools: stored}
	b.ReportAllocs()
	for b.Loop() {
		after := mcpv1alpha1.MCPServerStatus{Tools: publishedTools("p", discovered, nil, 0)}
		for range 2 { // publish's comparison, then commit's
			if !statusEquality.DeepEqual(before, after) {
				b.Fatal("an unchanged server's status compared unequal")
			}
		}
	}
}
