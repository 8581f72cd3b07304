package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/loopback"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

// BenchmarkHeapInProcess runs the manager's parts in this process (the
// controllers and the catalog on a manager made as cmd/manager makes it)
// over a fleet of servers × 20 tools, and writes a heap profile of what
// stays live once every server is Ready and the menus were served: the
// binary serves no /debug/pprof, so the manager process's own heap can be
// weighed (BenchmarkScale) but not broken down by allocation site. The
// profile holds the fleet's mcp-go servers too; read it focused on the
// operator's packages (go tool pprof -sample_index=inuse_space
// -focus=toolmesh).
func BenchmarkHeapInProcess(b *testing.B) {
	servers := 1000
	if smoke() {
		servers = 100
	}
	// Sample every 4 KiB allocated rather than 512 KiB, so that per-server
	// sites show at their size.
	runtime.MemProfileRate = 4096
	cp, err := sharedPlane()
	if err != nil {
		b.Fatal(err)
	}
	f, err := startFleet()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.stop)
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := cp.env.NewManager()
	if err != nil {
		b.Fatal(err)
	}
	if err := controller.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: scaleConcurrency}); err != nil {
		b.Fatal(err)
	}
	addr, err := loopback.FreeAddr()
	if err != nil {
		b.Fatal(err)
	}
	cat, err := toolcatalog.New(mgr.GetClient(), toolcatalog.Options{BindAddress: addr, Log: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	if err := mgr.Add(&toolcatalog.Runnable{Catalog: cat, Cache: mgr.GetCache()}); err != nil {
		b.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = mgr.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-stopped })

	ns := namespace(b, cp, "heap")
	names := make([]string, toolsPerServer)
	for i := range names {
		names[i] = fmt.Sprintf("t%02d", i)
	}
	shared := newStreamable(false, names)
	urls := make([]string, servers)
	for i := range urls {
		urls[i] = f.serve("/heap/"+serverName(i)+"/mcp", shared)
	}
	rw := watchReady(b, cp, ns, toolsPerServer)
	createServers(b, cp, ns, servers, serverName, func(i int) string { return urls[i] }, func(s *mcpv1alpha1.MCPServer) {
		s.Spec.RefreshInterval = &metav1.Duration{Duration: 10 * time.Minute}
	})
	rw.wait(b, servers, 5*time.Minute)
	base := "http://" + addr
	menu := &listedPage{method: "GET"}
	eventually(b, "the global menu with every tool", func() error {
		_, body, err := timedFetch(base+"/v1/tools", menu)
		if err == nil && menuTools(body) != servers*toolsPerServer {
			err = fmt.Errorf("%d tools", menuTools(body))
		}
		return err
	})
	if _, _, err := timedFetch(base+"/mcp", &listedPage{method: "POST", request: listRequest("")}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if dir := profileDir(); dir != "" {
		out, err := os.Create(filepath.Join(dir, "heap-inprocess.pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
			b.Fatal(err)
		}
	}
	report(b, fmt.Sprintf("servers-%d", servers), map[string]float64{"process-heap-MiB": float64(ms.HeapAlloc) / (1 << 20)})
}
