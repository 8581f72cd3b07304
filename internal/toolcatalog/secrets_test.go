package toolcatalog

import (
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// The marker is in every secret value; it must appear nowhere else.
const secretMarker = "s3cret-marker"

var _ = Describe("Secrets", func() {
	It("never reach status, Events, logs, metrics, menus or error messages, nor another server", func() {
		ns := env.Namespace()
		guarded := calcServer()
		guarded.SetRequiredHeader("Authorization", "Bearer "+secretMarker+"-right")
		other := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		other.AddTools("plain")

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"},
			StringData: map[string]string{"value": "Bearer " + secretMarker + "-wrong"}}
		Expect(env.Client.Create(ctx, secret)).To(Succeed())
		srv := env.CreateServer(ns, "guarded", guarded.URL(), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Headers = []mcpv1alpha1.HeaderSpec{
				{Name: "Authorization", ValueFrom: &mcpv1alpha1.HeaderValueSource{SecretKeyRef: mcpv1alpha1.KeyReference{Name: "token", Key: "value"}}},
				{Name: "X-Tenant", ValueFrom: &mcpv1alpha1.HeaderValueSource{SecretKeyRef: mcpv1alpha1.KeyReference{Name: "token", Key: "value"}}},
			}
		})
		Eventually(env.ReadyOf(srv)).Should(Equal("False/Unauthorized"))

		secret.StringData = map[string]string{"value": "Bearer " + secretMarker + "-right"}
		Expect(env.Client.Update(ctx, secret)).To(Succeed())
		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		readyServer(ns, "other", other.URL())

		var seen []string
		for _, path := range []string{"/v1/tools", "/v1/tools?format=mcp", "/v1/tools?format=anthropic",
			"/v1/namespaces/" + ns + "/mcpservers/guarded/tools?format=mcp"} {
			seen = append(seen, string(get(path).body))
		}
		seen = append(seen, string(post("/v1/execute", `{"name":"mcp_guarded_add","arguments":{"a":1,"b":1}}`).body))
		seen = append(seen, string(post("/v1/execute", `{"name":"mcp_other_plain","arguments":{}}`).body))
		s := connectMCP(catalog.URL+"/mcp", nil, nil)
		result, err := s.CallTool(ctx, "mcp_guarded_add", json.RawMessage(`{"a":2,"b":2}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse())

		// Failures, whose messages are the likeliest place for a leak.
		guarded.Stop()
		seen = append(seen, string(post("/v1/execute", `{"name":"mcp_guarded_add","arguments":{"a":1,"b":1}}`).body))
		Expect(guarded.Restart()).To(Succeed())
		guarded.SetRequiredHeader("Authorization", "Bearer something-else")
		current := env.Fetch(srv)
		patch := client.MergeFrom(current.DeepCopy())
		Expect(env.Client.Patch(ctx, withRefresh(current), patch)).To(Succeed())
		Eventually(env.ReadyOf(srv), 30*time.Second).Should(Equal("False/Unauthorized"))

		status, _ := json.Marshal(env.Fetch(srv).Status)
		seen = append(seen, string(status))
		var events eventsv1.EventList
		Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		for _, e := range events.Items {
			seen = append(seen, e.Note)
		}
		families, err := metrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		var exposition strings.Builder
		for _, f := range families {
			_, _ = expfmt.MetricFamilyToText(&exposition, f)
		}
		seen = append(seen, exposition.String(), suiteLogs.String())

		Expect(suiteLogs.String()).To(ContainSubstring(`"tool": "mcp_guarded_add"`), "the logs were captured")
		for _, text := range seen {
			Expect(text).NotTo(ContainSubstring(secretMarker))
		}
		Expect(other.HeaderValues("Authorization")).To(BeEmpty(), "server A's headers reached server B")
		Expect(other.HeaderValues("X-Tenant")).To(BeEmpty(), "server A's headers reached server B")
		Expect(guarded.HeaderValues("X-Tenant")).To(ContainElement(ContainSubstring(secretMarker)), "the header did go to its own server")
	})
})

// withRefresh changes the spec so that the controller reconnects at once.
func withRefresh(srv *mcpv1alpha1.MCPServer) *mcpv1alpha1.MCPServer {
	srv.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Second}
	return srv
}
