package toolcatalog

import (
	"context"
)

// After a change the first caller of a large menu would wait for it to be
// built, rendered and compressed (around 90 ms for 100,000 tools). Instead
// the catalog prepares, once a burst of changes has passed, what callers
// asked for before it: the views they used, the renderings they were
// served. Only those: a menu nobody read since the last change is left
// for its next caller, so idle menus cost nothing on each change.

// warmTries is how many warms a menu stays wanted without a caller when
// changes keep interrupting them: under a steady stream of changes a
// menu nobody reads any more is let go rather than prepared for good.
const warmTries = 3

// wanted are the views and renderings to prepare at the next warm, each
// with the warms it has left. Its keys are ones the cache kept, and a key
// leaves it when it is prepared, when its menu is gone, or when its tries
// run out.
type wanted struct {
	views   map[viewKey]int
	renders map[renderKey]wantedRendering
}

type wantedRendering struct {
	gzipped bool // served gzipped too
	left    int
}

func newWanted() wanted {
	return wanted{views: map[viewKey]int{}, renders: map[renderKey]wantedRendering{}}
}

// noteView wants a dropped view again, with every try, when a caller
// used it.
func (w wanted) noteView(key viewKey, vw *view) {
	if vw.used.Load() {
		w.views[key] = warmTries
	}
}

// noteRendering wants a dropped rendering again, with every try, when a
// caller was served it.
func (w wanted) noteRendering(key renderKey, r *rendered) {
	if r.served.Load() {
		w.renders[key] = wantedRendering{gzipped: w.renders[key].gzipped || r.servedGzip.Load(), left: warmTries}
	}
}

// putBack returns what a warm interrupted by a change did not settle,
// one try fewer.
func (w wanted) putBack(o wanted) {
	for key, left := range o.views {
		if left > 1 {
			w.views[key] = max(w.views[key], left-1)
		}
	}
	for key, r := range o.renders {
		if r.left > 1 {
			mine := w.renders[key]
			w.renders[key] = wantedRendering{gzipped: mine.gzipped || r.gzipped, left: max(mine.left, r.left-1)}
		}
	}
}

// kickWarm asks for a warm; kicks while one runs make one more.
func (m *menuCache) kickWarm() {
	select {
	case m.warmKick <- struct{}{}:
	default:
	}
}

// warmOnKick warms after each kick until ctx ends: on a goroutine of its
// own, so that preparing menus never holds up telling MCP clients that
// their lists changed.
func (m *menuCache) warmOnKick(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.warmKick:
		}
		m.warm(ctx)
	}
}

// warm prepares, at the catalog's version, what callers used before it
// moved. Callers arriving meanwhile share each build and rendering. A
// change meanwhile stops it: what it did not settle waits for the warm
// that change brings.
func (m *menuCache) warm(ctx context.Context) {
	m.mu.Lock()
	v := m.current()
	todo := m.wanted
	m.wanted = newWanted()
	m.mu.Unlock()
	stale := func() bool { return ctx.Err() != nil || m.catalog.version.Load() != v }

	for key, want := range todo.renders {
		if stale() {
			break
		}
		vw, err := m.resolve(ctx, key.view)
		if err != nil || vw.missing != "" {
			delete(todo.renders, key) // its menu is gone, or cannot be read
			continue
		}
		r := m.rendering(key.view, vw, key.format)
		if want.gzipped {
			r.gzipBody()
		}
	}
	for key := range todo.views {
		if stale() {
			break
		}
		if vw, err := m.resolve(ctx, key); err != nil || vw.missing != "" {
			delete(todo.views, key)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version != v || stale() {
		// What was prepared was for a version already gone, and the rest
		// was not reached.
		m.wanted.putBack(todo)
	}
}
