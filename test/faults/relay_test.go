package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// splitRoute is a load balancer between two replicas as a caller meets
// it: a session's call goes to one, its answer to the server's question,
// a request of its own, to the other. It counts the answers' statuses.
type splitRoute struct {
	calls, answers *url.URL
	mu             sync.Mutex
	answered       []int
}

func (s *splitRoute) RoundTrip(req *http.Request) (*http.Response, error) {
	target := s.calls
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	answer := req.Method == http.MethodPost && json.Unmarshal(body, &msg) == nil && msg.Method == "" && len(msg.ID) > 0
	if answer {
		target = s.answers
	}
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = target.Scheme, target.Host, target.Host
	out.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultTransport.RoundTrip(out)
	if answer && err == nil {
		s.mu.Lock()
		s.answered = append(s.answered, resp.StatusCode)
		s.mu.Unlock()
	}
	return resp, err
}

// A replica's pod, as the kubelet would report it: in the namespace, with
// the manager's labels, its catalog port, and its IP.
func replicaPod(plane *testenv.Env, ns, name, catalog string, labels map[string]string) {
	u, err := url.Parse(catalog)
	Expect(err).NotTo(HaveOccurred())
	host, portText, err := net.SplitHostPort(u.Host)
	Expect(err).NotTo(HaveOccurred())
	port, err := strconv.Atoi(portText)
	Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "manager",
			Ports: []corev1.ContainerPort{{Name: "catalog", ContainerPort: int32(port)}}}}}}
	Expect(plane.Client.Create(ctx, pod)).To(Succeed())
	pod.Status.PodIP = host
	Expect(plane.Client.Status().Update(ctx, pod)).To(Succeed())
}

var _ = Describe("A server's question relayed on one replica, answered through another", Ordered, func() {
	var (
		plane      *testenv.Env
		kubeconfig string
		bin        string
	)
	BeforeAll(func() {
		rig := newProcessRig()
		plane, kubeconfig, bin = rig.plane, rig.kubeconfig, rig.bin
	})

	It("forwards the caller's answer to the replica that asked, and only to a replica", func() {
		ns := plane.Namespace()
		up := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(up.Stop)
		up.AddElicitingTool()
		labels := map[string]string{"app.kubernetes.io/name": "mcp-operator"}
		replica := func(pod string) []string {
			return []string{"POD_NAME=" + pod, "POD_NAMESPACE=" + ns}
		}
		lease := []string{"--leader-elect", "--leader-election-namespace=" + ns,
			"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s",
			"--workload-ingress-from-labels=app.kubernetes.io/name=mcp-operator"}
		a := startManagerWith(bin, kubeconfig, replica("catalog-a"), lease...)
		b := startManagerWith(bin, kubeconfig, replica("catalog-b"), lease...)
		replicaPod(plane, ns, "catalog-a", a.catalog, labels)
		replicaPod(plane, ns, "catalog-b", b.catalog, labels)
		srv := plane.CreateServer(ns, "asker", up.URL())
		Eventually(plane.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		for _, m := range []*managerProcess{a, b} {
			Eventually(func() string { return get(m.catalog, "/v1/tools").body }).Should(ContainSubstring("mcp_asker_elicit"), m.String())
		}

		By("the call on A, the answer to its question through B")
		onA, err := url.Parse(a.catalog)
		Expect(err).NotTo(HaveOccurred())
		onB, err := url.Parse(b.catalog)
		Expect(err).NotTo(HaveOccurred())
		route := &splitRoute{calls: onA, answers: onB}
		client := sdk.NewClient(&sdk.Implementation{Name: "split", Version: "1"}, &sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Zoë"}}, nil
			},
		})
		session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: a.catalog + "/mcp", HTTPClient: &http.Client{Transport: route}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(session.Close)
		result, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_asker_elicit", Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Content).To(HaveLen(1))
		Expect(result.Content[0].(*sdk.TextContent).Text).To(Equal("hello Zoë"))
		route.mu.Lock()
		Expect(route.answered).To(Equal([]int{http.StatusAccepted}), "B took the answer and A accepted it")
		route.mu.Unlock()

		By("an id naming a pod that is not a replica is not forwarded")
		replicaPod(plane, ns, "intruder", a.catalog, map[string]string{"app": "other"})
		init := rawMCP(b.catalog+"/mcp", "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		Expect(init.status).To(Equal(http.StatusOK))
		for _, owner := range []string{"intruder", "no-such-pod", "catalog-b"} {
			made := rawMCP(b.catalog+"/mcp", init.session, "2025-11-25", `{"jsonrpc":"2.0","id":"mcp-operator-relay-00.`+owner+`","result":{"action":"decline"}}`)
			Expect(made.status).To(Equal(http.StatusBadRequest), owner)
		}
		Expect(a.output.String()).NotTo(ContainSubstring("mcp-operator-relay-00"), "A never saw the made-up ids")
	})
})
