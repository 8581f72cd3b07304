package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// Metrics the controllers export; config/prometheus's alerts and dashboard
// read them. Objects are labelled namespace/name, and a deleted object's
// series are deleted with it, so series are bounded by objects.
var (
	serverReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_mcpserver_ready",
		Help: "1 while the MCPServer's Ready condition is True for its current generation, 0 otherwise.",
	}, []string{"server"})

	discoveryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_discovery_duration_seconds",
		Help:    "Time of one discovery of an MCPServer's tools (connect and every tools/list page), by result (success or failure).",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"server", "result"})

	toolsWithheld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_toolcollection_tools_withheld",
		Help: "Tools held back from the ToolCollection's menu because spec.pinning (mode Enforce) does not approve their current definition.",
	}, []string{"collection"})
)

func init() {
	metrics.Registry.MustRegister(serverReady, discoveryDuration, toolsWithheld, mcpclient.HeldSessions)
}

// exportReady sets mcp_mcpserver_ready from the status srv holds.
func exportReady(srv *mcpv1alpha1.MCPServer) {
	ready := 0.0
	if c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == srv.Generation {
		ready = 1
	}
	serverReady.WithLabelValues(srv.Namespace + "/" + srv.Name).Set(ready)
}

func forgetServerMetrics(key string) {
	serverReady.DeleteLabelValues(key)
	discoveryDuration.DeleteLabelValues(key, "success")
	discoveryDuration.DeleteLabelValues(key, "failure")
}
