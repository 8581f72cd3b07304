package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/glob"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/resourceuri"
	"github.com/toolmesh/mcp-operator/internal/toolname"
)

// surfaceKind is one of a server's listings besides tools.
type surfaceKind int

const (
	promptsKind surfaceKind = iota
	resourcesKind
	templatesKind
)

func (k surfaceKind) String() string {
	return [...]string{"prompts", "resources", "resource templates"}[k]
}

// hashOf is the server's hash of the listing in status, "" when it does
// not offer it.
func (s *surfaceServer) hashOf(k surfaceKind) string {
	return [...]string{s.prompts, s.resources, s.templates}[k]
}

// surfaceLists keeps what each server listed, per replica, while the hash
// of that listing in the server's status holds: the controller reads the
// listings on every refresh and on list_changed, so a new hash says the
// kept one is stale. Only listings of servers every caller reaches alike
// are kept; one with per-caller credentials is read for each request, as
// that caller. Keys are servers the cache holds, bounded besides.
type surfaceLists struct {
	catalog *Catalog
	mu      sync.Mutex
	kept    *lru.Cache
	// bytes is the size of the listings kept, held by mu.
	bytes   int
	reading singleflight.Group
}

// maxKeptListings bounds the listings kept: three per server.
const maxKeptListings = 3 * 4096

// maxKeptBytes bounds the listings kept, by the size of their items; the
// least recently used go first. A listing larger than maxKeptListingBytes
// (a server listing thousands of files as resources) is read for each
// request instead.
const (
	maxKeptBytes        = 64 << 20
	maxKeptListingBytes = 4 << 20
)

// keep keeps a listing read, within the bounds.
func (l *surfaceLists) keep(key string, kept *keptListing) {
	if kept.size > maxKeptListingBytes {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.kept.Get(key); ok {
		return
	}
	l.kept.Add(key, kept)
	l.bytes += kept.size
	for l.bytes > maxKeptBytes && l.kept.Len() > 1 {
		l.kept.RemoveOldest() // evicted calls back: l.bytes goes down
	}
}

func sizeOf(l mcpclient.SurfaceList) int {
	n := 0
	for _, item := range l.Items {
		n += len(item)
	}
	return n
}

// maxListingRead bounds a read shared by callers: none of them owns it.
const maxListingRead = time.Minute

type keptListing struct {
	list mcpclient.SurfaceList
	size int
}

func newSurfaceLists(c *Catalog) *surfaceLists {
	l := &surfaceLists{catalog: c}
	// Eviction runs within Add and RemoveOldest, which run under l.mu.
	l.kept = lru.NewWithEvictionFunc(maxKeptListings, func(_ lru.Key, v any) { l.bytes -= v.(*keptListing).size })
	return l
}

// read returns a server's listing of kind.
func (l *surfaceLists) read(ctx context.Context, s *surfaceServer, kind surfaceKind) (mcpclient.SurfaceList, error) {
	if s.perCaller {
		return l.fetch(ctx, s, kind)
	}
	key := fmt.Sprintf("%d\x00%s\x00%s", kind, s.key(), s.hashOf(kind))
	l.mu.Lock()
	cached, ok := l.kept.Get(key)
	l.mu.Unlock()
	if ok {
		return cached.(*keptListing).list, nil
	}
	done := l.reading.DoChan(key, func() (any, error) {
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxListingRead)
		defer cancel()
		list, err := l.fetch(readCtx, s, kind)
		if err != nil {
			return nil, err
		}
		l.keep(key, &keptListing{list: list, size: sizeOf(list)})
		return list, nil
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return mcpclient.SurfaceList{}, res.Err
		}
		return res.Val.(mcpclient.SurfaceList), nil
	case <-ctx.Done():
		return mcpclient.SurfaceList{}, fmt.Errorf("waiting for the %s of MCPServer %s: %w", kind, s.key(), ctx.Err())
	}
}

func (l *surfaceLists) fetch(ctx context.Context, s *surfaceServer, kind surfaceKind) (mcpclient.SurfaceList, error) {
	var list mcpclient.SurfaceList
	// A list is its answer alone, the same in every revision.
	err := l.catalog.onUpstream(ctx, s.namespace, s.name, true, func(session *mcpclient.Session) error {
		var err error
		switch kind {
		case promptsKind:
			list, err = session.ListPrompts(ctx, l.catalog.opts.Limits)
		case resourcesKind:
			list, err = session.ListResources(ctx, l.catalog.opts.Limits)
		default:
			list, err = session.ListResourceTemplates(ctx, l.catalog.opts.Limits)
		}
		return err
	})
	return list, err
}

// offered is one prompt, resource or template as a menu offers it.
type offered struct {
	server *surfaceServer
	// original is its name or URI (template) on the server; exposed the
	// one the menu offers.
	original, exposed string
	// item is its definition as offered: the server's, with the name or
	// URI exposed and the description overridden.
	item json.RawMessage
}

// surfaceConflict is an exposed prompt name, or a URI as served, more than
// one server offers; the first server won.
type surfaceConflict struct {
	Name    string   `json:"name"`
	Servers []string `json:"servers"`
}

// offerings are what a view offers of kind, in its servers' order and then
// each server's: every server that offers kind is read at once (a few at a
// time), and one that cannot be read, or not within maxListingWait, is
// left out and logged, so that one broken or slow server does not hide or
// hold up the others'.
func (c *Catalog) offerings(ctx context.Context, set *surfaceSet, kind surfaceKind) ([]offered, []surfaceConflict) {
	lists := make([]*mcpclient.SurfaceList, len(set.servers))
	var g errgroup.Group
	g.SetLimit(maxParallelListings)
	for i := range set.servers {
		s := &set.servers[i]
		if s.hashOf(kind) == "" {
			continue
		}
		g.Go(func() error {
			// A slow server is left out of this answer rather than hold
			// up every other server's items; a shared read goes on and
			// serves the next request.
			readCtx, cancel := context.WithTimeout(ctx, maxListingWait)
			defer cancel()
			list, err := c.surfaces.read(readCtx, s, kind)
			if err != nil {
				c.log.Info("A server's listing could not be read; its items are left out", "server", s.key(), "listing", kind.String(), "error", err.Error())
				return nil
			}
			lists[i] = &list
			return nil
		})
	}
	_ = g.Wait()
	var out []offered
	var conflicts []surfaceConflict
	claimed := map[string]int{} // exposed name -> its conflict's index, or -1
	for i, list := range lists {
		if list == nil {
			continue
		}
		s := &set.servers[i]
		var exposed []string
		if kind == promptsKind {
			exposed = toolname.Expose(s.prefix, list.Keys)
		}
		for j, raw := range list.Items {
			o, ok := offer(set, s, kind, list.Keys[j], exposed, j, raw)
			if !ok {
				continue
			}
			// Names and URIs exposed are unique to their server; two
			// servers claim one only when renamed alike, or with URIs as
			// served.
			if at, taken := claimed[o.exposed]; taken {
				if at < 0 {
					claimed[o.exposed] = len(conflicts)
					at = len(conflicts)
					conflicts = append(conflicts, surfaceConflict{Name: o.exposed, Servers: []string{winnerOf(out, o.exposed)}})
				}
				conflicts[at].Servers = append(conflicts[at].Servers, s.key())
				continue
			}
			claimed[o.exposed] = -1
			out = append(out, o)
		}
	}
	return out, conflicts
}

// maxParallelListings is how many servers one request reads at once.
const maxParallelListings = 8

// maxListingWait is how long one request waits for one server's listing.
const maxListingWait = 5 * time.Second

func winnerOf(out []offered, exposed string) string {
	for _, o := range out {
		if o.exposed == exposed {
			return o.server.key()
		}
	}
	return ""
}

// offer is one item of a server's listing as the view offers it, ok false
// when the view's selection leaves it out or it cannot be offered.
func offer(set *surfaceSet, s *surfaceServer, kind surfaceKind, key string, exposedNames []string, j int, raw json.RawMessage) (offered, bool) {
	o := offered{server: s, original: key}
	var description *string
	switch kind {
	case promptsKind:
		o.exposed = exposedNames[j]
		if p := set.prompts; p != nil {
			if !glob.Keep(o.exposed, p.Include, p.Exclude) {
				return offered{}, false
			}
			if i := promptOverride(p.Overrides, s.name, o.exposed); i >= 0 {
				if p.Overrides[i].Rename != "" {
					o.exposed = p.Overrides[i].Rename
				}
				description = p.Overrides[i].Description
			}
		}
	default:
		o.exposed = key
		if !set.asServed() && !isWebURI(key) {
			exposed, err := resourceuri.Expose(resourceuri.Server{Namespace: s.namespace, Name: s.name}, key)
			if err != nil {
				return offered{}, false
			}
			o.exposed = exposed
		}
		if r := set.resources; r != nil && !glob.KeepURI(o.exposed, r.Include, r.Exclude) {
			return offered{}, false
		}
	}
	item, err := rewriteMember(raw, memberOf(kind), o.exposed, description)
	if err != nil {
		return offered{}, false
	}
	o.item = item
	return o, true
}

// memberOf is the member of an item that names it.
func memberOf(kind surfaceKind) string {
	return [...]string{"name", "uri", "uriTemplate"}[kind]
}

// promptOverride is the index of the first override of the prompt, -1 for
// none: by exposed name, on every server or the one named.
func promptOverride(overrides []mcpv1alpha1.ToolOverride, server, exposed string) int {
	for i, o := range overrides {
		if o.Name == exposed && (o.Server == "" || o.Server == server) {
			return i
		}
	}
	return -1
}

// rewriteMember sets one member of a JSON object, and its description when
// given, keeping every other member as sent.
func rewriteMember(raw json.RawMessage, member, value string, description *string) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	var err error
	if fields[member], err = json.Marshal(value); err != nil {
		return nil, err
	}
	if description != nil {
		if fields["description"], err = json.Marshal(*description); err != nil {
			return nil, err
		}
	}
	return json.Marshal(fields)
}
