package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // Gomega's DSL reads best dot-imported
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

const (
	// helmCommand is the real Helm at a pinned version, built by `go run`
	// (cached after the first build); the Makefile's HELM says the same.
	helmCommand = "helm.sh/helm/v4/cmd/helm@v4.3.1"
	// release and namespace are what the README's `helm install` uses, and
	// give the names config/default gives (namePrefix mcp-operator-).
	release   = "mcp-operator"
	namespace = "mcp-operator-system"
)

var (
	repoRoot  = filepath.Join("..", "..")
	chartDir  = filepath.Join(repoRoot, "charts", "mcp-operator")
	configDir = filepath.Join(repoRoot, "config")
)

// helm runs the pinned Helm and returns what it printed.
func helm(args ...string) (string, error) {
	cmd := exec.Command("go", append([]string{"run", helmCommand}, args...)...)
	// Only helm's own output is the answer: the go command writes to
	// stderr too (the modules it downloads on a fresh machine), which
	// would end up in the rendered manifests.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// renderChart is `helm template` of the chart, CRDs included, as a user
// installing release "mcp-operator" into mcp-operator-system gets it.
func renderChart(valuesFiles ...string) string {
	args := []string{"template", release, chartDir, "--namespace", namespace, "--include-crds"}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	out, err := helm(args...)
	Expect(err).NotTo(HaveOccurred(), out)
	return writeTemp("chart-*.yaml", out)
}

// renderKustomize is `kustomize build config/<overlay>` (default if none),
// with kubectl's kustomize.
func renderKustomize(overlay ...string) string {
	dir := "default"
	if len(overlay) > 0 {
		dir = overlay[0]
	}
	out, err := exec.Command("kubectl", "kustomize", filepath.Join(configDir, dir)).Output()
	Expect(err).NotTo(HaveOccurred(), "kubectl kustomize config/%s", dir)
	return writeTemp("kustomize-*.yaml", string(out))
}

func writeTemp(pattern, content string) string {
	f, err := os.CreateTemp(GinkgoT().TempDir(), pattern)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	_, err = f.WriteString(content)
	Expect(err).NotTo(HaveOccurred())
	return f.Name()
}

// serverDryRun has the API server take the manifests (server-side apply,
// dry run) and returns the objects as it would store them: defaulted,
// validated, converted. An object it refuses fails the test.
func serverDryRun(manifests string) map[string]*unstructured.Unstructured {
	// Objects without a namespace (config/prometheus) go to the release's.
	out, err := kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-o", "json", "-n", namespace, "-f", manifests)
	Expect(err).NotTo(HaveOccurred(), out)
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	// Numbers as the API machinery reads them: int64 where integral.
	Expect(utiljson.Unmarshal([]byte(out), &list)).To(Succeed(), out)
	objects := map[string]*unstructured.Unstructured{}
	for _, item := range list.Items {
		obj := &unstructured.Unstructured{Object: item}
		key := objectKey(obj)
		Expect(objects).NotTo(HaveKey(key), "%s is rendered twice", key)
		objects[key] = obj
	}
	return objects
}

// objectKey names an object as a reader looks for it: kind (with group),
// namespace and name.
func objectKey(obj *unstructured.Unstructured) string {
	kind := obj.GetKind()
	if group := obj.GroupVersionKind().Group; group != "" {
		kind += "." + group
	}
	if obj.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", kind, obj.GetName())
	}
	return fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
}

// keysOf lists a map's keys, for messages.
func keysOf(objects map[string]*unstructured.Unstructured) string {
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	return strings.Join(keys, ", ")
}
