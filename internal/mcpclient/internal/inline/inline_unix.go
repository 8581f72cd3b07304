//go:build unix && !aix

package inline

import (
	"net"
	"syscall"
)

// Supported says the system can peek at a kept connection (alive).
const Supported = true

// alive reports whether a kept connection is still open and quiet: a
// peek that would block. A server that closed it (its idle timeout:
// Node's is 5 s) shows an end of stream, and one that sent something
// unasked is not to be trusted with the next answer.
func alive(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var one [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true // never wait for the socket
	})
	return err == nil && open
}
