package toolcatalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/policy"
)

// viewKey names a menu: the global one (optionally of one namespace), a
// collection's or a server's.
type viewKey struct {
	kind      viewKind
	namespace string
	name      string
}

type viewKind string

const (
	globalView     viewKind = "global"
	collectionView viewKind = "collection"
	serverView     viewKind = "server"
)

// view is a resolved menu and the index execute looks names up in.
type view struct {
	// missing is set when the collection or server does not exist.
	missing  string
	menu     menu.Menu
	revision string
	byName   map[string]*menu.Entry
	// withheld are names of tools whose server is not Ready.
	withheld map[string]*menu.Entry
	// exposure is how the menu's MCP endpoint offers it (collections only).
	exposure menu.Exposure
	// mcpRevision identifies what the MCP endpoint lists: the revision, and
	// the exposure, which changes the list but not the menu.
	mcpRevision string
	// index ranks the tools for search; shared with views of the same
	// searchable tools (see search.go).
	index *searchIndex
	// used says a caller asked for the view, so that the next version's
	// is built before anyone asks again (see menu_warm.go).
	used atomic.Bool
	// guard is the collection's policy, as the view holds it (nil
	// without one; menu_policy.go).
	guard *guard
	// base is the view a caller's view narrows (nil for a menu's own):
	// searches rank the base's tools, keeping the caller's.
	base *view
	// surfaces are what the menu offers besides tools (surface_views.go).
	surfaces *surfaceSet
}

// menuCache keeps resolved views and rendered bodies until the catalog's
// version moves: menus are resolved and rendered once per change, not per
// request.
type menuCache struct {
	catalog *Catalog
	mu      sync.Mutex
	version uint64
	// servers is the catalog's serverVersion when the maps were started.
	servers uint64
	views   map[viewKey]*view
	renders map[renderKey]*rendered
	// indexes outlive versions: one per menu that exists, replaced when
	// its searchable tools change (see search.go).
	indexes map[viewKey]*searchIndex
	// building lets concurrent first requests for a view after a change
	// share one build: many agents polling a menu of thousands of tools
	// would otherwise each resolve it.
	building singleflight.Group
	// wanted are the views and renderings callers used before the
	// version last moved: what warm prepares for them, when kicked.
	wanted   wanted
	warmKick chan struct{}
}

func newMenuCache(c *Catalog) *menuCache {
	return &menuCache{catalog: c, version: ^uint64(0), indexes: map[viewKey]*searchIndex{}, wanted: newWanted(),
		warmKick: make(chan struct{}, 1)}
}

// current returns the maps for the catalog's version, starting new ones
// when it moved. When no MCPServer changed since the maps were started,
// the global and server menus are carried over: only collections' are
// new. Callers hold mu.
func (m *menuCache) current() uint64 {
	v := m.catalog.version.Load()
	if v == m.version {
		return v
	}
	// Read after v, and moved before it: maps started at v never claim
	// servers older than the cache they are built from.
	servers := m.catalog.serverVersion.Load()
	carry := servers == m.servers
	views, renders := map[viewKey]*view{}, map[renderKey]*rendered{}
	// What callers used of the menus dropped is wanted again (menu_warm.go);
	// those carried over keep their marks until they are dropped.
	for key, vw := range m.views {
		if carry && key.kind != collectionView {
			views[key] = vw
		} else {
			m.wanted.noteView(key, vw)
		}
	}
	for key, r := range m.renders {
		if carry && key.view.kind != collectionView {
			renders[key] = r
		} else {
			m.wanted.noteRendering(key, r)
		}
	}
	m.version, m.servers, m.views, m.renders = v, servers, views, renders
	return v
}

// stamp is what a view or rendering was built from: the catalog's
// version for a collection's menu, the MCPServers' version for the
// others, which read servers only. A build of the global menu that a
// collection's change overtakes is as good after it as before (current
// carries such menus over), and is kept and shared as such: keyed by the
// catalog's version, every collection status write during the build of
// 100,000 tools (one follows each change to a server) had it thrown away
// and begun again.
type stamp struct {
	collection bool
	version    uint64
}

// stampFor is what a menu of kind built now is built from. Callers hold
// mu.
func (m *menuCache) stampFor(kind viewKind) stamp {
	m.current()
	if kind == collectionView {
		return stamp{collection: true, version: m.version}
	}
	return stamp{version: m.servers}
}

// holds reports whether what was built from st belongs in the maps now.
// Callers hold mu.
func (m *menuCache) holds(st stamp) bool {
	m.current()
	if st.collection {
		return m.version == st.version
	}
	return m.servers == st.version
}

func (st stamp) String() string {
	if st.collection {
		return "v" + strconv.FormatUint(st.version, 10)
	}
	return "s" + strconv.FormatUint(st.version, 10)
}

// view is the current view of a menu, for a caller.
func (m *menuCache) view(ctx context.Context, key viewKey) (*view, error) {
	vw, err := m.resolve(ctx, key)
	if err == nil && !vw.used.Load() {
		vw.used.Store(true)
	}
	return vw, err
}

// resolve returns the current view of a menu (see stamp), building it
// when no caller has yet.
func (m *menuCache) resolve(ctx context.Context, key viewKey) (*view, error) {
	m.mu.Lock()
	st := m.stampFor(key.kind)
	cached, ok := m.views[key]
	m.mu.Unlock()
	if ok {
		return cached, nil
	}
	// The build is the callers', not the first one's: it goes on if that
	// one leaves. Its key names what it is built from, so a build of an
	// older version is never handed to a caller that saw the newer.
	// Each caller waits no longer than its own context; the build itself
	// is bounded, so that a cache that cannot answer does not hold the
	// flight for good.
	flight := fmt.Sprintf("%s\x00%s\x00%s\x00%s", st, key.kind, key.namespace, key.name)
	done := m.building.DoChan(flight, func() (any, error) {
		buildCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxViewBuild)
		defer cancel()
		return m.build(buildCtx, key, st)
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*view), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the menu: %w", ctx.Err())
	}
}

// maxViewBuild bounds one build of a view: reading the cache and
// resolving the menu take milliseconds when the cache is synced.
const maxViewBuild = time.Minute

// build resolves a view from st and keeps it while st holds.
func (m *menuCache) build(ctx context.Context, key viewKey, st stamp) (*view, error) {
	built, err := m.catalog.buildView(ctx, key)
	if err != nil {
		return nil, err
	}
	keep := worthKeeping(key, built)
	built.index = m.searchIndexFor(key, built, st, keep)
	if !keep {
		return built, nil
	}
	m.mu.Lock()
	if m.holds(st) {
		m.views[key] = built
	}
	m.mu.Unlock()
	return built, nil
}

// worthKeeping keeps views only of menus that exist: a caller can name any
// collection or namespace, and those that name nothing must not grow the
// cache.
func worthKeeping(key viewKey, vw *view) bool {
	if vw.missing != "" {
		return false
	}
	if key.kind == globalView && key.namespace != "" {
		return len(vw.menu.Tools)+len(vw.menu.Withheld) > 0
	}
	return true
}

// keys lists the views and renderings kept, for tests.
func (m *menuCache) keys() []viewKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []viewKey
	for k := range m.views {
		out = append(out, k)
	}
	for k := range m.renders {
		out = append(out, k.view)
	}
	for k := range m.indexes {
		out = append(out, k)
	}
	return out
}

// sharedFromCache lists the cache's own objects instead of deep copies: a
// menu of thousands of tools is rebuilt on every change, and copying every
// server's status (each tool's schemas) was most of that work. Views, and
// the call path's upstreamFromCache, only read what they point to, and the
// cache replaces an object on change rather than editing it, so what they
// hold never changes under them.
var sharedFromCache = client.UnsafeDisableDeepCopy

// buildView builds a view from the cache.
func (c *Catalog) buildView(ctx context.Context, key viewKey) (*view, error) {
	var m menu.Menu
	var exposure menu.Exposure
	var pol *policy.Policy
	var surfaces *surfaceSet
	switch key.kind {
	case globalView:
		var servers mcpv1alpha1.MCPServerList
		if err := c.reader.List(ctx, &servers, client.InNamespace(key.namespace), sharedFromCache); err != nil {
			return nil, fmt.Errorf("listing MCPServers: %w", err)
		}
		m = menu.Global(servers.Items)
		all := make([]*mcpv1alpha1.MCPServer, len(servers.Items))
		for i := range servers.Items {
			all[i] = &servers.Items[i]
		}
		byNamespaceAndName(all)
		surfaces = surfacesOf(all, nil)
	case collectionView:
		var tc mcpv1alpha1.ToolCollection
		if err := c.reader.Get(ctx, types.NamespacedName{Namespace: key.namespace, Name: key.name}, &tc); err != nil {
			if apierrors.IsNotFound(err) {
				return &view{missing: fmt.Sprintf("ToolCollection %s/%s not found", key.namespace, key.name)}, nil
			}
			return nil, fmt.Errorf("reading ToolCollection %s/%s: %w", key.namespace, key.name, err)
		}
		if menu.Validate(&tc.Spec) == nil {
			var servers mcpv1alpha1.MCPServerList
			if err := c.reader.List(ctx, &servers, client.InNamespace(key.namespace), sharedFromCache); err != nil {
				return nil, fmt.Errorf("listing MCPServers: %w", err)
			}
			m = menu.ForCollection(&tc.Spec, servers.Items)
			exposure = menu.ExposureOf(&tc.Spec, &m)
			var picked []*mcpv1alpha1.MCPServer
			for i := range servers.Items {
				if menu.Selects(&tc.Spec, &servers.Items[i]) {
					picked = append(picked, &servers.Items[i])
				}
			}
			byNamespaceAndName(picked)
			surfaces = surfacesOf(picked, &tc.Spec)
		}
		pol = c.policies.of(&tc)
	case serverView:
		var srv mcpv1alpha1.MCPServer
		if err := c.reader.Get(ctx, types.NamespacedName{Namespace: key.namespace, Name: key.name}, &srv); err != nil {
			if apierrors.IsNotFound(err) {
				return &view{missing: fmt.Sprintf("MCPServer %s/%s not found", key.namespace, key.name)}, nil
			}
			return nil, fmt.Errorf("reading MCPServer %s/%s: %w", key.namespace, key.name, err)
		}
		m = menu.Global([]mcpv1alpha1.MCPServer{srv})
		surfaces = surfacesOf([]*mcpv1alpha1.MCPServer{&srv}, nil)
	}
	if surfaces == nil {
		surfaces = surfacesOf(nil, nil) // a collection whose spec cannot be resolved
	}
	vw := &view{menu: m, revision: m.Hash(), byName: make(map[string]*menu.Entry, len(m.Tools)), withheld: map[string]*menu.Entry{}, exposure: exposure,
		surfaces: surfaces}
	if pol != nil {
		// Who sees and calls what changes with the policy, so its menus'
		// ETags and their MCP endpoint's list do.
		vw.guard = &guard{policy: pol, callers: newCallerViews(), plans: lru.New(maxPolicyPlans)}
		vw.revision = hashParts(vw.revision, pol.Hash())
	}
	vw.mcpRevision = mcpRevisionOf(vw.revision, exposure)
	for i := range m.Tools {
		vw.byName[m.Tools[i].Name] = &m.Tools[i]
	}
	for i := range m.Withheld {
		vw.withheld[m.Withheld[i].Name] = &m.Withheld[i]
	}
	return vw, nil
}

// mcpRevisionOf is the revision of what an MCP endpoint lists: the menu's
// revision for exposure All, and for Search a revision that differs from
// it and names what is always included, so that switching exposure makes
// the endpoint take up its new list and tell listening clients.
func mcpRevisionOf(revision string, e menu.Exposure) string {
	if !e.Search {
		return revision
	}
	h := sha256.New()
	_ = json.NewEncoder(h).Encode([]any{revision, e.Mode(), alwaysIncludedNames(e)})
	return hex.EncodeToString(h.Sum(nil))
}

func alwaysIncludedNames(e menu.Exposure) []string {
	names := make([]string, len(e.AlwaysInclude))
	for i, entry := range e.AlwaysInclude {
		names[i] = entry.Name
	}
	return names
}
