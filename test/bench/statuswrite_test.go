package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// BenchmarkStatusWrite is the API server's CPU for one status write of an
// MCPServer with 20 tools in status, written as the controllers write it
// (an update of the status subresource) and as they wrote it before (a
// merge patch with the same optimistic lock), in alternating rounds of
// one write to each of -benchtime/5 servers (400 at 2000x), eight at a
// time. No manager runs: the writes are the benchmark's own.
//
//	go test -run '^$' -bench BenchmarkStatusWrite -benchtime=2000x ./test/bench
func BenchmarkStatusWrite(b *testing.B) {
	cp, err := sharedPlane()
	if err != nil {
		b.Fatal(err)
	}
	apiServerCPU := func() time.Duration {
		cpu, _, ok := controlPlaneCPU()
		if !ok {
			b.Fatal("no kube-apiserver and etcd of this process's to measure")
		}
		return cpu
	}
	apiServerCPU()
	ns := namespace(b, cp, "writes")
	n := max(callsPerPath()/5, 8)
	name := func(i int) string { return fmt.Sprintf("w%04d", i) }
	createServers(b, cp, ns, n, name, func(int) string { return "http://127.0.0.1:1/mcp" }, nil)
	ctx := context.Background()
	objs := make([]*mcpv1alpha1.MCPServer, n)
	for i := range objs {
		var srv mcpv1alpha1.MCPServer
		if err := cp.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name(i)}, &srv); err != nil {
			b.Fatal(err)
		}
		readyWithTools(&srv, i)
		if err := cp.client.Status().Update(ctx, &srv); err != nil {
			b.Fatal(err)
		}
		objs[i] = &srv
	}
	const rounds = 8
	perWrite := map[bool][]float64{}
	for round := range rounds {
		update := round%2 == 1
		before := apiServerCPU()
		writeAll(b, objs, func(obj *mcpv1alpha1.MCPServer) error {
			old := obj.DeepCopy()
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			obj.Status.LastSyncTime = &now
			obj.Status.ToolsHash = fmt.Sprintf("round-%d", round)
			obj.Status.Tools[round%len(obj.Status.Tools)].Description = fmt.Sprintf("changed in round %d", round)
			if update {
				return cp.client.Status().Update(ctx, obj)
			}
			return cp.client.Status().Patch(ctx, obj, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
		})
		if round > 0 { // the first round warms the API server's caches
			perWrite[update] = append(perWrite[update], float64((apiServerCPU()-before).Microseconds())/1e3/float64(n))
		}
	}
	report(b, fmt.Sprintf("servers-%d", n), map[string]float64{
		"apiserver-cpu-ms/update": median(perWrite[true]), "apiserver-cpu-ms/patch": median(perWrite[false])})
}

// readyWithTools gives srv the status of a Ready server with 20 tools.
func readyWithTools(srv *mcpv1alpha1.MCPServer, i int) {
	for t := range toolsPerServer {
		srv.Status.Tools = append(srv.Status.Tools, mcpv1alpha1.Tool{
			Name: fmt.Sprintf("mcp_w%04d_t%02d", i, t), OriginalName: fmt.Sprintf("t%02d", t),
			Description: "A tool that does a thing with its input and returns what it found.",
			Hash:        fmt.Sprintf("%064d", t),
			InputSchema: k8sruntime.RawExtension{Raw: []byte(`{"type":"object","properties":{"x":{"type":"string","description":"the thing"}}}`)}})
	}
	srv.Status.ToolCount, srv.Status.ObservedGeneration = int32(toolsPerServer), srv.Generation
	for _, c := range []metav1.Condition{
		{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonToolsDiscovered, Message: "Discovered 20 tools"},
		{Type: mcpv1alpha1.ConditionStalled, Status: metav1.ConditionFalse, Reason: mcpv1alpha1.ReasonToolsDiscovered, Message: "Discovered 20 tools"},
	} {
		c.ObservedGeneration = srv.Generation
		meta.SetStatusCondition(&srv.Status.Conditions, c)
	}
}

// writeAll runs write on every object, eight at a time.
func writeAll(b *testing.B, objs []*mcpv1alpha1.MCPServer, write func(*mcpv1alpha1.MCPServer) error) {
	var wg sync.WaitGroup
	next := make(chan *mcpv1alpha1.MCPServer)
	for range 8 {
		wg.Go(func() {
			for obj := range next {
				if err := write(obj); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for _, obj := range objs {
		next <- obj
	}
	close(next)
	wg.Wait()
}
