package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A pidfile holds "<pid> <start time>": the start time (in clock ticks
// since boot, /proc/<pid>/stat's 22nd field) tells the process that was
// started from another that got its PID after a crash and a reboot or a
// wrap-around, which down must not signal.

// start runs bin detached (a session of its own, so that it outlives up
// and no terminal's signal reaches it), its output appended to
// logs/<name>.log, and writes pids/<name>.pid.
func (c *cluster) start(name, bin string, args ...string) error {
	if err := os.MkdirAll(c.path("logs"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(c.path("pids"), 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(c.path("logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	// Reaped here while up runs; once up exits, init reaps it.
	go func() { _ = cmd.Wait() }()
	started, err := startTime(pid)
	if err != nil {
		return fmt.Errorf("%s exited at once: see %s", name, c.path("logs", name+".log"))
	}
	return os.WriteFile(c.pidfile(name), fmt.Appendf(nil, "%d %d\n", pid, started), 0o644)
}

func (c *cluster) pidfile(name string) string { return c.path("pids", name+".pid") }

// running is the PID of the process pids/<name>.pid names, 0 when it no
// longer runs.
func (c *cluster) running(name string) int {
	raw, err := os.ReadFile(c.pidfile(name))
	if err != nil {
		return 0
	}
	var pid int
	var started uint64
	if _, err := fmt.Sscanf(string(raw), "%d %d", &pid, &started); err != nil || pid <= 0 {
		return 0
	}
	if now, err := startTime(pid); err != nil || now != started {
		return 0
	}
	return pid
}

// stop ends the process of pids/<name>.pid: SIGTERM, and SIGKILL after
// grace. A pidfile whose process is gone is removed without a signal.
func (c *cluster) stop(name string, grace time.Duration) error {
	pid := c.running(name)
	if pid == 0 {
		if err := os.Remove(c.pidfile(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	// The pidfile goes only with its process: one that outlives SIGKILL
	// stays known to the next down, and keeps the next up from starting.
	defer func() {
		if c.running(name) == 0 {
			_ = os.Remove(c.pidfile(name))
		}
	}()
	started, _ := startTime(pid)
	gone := func() bool {
		now, err := startTime(pid)
		return err != nil || now != started
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if waitFor(grace, gone) {
		return nil
	}
	logf("%s (pid %d) did not stop within %s: killing it", name, pid, grace)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if waitFor(10*time.Second, gone) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) still runs after SIGKILL", name, pid)
}

// startTime is a live process's start time; a zombie counts as gone.
func startTime(pid int) (uint64, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis.
	s := string(raw)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, errors.New("unreadable stat")
	}
	fields := strings.Fields(s[end+1:])
	// fields[0] is the state (field 3), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, errors.New("unreadable stat")
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, errors.New("exited")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
