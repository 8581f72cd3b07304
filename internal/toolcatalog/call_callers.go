package toolcatalog

import (
	"context"
	"fmt"
	"math"
	"net/http"

	"golang.org/x/time/rate"
	"k8s.io/utils/lru"
)

// maxTrackedCallers bounds the callers whose token buckets are kept; the
// least recently seen go first (and start with a full bucket if they come
// back, which only ever errs towards letting a call through).
const maxTrackedCallers = 10000

// callerLimits gives each authenticated caller a token bucket of tool
// calls, so one agent in a loop cannot take the catalog from the others.
// Keys are TokenReview usernames: only callers the API server vouched for.
type callerLimits struct {
	rate    rate.Limit
	burst   int
	buckets *lru.Cache
}

func newCallerLimits(perSecond float64, burst int) *callerLimits {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = int(math.Ceil(perSecond))
	}
	return &callerLimits{rate: rate.Limit(perSecond), burst: burst, buckets: lru.New(maxTrackedCallers)}
}

// allow takes one call from the caller's bucket, or says when to retry.
// Callers without an identity (auth off) are not limited.
func (l *callerLimits) allow(ctx context.Context) error {
	who := callerFrom(ctx)
	if l == nil || who == nil {
		return nil
	}
	var bucket *rate.Limiter
	if value, ok := l.buckets.Get(who.username); ok {
		bucket = value.(*rate.Limiter)
	} else {
		bucket = rate.NewLimiter(l.rate, l.burst)
		l.buckets.Add(who.username, bucket)
	}
	if bucket.Allow() {
		return nil
	}
	retry := int(math.Ceil(1 / float64(l.rate)))
	return &requestError{code: http.StatusTooManyRequests, retryAfter: retry,
		message: fmt.Sprintf("%s made more than %g tool calls per second (--catalog-caller-rate); retry in %ds", who.username, float64(l.rate), retry)}
}
