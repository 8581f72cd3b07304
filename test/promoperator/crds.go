// Package promoperator finds the Prometheus Operator's CRDs (ServiceMonitor,
// PrometheusRule) at a pinned release, so that tests can install them on
// the test control plane and have the real API server validate the objects
// the chart and config/prometheus ship. The CRDs come from the operator's
// module zip through the Go module proxy, the one source reachable here,
// without adding the module to go.mod.
package promoperator

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Version is the Prometheus Operator release whose CRDs the tests use.
const Version = "v0.94.0"

const module = "github.com/prometheus-operator/prometheus-operator"

// CRDPaths downloads the module once (the module cache keeps it) and
// returns the CRD files for the given plural resource names, e.g.
// "servicemonitors".
func CRDPaths(resources ...string) ([]string, error) {
	// Outside any module, so the repository's go.mod is neither read nor changed.
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+Version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GO111MODULE=on")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("downloading %s@%s through the module proxy: %w", module, Version, err)
	}
	var downloaded struct{ Dir, Error string }
	if err := json.Unmarshal(out, &downloaded); err != nil {
		return nil, fmt.Errorf("reading go mod download's answer: %w", err)
	}
	if downloaded.Error != "" {
		return nil, fmt.Errorf("downloading %s@%s: %s", module, Version, downloaded.Error)
	}
	paths := make([]string, 0, len(resources))
	for _, resource := range resources {
		path := filepath.Join(downloaded.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+resource+".yaml")
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("finding the %s CRD in %s@%s: %w", resource, module, Version, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
