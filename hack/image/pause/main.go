//go:build linux

// Command pause is the process of a pod sandbox image: it sleeps until
// SIGTERM or SIGINT and then exits 0, as registry.k8s.io/pause does, and
// reaps the zombies it inherits when the pod shares its PID namespace.
// make image builds it into registry.k8s.io/pause:3.6 (hack/image) so that
// a cluster with no registry can run pods.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	wait(sigs, reap)
}

// wait returns on SIGTERM or SIGINT, reaping children on SIGCHLD.
func wait(sigs <-chan os.Signal, reap func()) {
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap collects every child that has exited.
func reap() {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
