package toolcatalog

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/reach"
)

// upstreams keeps what a call to each MCPServer needs, so that a call costs
// a map lookup and not a copy of the server's whole tool list: the server's
// spec and readiness as last seen, the target resolved from them (rebuilt
// only when the spec or a Secret or ConfigMap it names changes), and its
// concurrency limit. Entries follow the informer's events (or come a
// moment before them, from a call's read of the cache: adopt) and go when
// the server is deleted, so they are keyed only by objects that exist.
type upstreams struct {
	// pool is where per-caller sessions live (exchangeSessions).
	pool  *mcpclient.Pool
	mu    sync.RWMutex
	byKey map[string]*upstream
	// deletions counts the servers forgotten, so that adopt can tell a
	// read of the cache that may predate a deletion.
	deletions uint64
}

// upstream is one MCPServer as the call path sees it. Its fields are
// immutable but for the cached target.
type upstream struct {
	key string
	// server holds the metadata, spec and serverInfo, never the tools.
	server *mcpv1alpha1.MCPServer
	ready  *metav1.Condition
	limit  *limiter
	target atomic.Pointer[resolvedTarget]
	// sessions are the per-caller session keys of a server with
	// spec.auth.tokenExchange; they carry over while the object does and
	// are dropped with it.
	sessions *exchangeSessions
}

// resolvedTarget is a target and the versions of what it was read from.
type resolvedTarget struct {
	versions string
	target   mcpclient.Target
}

func newUpstreams(pool *mcpclient.Pool) *upstreams {
	return &upstreams{pool: pool, byKey: map[string]*upstream{}}
}

func (u *upstreams) get(key string) *upstream {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.byKey[key]
}

// observe records the server as the cache now has it. The limiter (and the
// calls holding its slots) carries over unless the limit changed; the
// target cache too, since it checks its own versions.
func (u *upstreams) observe(srv *mcpv1alpha1.MCPServer) {
	key := srv.Namespace + "/" + srv.Name
	u.mu.Lock()
	defer u.mu.Unlock()
	u.byKey[key] = upstreamOf(srv, u.byKey[key], u.pool)
}

// adopt records a server read from the cache that the informer has not
// delivered to observe yet, unless the registry has it by now, and returns
// what the call path is to use. kept says the registry holds it: not when
// a server was forgotten since deletions was counted, since the read may
// predate that deletion and, kept, would outlive the server (see
// upstreamFromCache).
func (u *upstreams) adopt(srv *mcpv1alpha1.MCPServer, deletions uint64) (up *upstream, kept bool) {
	key := srv.Namespace + "/" + srv.Name
	u.mu.Lock()
	defer u.mu.Unlock()
	if observed, ok := u.byKey[key]; ok {
		return observed, true
	}
	up = upstreamOf(srv, nil, u.pool)
	if u.deletions != deletions {
		// Used for one call: its per-caller session, if any, goes after it.
		up.sessions = nil
		return up, false
	}
	u.byKey[key] = up
	return up, true
}

// deletionCount is counted before a read of the cache that adopt records.
func (u *upstreams) deletionCount() uint64 {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.deletions
}

// upstreamOf is srv as the call path sees it, carrying over prev's limiter
// and target when prev is the same object.
func upstreamOf(srv *mcpv1alpha1.MCPServer, prev *upstream, pool *mcpclient.Pool) *upstream {
	// Spec and what the server said of itself, never its tools.
	next := &upstream{key: srv.Namespace + "/" + srv.Name, server: &mcpv1alpha1.MCPServer{ObjectMeta: srv.ObjectMeta, Spec: srv.Spec,
		Status: mcpv1alpha1.MCPServerStatus{ServerInfo: srv.Status.ServerInfo}}}
	if ready := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady); ready != nil {
		next.ready = ready.DeepCopy()
	}
	limit := DefaultMaxConcurrentCalls
	if srv.Spec.MaxConcurrentCalls != nil && *srv.Spec.MaxConcurrentCalls > 0 {
		limit = int(*srv.Spec.MaxConcurrentCalls)
	}
	if prev != nil && prev.server.UID == srv.UID {
		if prev.limit.capacity() == limit {
			next.limit = prev.limit
		}
		next.target.Store(prev.target.Load())
		next.sessions = prev.sessions
	}
	if next.sessions == nil {
		next.sessions = newExchangeSessions(pool)
	}
	if next.limit == nil {
		next.limit = newLimiter(limit)
	}
	return next
}

// forget drops a deleted server.
func (u *upstreams) forget(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if up, ok := u.byKey[key]; ok {
		up.sessions.clear() // the pool drops their sessions (observeServer)
	}
	delete(u.byKey, key)
	u.deletions++
}

// targetOf returns the server's target, read again only when the versions
// it was read from moved: the server's spec (uid and generation) and each
// Secret and ConfigMap it names (their resourceVersions, from the
// metadata cache). A call to an unchanged server reads nothing.
func (c *Catalog) targetOf(ctx context.Context, up *upstream) (mcpclient.Target, error) {
	versions := c.versionsOf(ctx, up.server)
	if cached := up.target.Load(); cached != nil && cached.versions == versions {
		return cached.target, nil
	}
	t, err := reach.Read(ctx, c.reader, up.server, c.opts.Egress, c.opts.AuthSources)
	if err != nil {
		return mcpclient.Target{}, err
	}
	up.target.Store(&resolvedTarget{versions: versions, target: t})
	return t, nil
}

// versionsOf names the versions a server's target depends on.
func (c *Catalog) versionsOf(ctx context.Context, srv *mcpv1alpha1.MCPServer) string {
	parts := []string{string(srv.UID), fmt.Sprint(srv.Generation)}
	refs := func(kind string, names []string) {
		sort.Strings(names)
		for _, name := range names {
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
			version := "absent"
			if c.metadata != nil && c.metadata.Get(ctx, types.NamespacedName{Namespace: srv.Namespace, Name: name}, obj) == nil {
				version = obj.ResourceVersion
			}
			parts = append(parts, kind+"/"+name+"@"+version)
		}
	}
	refs("Secret", reach.SecretsNamed(srv))
	refs("ConfigMap", reach.ConfigMapsNamed(srv))
	return strings.Join(parts, ",")
}
