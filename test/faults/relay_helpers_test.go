package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	. "github.com/onsi/gomega" //nolint:revive,staticcheck // so does Gomega's
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolmesh/mcp-operator/internal/testenv"
)

// splitRoute is a load balancer between two replicas as a caller meets
// it: a session's call goes to one, its answer to the server's question,
// a request of its own, to the other. It records each answer's id and the
// status it got.
type splitRoute struct {
	calls, answers *url.URL
	mu             sync.Mutex
	answered       []string
}

// sent are the answers sent so far, each "id status".
func (s *splitRoute) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answered)
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
		s.answered = append(s.answered, fmt.Sprintf("%s %d", msg.ID, resp.StatusCode))
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
	pod.Status.PodIP, pod.Status.Phase = host, corev1.PodRunning
	Expect(plane.Client.Status().Update(ctx, pod)).To(Succeed())
}

// twoReplicas starts two managers as two replicas of the catalog in ns,
// each with a pod that says where its catalog listens, so that each
// forwards to the other.
func twoReplicas(plane *testenv.Env, ns, kubeconfig, bin string) (a, b *managerProcess) {
	labels := map[string]string{"app.kubernetes.io/name": "mcp-operator"}
	replica := func(pod string) []string {
		return []string{"POD_NAME=" + pod, "POD_NAMESPACE=" + ns}
	}
	lease := []string{"--leader-elect", "--leader-election-namespace=" + ns,
		"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s",
		"--workload-ingress-from-labels=app.kubernetes.io/name=mcp-operator"}
	a = startManagerWith(bin, kubeconfig, replica("catalog-a"), lease...)
	b = startManagerWith(bin, kubeconfig, replica("catalog-b"), lease...)
	replicaPod(plane, ns, "catalog-a", a.catalog, labels)
	replicaPod(plane, ns, "catalog-b", b.catalog, labels)
	for _, m := range []*managerProcess{a, b} {
		Eventually(func() int { return get(m.catalog, "/v1/tools").code }).Should(Equal(http.StatusOK), "%s serves", m)
	}
	return a, b
}
