package toolcatalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// Runnable serves the catalog inside the manager.
type Runnable struct {
	Catalog *Catalog
	Cache   ctrlcache.Cache
	// serving is true from the moment the catalog listens until it starts
	// shutting down: what its readiness check reports.
	serving atomic.Bool
}

// NeedLeaderElection is false: every replica serves the catalog.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Ready is a readiness check: nil while the catalog accepts requests.
func (r *Runnable) Ready(*http.Request) error {
	if !r.serving.Load() {
		return errors.New("the catalog is not serving")
	}
	return nil
}

// Start serves until ctx ends, then shuts down in order: readiness turns
// false and no new connection is accepted, listening streams end (their
// clients reconnect to another replica), calls in flight get up to the
// drain timeout to finish, and only then are upstream sessions closed.
func (r *Runnable) Start(ctx context.Context) error {
	c := r.Catalog
	if err := c.WatchChanges(ctx, r.Cache); err != nil {
		return err
	}
	ln, err := listen(ctx, c.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("listening for the catalog on %s: %w", c.opts.BindAddress, err)
	}
	srv := c.newServer()
	c.log.Info("Serving the catalog", "address", ln.Addr().String(),
		"fileDescriptors", fileDescriptors(), "maxStreams", c.opts.MaxStreams, "maxCallerStreams", c.opts.MaxCallerStreams, "maxSessions", c.opts.MaxSessions)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	r.serving.Store(true)
	select {
	case err := <-done:
		r.serving.Store(false)
		c.audit.stop()
		return err
	case <-ctx.Done():
	}
	return r.shutdown(srv)
}

// newServer is the catalog's HTTP server. Its timeouts bound a request;
// a listening stream, open for as long as its client listens, lifts them
// and bounds each write instead (stream_writer.go).
func (c *Catalog) newServer() *http.Server {
	return &http.Server{
		Handler:           c.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		// Longer than the longest tool call (spec.timeout is at most 10m).
		WriteTimeout:   11 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
}

func (r *Runnable) shutdown(srv *http.Server) error {
	c := r.Catalog
	r.serving.Store(false)
	c.log.Info("Stopping the catalog: draining calls in flight", "timeout", c.opts.DrainTimeout.String())
	c.endStreams()
	drainCtx, cancel := context.WithTimeout(context.Background(), c.opts.DrainTimeout)
	defer cancel()
	// The streams are the catalog's, not the server's: Shutdown does not
	// wait for their ends to be written.
	c.mcp.held.closed(drainCtx)
	err := srv.Shutdown(drainCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		c.log.Info("Calls still in flight after the drain timeout are cut")
		err = srv.Close()
	}
	c.pool.CloseAll()
	// The calls are over, or cut: their audit lines go out before the
	// manager exits, and a cut call's line as soon as it is written.
	c.audit.stop()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
