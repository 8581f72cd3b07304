// Package loopback hands tests loopback addresses for the processes they
// start, which must be given an address before they listen.
package loopback

import (
	"net"
	"sync"
)

// handedOut is every address FreeAddr returned in this process: a few per
// test.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// FreeAddr is a 127.0.0.1 host:port nothing listens on right now and that
// this process never handed out before. The kernel may pick a port again
// as soon as its listener closes, so two picks in a row can be one port; a
// process given it for two listeners exits with "address already in use".
// Another process may still take the port before its user binds it.
func FreeAddr() (string, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	// A port already handed out stays bound until the pick, so the kernel
	// offers another.
	var rejected []net.Listener
	defer func() {
		for _, ln := range rejected {
			_ = ln.Close()
		}
	}()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr, ln.Close()
		}
		rejected = append(rejected, ln)
	}
}
