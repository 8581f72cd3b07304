package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

func (r *rig) namespace(b *testing.B) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := r.env.Client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}

func upstream(b *testing.B, opts testmcp.Options) *testmcp.Server {
	s, err := testmcp.Start(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Stop)
	return s
}

func (r *rig) server(b *testing.B, ns, name, url string, mutate ...func(*mcpv1alpha1.MCPServer)) {
	srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mcpv1alpha1.MCPServerSpec{URL: url}}
	for _, m := range mutate {
		m(srv)
	}
	if err := r.env.Client.Create(context.Background(), srv); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.env.Client.Delete(context.Background(), srv) })
}

// waitReady waits until every MCPServer of ns is Ready with the tool count.
func (r *rig) waitReady(b *testing.B, ns string, servers, tools int, timeout time.Duration) {
	start := time.Now()
	for time.Since(start) < timeout {
		var list mcpv1alpha1.MCPServerList
		if err := r.env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for i := range list.Items {
			s := &list.Items[i]
			if meta.IsStatusConditionTrue(s.Status.Conditions, mcpv1alpha1.ConditionReady) && int(s.Status.ToolCount) == tools {
				ready++
			}
		}
		if ready == servers {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("%d servers of %s not all Ready with %d tools within %s", servers, ns, tools, timeout)
}

// percentiles reports p50 and p99 of the latencies as benchmark metrics,
// named with the prefix.
func percentiles(b *testing.B, latencies []time.Duration, prefix string) {
	if len(latencies) == 0 {
		return
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	at := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), prefix+"p50-µs")
	b.ReportMetric(at(0.99), prefix+"p99-µs")
}

// peakRSS is the process's high-water resident set, in MiB.
func peakRSS() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			_, _ = fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// serverKept creates an MCPServer that outlives the benchmark that made it,
// for scenarios that later benchmarks reuse.
func (r *rig) serverKept(b *testing.B, ns, name, url string) {
	srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: mcpv1alpha1.MCPServerSpec{URL: url,
		RefreshInterval: &metav1.Duration{Duration: 10 * time.Second}}}
	if err := r.env.Client.Create(context.Background(), srv); err != nil {
		b.Fatal(err)
	}
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
