package toolcatalog

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// heldStreams are the listening streams open on this replica, by
// endpoint. A few shared writers tell them of their endpoint's list
// changes and keep them alive, and one watch learns of their clients
// closing them, so that no stream needs a goroutine or a timer of its
// own, and 50,000 streams hear of a change without 50,000 goroutines
// waking at once.
type heldStreams struct {
	// interval is how long a stream may stay silent (keep-alives).
	interval time.Duration
	// writers are the writers at work, at most streamWriters.
	writers chan struct{}
	// closes learns of the streams' clients closing them.
	closes    *closeWatch
	mu        sync.Mutex
	byHandler map[*mcpHandler]map[*streamWriter]struct{}
}

// streamWriters is how many writers tell the replica's streams of its
// changes and keep them alive, however many changes go out at once: a
// client that stopped reading holds one up to streamWriteTimeout, and the
// others go on.
const streamWriters = 4

func newHeldStreams(interval time.Duration) *heldStreams {
	return &heldStreams{interval: interval, writers: make(chan struct{}, streamWriters), closes: newCloseWatch(), byHandler: map[*mcpHandler]map[*streamWriter]struct{}{}}
}

func (o *heldStreams) add(h *mcpHandler, s *streamWriter) {
	s.quiet = o.interval / 2
	if spread := o.interval/2 - o.tick(); spread > 0 {
		s.quiet += rand.N(spread)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byHandler[h] == nil {
		o.byHandler[h] = map[*streamWriter]struct{}{}
	}
	o.byHandler[h][s] = struct{}{}
}

func (o *heldStreams) remove(h *mcpHandler, s *streamWriter) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.byHandler[h], s)
	if len(o.byHandler[h]) == 0 {
		delete(o.byHandler, h)
	}
}

// of are the streams open at h, or at every endpoint for nil.
func (o *heldStreams) of(h *mcpHandler) []*streamWriter {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*streamWriter
	for at, streams := range o.byHandler {
		if h != nil && at != h {
			continue
		}
		for s := range streams {
			out = append(out, s)
		}
	}
	return out
}

// closed waits until every stream has ended, or ctx ends.
func (o *heldStreams) closed(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(o.of(nil)) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// listChanged tells the streams open at h that a list changed. It returns
// at once; the writers go on in the background.
func (o *heldStreams) listChanged(h *mcpHandler, list listSet) {
	streams := o.of(h)
	if len(streams) == 0 {
		return
	}
	go o.each(streams, func(s *streamWriter) { s.listChanged(list) })
}

// A writer pauses for writePause after every writeBurst streams it
// writes. A write is a system call that does not give up its thread, and
// every event wakes a client, so a change that went out to tens of
// thousands of streams at full speed would take both cores of a small
// node, and the calls made meanwhile would wait: paced, four writers take
// about a core and tell 50,000 streams within about 350 ms.
const (
	writeBurst = 64
	writePause = time.Millisecond
)

// each calls fn for every stream, from as many of the replica's
// streamWriters writers as are free (at least one), and returns when all
// are done. A writer takes the next stream not yet taken, so one held up
// by a client that stopped reading holds up no other stream.
func (o *heldStreams) each(streams []*streamWriter, fn func(*streamWriter)) {
	var next atomic.Int64
	write := func() {
		for n := 1; ; n++ {
			i := int(next.Add(1)) - 1
			if i >= len(streams) {
				return
			}
			fn(streams[i])
			if n%writeBurst == 0 {
				time.Sleep(writePause)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(streamWriters, len(streams)) {
		wg.Go(func() {
			o.writers <- struct{}{}
			defer func() { <-o.writers }()
			write()
		})
	}
	wg.Wait()
}

// tick is how often the keep-alives look for silent streams.
func (o *heldStreams) tick() time.Duration { return o.interval / 32 }

// keepAlive writes to silent streams until ctx ends. Each stream gets a
// keep-alive once silent for its own time (quiet), drawn between half the
// interval and the interval less a tick, so that none is silent for longer
// than the interval, and streams that opened or heard a change together
// (all of them, after a change) are not all written at the same tick.
func (o *heldStreams) keepAlive(ctx context.Context) {
	tick := time.NewTicker(o.tick())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		var silent []*streamWriter
		for _, s := range o.of(nil) {
			if s.silentAt(now) {
				silent = append(silent, s)
			}
		}
		o.each(silent, func(s *streamWriter) { s.keepAlive(now) })
	}
}
