package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
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
