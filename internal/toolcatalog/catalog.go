// Package toolcatalog is the catalog agents query: it serves each menu in
// the function-calling formats models take and executes tool calls through
// the right MCP server. It reads MCPServers and ToolCollections from the
// manager's cache and never imports the controllers: status is the
// interface between them. Every replica serves it, not only the leader.
package toolcatalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// Options configure the catalog. Zero values take the defaults.
type Options struct {
	// BindAddress is where the catalog listens, for example ":8090".
	BindAddress string
	// MaxRequestBytes caps an execute request body (default 4 MiB).
	MaxRequestBytes int64
	// MaxResultText caps the text of one result (default 1 MiB); longer
	// output is cut and the envelope's system note says so.
	MaxResultText int
	// Log receives one line per tool call.
	Log logr.Logger
	// Auth is AuthNone (default) or AuthKubernetes.
	Auth AuthMode
	// AuthCacheTTL is how long token and permission answers are reused
	// (default 10s).
	AuthCacheTTL time.Duration
	// Reviewer creates TokenReviews and SubjectAccessReviews; required
	// with AuthKubernetes.
	Reviewer client.Client
	// AllowedOrigins are the browser origins the MCP endpoints accept; a
	// request with any other Origin header is refused with 403.
	AllowedOrigins []string
	// Egress limits the addresses tool calls may dial.
	Egress *mcpclient.EgressPolicy
}

const (
	defaultMaxRequestBytes = 4 << 20
	defaultMaxResultText   = 1 << 20
	defaultAuthCacheTTL    = 10 * time.Second
)

// Catalog serves menus and executes tool calls.
type Catalog struct {
	reader  client.Reader
	opts    Options
	log     logr.Logger
	pool    *mcpclient.Pool
	menus   *menuCache
	schemas *schemaCache
	authz   *authorizer
	mcp     *mcpHandlers
	// version moves on every change to an MCPServer or ToolCollection;
	// rendered menus are reused while it stands still.
	version atomic.Uint64
}

// New builds a catalog reading through reader: the manager's client, which
// serves MCPServers and ToolCollections from its cache and reads Secrets
// and ConfigMaps from the API server (see internal/cachepolicy).
func New(reader client.Reader, opts Options) *Catalog {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = defaultMaxRequestBytes
	}
	if opts.MaxResultText <= 0 {
		opts.MaxResultText = defaultMaxResultText
	}
	if opts.Auth == "" {
		opts.Auth = AuthNone
	}
	if opts.AuthCacheTTL <= 0 {
		opts.AuthCacheTTL = defaultAuthCacheTTL
	}
	c := &Catalog{reader: reader, opts: opts, log: opts.Log, pool: &mcpclient.Pool{}, schemas: newSchemaCache()}
	c.menus = newMenuCache(c)
	c.authz = &authorizer{mode: opts.Auth, client: opts.Reviewer, ttl: opts.AuthCacheTTL,
		tokens: map[[32]byte]cachedCaller{}, decisions: map[string]cachedDecision{}}
	c.mcp = newMCPHandlers(c)
	return c
}

// WatchChanges makes every change to an MCPServer or ToolCollection in the
// cache invalidate the rendered menus, so a change in status shows in the
// menus at once.
func (c *Catalog) WatchChanges(ctx context.Context, informers cache.Informers) error {
	changed := func() {
		c.version.Add(1)
		c.mcp.changed()
	}
	bump := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	}
	go c.mcp.syncOnChange(ctx)
	// A deleted server's pooled session goes with it.
	dropSession := toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if srv, ok := obj.(*mcpv1alpha1.MCPServer); ok {
			c.pool.Drop(srv.Namespace + "/" + srv.Name)
		}
	}}
	informer, err := informers.GetInformer(ctx, &mcpv1alpha1.MCPServer{})
	if err != nil {
		return fmt.Errorf("watching MCPServers for the catalog: %w", err)
	}
	if _, err := informer.AddEventHandler(dropSession); err != nil {
		return fmt.Errorf("watching MCPServers for the catalog: %w", err)
	}
	for _, obj := range []client.Object{&mcpv1alpha1.MCPServer{}, &mcpv1alpha1.ToolCollection{}} {
		informer, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T for the catalog: %w", obj, err)
		}
		if _, err := informer.AddEventHandler(bump); err != nil {
			return fmt.Errorf("watching %T for the catalog: %w", obj, err)
		}
	}
	return nil
}

// Runnable serves the catalog inside the manager.
type Runnable struct {
	Catalog   *Catalog
	Informers cache.Informers
}

// NeedLeaderElection is false: every replica serves the catalog.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then drains in-flight calls.
func (r *Runnable) Start(ctx context.Context) error {
	if err := r.Catalog.WatchChanges(ctx, r.Informers); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", r.Catalog.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("listening for the catalog on %s: %w", r.Catalog.opts.BindAddress, err)
	}
	srv := &http.Server{
		Handler:           r.Catalog.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		// Longer than the longest tool call (spec.timeout is at most 10m).
		WriteTimeout:   11 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	r.Catalog.log.Info("Serving the catalog", "address", ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	r.Catalog.pool.CloseAll()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
