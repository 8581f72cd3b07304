//go:build e2e

package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// The release as README's install section makes it.
const (
	release    = "mcp-operator"
	operatorNS = "mcp-operator-system"
	// catalogService and its port: the release name gives config/default's
	// object names.
	catalogService = "mcp-operator-catalog"
	catalogPort    = 8090
	managerName    = "mcp-operator-controller-manager"
	leaseName      = "mcp-operator-leader-election"
	// catalogURL is the catalog as pods reach it, by cluster DNS.
	catalogURL = "http://mcp-operator-catalog.mcp-operator-system.svc:8090"
)

func operatorImage() string { return "ghcr.io/toolmesh/mcp-operator:" + version }
func demoImage() string     { return "ghcr.io/toolmesh/demo-mcp-server:" + version }

func helm(args ...string) {
	GinkgoHelper()
	run(repoRoot, helmEnv(), helmBin, args...)
}

// helmEnv keeps Helm's caches and configuration in the run's folder.
func helmEnv() []string {
	return []string{"KUBECONFIG=" + kubeconfig, "HELM_CACHE_HOME=" + filepath.Join(work, "helm-home", "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(work, "helm-home", "config"), "HELM_DATA_HOME=" + filepath.Join(work, "helm-home", "data")}
}

func kubectl(args ...string) {
	GinkgoHelper()
	run(repoRoot, nil, "kubectl", append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
}

// restrictedNamespace creates a namespace that enforces the restricted
// Pod Security Standard, as README's install asks of the operator's.
func restrictedNamespace(name string) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, ns))).To(Succeed())
}

// serviceAccount creates an account in ns; with clusterRole set, a
// RoleBinding there grants it that ClusterRole.
func serviceAccount(name, clusterRole string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	if clusterRole == "" {
		return
	}
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-tools"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
	})).To(Succeed())
}

// token is a token of the account in ns, as the kubelet projects into
// its pods.
func token(name string) string {
	GinkgoHelper()
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// catalogAddr is the catalog Service's cluster IP and port: this machine
// reaches it through kube-proxy's rules, as a pod does.
func catalogAddr() string {
	GinkgoHelper()
	var svc corev1.Service
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: catalogService}, &svc)).To(Succeed())
	Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(catalogPort))
}

// answer is an HTTP answer.
type answer struct {
	status int
	header http.Header
	body   string
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// request asks the catalog at addr; an empty bearer sends no token.
func request(method, addr, path, bearer string, body any) (answer, error) {
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, reader)
	if err != nil {
		return answer{}, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(raw)}, err
}

// fetch reads obj again.
func fetch[T client.Object](obj T) T {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

// condition is the MCPServer's condition of that type, or nil.
func condition(srv *mcpv1alpha1.MCPServer, typ string) *metav1.Condition {
	return meta.FindStatusCondition(srv.Status.Conditions, typ)
}

// conditionIs matches an MCPServer whose condition typ has that status
// and reason, and whose message contains every one of words.
func conditionIs(typ string, status metav1.ConditionStatus, reason string, words ...string) OmegaMatcher {
	return WithTransform(func(srv *mcpv1alpha1.MCPServer) string {
		c := condition(srv, typ)
		if c == nil {
			return "<no " + typ + ">"
		}
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}, SatisfyAll(append([]OmegaMatcher{HavePrefix(string(status) + "/" + reason + ":")}, containAll(words)...)...))
}

func containAll(words []string) []OmegaMatcher {
	var m []OmegaMatcher
	for _, w := range words {
		m = append(m, ContainSubstring(w))
	}
	return m
}

// originalNames are the names the server gave its tools.
func originalNames(srv *mcpv1alpha1.MCPServer) []string {
	var names []string
	for _, t := range srv.Status.Tools {
		names = append(names, t.OriginalName)
	}
	slices.Sort(names)
	return names
}

// exposedName is the catalog's name of the server's tool original.
func exposedName(srv *mcpv1alpha1.MCPServer, original string) string {
	GinkgoHelper()
	for _, t := range srv.Status.Tools {
		if t.OriginalName == original {
			return t.Name
		}
	}
	Fail(fmt.Sprintf("MCPServer %s has no tool %s: %v", srv.Name, original, originalNames(srv)))
	return ""
}

// stdioServer is an MCPServer running the demo server's image over stdio,
// behind the bridge.
func stdioServer(ns, name string, labels map[string]string) *mcpv1alpha1.MCPServer {
	return &mcpv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{
			Image:   demoImage(),
			Command: []string{"/demo-mcp-server", "--stdio"},
		}},
	}
}

// notFound succeeds once obj is gone.
func notFound(obj client.Object) func() error {
	return func() error {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%T %s still exists (deletionTimestamp %v)", obj, obj.GetName(), obj.GetDeletionTimestamp())
	}
}

// containerProcesses are the PIDs, on this machine, of a running
// container: the processes in its cgroup (cgroup v1, cgroupfs driver:
// /sys/fs/cgroup/pids/kubepods/<qos>/pod<uid>/<container id>).
func containerProcesses(pod *corev1.Pod, container string) []int {
	GinkgoHelper()
	var id string
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			_, id, _ = strings.Cut(s.ContainerID, "://")
		}
	}
	Expect(id).NotTo(BeEmpty(), "container %s of pod %s has no ID", container, pod.Name)
	matches, err := filepath.Glob(filepath.Join("/sys/fs/cgroup/pids/kubepods", "*", "pod"+string(pod.UID), id, "cgroup.procs"))
	Expect(err).NotTo(HaveOccurred())
	more, err := filepath.Glob(filepath.Join("/sys/fs/cgroup/pids/kubepods", "pod"+string(pod.UID), id, "cgroup.procs"))
	Expect(err).NotTo(HaveOccurred())
	matches = append(matches, more...)
	Expect(matches).To(HaveLen(1), "the cgroup of container %s of pod %s", container, pod.Name)
	raw, err := os.ReadFile(matches[0])
	Expect(err).NotTo(HaveOccurred())
	var pids []int
	for f := range strings.FieldsSeq(string(raw)) {
		pid, err := strconv.Atoi(f)
		Expect(err).NotTo(HaveOccurred())
		pids = append(pids, pid)
	}
	return pids
}

// procStatus is /proc/<pid>/status as a map.
func procStatus(pid int) map[string]string {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	Expect(err).NotTo(HaveOccurred())
	fields := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// rootMountOptions are the mount options of the process's root
// filesystem, as the process sees it.
func rootMountOptions(pid int) []string {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	Expect(err).NotTo(HaveOccurred())
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			return strings.Split(f[5], ",")
		}
	}
	Fail(fmt.Sprintf("process %d has no root mount", pid))
	return nil
}

// events are the Events about obj, as "<type> <reason>: <message>".
func events(obj client.Object) []string {
	GinkgoHelper()
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == obj.GetUID() {
			out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
		}
	}
	return out
}

// diagnose writes what a person needs to see why a spec failed: every
// object, the MCPServers' status, recent Events and the managers' logs.
func diagnose() {
	out := func(args ...string) {
		o, err := runErr(repoRoot, nil, "kubectl", append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
		fmt.Fprintf(GinkgoWriter, "### kubectl %s\n%s", strings.Join(args, " "), o)
		if err != nil {
			fmt.Fprintln(GinkgoWriter, err)
		}
	}
	out("get", "nodes,pods,deploy,rs,svc,endpointslices,netpol,mcps,tc,lease", "-A", "-o", "wide")
	out("get", "mcps", "-A", "-o", "yaml")
	out("get", "events", "-A", "--sort-by=.lastTimestamp")
	out("logs", "-n", operatorNS, "-l", "app.kubernetes.io/name=mcp-operator", "--tail=60", "--all-containers", "--prefix")
}
