package toolcatalog

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// DefaultMaxConcurrentCalls applies where the API server has not defaulted
// spec.maxConcurrentCalls.
const DefaultMaxConcurrentCalls = 32

// errBusy says a call found its server's slots and queue full.
var errBusy = errors.New("busy")

// limiter bounds the calls in flight to one server. Past the limit, up to
// as many callers again wait for a turn, each at most the queue timeout;
// the others are turned away at once. Backpressure instead of collapse:
// a server flooded by one agent fills its own queue, not the catalog's.
type limiter struct {
	slots    chan struct{}
	waiting  atomic.Int64
	maxQueue int64
}

func newLimiter(max int) *limiter {
	return &limiter{slots: make(chan struct{}, max), maxQueue: int64(max)}
}

// capacity is the limit the limiter was made with.
func (l *limiter) capacity() int { return cap(l.slots) }

// acquire takes a slot, waiting at most wait for one; release gives it
// back. errBusy means no slot came; a context error that the caller gave up.
func (l *limiter) acquire(ctx context.Context, wait time.Duration) (release func(), err error) {
	select {
	case l.slots <- struct{}{}:
		return l.release, nil
	default:
	}
	if l.waiting.Add(1) > l.maxQueue {
		l.waiting.Add(-1)
		return nil, errBusy
	}
	defer l.waiting.Add(-1)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case l.slots <- struct{}{}:
		return l.release, nil
	case <-timer.C:
		return nil, errBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *limiter) release() { <-l.slots }
