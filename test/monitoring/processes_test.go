package monitoring

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBinaries builds the operator's commands from the repository (its
// own module) into a folder of the test's.
func buildBinaries(t *testing.T, packages ...string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, packages...)...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %v: %v\n%s", packages, err, out)
	}
	return dir
}

// process is a command the test started; it is stopped (SIGTERM, then
// SIGKILL) when the test ends, and killed with the test binary.
type process struct {
	name   string
	cmd    *exec.Cmd
	output *lockedBuffer
	done   chan struct{}
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: filepath.Base(bin), cmd: exec.Command(bin, args...), output: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout = p.output
	p.cmd.Stderr = p.output
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s output:\n%s", p.name, p.output)
		}
	})
	return p
}

// stop asks the process to end, as Ctrl-C would, so the control plane
// stops its kube-apiserver and etcd; a stopped (SIGSTOP) process is
// continued first.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// pause stops the process (SIGSTOP) and waits until every one of its
// threads is stopped: kill returns before they are.
func (p *process) pause(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping %s: %v", p.name, err)
	}
	p.waitFor(t, "all threads stopped", 10*time.Second, func() bool {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", p.cmd.Process.Pid))
		for _, stat := range stats {
			b, err := os.ReadFile(stat)
			// The state follows the command name in parentheses: T is stopped.
			if i := bytes.LastIndexByte(b, ')'); err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				return false
			}
		}
		return len(stats) > 0
	})
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitFor repeats check every 100ms until it holds, the process exits, or
// the timeout passes.
func (p *process) waitFor(t *testing.T, what string, timeout time.Duration, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !check() {
		if p.exited() {
			t.Fatalf("%s exited before %s:\n%s", p.name, what, p.output)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s within %s:\n%s", p.name, what, timeout, p.output)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeAddresses is n distinct loopback addresses nothing listens on right
// now. Every listener stays open until all n are picked: the kernel may
// pick a port again as soon as its listener closes, and a process given
// one port for two listeners exits with "address already in use". (This
// module does not import the operator's, so internal/loopback is out of
// reach.)
func freeAddresses(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ln.Close() }()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

func listening(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err == nil {
		_ = conn.Close()
	}
	return err == nil
}

func fileFilled(path string) func() bool {
	return func() bool {
		info, err := os.Stat(path)
		return err == nil && info.Size() > 0
	}
}

// kubectl runs the real kubectl against the control plane.
func kubectl(t *testing.T, kubeconfig, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// lockedBuffer collects a process's output for the test to read.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
