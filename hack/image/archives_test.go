//go:build imagearchives

package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestArchives checks the archives a real `make image` wrote, in the folder
// IMAGE_ARCHIVES names: make image-verify builds with the imagearchives tag
// and sets it. Each is the image its spec describes, named and digested as
// digests.txt says, the operator's is the Dockerfile's, the binaries are
// static, trimmed and stamped, and they run: the manager prints its
// version, the bridge installs itself, the demo server answers --help, and
// pause ends on SIGTERM.
func TestArchives(t *testing.T) {
	dir := os.Getenv("IMAGE_ARCHIVES")
	if dir == "" {
		t.Fatal("IMAGE_ARCHIVES is not set: run make image-verify, which checks the archives make image writes")
	}
	digests, err := os.ReadFile(filepath.Join(dir, "digests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(digests)), "\n")
	if len(lines) != 3 {
		t.Fatalf("digests.txt has %d lines, want one per image (3)", len(lines))
	}
	var o options
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("digests.txt line %q: want archive, reference and digest", line)
		}
		archive, ref, digest := f[0], f[1], f[2]
		b, err := os.ReadFile(filepath.Join(dir, archive))
		if err != nil {
			t.Fatal(err)
		}
		a := readOCIArchive(t, b)
		if a.digest.String() != digest {
			t.Errorf("%s: manifest %s, digests.txt says %s", archive, a.digest, digest)
		}
		if got := a.index.Manifests[0].Annotations[annotationContainerdName]; got != ref {
			t.Errorf("%s: named %q, digests.txt says %q", archive, got, ref)
		}
		if archive == "mcp-operator.tar" {
			// The options this run was built with, as the image says them.
			o = options{
				version:  a.config.Config.Labels["org.opencontainers.image.version"],
				revision: a.config.Config.Labels["org.opencontainers.image.revision"],
				epoch:    a.config.Created.Unix(),
				goarch:   a.config.Architecture,
			}
			if ref != operatorRepository+":"+o.version {
				t.Errorf("%s: tagged %s for version %s", archive, ref, o.version)
			}
			compareWithDockerfile(t, a, o)
		}
		var spec imageSpec
		for _, s := range imageSpecs(o) {
			if s.name+".tar" == archive {
				spec = s
			}
		}
		if spec.name == "" {
			t.Fatalf("%s: no image of that name (mcp-operator.tar first)", archive)
		}
		checkImage(t, a, spec, o)
	}
}

// checkImage checks a against spec: reference, config, and each binary.
func checkImage(t *testing.T, a *readArchive, spec imageSpec, o options) {
	t.Helper()
	cfg := a.config
	if cfg.OS != "linux" || cfg.Architecture != o.goarch || !cfg.Created.Equal(o.created()) {
		t.Errorf("%s: os %q, architecture %q, created %v", spec.name, cfg.OS, cfg.Architecture, cfg.Created)
	}
	if !slices.Equal(cfg.Config.Entrypoint, spec.entrypoint) || cfg.Config.User != spec.user ||
		cfg.Config.WorkingDir != spec.workdir || !slices.Equal(cfg.Config.Env, spec.env) {
		t.Errorf("%s: config %+v", spec.name, cfg.Config)
	}
	for k, v := range spec.labels {
		if cfg.Config.Labels[k] != v {
			t.Errorf("%s: label %s=%q, want %q", spec.name, k, cfg.Config.Labels[k], v)
		}
	}
	if spec.base {
		if f := a.files["/tmp"]; f.hdr.Mode != 0o1777 {
			t.Errorf("%s: /tmp mode %o", spec.name, f.hdr.Mode)
		}
		certs, err := caBundle()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.files[caBundlePath].data, certs) {
			t.Errorf("%s: %s is not the pinned bundle", spec.name, caBundlePath)
		}
	}
	if _, ok := a.files["/bin/sh"]; ok {
		t.Errorf("%s: has a shell", spec.name)
	}
	bin := t.TempDir()
	for _, b := range spec.binaries {
		f, ok := a.files[b.path]
		if !ok || f.hdr.Mode != 0o755 || f.hdr.Uid != 0 {
			t.Errorf("%s: %s missing or not 0755 root", spec.name, b.path)
			continue
		}
		exe := filepath.Join(bin, path.Base(b.path))
		if err := os.WriteFile(exe, f.data, 0o755); err != nil {
			t.Fatal(err)
		}
		checkBinary(t, exe, b, o)
		if o.goarch == runtime.GOARCH && runtime.GOOS == "linux" {
			runBinary(t, exe, b, o)
		}
	}
}

// checkBinary: static (no interpreter, no shared libraries) and built as
// the spec says (package, -trimpath, CGO_ENABLED=0, stripped, no VCS
// stamp).
func checkBinary(t *testing.T, exe string, b binary, o options) {
	t.Helper()
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatalf("%s: %v", b.path, err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: dynamically linked (%v)", b.path, p.Type)
		}
	}
	info, err := buildinfo.ReadFile(exe)
	if err != nil {
		t.Fatalf("%s: %v", b.path, err)
	}
	if info.Path != "github.com/toolmesh/mcp-operator/"+b.pkg {
		t.Errorf("%s: built from %s", b.path, info.Path)
	}
	// With -trimpath, go build does not record -ldflags: -s shows as a
	// missing symbol table, -X main.version as the manager's --version.
	if strings.Contains(" "+b.ldflags+" ", " -s ") && ef.Section(".symtab") != nil {
		t.Errorf("%s: has a symbol table; built with -ldflags=%q", b.path, b.ldflags)
	}
	want := map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": o.goarch}
	got := map[string]string{}
	for _, s := range info.Settings {
		got[s.Key] = s.Value
		if strings.HasPrefix(s.Key, "vcs") {
			t.Errorf("%s: stamped %s=%s (the build is -buildvcs=false)", b.path, s.Key, s.Value)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: build setting %s=%q, want %q", b.path, k, got[k], v)
		}
	}
}

// runBinary runs exe as the image would, the way its spec's tests need.
func runBinary(t *testing.T, exe string, b binary, o options) {
	t.Helper()
	switch b.path {
	case "/manager":
		out, err := exec.Command(exe, "--version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "mcp-operator "+o.version {
			t.Errorf("/manager --version: %q, %v", out, err)
		}
	case "/usr/local/bin/mcp-bridge":
		dest := filepath.Join(t.TempDir(), "mcp-bridge")
		if out, err := exec.Command(exe, "--install", dest).CombinedOutput(); err != nil {
			t.Errorf("mcp-bridge --install: %v: %s", err, out)
		} else if st, err := os.Stat(dest); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("mcp-bridge --install wrote %v, %v", st, err)
		}
	case "/demo-mcp-server":
		out, err := exec.Command(exe, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-stdio") {
			t.Errorf("/demo-mcp-server --help: %v: %s", err, out)
		}
	case "/pause":
		// The Go runtime catches SIGTERM from its start, before main asks
		// for it: a SIGTERM that lands in between ends the process by the
		// default action, which says nothing of /pause's handler. Such a
		// run is tried again; a /pause without the handler dies every time.
		for attempt := 1; ; attempt++ {
			err := runPauseUntilSIGTERM(t, exe)
			var exit *exec.ExitError
			if attempt < 5 && errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM {
				continue
			}
			if err != nil {
				t.Errorf("/pause after SIGTERM: %v", err)
			}
			break
		}
	default:
		t.Errorf("%s: no check runs it", b.path)
	}
}

// runPauseUntilSIGTERM starts /pause, sends it SIGTERM once the kernel
// says it catches it (SigCgt in /proc/PID/status), and returns how it
// ended.
func runPauseUntilSIGTERM(t *testing.T, exe string) error {
	t.Helper()
	cmd := exec.Command(exe)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitCatching(t, cmd.Process.Pid, syscall.SIGTERM)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		return errors.New("it still runs a minute after SIGTERM")
	}
}

// waitCatching waits until a process catches sig, as the kernel reports
// in /proc/PID/status (SigCgt). The Go runtime sets it at start, before
// main installs a handler of its own (see the caller).
func waitCatching(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	bit := uint64(1) << (uint(sig) - 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				if caught, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && caught&bit != 0 {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not catch %v within 30 s", pid, sig)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
