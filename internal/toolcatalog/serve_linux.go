package toolcatalog

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// listen opens the catalog's listener. Its connections give up on a peer
// that has not acknowledged what was sent to it for streamUserTimeout
// (TCP_USER_TIMEOUT, inherited by accepted connections): a client that
// vanished without closing its listening stream is let go once the next
// keep-alive goes unacknowledged, instead of after the kernel's
// retransmissions (about 15 minutes), holding a stream slot and a file
// descriptor meanwhile.
func listen(ctx context.Context, address string) (net.Listener, error) {
	config := net.ListenConfig{Control: func(_, _ string, raw syscall.RawConn) error {
		var err error
		if cerr := raw.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(streamUserTimeout.Milliseconds()))
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	return config.Listen(ctx, "tcp", address)
}
