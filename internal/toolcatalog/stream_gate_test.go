package toolcatalog

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTheStreamMetricsCountOpenStreamsByKind: mcp_catalog_streams counts
// the streams open by kind, and mcp_catalog_streams_refused_total the
// streams refused by reason.
func TestTheStreamMetricsCountOpenStreamsByKind(t *testing.T) {
	gauge := func(kind streamKind) float64 { return testutil.ToFloat64(openStreams.WithLabelValues(string(kind))) }
	refused := func(reason string) float64 { return testutil.ToFloat64(refusedStreams.WithLabelValues(reason)) }
	legacy, listen := gauge(legacyStream), gauge(listenStream)
	byCaller, byCapacity := refused("caller"), refused("capacity")

	g := newStreamGate(2, 1)
	ann := &caller{username: "ann"}
	leaveListen, err := g.enter(ann, listenStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.enter(ann, legacyStream); err == nil || statusOf(err) != 429 {
		t.Fatalf("ann's second stream: %v, want 429", err)
	}
	leaveLegacy, err := g.enter(nil, legacyStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.enter(&caller{username: "bob"}, listenStream); err == nil || statusOf(err) != 503 {
		t.Fatalf("a third stream: %v, want 503", err)
	}
	if gauge(legacyStream) != legacy+1 || gauge(listenStream) != listen+1 {
		t.Fatalf("open streams: legacy %v, listen %v; want %v and %v", gauge(legacyStream), gauge(listenStream), legacy+1, listen+1)
	}
	if refused("caller") != byCaller+1 || refused("capacity") != byCapacity+1 {
		t.Fatalf("refused: caller %v, capacity %v; want one each more than %v and %v", refused("caller"), refused("capacity"), byCaller, byCapacity)
	}
	leaveListen()
	leaveLegacy()
	if gauge(legacyStream) != legacy || gauge(listenStream) != listen {
		t.Fatalf("after the streams closed: legacy %v, listen %v", gauge(legacyStream), gauge(listenStream))
	}
	if _, err := g.enter(ann, legacyStream); err != nil {
		t.Fatalf("ann's stream once hers closed: %v", err)
	}
	if len(g.byCaller) != 1 {
		t.Fatalf("the gate keeps %d callers with one stream open", len(g.byCaller))
	}
}
