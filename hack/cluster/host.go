package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the cluster changes on the machine outside its folder, and how
// down puts it back: the bridge, kernel settings, kube-proxy's iptables
// rules, and processes and cgroups of pods.

// sysctls kubelet (setupKernelTunables), the bridge plugin (a gateway
// forwards) change; up saves them and down restores them.
var sysctls = []string{
	"net/ipv4/ip_forward",
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

func (c *cluster) saveSysctls() error {
	var saved strings.Builder
	for _, s := range sysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", s))
		if err != nil {
			return err
		}
		fmt.Fprintf(&saved, "%s=%s\n", s, strings.TrimSpace(string(v)))
	}
	return os.WriteFile(c.path("sysctl.saved"), []byte(saved.String()), 0o644)
}

func (c *cluster) restoreSysctls() error {
	raw, err := os.ReadFile(c.path("sysctl.saved"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for line := range strings.Lines(string(raw)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || !slices.Contains(sysctls, name) {
			continue
		}
		if err := os.WriteFile(filepath.Join("/proc/sys", name), []byte(value), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// addBridge makes the pods' bridge with the node's address before the API
// server starts, which listens on it; the CNI bridge plugin takes it over
// as it is.
func addBridge() error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridgeName)); err == nil {
		return fmt.Errorf("bridge %s exists: another cluster runs here, or run down first", bridgeName)
	}
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", nodeIP + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func deleteBridge() error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridgeName)); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "link", "del", bridgeName).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link del %s: %w: %s", bridgeName, err, out)
	}
	return nil
}

// removeKubeChains removes every KUBE-* iptables chain and the rules of
// built-in chains that jump to one, in both address families: kube-proxy's
// (Services) and kubelet's (KUBE-FIREWALL, which drops packets to
// 127.0.0.0/8 from other sources, and canary and hint chains), which
// neither removes when it stops. One iptables-restore per family, built
// from what iptables-save shows, so that rules are deleted as written.
func removeKubeChains() error {
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		saved, err := exec.Command(family + "-save").Output()
		if err != nil {
			continue // the family is not supported here
		}
		script := kubeChainRemoval(string(saved))
		if script == "" {
			continue
		}
		restore := exec.Command(family+"-restore", "--noflush")
		restore.Stdin = strings.NewReader(script)
		if out, err := restore.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s-restore: %w: %s\n%s", family, err, out, script))
		}
	}
	return errors.Join(errs...)
}

// kubeChainRemoval is the iptables-restore input that removes the KUBE-*
// chains of an iptables-save output, and the jumps to them.
func kubeChainRemoval(saved string) string {
	var out strings.Builder
	var table string
	var jumps, chains []string
	flush := func() {
		if table != "" && len(chains) > 0 {
			fmt.Fprintf(&out, "*%s\n", table)
			for _, j := range jumps {
				fmt.Fprintf(&out, "-D %s\n", j)
			}
			for _, c := range chains {
				fmt.Fprintf(&out, "-F %s\n", c)
			}
			for _, c := range chains {
				fmt.Fprintf(&out, "-X %s\n", c)
			}
			out.WriteString("COMMIT\n")
		}
		jumps, chains = nil, nil
	}
	for line := range strings.Lines(saved) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "*"):
			flush()
			table = line[1:]
		case strings.HasPrefix(line, ":KUBE-"):
			chains = append(chains, strings.Fields(line[1:])[0])
		case strings.HasPrefix(line, "-A ") && !strings.HasPrefix(line, "-A KUBE-") && strings.Contains(line, " -j KUBE-"):
			jumps = append(jumps, strings.TrimPrefix(line, "-A "))
		case line == "COMMIT":
			flush()
			table = ""
		}
	}
	return out.String()
}

// sandboxIDs are the pod sandboxes containerd made under the folder.
func (c *cluster) sandboxIDs() []string {
	dirs, _ := filepath.Glob(c.path("containerd", "*", "io.containerd.grpc.v1.cri", "sandboxes", "*"))
	ids := map[string]bool{}
	for _, d := range dirs {
		ids[filepath.Base(d)] = true
	}
	var out []string
	for id := range ids {
		out = append(out, id)
	}
	return out
}

// removeCNIResults removes what libcni cached of the cluster's sandboxes
// outside its folder (containerd 1.6 does not let the cache be moved):
// one file per sandbox and network, named by the sandbox's ID.
func removeCNIResults(sandboxes []string) error {
	var errs []error
	for _, id := range sandboxes {
		matches, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", "*-"+id+"-*"))
		for _, m := range matches {
			errs = append(errs, os.Remove(m))
		}
	}
	return errors.Join(errs...)
}

// podCgroups are the cgroups kubelet makes for pods (cgroupfs driver,
// cgroup v1: /kubepods in each hierarchy), deepest first.
func podCgroups() []string {
	var dirs []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// killPods kills every process in the pods' cgroups (containers, pause
// processes), which outlive kubelet and containerd, then removes the
// cgroups.
func killPods() error {
	procs := func() []int {
		var pids []int
		for _, d := range podCgroups() {
			raw, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			for f := range strings.FieldsSeq(string(raw)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	}
	if !waitFor(20*time.Second, func() bool {
		pids := procs()
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(pids) == 0
	}) {
		return fmt.Errorf("processes still in the pods' cgroups: %v", procs())
	}
	var errs []error
	for _, d := range podCgroups() {
		// A cgroup whose last process just died can be busy a moment.
		if !waitFor(5*time.Second, func() bool {
			err := syscall.Rmdir(d)
			return err == nil || errors.Is(err, syscall.ENOENT)
		}) {
			errs = append(errs, fmt.Errorf("removing cgroup %s", d))
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims of this cluster's containerd,
// known by the socket address on their command line (they outlive
// containerd by design), and removes the sockets they listened on, which a
// killed shim leaves in /run/containerd/s: containerd 1.6 names each
// sha256(<containerd's address>/<namespace>/<id>) there.
func (c *cluster) killShims() error {
	socket := c.path("containerd", "containerd.sock")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var pids []int
	var sockets []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		flags := map[string]string{}
		for i := 1; i < len(args); i++ {
			if strings.HasPrefix(args[i-1], "-") {
				flags[args[i-1]] = args[i]
			}
		}
		if flags["-address"] != socket {
			continue
		}
		pids = append(pids, pid)
		sum := sha256.Sum256([]byte(filepath.Join(socket, flags["-namespace"], flags["-id"])))
		sockets = append(sockets, filepath.Join("/run/containerd/s", hex.EncodeToString(sum[:])))
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if !waitFor(10*time.Second, func() bool {
		for _, pid := range pids {
			if _, err := startTime(pid); err == nil {
				return false
			}
		}
		return true
	}) {
		return fmt.Errorf("containerd shims %v still run", pids)
	}
	var errs []error
	for _, s := range sockets {
		if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mountsUnder are the mount points at or under dir, deepest (and, for one
// point, latest) first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	// Later mounts stack on earlier ones: undo in reverse, deepest first.
	for i, j := 0, len(points)-1; i < j; i, j = i+1, j-1 {
		points[i], points[j] = points[j], points[i]
	}
	sort.SliceStable(points, func(i, j int) bool { return strings.Count(points[i], "/") > strings.Count(points[j], "/") })
	return points, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll unmounts everything kubelet and containerd mounted under the
// folder: volumes, rootfs overlays, /dev/shm, network namespaces, and
// kubelet's shared bind mount of its own root.
func (c *cluster) unmountAll() error {
	for range 5 {
		points, err := mountsUnder(c.dir)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			if err := syscall.Unmount(p, 0); err != nil {
				_ = syscall.Unmount(p, syscall.MNT_DETACH)
			}
		}
	}
	points, _ := mountsUnder(c.dir)
	if len(points) > 0 {
		return fmt.Errorf("still mounted: %v", points)
	}
	return nil
}
