package toolcatalog

import (
	"fmt"
	"math"
	"net/http"
	"runtime/debug"
	"sync"
)

// streamRetryAfter is the Retry-After, in seconds, of a stream refused
// for want of room.
const streamRetryAfter = 5

// Each open listening stream holds a connection, so a file descriptor;
// the catalog keeps fdHeadroom of the process's descriptors, or a tenth of
// them if that is more, for everything else: the health-probe and metrics
// listeners, calls, connections to MCP servers and to the API server.
const fdHeadroom = 1024

// streamKind names the two kinds of listening stream, in metrics.
type streamKind string

const (
	// legacyStream is a legacy session's GET stream.
	legacyStream streamKind = "legacy"
	// listenStream is a 2026-07-28 subscriptions/listen request.
	listenStream streamKind = "listen"
)

// streamGate bounds the listening streams open on this replica: all of
// them, so that descriptors and memory run out for no one, and each
// authenticated caller's, so that one caller opening streams without end
// cannot take the room of all the others. Calls and other requests do not
// pass through it; they end by themselves.
type streamGate struct {
	max, perCaller int
	mu             sync.Mutex
	open           int
	// byCaller counts the open streams of each caller with one open; it
	// holds no more entries than there are streams.
	byCaller map[string]int
}

func newStreamGate(maxStreams, perCaller int) *streamGate {
	return &streamGate{max: maxStreams, perCaller: perCaller, byCaller: map[string]int{}}
}

// enter admits a stream of kind for the caller (nil with auth off), or
// says why not; leave records the stream's end.
func (g *streamGate) enter(who *caller, kind streamKind) (leave func(), err error) {
	name := ""
	if who != nil {
		name = who.username
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.open >= g.max:
		refusedStreams.WithLabelValues("capacity").Inc()
		return nil, &requestError{code: http.StatusServiceUnavailable, retryAfter: streamRetryAfter,
			message: fmt.Sprintf("this replica holds as many listening streams as it may (%d, --catalog-max-streams); retry in %ds, perhaps on another replica", g.max, streamRetryAfter)}
	case name != "" && g.byCaller[name] >= g.perCaller:
		refusedStreams.WithLabelValues("caller").Inc()
		return nil, &requestError{code: http.StatusTooManyRequests, retryAfter: streamRetryAfter,
			message: fmt.Sprintf("%s holds as many listening streams on this replica as one caller may (%d, --catalog-max-caller-streams); close one, or retry in %ds", name, g.perCaller, streamRetryAfter)}
	}
	g.open++
	if name != "" {
		g.byCaller[name]++
	}
	openStreams.WithLabelValues(string(kind)).Inc()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.open--
		if name != "" {
			if g.byCaller[name]--; g.byCaller[name] <= 0 {
				delete(g.byCaller, name)
			}
		}
		openStreams.WithLabelValues(string(kind)).Dec()
	}, nil
}

// streamMemory is what a listening stream costs, its session's record
// included, and to spare (6.8 KiB, measured at 2,000 and at 15,000
// streams half of each kind: BenchmarkStreams).
const streamMemory = 16 << 10

// defaultMaxStreams is how many listening streams a replica holds unless
// told otherwise: the process's file descriptors less the headroom, and no
// more than half its heap limit (debug.SetMemoryLimit, set from the
// container's memory limit) has room for, the other half being the
// cache's, the menus' and the calls'.
func defaultMaxStreams() int {
	return maxStreamsFor(fileDescriptors(), debug.SetMemoryLimit(-1))
}

// maxStreamsFor is the default cap for a descriptor limit (0: unknown)
// and a heap limit (math.MaxInt64: none); never below 64.
func maxStreamsFor(fds uint64, heap int64) int {
	limit := 1024 // not a Unix the catalog knows: a modest default
	if fds > 0 {
		headroom := max(fdHeadroom, fds/10)
		limit = int(min(fds-min(headroom, fds), 1<<30))
	}
	if heap < math.MaxInt64 {
		limit = min(limit, int(heap/2/streamMemory))
	}
	return max(limit, 64)
}
