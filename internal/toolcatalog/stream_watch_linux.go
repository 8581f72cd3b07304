package toolcatalog

import (
	"errors"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// closeWatch learns, for every listening stream of the replica, when its
// client closes its connection, sends anything more on it, or the kernel
// gives up on it (streamUserTimeout), with one goroutine for them all: an
// epoll instance of its own, beside the Go runtime's, watches the streams'
// connections, which nothing reads. A goroutine blocked reading each
// connection would cost a stream a goroutine and its stack, and the
// runtime keeps a record of every goroutine it ever ran: 15,000 streams
// would leave 7 MiB behind for good.
//
// The watch runs while it watches a stream, and lets go of its epoll
// instance within about two seconds of its last stream's end. Events
// carry the stream's own number, never its file descriptor, which a
// connection opened meanwhile may have been given: a stream is forgotten
// (its registration removed) before its connection closes, and an event
// for a stream forgotten meanwhile is dropped (watched). Should the
// kernel refuse the watch a stream (descriptors or
// fs.epoll.max_user_watches run out), the stream is watched alone, by a
// goroutine of its own.
type closeWatch struct {
	mu sync.Mutex
	// epfd is the epoll instance, -1 while the watch is not running.
	epfd    int
	next    uint64
	streams map[uint64]*streamWriter
	// alone has every stream watched alone (tests of that way).
	alone bool
}

func newCloseWatch() *closeWatch {
	return &closeWatch{epfd: -1, streams: map[uint64]*streamWriter{}}
}

// watchedEvents are what ends a stream: anything to read (its client sent
// more, or closed), the peer's close, an error, a hang-up. A stream is
// reported once (EPOLLONESHOT); it ends at once.
const watchedEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLERR | unix.EPOLLHUP | unix.EPOLLONESHOT

// watch ends s (s.end) once its connection closes. A stream that ended
// already is not watched.
func (c *closeWatch) watch(s *streamWriter) {
	raw, ok := rawConnOf(s)
	if !ok || c.alone {
		watchAlone(s)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.gone.Load() {
		return
	}
	if c.epfd < 0 {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			watchAlone(s)
			return
		}
		c.epfd = epfd
		go c.run(epfd)
	}
	c.next++
	id := c.next
	event := unix.EpollEvent{Events: watchedEvents, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	var err error
	if cerr := raw.Control(func(fd uintptr) { err = unix.EpollCtl(c.epfd, unix.EPOLL_CTL_ADD, int(fd), &event) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		watchAlone(s)
		return
	}
	s.watched = id
	c.streams[id] = s
}

// forget stops watching s, before its connection closes.
func (c *closeWatch) forget(s *streamWriter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.watched == 0 || c.streams[s.watched] != s {
		return
	}
	delete(c.streams, s.watched)
	if raw, ok := rawConnOf(s); ok {
		_ = raw.Control(func(fd uintptr) { _ = unix.EpollCtl(c.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
	}
}

// watchIdle is how long the watch waits for an event at a time; once it
// watches no stream, it stops after one such wait.
const watchIdle = 1000 // milliseconds

// run ends the streams whose connections epfd reports, until it watches
// none.
func (c *closeWatch) run(epfd int) {
	var events [128]unix.EpollEvent
	for {
		n, err := unix.EpollWait(epfd, events[:], watchIdle)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		c.mu.Lock()
		if err != nil {
			// Not expected of an instance the watch owns: its streams are
			// watched alone instead.
			for id, s := range c.streams {
				delete(c.streams, id)
				watchAlone(s)
			}
			n = 0
		}
		if n <= 0 && len(c.streams) == 0 {
			_ = unix.Close(epfd)
			c.epfd = -1
			// A map keeps the room it once needed.
			c.streams = map[uint64]*streamWriter{}
			c.mu.Unlock()
			return
		}
		ended := c.watchedLocked(events[:max(n, 0)])
		c.mu.Unlock()
		for _, s := range ended {
			s.end()
		}
	}
}

// watchedLocked are the streams still watched that events report; an
// event for a stream forgotten since is dropped.
func (c *closeWatch) watchedLocked(events []unix.EpollEvent) []*streamWriter {
	var ended []*streamWriter
	for _, e := range events {
		if s := c.streams[uint64(uint32(e.Fd))|uint64(uint32(e.Pad))<<32]; s != nil {
			ended = append(ended, s)
		}
	}
	return ended
}
