package toolcatalog

import "syscall"

// watchAlone ends s once its connection closes, or its client sends
// anything more on it, from a goroutine of its own that reads the
// connection: how a stream is watched where the replica's closeWatch
// cannot watch it.
func watchAlone(s *streamWriter) {
	streamsWatchedAlone.Inc()
	conn := *s.conn.Load()
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		s.end()
	}()
}

// rawConnOf is the file descriptor of s's connection, if it has one.
func rawConnOf(s *streamWriter) (syscall.RawConn, bool) {
	conn, ok := (*s.conn.Load()).(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := conn.SyscallConn()
	return raw, err == nil
}
