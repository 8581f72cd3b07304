package toolcatalog

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"k8s.io/utils/lru"
)

// maxCallerSessions bounds the legacy sessions whose log level is kept.
const maxCallerSessions = 10000

// callerSessions is what the catalog keeps of callers' legacy sessions:
// the calls in flight (to cancel them on notifications/cancelled) and the
// log level each asked for.
type callerSessions struct {
	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc
	levels   *lru.Cache
}

func newCallerSessions() *callerSessions {
	return &callerSessions{inflight: map[string]context.CancelCauseFunc{}, levels: lru.New(maxCallerSessions)}
}

// track registers a call in flight so that a cancel can reach it; the
// returned func forgets it.
func (cs *callerSessions) track(session string, id json.RawMessage, cancel context.CancelCauseFunc) func() {
	if session == "" || len(id) == 0 {
		return func() {}
	}
	key := session + "\x00" + string(id)
	cs.mu.Lock()
	cs.inflight[key] = cancel
	cs.mu.Unlock()
	return func() {
		cs.mu.Lock()
		delete(cs.inflight, key)
		cs.mu.Unlock()
	}
}

// cancel ends the session's call with id, and reports whether this
// replica had it.
func (cs *callerSessions) cancel(session string, id json.RawMessage) bool {
	cs.mu.Lock()
	cancel, ok := cs.inflight[session+"\x00"+string(id)]
	cs.mu.Unlock()
	if ok {
		cancel(errCancelledByCaller)
	}
	return ok
}

func (cs *callerSessions) level(session string) string {
	if v, ok := cs.levels.Get(session); ok {
		return v.(string)
	}
	return ""
}

func (cs *callerSessions) setLevel(session, level string) {
	if session != "" {
		cs.levels.Add(session, level)
	}
}

// sessionOf names a caller's legacy session for what the catalog keeps of
// it: the session id, scoped to the endpoint and to the caller, so that
// one caller cannot cancel another's calls or set another's log level by
// presenting its session id. "" when the request names no session.
func sessionOf(r *http.Request, key viewKey) string {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return ""
	}
	identity := ""
	if who := callerFrom(r.Context()); who != nil {
		identity = who.identity
	}
	return strings.Join([]string{identity, menuLabel(key), id}, "\x00")
}
