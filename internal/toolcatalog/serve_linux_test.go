package toolcatalog

import (
	"context"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCatalogConnectionsGiveUpOnSilentPeers: every connection the catalog
// accepts gives up on a peer that acknowledges nothing for a minute, so a
// listening stream whose client vanished is let go at its next keep-alive.
func TestCatalogConnectionsGiveUpOnSilentPeers(t *testing.T) {
	ln, err := listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var timeout int
	if err := raw.Control(func(fd uintptr) {
		timeout, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}); err != nil || timeout != int(streamUserTimeout.Milliseconds()) {
		t.Fatalf("an accepted connection's TCP_USER_TIMEOUT is %d ms (%v), want %d", timeout, err, streamUserTimeout.Milliseconds())
	}
}
