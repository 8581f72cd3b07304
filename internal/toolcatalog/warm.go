package toolcatalog

import (
	"context"
	"maps"
)

// After a change the first caller of a large menu would wait for it to be
// built, rendered and compressed (around 90 ms for 100,000 tools). Instead
// the catalog prepares, once a burst of changes has passed, what callers
// asked for before it: the views they used, the renderings they were
// served. Only those: a menu nobody read since the last change is left
// for its next caller, so idle menus cost nothing on each change.

// wanted are the views and renderings to prepare at the next warm. Its
// keys are ones the cache kept, so it is bounded as the cache is.
type wanted struct {
	views   map[viewKey]struct{}
	renders map[renderKey]bool // true: gzipped as well
}

func newWanted() wanted {
	return wanted{views: map[viewKey]struct{}{}, renders: map[renderKey]bool{}}
}

// note adds what callers used of a version's views and renderings.
func (w wanted) note(views map[viewKey]*view, renders map[renderKey]*rendered) {
	for key, vw := range views {
		if vw.used.Load() {
			w.views[key] = struct{}{}
		}
	}
	for key, r := range renders {
		if r.served.Load() {
			w.renders[key] = w.renders[key] || r.servedGzip.Load()
		}
	}
}

func (w wanted) merge(o wanted) {
	maps.Copy(w.views, o.views)
	for key, gzipped := range o.renders {
		w.renders[key] = w.renders[key] || gzipped
	}
}

// warm prepares, at the catalog's version, what callers used before it
// moved. Callers arriving meanwhile share each build and rendering.
func (m *menuCache) warm(ctx context.Context) {
	m.mu.Lock()
	v := m.current()
	todo := m.wanted
	m.wanted = newWanted()
	m.mu.Unlock()

	for key, gzipped := range todo.renders {
		if ctx.Err() != nil {
			break
		}
		vw, err := m.resolve(ctx, key.view)
		if err != nil || vw.missing != "" {
			continue
		}
		r := m.rendering(key.view, vw, key.format)
		if gzipped {
			r.gzipBody()
		}
	}
	for key := range todo.views {
		if ctx.Err() != nil {
			break
		}
		_, _ = m.resolve(ctx, key)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version != v || m.catalog.version.Load() != v {
		// The version moved while warming: what was prepared is not kept,
		// and the change that moved it brings another warm.
		m.wanted.merge(todo)
	}
}
