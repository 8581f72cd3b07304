package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/loopback"
)

// manager is the manager binary running as a process of its own, as a
// user deploys it: its catalog, metrics and probes on loopback ports, its
// API requests through the control plane's counting proxy, its log (and
// the Go runtime's GC trace) in a file.
type manager struct {
	name       string
	cmd        *exec.Cmd
	catalog    string // base URL of the catalog
	metrics    string // base URL of /metrics
	probes     string // base URL of /readyz
	log        string // path of the stdout+stderr file
	started    time.Time
	exited     chan struct{}
	stopOnce   sync.Once
	exitStatus error
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
	// binary is the manager's, once built.
	binary string
)

// build builds a command of the module once per run, as `make build`
// does but keeping symbols, for the profiles.
func build(pkg string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if path, ok := built[pkg]; ok {
		return path, nil
	}
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(workDir, filepath.Base(pkg))
	if err := goBuild(filepath.Join(filepath.Dir(here), "..", ".."), path, pkg); err != nil {
		return "", err
	}
	built[pkg] = path
	return path, nil
}

// buildAt builds pkg as it is at commit ref (anything git rev-parse
// reads), from a copy of that commit's tree (git archive), so that the
// repository itself is not touched: the other side of an A/B run.
func buildAt(ref, pkg string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(here), "..", "..")
	tree, err := os.MkdirTemp(workDir, "ab-tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tree)
	archive := exec.Command("git", "-C", repo, "archive", "--format=tar", ref)
	untar := exec.Command("tar", "-x", "-C", tree)
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		return "", err
	}
	var archiveErr, untarErr bytes.Buffer
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", fmt.Errorf("git archive %s: %w: %s", ref, err, archiveErr.Bytes())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("unpacking %s: %w: %s", ref, err, untarErr.Bytes())
	}
	path := filepath.Join(workDir, filepath.Base(pkg)+"-b")
	if err := goBuild(tree, path, pkg); err != nil {
		return "", fmt.Errorf("at %s: %w", ref, err)
	}
	return path, nil
}

// goBuild builds pkg of the module in dir, static, into out.
func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w: %s", pkg, err, output)
	}
	return nil
}

// managerBinary is ./cmd/manager, built once per run.
func managerBinary() (string, error) {
	path, err := build("./cmd/manager")
	binary = path
	return path, err
}

// startManager starts the manager with the flags given on top of the
// addresses and kubeconfig, and waits until it is ready. It is stopped
// when the benchmark ends, if not before.
func startManager(b *testing.B, cp *controlPlane, name string, flags ...string) *manager {
	b.Helper()
	bin, err := managerBinary()
	if err != nil {
		b.Fatal(err)
	}
	return startManagerBinary(b, bin, cp, name, flags...)
}

// startManagerBinary is startManager with the manager binary given: one
// built at another commit (buildAt), for an A/B run.
func startManagerBinary(b *testing.B, bin string, cp *controlPlane, name string, flags ...string) *manager {
	b.Helper()
	m, err := launchManagerBinary(bin, cp, name, "", nil, flags...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.stop)
	if err := m.waitReady(2 * time.Minute); err != nil {
		b.Fatal(err)
	}
	return m
}

// launchManager starts the manager with env added to this process's
// environment, without waiting for it.
func launchManager(cp *controlPlane, name string, env []string, flags ...string) (*manager, error) {
	return launchManagerAt(cp, name, "", env, flags...)
}

// launchManagerAt is launchManager with the catalog on catalogAddr
// (host:port; empty picks a free one), for a caller that must know the
// catalog's URL before it starts: its --catalog-public-url, the audience
// of its callers' tokens.
func launchManagerAt(cp *controlPlane, name, catalogAddr string, env []string, flags ...string) (*manager, error) {
	bin, err := managerBinary()
	if err != nil {
		return nil, err
	}
	return launchManagerBinary(bin, cp, name, catalogAddr, env, flags...)
}

// launchManagerBinary is launchManagerAt with the manager binary given: one
// built from another commit (buildAt), for an A/B run.
func launchManagerBinary(bin string, cp *controlPlane, name, catalogAddr string, env []string, flags ...string) (*manager, error) {
	var err error
	addrs := []string{catalogAddr, "", ""}
	for i := range addrs {
		if addrs[i] != "" {
			continue
		}
		if addrs[i], err = loopback.FreeAddr(); err != nil {
			return nil, err
		}
	}
	m := &manager{name: name, catalog: "http://" + addrs[0], metrics: "http://" + addrs[1], probes: "http://" + addrs[2],
		log: filepath.Join(workDir, name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(m.log)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig=" + cp.kubeconfig, "--catalog-bind-address=" + addrs[0],
		"--metrics-bind-address=" + addrs[1], "--health-probe-bind-address=" + addrs[2]}, flags...)
	// BENCH_AB_FLAGS adds flags to every manager a run starts, to compare
	// two settings of the same binary (--audit-log=off, say) run by run;
	// BENCH_AB_ENV (below) does the same for its environment.
	if extra := os.Getenv("BENCH_AB_FLAGS"); extra != "" {
		args = append(args, strings.Fields(extra)...)
	}
	m.cmd = exec.Command(bin, args...)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	// gctrace=1 makes the runtime print the live heap after every GC: the
	// process's memory without changing the binary.
	m.cmd.Env = append(append(os.Environ(), "GODEBUG=gctrace=1"), env...)
	// BENCH_AB_ENV adds variables (KEY=value, space-separated) to every
	// manager's environment, as BENCH_AB_FLAGS adds flags.
	m.cmd.Env = append(m.cmd.Env, strings.Fields(os.Getenv("BENCH_AB_ENV"))...)
	// The manager must not outlive a benchmark that dies.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	m.started = time.Now()
	if err := m.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the manager: %w", err)
	}
	go func() {
		m.exitStatus = m.cmd.Wait()
		logFile.Close()
		close(m.exited)
	}()
	return m, nil
}

// waitReady waits for /readyz: the cache synced and the catalog serving.
func (m *manager) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-m.exited:
			return fmt.Errorf("manager %s exited (%w); its log:\n%s", m.name, m.exitStatus, m.tail(40))
		default:
		}
		if resp, err := http.Get(m.probes + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("manager %s not ready within %s; its log:\n%s", m.name, timeout, m.tail(40))
}

// stop ends the manager as Kubernetes does: SIGTERM, then SIGKILL after
// the grace period.
func (m *manager) stop() {
	m.stopOnce.Do(func() {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(40 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.exited
		}
	})
}

func (m *manager) pid() int { return m.cmd.Process.Pid }

// tail is the end of the manager's log, for failure messages.
func (m *manager) tail(lines int) string {
	raw, _ := os.ReadFile(m.log)
	all := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// cpuTime is the CPU time all the manager's threads have used.
func (m *manager) cpuTime() time.Duration { return processCPU(m.pid()) }

// processCPU is the CPU time all of a process's threads have used, from
// the scheduler's per-thread accounting (nanoseconds, unlike
// /proc/pid/stat's clock ticks).
func processCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total int64
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		if fields := strings.Fields(string(raw)); len(fields) > 0 {
			n, _ := strconv.ParseInt(fields[0], 10, 64)
			total += n
		}
	}
	return time.Duration(total)
}

// childPIDs are the processes named comm that this process started (the
// control plane's kube-apiserver and etcd): their CPU is read as the
// manager's is.
func childPIDs(comm string) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after it.
		open, end := strings.IndexByte(string(raw), '('), strings.LastIndexByte(string(raw), ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(string(raw[end+1:]))
		if string(raw[open+1:end]) != comm || len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw[:open]))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// controlPlaneCPU is the CPU time of this process's kube-apiserver and
// etcd, and whether there is exactly one of each to measure (a control
// plane run some other way is not this process's child).
func controlPlaneCPU() (apiServer, etcd time.Duration, ok bool) {
	api, db := childPIDs("kube-apiserver"), childPIDs("etcd")
	if len(api) != 1 || len(db) != 1 {
		return 0, 0, false
	}
	return processCPU(api[0]), processCPU(db[0]), true
}

// memory is the resident set now and its high-water mark, in MiB.
func (m *manager) memory() (rss, peak float64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.pid()))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb float64
		_, _ = fmt.Sscanf(strings.TrimSpace(value), "%f", &kb)
		switch key {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return rss, peak
}

// gcCycle is one line of the runtime's GC trace.
type gcCycle struct {
	at time.Time
	// live is the heap marked live by the cycle, in MiB.
	live float64
}

var gcLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s .* (\d+)->(\d+)->(\d+) MB`)

// gcCycles reads the GC trace from the manager's log.
func (m *manager) gcCycles() []gcCycle {
	f, err := os.Open(m.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []gcCycle
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		match := gcLine.FindStringSubmatch(sc.Text())
		if match == nil {
			continue
		}
		secs, _ := strconv.ParseFloat(match[1], 64)
		live, _ := strconv.ParseFloat(match[4], 64)
		out = append(out, gcCycle{at: m.started.Add(time.Duration(secs * float64(time.Second))), live: live})
	}
	return out
}

// liveHeapBetween is the smallest live heap of the GC cycles that ran in
// [from, to]: what the process holds, without what it was building at
// the moment of one cycle. ok is false when no cycle ran then.
func (m *manager) liveHeapBetween(from, to time.Time) (float64, int, bool) {
	best, n := 0.0, 0
	for _, c := range m.gcCycles() {
		if c.at.Before(from) || c.at.After(to) {
			continue
		}
		if n == 0 || c.live < best {
			best = c.live
		}
		n++
	}
	return best, n, n > 0
}

// metric reads one unlabelled sample from the manager's /metrics.
func (m *manager) metric(name string) (float64, error) {
	resp, err := http.Get(m.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if value, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(value), 64)
		}
	}
	return 0, errors.New("no metric " + name)
}
