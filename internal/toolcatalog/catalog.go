// Package toolcatalog is the catalog agents query: it serves each menu in
// the function-calling formats models take and executes tool calls through
// the right MCP server. It reads MCPServers and ToolCollections from the
// manager's cache and never imports the controllers: status is the
// interface between them. Every replica serves it, not only the leader.
package toolcatalog

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
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
	// Auth is AuthNone (default), AuthKubernetes or AuthOIDC.
	Auth AuthMode
	// OIDC, when set, has the catalog check the JWTs of one OpenID
	// provider itself; required with AuthOIDC, optional with
	// AuthKubernetes.
	OIDC *OIDCOptions
	// PublicURL is the catalog's URL as callers reach it, for example
	// https://tools.example.com (behind an ingress, the ingress's): the
	// resource its MCP endpoints and REST API are, and the audience
	// tokens checked with OIDC must name. Required with OIDC.
	PublicURL string
	// AuthorizationServers are advertised in the Protected Resource
	// Metadata (default: the OIDC issuer).
	AuthorizationServers []string
	// Scopes are advertised in the metadata and in 401 challenges.
	Scopes []string
	// AuthCacheTTL is how long token and permission answers are reused
	// (default 10s), never past a token's exp.
	AuthCacheTTL time.Duration
	// Reviewer creates TokenReviews and SubjectAccessReviews; required
	// unless Auth is AuthNone.
	Reviewer client.Client
	// AllowedOrigins are the browser origins whose cross-origin requests
	// are accepted; same-origin requests and requests without browser
	// headers always are.
	AllowedOrigins []string
	// AllowedHosts, when set, are the only Host headers accepted: the
	// guard against DNS rebinding when browsers can reach the catalog.
	// Empty accepts any.
	AllowedHosts []string
	// Egress limits the addresses tool calls may dial.
	Egress *mcpclient.EgressPolicy
	// Peers are the other replicas, which a caller's answer to a question
	// one of them relayed is forwarded to (relay_forward.go).
	Peers Peers
	// AuthSources hands out the tokens of servers with spec.auth, shared
	// with the controllers so that one token cache serves both (default:
	// the catalog's own).
	AuthSources *upstreamauth.Sources
	// QueueTimeout is the longest a call waits for a turn when its server
	// has spec.maxConcurrentCalls calls in flight (default 2s).
	QueueTimeout time.Duration
	// CallerRate, when above zero, is how many tool calls per second one
	// authenticated caller may make (with AuthKubernetes or AuthOIDC), in bursts of
	// CallerBurst; past it calls are answered 429.
	CallerRate  float64
	CallerBurst int
	// DrainTimeout bounds how long calls in flight may finish once the
	// catalog stops (default 20s).
	DrainTimeout time.Duration
	// Audit, when set, receives the audit trail: one JSON line per tool
	// call (see AuditRecord).
	Audit io.Writer
	// Console serves the console, a web page for people, under /ui/
	// (console.go).
	Console ConsoleOptions
	// APIReader reads from the API server what the cache does not hold:
	// the Events the console shows about an object. Without it, the
	// events routes answer 503.
	APIReader client.Reader
	// Limits bound how much of a server's prompts, resources and templates
	// the catalog reads: the controllers' (--max-tools, --max-tool-pages),
	// so that it serves what status counts (default mcpclient.DefaultLimits).
	Limits mcpclient.Limits
	// SessionIdleTimeout is how long a legacy MCP session that no request
	// names and no listening stream holds is kept before it is ended as a
	// DELETE would end it (default 5m; mcp_idle.go). Its id stays valid.
	SessionIdleTimeout time.Duration
	// MaxSessions caps the legacy MCP sessions with no open stream this
	// replica keeps (one with a stream counts against MaxStreams); past
	// it, the least recently named are ended as the idle timeout would
	// end them (default: as many as a quarter of the
	// heap limit has room for at 16 KiB a session, 65,536 with no limit;
	// mcp_idle.go).
	MaxSessions int
	// MaxStreams caps the listening streams (legacy GET streams and
	// 2026-07-28 subscriptions/listen) this replica holds; past it a new
	// one is answered 503 with Retry-After (default: the process's file
	// descriptor limit less a tenth of it, at least 1024, and no more than
	// half the heap limit has room for; stream_gate.go).
	MaxStreams int
	// MaxCallerStreams caps one authenticated caller's listening streams
	// on this replica; past it, 429 (default: half of MaxStreams).
	MaxCallerStreams int
	// StreamKeepAlive is how long a listening stream may stay silent before
	// the catalog writes an SSE comment to it (default 25s).
	StreamKeepAlive time.Duration
}

const (
	defaultMaxRequestBytes = 4 << 20
	defaultMaxResultText   = 1 << 20
	defaultAuthCacheTTL    = 10 * time.Second
	defaultQueueTimeout    = 2 * time.Second
	defaultDrainTimeout    = 20 * time.Second
)

// Catalog serves menus and executes tool calls.
type Catalog struct {
	// reader serves MCPServers and ToolCollections from the cache and
	// Secrets and ConfigMaps from the API server.
	reader client.Reader
	// metadata reads cached metadata (of Secrets and ConfigMaps).
	metadata  client.Reader
	opts      Options
	log       logr.Logger
	pool      *mcpclient.Pool
	upstreams *upstreams
	menus     *menuCache
	policies  *policies
	schemas   *schemaCache
	authz     *authorizer
	callers   *callerLimits
	mcp       *mcpHandlers
	browsers  *browserGuard
	audit     *auditor
	events    *eventLists
	// surfaces keeps the prompts and resources servers listed
	// (surface_lists.go).
	surfaces *surfaceLists
	// version moves on every change to an MCPServer or ToolCollection;
	// rendered menus are reused while it stands still. serverVersion moves
	// on every change to an MCPServer, before version does: the global and
	// server menus read MCPServers only, so they outlive changes to
	// ToolCollections (a collection's status follows every change to its
	// servers, and would otherwise have the global menu built twice).
	version       atomic.Uint64
	serverVersion atomic.Uint64
	// streams ends the MCP listening streams when the catalog stops.
	streams    context.Context
	endStreams context.CancelFunc
}

// New builds a catalog reading through reader: the manager's client, which
// serves MCPServers and ToolCollections from its cache and reads Secrets
// and ConfigMaps from the API server (see internal/cachepolicy). It fails
// only on options that cannot work.
func New(reader client.Reader, opts Options) (*Catalog, error) {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = defaultMaxRequestBytes
	}
	if opts.MaxResultText <= 0 {
		opts.MaxResultText = defaultMaxResultText
	}
	if opts.Limits.MaxPages <= 0 || opts.Limits.MaxTools <= 0 {
		opts.Limits = mcpclient.DefaultLimits
	}
	if opts.Auth == "" {
		opts.Auth = AuthNone
	}
	if opts.AuthCacheTTL <= 0 {
		opts.AuthCacheTTL = defaultAuthCacheTTL
	}
	if opts.QueueTimeout <= 0 {
		opts.QueueTimeout = defaultQueueTimeout
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = defaultDrainTimeout
	}
	if opts.SessionIdleTimeout <= 0 {
		opts.SessionIdleTimeout = defaultSessionIdleTimeout
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = defaultMaxSessions()
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = defaultMaxStreams()
	}
	if opts.MaxCallerStreams <= 0 {
		opts.MaxCallerStreams = max(opts.MaxStreams/2, 1)
	}
	if opts.StreamKeepAlive <= 0 {
		opts.StreamKeepAlive = defaultStreamKeepAlive
	}
	if opts.AuthSources == nil {
		opts.AuthSources = upstreamauth.NewSources()
	}
	pool := &mcpclient.Pool{Owner: "catalog"}
	c := &Catalog{reader: reader, opts: opts, log: opts.Log, pool: pool, schemas: newSchemaCache(), policies: newPolicies(),
		upstreams: newUpstreams(pool), callers: newCallerLimits(opts.CallerRate, opts.CallerBurst)}
	c.streams, c.endStreams = context.WithCancel(context.Background())
	c.menus = newMenuCache(c)
	c.surfaces = newSurfaceLists(c)
	c.audit = newAuditor(opts.Audit)
	c.events = newEventLists(opts.APIReader)
	c.authz = newAuthorizer(opts.Auth, opts.Reviewer, opts.AuthCacheTTL, maxCachedDecisions)
	c.authz.refused = c.refused
	if err := c.authz.configure(opts); err != nil {
		return nil, err
	}
	c.mcp = newMCPHandlers(c)
	browsers, err := newBrowserGuard(opts.AllowedOrigins, opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	c.browsers = browsers
	return c, nil
}

// WatchChanges makes every change to an MCPServer or ToolCollection in the
// cache invalidate the rendered menus, so a change in status shows in the
// menus at once, and keeps the call path's view of each server current.
func (c *Catalog) WatchChanges(ctx context.Context, cache ctrlcache.Cache) error {
	c.metadata = cache
	changed := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.changed() },
		UpdateFunc: func(any, any) { c.changed() },
		DeleteFunc: func(any) { c.changed() },
	}
	// One handler, so that the call path's view of a server and
	// serverVersion move before version does.
	servers := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observeServer(obj, false); c.serverChanged() },
		UpdateFunc: func(_, obj any) { c.observeServer(obj, false); c.serverChanged() },
		DeleteFunc: func(obj any) { c.observeServer(obj, true); c.serverChanged() },
	}
	collections := toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tc, ok := unwrapTombstone(obj).(*mcpv1alpha1.ToolCollection); ok {
			key := viewKey{kind: collectionView, namespace: tc.Namespace, name: tc.Name}
			c.mcp.forget(key)
			c.menus.forget(key)
			forgetPolicyDecisions(tc.Namespace + "/" + tc.Name)
		}
	}}
	for _, watch := range []struct {
		obj      client.Object
		handlers []toolscache.ResourceEventHandler
	}{
		{&mcpv1alpha1.MCPServer{}, []toolscache.ResourceEventHandler{servers}},
		{&mcpv1alpha1.ToolCollection{}, []toolscache.ResourceEventHandler{collections, changed}},
		// Metadata only: the call path checks the versions of the Secrets
		// and ConfigMaps a server names without holding their data.
		{metadataOf("Secret"), nil},
		{metadataOf("ConfigMap"), nil},
	} {
		informer, err := cache.GetInformer(ctx, watch.obj)
		if err != nil {
			return fmt.Errorf("watching %T for the catalog: %w", watch.obj, err)
		}
		for _, h := range watch.handlers {
			if _, err := informer.AddEventHandler(h); err != nil {
				return fmt.Errorf("watching %T for the catalog: %w", watch.obj, err)
			}
		}
	}
	go c.mcp.syncOnChange(ctx)
	go c.mcp.idle.sweepEvery(ctx)
	go c.mcp.held.keepAlive(ctx)
	go c.menus.warmOnKick(ctx)
	return nil
}

func (c *Catalog) changed() {
	c.version.Add(1)
	c.mcp.changed()
}

func (c *Catalog) serverChanged() {
	c.serverVersion.Add(1)
	c.changed()
}

// observeServer keeps the call path's view of a server current; a deleted
// server's pooled session and state go with it.
func (c *Catalog) observeServer(obj any, deleted bool) {
	srv, ok := unwrapTombstone(obj).(*mcpv1alpha1.MCPServer)
	if !ok {
		return
	}
	if !deleted {
		c.upstreams.observe(srv)
		return
	}
	key := srv.Namespace + "/" + srv.Name
	c.upstreams.forget(key)
	c.pool.Drop(key)                // never waits on the server
	c.pool.DropPrefix(key + "\x00") // and each caller's session with it
	c.menus.forget(viewKey{kind: serverView, namespace: srv.Namespace, name: srv.Name})
}

func unwrapTombstone(obj any) any {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

func metadataOf(kind string) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return obj
}
