package main

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolmesh/mcp-operator/internal/controller"
)

func TestParseCIDRs(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []netip.Prefix
		invalid bool
	}{
		{"a list with spaces", "10.0.0.0/8, fd00::/8", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}, false},
		{"host bits are masked", "169.254.169.254/16", []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, false},
		{"empty denies nothing", "", nil, false},
		{"a bare address is refused", "10.0.0.1", nil, true},
		{"garbage is refused", "ten/8", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCIDRs(tt.value)
			if (err != nil) != tt.invalid {
				t.Fatalf("error %v, want invalid=%v", err, tt.invalid)
			}
			if !tt.invalid && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestVersionIsStamped builds the manager as the Makefile and Dockerfile do
// and checks that --version prints what was stamped.
func TestVersionIsStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v0.0.0-test.1", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("manager --version: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "mcp-operator v0.0.0-test.1" {
		t.Errorf("--version printed %q, want %q", got, "mcp-operator v0.0.0-test.1")
	}
	// Unless told otherwise, stdio workloads copy the bridge from the
	// image of the same release.
	help, _ := exec.Command(bin, "--help").CombinedOutput()
	if want := `(default "ghcr.io/toolmesh/mcp-operator:v0.0.0-test.1")`; !strings.Contains(string(help), want) {
		t.Errorf("--bridge-image does not default to the release's image %s:\n%s", want, help)
	}
}

// The init container of stdio workloads runs the bridge at
// controller.BridgeInImage in the operator's image: the Dockerfile must
// build it statically and put it exactly there.
func TestTheImageHoldsTheBridgeWhereWorkloadsLookForIt(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(raw)
	for _, want := range []string{
		"CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \\\n    go build -trimpath -ldflags=\"-s -w\" -o mcp-bridge ./cmd/mcp-bridge",
		"COPY --from=builder /workspace/mcp-bridge " + controller.BridgeInImage + "\n",
	} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
}
