package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// fleetSize is one size of the scale benchmark.
type fleetSize struct {
	servers int
	// refresh is spec.refreshInterval of every server: the quiet window
	// is three of them.
	refresh time.Duration
}

// toolsPerServer is every fleet server's tool count.
const toolsPerServer = 20

// scaleConcurrency is --mcpserver-concurrency of the scale managers.
const scaleConcurrency = 16

// BenchmarkScale is issue 17's fleet: 5,000 MCPServers × 20 tools
// (100,000 tools) in one namespace. `make bench-smoke` leaves it out and
// runs BenchmarkScaleSmall, the same steps at 250 servers.
func BenchmarkScale(b *testing.B) {
	benchScale(b, fleetSize{servers: 5000, refresh: 30 * time.Second})
}

// BenchmarkScaleSmall is BenchmarkScale at 250 servers, refreshing every
// 10s (the least spec.refreshInterval allows).
func BenchmarkScaleSmall(b *testing.B) {
	benchScale(b, fleetSize{servers: 250, refresh: 10 * time.Second})
}

// scaleRun is one run of the scale benchmark: the control plane, the
// fleet of upstreams and the namespace of MCPServers.
type scaleRun struct {
	b     *testing.B
	cp    *controlPlane
	fleet *fleet
	size  fleetSize
	ns    string
	// probe is s0000's own upstream, whose tools change; the others share
	// one.
	probe   *streamable
	added   int
	metrics map[string]float64
}

// set records a figure, and logs it at once, so that a run that fails
// later still shows it.
func (r *scaleRun) set(metric string, v float64) {
	r.metrics[metric] = v
	r.b.Logf("%s: %.3f", metric, v)
}

func (r *scaleRun) tools() int { return r.size.servers*toolsPerServer + r.added }

func serverName(i int) string { return fmt.Sprintf("s%04d", i) }

// managerFlags are the scale managers' flags: leader election on, so that
// a second manager can run the catalog alone.
func managerFlags() []string {
	return []string{"--leader-elect", "--leader-election-namespace=default",
		fmt.Sprintf("--mcpserver-concurrency=%d", scaleConcurrency)}
}

func benchScale(b *testing.B, size fleetSize) {
	// This process plays the fleet's upstreams, the user who creates it
	// and the watcher who times it, on the two cores the manager and the
	// API server are measured on. Its collector ran a ninth of its CPU
	// while the fleet became Ready; a quarter as often, it leaves more of
	// the cores to what is measured (memory is plentiful here).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	cp, err := sharedPlane()
	if err != nil {
		b.Fatal(err)
	}
	f, err := startFleet()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.stop)
	r := &scaleRun{b: b, cp: cp, fleet: f, size: size, metrics: map[string]float64{}}

	leader := startManager(b, cp, "scale-a", managerFlags()...)
	holder := r.leaseHolder("")
	baseline := time.Now()
	r.createFleet(leader)
	r.changeSettles(leader)
	r.quiet(leader, baseline)
	r.catalogOnly(holder)
	restarted := r.restart(leader)
	report(b, fmt.Sprintf("servers-%d", size.servers), r.metrics)
	r.profile(restarted)
}

// profile takes the scale benchmark's profiles once every figure is
// reported (see profilePass), from the restarted leader: one refresh
// interval with nothing changing (quiet), two more changes to s0000
// (change), and a tenth of the fleet's size more servers becoming Ready
// (discovery).
func (r *scaleRun) profile(m *manager) {
	b := r.b
	name := func(step string) string { return fmt.Sprintf("scale-%d-%s", r.size.servers, step) }
	// A quiet interval unsampled would only wait: it runs sampled or not
	// at all.
	if p := profileCPU(b, m, name("quiet")); p != nil {
		time.Sleep(r.size.refresh)
		p.stop(b)
	}
	profilePass(b, m, name("change"), func() {
		probes := r.probes(m)
		for range 2 {
			r.change(m, probes, func(*menuProbe, time.Duration, time.Time, time.Duration) {})
		}
	})
	profilePass(b, m, name("discovery"), r.discoverMore)
}

// createFleet serves the upstreams, creates the MCPServers at once and
// reports how long until all are Ready with their tools.
func (r *scaleRun) createFleet(m *manager) {
	b := r.b
	r.ns = namespace(b, r.cp, "fleet")
	names := make([]string, toolsPerServer)
	for i := range names {
		names[i] = fmt.Sprintf("t%02d", i)
	}
	shared := newStreamable(false, names)
	r.probe = newStreamable(false, names)
	urls := make([]string, r.size.servers)
	for i := range urls {
		up := shared
		if i == 0 {
			up = r.probe
		}
		urls[i] = r.fleet.serve("/"+serverName(i)+"/mcp", up)
	}
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "probe"},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{serverName(0)}}}}
	if err := r.cp.client.Create(context.Background(), tc); err != nil {
		b.Fatal(err)
	}
	rw := watchReady(b, r.cp, r.ns, toolsPerServer)
	cpu, writes := m.cpuTime(), r.cp.counts.snapshot()
	apiCPU, etcdCPU, planeMeasured := controlPlaneCPU()
	harnessCPU := processCPU(os.Getpid())
	start := time.Now()
	createServers(b, r.cp, r.ns, r.size.servers, serverName, func(i int) string { return urls[i] }, func(s *mcpv1alpha1.MCPServer) {
		s.Spec.RefreshInterval = &metav1.Duration{Duration: r.size.refresh}
	})
	created := time.Now()
	r.set("s-to-create", created.Sub(start).Seconds())
	done := rw.wait(b, r.size.servers, 5*time.Minute)
	r.set("s-to-all-ready", done.Sub(start).Seconds())
	r.set("s-last-create-to-all-ready", done.Sub(created).Seconds())
	r.set("discovery-cpu-ms/server", float64((m.cpuTime()-cpu).Milliseconds())/float64(r.size.servers))
	// The API server's and etcd's CPU meanwhile, the benchmark's creates
	// and watches included: on two cores, the API server's is most of
	// what the fleet waits for.
	if apiNow, etcdNow, ok := controlPlaneCPU(); ok && planeMeasured {
		r.set("discovery-apiserver-cpu-ms/server", float64((apiNow-apiCPU).Milliseconds())/float64(r.size.servers))
		r.set("discovery-etcd-cpu-ms/server", float64((etcdNow-etcdCPU).Milliseconds())/float64(r.size.servers))
	}
	// And the benchmark's own: the upstreams, the creating clients, the
	// watch and the counting proxy the manager's API requests go through,
	// which on a cluster would not share the manager's cores.
	r.set("discovery-harness-cpu-ms/server", float64((processCPU(os.Getpid())-harnessCPU).Milliseconds())/float64(r.size.servers))
	n, what := r.cp.counts.writesSince(writes)
	r.set("discovery-api-writes/server", float64(n)/float64(r.size.servers))
	b.Logf("the manager's writes while the fleet became Ready: %s", what)
}

// discoverMore creates a tenth of the fleet's size more servers, of
// toolsPerServer tools each, in a namespace of their own and waits until
// they are Ready: discovery onto a full global menu. Their names (p0000…)
// are not the fleet's, so their tools join the menu rather than contest
// the fleet's names.
func (r *scaleRun) discoverMore() {
	b := r.b
	n := r.size.servers / 10
	ns := namespace(b, r.cp, "profiled")
	url := r.fleet.serve("/profiled/mcp", newStreamable(false, toolNames(toolsPerServer)))
	rw := watchReady(b, r.cp, ns, toolsPerServer)
	profiledName := func(i int) string { return fmt.Sprintf("p%04d", i) }
	createServers(b, r.cp, ns, n, profiledName, func(int) string { return url }, nil)
	rw.wait(b, n, 5*time.Minute)
}

// leaseHolder waits until the leader election Lease has a holder other
// than not, and returns it.
func (r *scaleRun) leaseHolder(not string) string { return leaseHolder(r.b, r.cp, "default", not) }

// leaseHolder waits until the leader election Lease in ns has a holder
// other than not, and returns it.
func leaseHolder(b *testing.B, cp *controlPlane, ns, not string) string {
	b.Helper()
	var holder string
	eventually(b, "a manager holding the Lease", func() error {
		var lease coordinationv1.Lease
		if err := cp.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mcp-operator.mcp.toolmesh.io"}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || *lease.Spec.HolderIdentity == not {
			return fmt.Errorf("the Lease is held by %v", lease.Spec.HolderIdentity)
		}
		holder = *lease.Spec.HolderIdentity
		return nil
	})
	return holder
}
