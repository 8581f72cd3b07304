package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// readyGauge reads mcp_mcpserver_ready for key without creating the series
// (WithLabelValues would).
func readyGauge(key string) (value float64, present bool) {
	ch := make(chan prometheus.Metric, 1024)
	serverReady.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		Expect(m.Write(&d)).To(Succeed())
		for _, l := range d.Label {
			if l.GetName() == "server" && l.GetValue() == key {
				return d.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// discoveries counts the finished discoveries of key with result.
func discoveries(key, result string) uint64 {
	var d dto.Metric
	Expect(discoveryDuration.WithLabelValues(key, result).(prometheus.Histogram).Write(&d)).To(Succeed())
	return d.GetHistogram().GetSampleCount()
}

var _ = Describe("MCPServer metrics", func() {
	It("exports mcp_mcpserver_ready on every reconcile, so a restarted manager still alerts on a server that stays down", func() {
		ns := newNamespace()
		srv := createServer(ns, "down", "http://127.0.0.1:1/mcp", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.RefreshInterval = &metav1.Duration{Duration: 10 * time.Second}
		})
		key := ns + "/down"
		Eventually(readyOf(srv)).Should(Equal("False/Unreachable"))
		Eventually(func() bool { _, ok := readyGauge(key); return ok }).Should(BeTrue())

		// A new process (restart, new leader) starts with no series, and
		// the server's status does not change: nothing is written.
		serverReady.DeleteLabelValues(key)
		before := discoveries(key, "failure")
		// Reconciles of one object never overlap: by the second discovery
		// since the reset, the first reconcile has finished.
		Eventually(func() uint64 { return discoveries(key, "failure") }, time.Minute).Should(BeNumerically(">=", before+2))
		value, present := readyGauge(key)
		Expect(present).To(BeTrue(), "mcp_mcpserver_ready has no series for a server that is down")
		Expect(value).To(BeZero())
		Expect(readyOf(srv)()).To(Equal("False/Unreachable"))
	})
})
