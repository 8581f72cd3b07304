package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// BenchmarkDiscovery creates 500 MCPServers at once, each at its own
// loopback server with 20 tools, and reports the time until all are Ready
// with their tools, then how long a tool added upstream takes to reach a
// collection's menu after the server's status shows it.
func BenchmarkDiscovery(b *testing.B) {
	r := setup(b)
	const servers, tools = 500, 20
	for b.Loop() {
		ns := r.namespace(b)
		names := make([]string, tools)
		for i := range names {
			names[i] = fmt.Sprintf("t%02d", i)
		}
		ups := make([]*testmcp.Server, servers)
		for i := range ups {
			ups[i] = upstream(b, testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
			ups[i].AddTools(names...)
		}
		start := time.Now()
		for i, up := range ups {
			r.server(b, ns, fmt.Sprintf("s%03d", i), up.URL(), func(s *mcpv1alpha1.MCPServer) {
				s.Labels = map[string]string{"fleet": "yes"}
			})
		}
		r.waitReady(b, ns, servers, tools, 5*time.Minute)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-all-ready")

		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"s000"}}}}
		if err := r.env.Client.Create(context.Background(), tc); err != nil {
			b.Fatal(err)
		}
		menu := r.catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/fleet/tools"
		waitFor(b, func() bool { code, _ := get(b, menu); return code == 200 })
		waitFor(b, func() bool { return ups[0].Listeners() > 0 }) // the controller listens
		ups[0].AddTools("added")
		statusAt := time.Time{}
		waitFor(b, func() bool {
			var srv mcpv1alpha1.MCPServer
			_ = r.env.Client.Get(context.Background(), keyOf(ns, "s000"), &srv)
			if srv.Status.ToolCount == tools+1 && statusAt.IsZero() {
				statusAt = time.Now()
			}
			return !statusAt.IsZero()
		})
		waitFor(b, func() bool { _, body := get(b, menu); return strings.Contains(string(body), "mcp_s000_added") })
		b.ReportMetric(time.Since(statusAt).Seconds(), "s-status-to-menu")
		b.ReportMetric(peakRSS(), "peak-RSS-MiB")
	}
}

// BenchmarkQuiet watches 100 unchanged servers (refreshing every 10s) for
// three refresh intervals and counts the writes the manager sends.
func BenchmarkQuiet(b *testing.B) {
	r := setup(b)
	r.bigMenu(b)
	for b.Loop() {
		before := r.writes.Load()
		time.Sleep(32 * time.Second)
		b.ReportMetric(float64(r.writes.Load()-before), "api-writes")
	}
}

func waitFor(b *testing.B, cond func() bool) {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("condition not met within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
