//go:build linux

package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The sandbox's process ends on SIGTERM and SIGINT, not on SIGCHLD, which
// reaps instead.
func TestWaitEndsOnTermOrInt(t *testing.T) {
	for _, stop := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		sigs := make(chan os.Signal, 3)
		reaped := 0
		sigs <- syscall.SIGCHLD
		sigs <- syscall.SIGCHLD
		sigs <- stop
		done := make(chan struct{})
		go func() { wait(sigs, func() { reaped++ }); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%v: still waiting", stop)
		}
		if reaped != 2 {
			t.Errorf("%v: reaped %d times for 2 SIGCHLDs", stop, reaped)
		}
	}
}

// reap collects exited children and returns when none is left to collect.
func TestReapCollectsExitedChildren(t *testing.T) {
	// The test binary itself, running no test: a child that exits at once.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(30 * time.Second)
	for {
		reap()
		// Once reaped, the child's PID is gone: signal 0 fails.
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the exited child was not reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
