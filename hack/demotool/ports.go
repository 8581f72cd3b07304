package main

import (
	"fmt"
	"net"
	"time"
)

// portFree listens on addr and lets go at once. Go sets SO_REUSEADDR, as
// the demo's own servers do, so connections of a previous run waiting in
// TIME_WAIT do not count as the port being in use.
func portFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s is in use: %w", addr, err)
	}
	return ln.Close()
}

// waitPort dials addr until it accepts a connection or the timeout passes.
func waitPort(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing accepts connections on %s after %s: %w", addr, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
