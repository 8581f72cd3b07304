package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's

	"github.com/toolmesh/mcp-operator/internal/loopback"
	"github.com/toolmesh/mcp-operator/internal/testenv"
)

// buildManager builds the manager binary into dir, with the build settings
// the tests use, so the build cache they filled serves it (`make build`'s
// CGO_ENABLED=0 would rebuild every dependency).
func buildManager(dir string) string {
	bin := filepath.Join(dir, "manager")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/toolmesh/mcp-operator/cmd/manager").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return bin
}

// processRig is a control plane of a spec container's own, with a
// kubeconfig for it and the manager binary built, so that manager
// processes can run against it with no other manager reconciling.
type processRig struct {
	plane      *testenv.Env
	kubeconfig string
	bin        string
}

// newProcessRig starts it, from a BeforeAll; it stops with the container.
func newProcessRig() *processRig {
	plane, err := testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(plane.Stop)
	dir := GinkgoT().TempDir()
	r := &processRig{plane: plane, kubeconfig: filepath.Join(dir, "kubeconfig")}
	Expect(plane.Kubeconfig(r.kubeconfig)).To(Succeed())
	r.bin = buildManager(dir)
	return r
}

// managerProcess is the manager binary running against the control plane.
type managerProcess struct {
	cmd     *exec.Cmd
	output  *testenv.LockedBuffer
	catalog string
	done    chan struct{}
}

// freeAddress is a loopback address nothing listens on right now.
func freeAddress() string {
	addr, err := loopback.FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	return addr
}

// startManager runs the manager with its catalog on a free loopback port;
// it is killed when the test ends, and with the test binary.
func startManager(bin, kubeconfig string, args ...string) *managerProcess {
	return startManagerWith(bin, kubeconfig, nil, args...)
}

// startManagerWith is startManager with env added to the test's
// environment (the downward API's POD_NAME and POD_NAMESPACE).
func startManagerWith(bin, kubeconfig string, env []string, args ...string) *managerProcess {
	address := freeAddress()
	m := &managerProcess{output: &testenv.LockedBuffer{}, catalog: "http://" + address, done: make(chan struct{})}
	m.cmd = exec.Command(bin, append([]string{
		"--kubeconfig=" + kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--catalog-bind-address=" + address,
	}, args...)...)
	if env != nil {
		m.cmd.Env = append(os.Environ(), env...)
	}
	m.cmd.Stdout = m.output
	m.cmd.Stderr = m.output
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	Expect(m.cmd.Start()).To(Succeed())
	go func() {
		_ = m.cmd.Wait()
		close(m.done)
	}()
	DeferCleanup(func() {
		m.kill()
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("--- manager %d output:\n%s\n", m.cmd.Process.Pid, m.output)
		}
	})
	return m
}

// kill ends the process at once, as the kernel's OOM killer or a lost node
// would: no cleanup, no lease released.
func (m *managerProcess) kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// logs is everything the process wrote.
func (m *managerProcess) logs() string { return m.output.String() }

func (m *managerProcess) String() string { return fmt.Sprintf("manager %d", m.cmd.Process.Pid) }
