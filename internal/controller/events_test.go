package controller

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/toolname"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"short text is kept", "abc", 10, "abc"},
		{"text at the limit is kept", "abcdefghij", 10, "abcdefghij"},
		{"longer text ends in an ellipsis within the limit", "abcdefghijk", 10, "abcdefg…"},
		{"a cut never splits a character", "ééééé", 8, "éé…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clip(tt.in, tt.limit)
			if got != tt.want {
				t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
			}
			if len(got) > tt.limit || !utf8.ValidString(got) {
				t.Errorf("clip(%q, %d) = %q: %d bytes, valid UTF-8 %v", tt.in, tt.limit, got, len(got), utf8.ValidString(got))
			}
		})
	}
}

// TestToolChangesFitAnEvent: the longest ToolsChanged note (three long
// lists of names as long as they come) fits the API server's limit whole,
// so it is never clipped mid-name.
func TestToolChangesFitAnEvent(t *testing.T) {
	names := make([]string, 500)
	for i := range names {
		names[i] = fmt.Sprintf("%0*d", toolname.MaxLength, i)
	}
	note := "Tools changed: " + toolChanges{added: names, removed: names, changed: names}.String()
	if len(note) > maxEventNote {
		t.Fatalf("the note is %d bytes, over %d: %s", len(note), maxEventNote, note)
	}
	if !strings.HasSuffix(note, "and 496 more") {
		t.Errorf("the note does not say how many more: %s", note)
	}
}

var _ = Describe("Events", func() {
	It("clips a note over the API server's limit instead of losing the Event", func() {
		ns := newNamespace()
		srv := createServer(ns, "long", "http://127.0.0.1:1/mcp")
		broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kubernetes.NewForConfigOrDie(env.Config).EventsV1()})
		Expect(broadcaster.StartRecordingToSinkWithContext(ctx)).To(Succeed())
		DeferCleanup(broadcaster.Shutdown)
		long := strings.Repeat("é", maxEventNote) // twice the limit, in 2-byte characters
		emit(broadcaster.NewRecorder(env.Scheme, "events-test"), fetch(srv),
			[]statusEvent{{eventType: corev1.EventTypeWarning, reason: "LongNote", action: "Discover", message: long}})

		var note string
		Eventually(func() []string { return eventsOf(srv)() }).Should(ContainElement(HavePrefix("LongNote: ")))
		for _, e := range eventsOf(srv)() {
			if n, ok := strings.CutPrefix(e, "LongNote: "); ok {
				note = n
			}
		}
		Expect(len(note)).To(BeNumerically("<=", maxEventNote))
		Expect(note).To(HaveSuffix("…"))
		Expect(utf8.ValidString(note)).To(BeTrue(), "the cut split a character")
		Expect(long).To(HavePrefix(strings.TrimSuffix(note, "…")))
	})

	It("says which tools changed even when their names are long", func() {
		ns := newNamespace()
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.AddTools(toolNamesN("list_repository_pull_request_review_comments_", 11)...)
		srv := createServer(ns, "ev", mcp.URL())
		Eventually(eventsOf(srv)).Should(ContainElement("ToolsDiscovered: Discovered 11 tools"))

		updateServer(srv, func(renamed *mcpv1alpha1.MCPServer) {
			renamed.Spec.ToolPrefix = "renamed"
		})
		Eventually(eventsOf(srv)).Should(ContainElement(And(
			HavePrefix("ToolsChanged: Tools changed: added mcp_renamed_list_repository_pull_request_review_comments_00,"),
			ContainSubstring("and 7 more; removed mcp_ev_list_repository_pull_request_review_comments_00,"),
			HaveSuffix("and 7 more"))))
	})
})
