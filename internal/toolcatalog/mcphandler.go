package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/resourceuri"
	"github.com/toolmesh/mcp-operator/internal/tracing"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// mcpPageSize is how many tools one tools/list page holds.
const mcpPageSize = 200

// mcpHandlers serve menus as MCP servers (Streamable HTTP), built on
// mcp-go's server side: /mcp for every tool the caller may see, and one per
// collection. Each handler's tools follow its menu's revision; a change
// reaches connected clients as notifications/tools/list_changed. A handler
// exists only for a menu that exists (the global one, or a collection a
// caller was allowed to read) and goes when its collection is deleted.
type mcpHandlers struct {
	catalog  *Catalog
	sessions *callerSessions
	relays   *relayTable
	// peers are the replicas answers are forwarded to (relay_forward.go).
	peers *peerList
	// states seals the requestStates given to 2026-07-28 callers, and
	// parks holds the calls that wait on such callers' answers.
	states *stateKeys
	parks  *parkedCalls
	// idle reclaims abandoned legacy sessions (mcp_idle.go).
	idle *idleSessions
	// subs are the resource subscriptions (mcp_subscribe.go).
	subs *subscriptions
	// gate bounds the listening streams (stream_gate.go), and held holds
	// them (stream_fanout.go).
	gate  *streamGate
	held  *heldStreams
	mu    sync.Mutex
	byKey map[viewKey]*mcpHandler
	kick  chan struct{}
}

type mcpHandler struct {
	key viewKey
	// name is the endpoint's server name, as initialize and discovery give
	// it, and path the endpoint's URL path.
	name, path string
	server     *server.MCPServer
	http       http.Handler
	mu         sync.Mutex
	// revision is the view's mcpRevision whose tools the server lists.
	revision string
	// perCaller says the revision's policy lists each caller its own
	// tools, so that no page is shared.
	perCaller bool
	// listed holds the revision's tools/list pages (mcp_list.go).
	listed listPages
	// promptsRevision and resourcesRevision are the view's surfaces'
	// revisions its clients last heard of.
	promptsRevision, resourcesRevision string
}

func newMCPHandlers(c *Catalog) *mcpHandlers {
	return &mcpHandlers{catalog: c, sessions: newCallerSessions(), relays: newRelayTable(c.opts.Peers.Self), peers: &peerList{}, states: newStateKeys(c.opts.Peers.Self), parks: newParkedCalls(),
		idle: newIdleSessions(c.opts.SessionIdleTimeout, c.opts.MaxSessions), subs: newSubscriptions(c), gate: newStreamGate(c.opts.MaxStreams, c.opts.MaxCallerStreams), held: newHeldStreams(c.opts.StreamKeepAlive),
		byKey: map[viewKey]*mcpHandler{}, kick: make(chan struct{}, 1)}
}

// changed asks for the handlers to follow a change in the cache.
func (m *mcpHandlers) changed() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// forget drops the handler of a deleted collection and ends its streams;
// its clients' next request finds no session and no collection.
func (m *mcpHandlers) forget(key viewKey) {
	m.mu.Lock()
	h := m.byKey[key]
	delete(m.byKey, key)
	m.mu.Unlock()
	if h != nil {
		m.idle.forget(h)
		// Ending a stream writes to it: not on the informer's goroutine.
		go m.held.each(m.held.of(h), (*streamWriter).finish)
	}
	refusedTools.DeleteLabelValues(menuLabel(key))
	catalogSessions.DeleteLabelValues(menuLabel(key))
}

func (m *mcpHandlers) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byKey)
}

// syncOnChange brings every handler's tools up to date after changes, so
// that listening clients hear of them without asking, then asks for the
// menus callers read before the changes to be prepared (menu_warm.go).
func (m *mcpHandlers) syncOnChange(ctx context.Context) {
	var took time.Duration // the last sync
	var ended time.Time    // when it ended
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		}
		wait := time.NewTimer(syncWait(took, time.Since(ended)))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		start := time.Now()
		m.mu.Lock()
		handlers := make([]*mcpHandler, 0, len(m.byKey))
		for _, h := range m.byKey {
			handlers = append(handlers, h)
		}
		m.mu.Unlock()
		for _, h := range handlers {
			if err := m.sync(ctx, h); err != nil {
				mcpSyncFailures.Inc()
				m.catalog.log.Error(err, "An MCP endpoint could not take up a new menu revision", "menu", menuLabel(h.key))
			}
		}
		ended = time.Now()
		took = ended.Sub(start)
		m.catalog.menus.kickWarm()
	}
}

// syncBurst is how long a sync waits for the rest of a burst of changes
// (a status write, then a collection's), to follow it once.
const syncBurst = 50 * time.Millisecond

// syncSpacing is how many times as long as the last sync took the next
// one starts after it, at least.
const syncSpacing = 3

// maxSyncSpacing bounds that: a sync that waited long on a build (a
// cache not yet synced, a starved machine) does not hold up the next
// one for minutes.
const maxSyncSpacing = 2 * time.Second

// syncWait is how long a sync waits after a change, given how long the
// last one took and how long ago it ended. Each sync rebuilds the menus
// of every MCP endpoint in use, the global one of every tool among them.
// While changes keep coming (a fleet of servers being discovered, or
// restarted), syncs that waited only for the burst ran back to back: in
// the scale benchmark's profile of 500 servers joining 5,000, menu builds
// were half of the manager's CPU. Starting syncSpacing times the last
// sync's length after it ended keeps them to a quarter of a core; a
// change after a quiet spell waits for its burst only. A caller who
// lists meanwhile still gets the current menu (it is built on demand);
// listening clients hear of a change that much later.
func syncWait(took, since time.Duration) time.Duration {
	return max(syncBurst, min(syncSpacing*took, maxSyncSpacing)-since)
}

// handlerIfAny returns the handler of a menu, nil before its first use.
func (m *mcpHandlers) handlerIfAny(key viewKey) *mcpHandler {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byKey[key]
}

// handlerFor returns the handler of a menu, creating it on first use.
func (m *mcpHandlers) handlerFor(key viewKey) *mcpHandler {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.byKey[key]; ok {
		return h
	}
	h := &mcpHandler{key: key, listed: newListPages()}
	opts := []server.ServerOption{
		server.WithToolCapabilities(true),
		// Prompts, resources, their subscriptions and completion are
		// answered by the catalog (mcp_surface.go, mcp_subscribe.go);
		// mcp-go only announces them.
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithCompletions(),
		server.WithLogging(),
		server.WithPaginationLimit(mcpPageSize),
		server.WithRecovery(),
	}
	name := "mcp-operator"
	path := "/mcp"
	if key.kind == collectionView {
		name = "mcp-operator/" + key.namespace + "/" + key.name
		path = "/v1/namespaces/" + key.namespace + "/toolcollections/" + key.name + "/mcp"
	}
	sessions := catalogSessions.WithLabelValues(menuLabel(key))
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
		sessions.Inc()
		m.idle.registered(h, cs.SessionID())
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		sessions.Dec()
		m.idle.unregistered(h, cs.SessionID())
	})
	opts = append(opts, server.WithHooks(hooks))
	h.name, h.path = name, path
	h.server = server.NewMCPServer(name, serverVersion, opts...)
	h.http = server.NewStreamableHTTPServer(h.server,
		server.WithEndpointPath(path),
		// Session ids carry what the caller declared it answers (relay.go).
		server.WithSessionIdManagerResolver(sessionIDs{}),
		// The catalog checks Origin itself, against its own allow-list.
		server.WithDisableLocalhostProtection(true),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if who := callerFrom(r.Context()); who != nil {
				return context.WithValue(ctx, callerKey{}, who)
			}
			return ctx
		}))
	m.byKey[key] = h
	return h
}

// sync follows the handler to its menu's current revision: the pages it
// kept are dropped and its clients hear that the list changed. The tools
// themselves are listed from the menu (mcp_list.go), with exposure Search
// find_tools, call_tool and the tools always included; a tool MCP clients
// cannot be offered (menu.Refusal) is left out of this endpoint only,
// counted and reported, and every other tool is served.
func (m *mcpHandlers) sync(ctx context.Context, h *mcpHandler) error {
	// resolve, not view: following the revision is not a caller's use.
	vw, err := m.catalog.menus.resolve(ctx, h.key)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if set := vw.surfaces; set != nil {
		if set.promptsRevision != h.promptsRevision {
			h.promptsRevision = set.promptsRevision
			m.held.listChanged(h, promptsList)
		}
		if set.resourcesRevision != h.resourcesRevision {
			h.resourcesRevision = set.resourcesRevision
			m.held.listChanged(h, resourcesList)
		}
	}
	if vw.mcpRevision == h.revision {
		return nil
	}
	refusedTools.WithLabelValues(menuLabel(h.key)).Set(float64(len(vw.menu.Refused)))
	h.revision = vw.mcpRevision
	h.perCaller = vw.perCaller()
	h.listed = newListPages()
	m.held.listChanged(h, toolsList)
	return nil
}

// serverVersion is the version each endpoint gives as its server's.
const serverVersion = "v1alpha1"

// mcpToolOf is a menu's tool as its MCP endpoint lists it. With
// exposedURIs, the MCP App resource its _meta names (ui.resourceUri, and
// the older ui/resourceUri) is named as the endpoint offers it, so that a
// host reads the app through the catalog.
func mcpToolOf(e *menu.Entry, exposedURIs bool) mcp.Tool {
	t := mcp.Tool{
		Name:           e.Name,
		Title:          e.Tool.Title,
		Description:    e.Description,
		RawInputSchema: json.RawMessage(e.Tool.InputSchema.Raw),
	}
	if e.Tool.OutputSchema != nil {
		t.RawOutputSchema = json.RawMessage(e.Tool.OutputSchema.Raw)
	}
	if a := e.Tool.Annotations; a != nil {
		t.Annotations = mcp.ToolAnnotation{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint, IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	t.Icons, t.Execution, t.Meta = mcpClientFields(e.Tool)
	if exposedURIs && t.Meta != nil {
		server := resourceuri.Server{Namespace: e.Namespace, Name: e.Server}
		exposeAt(t.Meta.AdditionalFields["ui"], "resourceUri", server)
		exposeAt(t.Meta.AdditionalFields, "ui/resourceUri", server)
	}
	return t
}

// handler serves one endpoint: access to the collection, its tools
// brought up to date, size checks, the catalog's own answers (tools/call,
// notifications), then mcp-go.
func (m *mcpHandlers) handler(key viewKey) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key.kind == collectionView {
			if err := m.catalog.authz.require(r.Context(), verbGet, toolCollectionsResource, key.namespace, key.name); err != nil {
				writeAuthError(w, err)
				return
			}
		}
		// A handler is made only for a menu that exists, so a caller cannot
		// grow the catalog's memory with made-up collection names.
		vw, err := m.catalog.menus.view(r.Context(), key)
		switch {
		case err != nil:
			mcpSyncFailures.Inc()
			m.catalog.log.Error(err, "An MCP endpoint could not read its menu", "menu", menuLabel(key))
			writeError(w, http.StatusServiceUnavailable, "the catalog cannot read its cache yet; retry")
			return
		case vw.missing != "":
			writeError(w, http.StatusNotFound, vw.missing)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, m.catalog.opts.MaxRequestBytes)
		// Only a legacy session is touched: a stateless request, the
		// common case, takes no lock for it.
		if session := r.Header.Get("Mcp-Session-Id"); session != "" {
			m.idle.touch(m.handlerIfAny(key), session)
		}
		var msg *rpcMessage
		switch r.Method {
		case http.MethodPost:
			var handled bool
			if handled, msg = m.route(w, r, key); handled {
				return
			}
		case http.MethodDelete:
			// The session ends, and with it its subscriptions on this
			// replica (the others forget them when they need the room:
			// mcp_subscribe.go).
			m.subs.endSession(sessionSubscriber(r, key))
		}
		ctx, span := m.catalog.startSpan(r.Context(), r, spanName(r, msg), msgMeta(msg))
		defer span.End()
		if msg != nil && methodShape.MatchString(msg.Method) {
			span.SetAttributes(tracing.MethodName.String(msg.Method))
		}
		r = r.WithContext(ctx)
		h := m.handlerFor(key)
		if err := m.sync(r.Context(), h); err != nil {
			mcpSyncFailures.Inc()
			m.catalog.log.Error(err, "An MCP endpoint could not take up a new menu revision", "menu", menuLabel(key))
			writeError(w, http.StatusServiceUnavailable, "the catalog cannot read its cache yet; retry")
			return
		}
		if kind, ok := listening(r, msg); ok {
			m.serveStream(w, r, h, key, msg, kind)
			return
		}
		if msg != nil && msg.Method == string(mcp.MethodInitialize) {
			// The session id mcp-go issues carries what the caller declared.
			r = r.WithContext(context.WithValue(r.Context(), asksKey{}, asksOfInitialize(msg.rawParams)))
		}
		switch {
		case listable(msg):
			m.serveList(w, r, h, msg)
		case r.Method == http.MethodDelete:
			m.serveDelete(w, r, h)
		case msg != nil && msg.Method == string(mcp.MethodSetLogLevel) && wire.KnownLogLevel(msg.Params.Level):
			m.serveSetLevel(w, r, h, key, msg.Params.Level)
		default:
			h.http.ServeHTTP(w, r)
		}
	})
}

// listening says whether a request opens a listening stream, and which
// kind: a legacy session's GET, or a 2026-07-28 subscriptions/listen
// request (as mcp-go tells them: with an id, in a 2026-07-28 request).
func listening(r *http.Request, msg *rpcMessage) (streamKind, bool) {
	switch {
	case r.Method == http.MethodGet && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)):
		return legacyStream, true
	case msg != nil && msg.Method == string(mcp.MethodSubscriptionsListen) && len(msg.ID) > 0 && msg.stateless(r):
		return listenStream, true
	}
	return "", false
}

// serveDelete has mcp-go end a legacy session, and ends the session's
// streams on this replica once it did.
func (m *mcpHandlers) serveDelete(w http.ResponseWriter, r *http.Request, h *mcpHandler) {
	rec := &statusRecorder{ResponseWriter: w}
	h.http.ServeHTTP(rec, r)
	if rec.status == http.StatusOK {
		m.idle.endStreams(h, r.Header.Get("Mcp-Session-Id"))
	}
}

// serveSetLevel has mcp-go answer logging/setLevel and keeps the level for
// the session only once mcp-go accepted it, so a made-up session id keeps
// nothing. The level is this replica's: a session's later calls that
// land on another replica relay no log messages (docs/protocol.md).
// mcp-go keeps a level too, for any session id it accepts, until the
// session's DELETE: for a session it holds no record of (issued by
// another replica, ended as idle or for room, or made up), the catalog
// ends it at once, so that such requests grow nothing of mcp-go's.
func (m *mcpHandlers) serveSetLevel(w http.ResponseWriter, r *http.Request, h *mcpHandler, key viewKey, level string) {
	rec := &statusRecorder{ResponseWriter: w}
	h.http.ServeHTTP(rec, r)
	if rec.status == http.StatusOK {
		m.sessions.setLevel(sessionOf(r, key), level)
		if id := r.Header.Get("Mcp-Session-Id"); !m.idle.registeredAt(h, id) {
			h.end(id)
		}
	}
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// methodShape is what an MCP method name looks like; a span is named after
// a caller's method only when it has this shape, so a caller cannot put
// arbitrary text in the trace.
var methodShape = regexp.MustCompile(`^[a-z]{1,32}(/[a-zA-Z_]{1,32}){0,2}$`)

// spanName names the span of an MCP request mcp-go answers: its method.
func spanName(r *http.Request, msg *rpcMessage) string {
	switch {
	case msg != nil && methodShape.MatchString(msg.Method):
		return msg.Method
	case msg != nil:
		return "unknown method"
	case r.Method == http.MethodGet:
		return "listen"
	}
	return r.Method
}

func msgMeta(msg *rpcMessage) map[string]json.RawMessage {
	if msg == nil {
		return nil
	}
	return msg.Params.Meta
}

// refusedUnissued answers 404 to a request naming a session id the
// catalog never issued (mcp-go's answer for one it does not know: the
// client initializes anew), and reports whether it did.
func refusedUnissued(w http.ResponseWriter, session string) bool {
	if session == "" || issuedSessionForm(session) {
		return false
	}
	http.Error(w, "Invalid session ID", http.StatusNotFound)
	return true
}

// route answers the POSTs the catalog handles itself and reports whether
// it did; the others go on to mcp-go with their body put back.
func (m *mcpHandlers) route(w http.ResponseWriter, r *http.Request, key viewKey) (bool, *rpcMessage) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST, fmt.Sprintf("the request body is over %d bytes", tooLarge.Limit))
		} else {
			writeRPCError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "the request body could not be read")
		}
		return true, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg rpcMessage
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		if id, answer, ok := relayAnswerID(body); ok {
			m.serveAnswer(w, r, key, id, answer, body)
			return true, nil
		}
		// The tools are the catalog's alone (mcp-go holds none, and would
		// answer an empty list or no such tool): a tools request the
		// catalog cannot read is refused here. Batches and other junk go
		// to mcp-go, which refuses them.
		var named struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &named) == nil && strings.HasPrefix(named.Method, "tools/") {
			writeRPCError(w, http.StatusBadRequest, named.ID, mcp.INVALID_REQUEST, "the request's params could not be read")
			return true, nil
		}
		return false, nil
	}
	session := r.Header.Get("Mcp-Session-Id")
	notification := len(msg.ID) == 0
	switch {
	case !msg.stateless(r) && refusedUnissued(w, session):
		return true, nil
	case msg.Method == string(mcp.MethodToolsCall) && !notification:
		if !msg.stateless(r) && session == "" {
			writeRPCError(w, http.StatusBadRequest, msg.ID, mcp.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
			return true, nil
		}
		m.serveCall(w, r, key, &msg)
		return true, nil
	case !notification && subscribeMethods[msg.Method] && msg.stateless(r):
		writeRPCError(w, http.StatusOK, msg.ID, mcp.METHOD_NOT_FOUND,
			msg.Method+" is not in 2026-07-28: name the resources to hear of in the resourceSubscriptions of subscriptions/listen")
		return true, nil
	case !notification && msg.Method == string(mcp.MethodSubscriptionsListen) && msg.stateless(r):
		if !m.takeListenSubscriptions(w, r, key, &msg) {
			return true, nil
		}
	case !notification && (isSurfaceMethod(msg.Method) || subscribeMethods[msg.Method]):
		if !msg.stateless(r) && session == "" {
			writeRPCError(w, http.StatusBadRequest, msg.ID, mcp.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
			return true, nil
		}
		m.serveSurface(w, r, key, &msg)
		return true, nil
	case notification && msg.Method == string(mcp.MethodNotificationCancelled):
		// Before 2026-07-28 a cancel names the session's request; this
		// replica cancels it if it runs it (in 2026-07-28 closing the
		// request is the cancel, and a notification needs no answer).
		if !m.sessions.cancel(sessionOf(r, key), msg.Params.RequestID) {
			m.catalog.log.V(1).Info("A cancel for a call this replica does not run", "menu", menuLabel(key))
		}
		w.WriteHeader(http.StatusAccepted)
		return true, nil
	case notification && msg.stateless(r):
		// A 2026-07-28 client expects 202 for any notification; mcp-go
		// refuses one without _meta with 400, which ends go-sdk clients'
		// connections.
		w.WriteHeader(http.StatusAccepted)
		return true, nil
	case !msg.stateless(r) && session == "" && msg.Method != string(mcp.MethodInitialize):
		// The header is required after initialize (mcp-go answers 404).
		writeRPCError(w, http.StatusBadRequest, msg.ID, mcp.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
		return true, nil
	}
	return false, &msg
}

// serveAnswer hands a caller's answer to the server's request the catalog
// relayed to it (relay.go): 202 once delivered, or the answer of the
// replica that relayed it (relay_forward.go), or 400 when no request of
// this caller's session waits for it. Never 404, which would make the
// client drop its session.
func (m *mcpHandlers) serveAnswer(w http.ResponseWriter, r *http.Request, key viewKey, id string, answer wire.Message, body []byte) {
	switch {
	case m.relays.deliver(id, sessionOf(r, key), answer):
		w.WriteHeader(http.StatusAccepted)
	case m.forwardAnswer(w, r, id, body):
		// Answered as the replica that relayed the question answered.
	default:
		writeRPCError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST,
			"no request of this session waits for an answer with this id: it was answered already, or its call ended")
	}
}

// issuedSessionForm says id has the form of the session ids the catalog's
// MCP server issues (relay.go's sessionIDs: not tracked, so that any
// replica serves any session).
func issuedSessionForm(id string) bool {
	_, ok := asksOfSession(id)
	return ok
}
