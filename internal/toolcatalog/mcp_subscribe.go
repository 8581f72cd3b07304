package toolcatalog

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// Resource subscriptions. A caller subscribes to a resource its endpoint
// offers (before 2026-07-28 with resources/subscribe on its session; in
// 2026-07-28 with the resourceSubscriptions of its subscriptions/listen)
// and hears notifications/resources/updated, with the URI as the endpoint
// offers it, on its listening stream whenever the resource's server says
// the resource changed.
//
// Upstream, a replica watches a server's resource (mcpclient.WatchResource:
// a connection of its own) for as long as one of its open streams listens
// for it, whichever endpoints and callers they belong to. A legacy
// session's subscriptions are the session's, not a stream's: the replica
// that answers resources/subscribe keeps them and forwards the request to
// every other replica, since the session's GET stream may be open on any
// of them, or reopen there later.

const (
	// maxSubscriptionsPerListener bounds the resources one legacy session,
	// or one 2026-07-28 stream, subscribes to.
	maxSubscriptionsPerListener = 16
	// maxSubscribedURI bounds the length of a URI subscribed to.
	maxSubscribedURI = 2048
	// maxCallerSubscriptions bounds one caller's legacy subscriptions a
	// replica keeps, across its sessions (past it, its sessions that
	// subscribed least recently are forgotten: sessions end without a word),
	// and maxCallerWatches the resources its streams hear of there: a
	// caller's sessions and ids are its own to make up, and a watch is a
	// connection to a server.
	maxCallerSubscriptions = 64
	maxCallerWatches       = 64
	// maxSubscriptionBytes bounds the legacy sessions' subscriptions a
	// replica keeps, in all: past it, the sessions that subscribed least
	// recently are forgotten, and their streams here hear no more.
	maxSubscriptionBytes = 32 << 20
	// maxResourceWatches bounds the server resources one replica watches,
	// each a connection to its server.
	maxResourceWatches = 256
	// watchRetryMax bounds the pause before a broken watch is opened again.
	watchRetryMax = 30 * time.Second
)

// subscribeMethods are the legacy subscription requests.
var subscribeMethods = map[string]bool{string(mcp.MethodResourcesSubscribe): true, string(mcp.MethodResourcesUnsubscribe): true}

// subscription is one resource a listener hears of: the server's resource,
// and its URI as the listener's endpoint offers it.
type subscription struct {
	watch   watchKey
	exposed string
}

// watchKey names a server's resource as the server knows it.
type watchKey struct {
	server, uri string
}

// subscriptions are a replica's resource subscriptions: the legacy
// sessions', its open streams', and the watches of servers they need.
type subscriptions struct {
	catalog *Catalog
	mu      sync.Mutex
	// sessions holds each legacy session's subscriptions (by sessionOf),
	// whichever replica its stream is on; recency orders them, the most
	// recently subscribed first, and bytes is what they all hold.
	sessions map[string]*sessionSubs
	recency  *list.List
	bytes    int
	// callerSubs counts each caller's subscriptions in sessions, and
	// callerRecency orders each caller's sessions as recency does.
	callerSubs    map[string]int
	callerRecency map[string]*list.List
	// sessionStreams are the legacy streams open here, by session.
	sessionStreams map[string]map[*streamWriter]struct{}
	watches        map[watchKey]*resourceWatch
	// callerWatches counts, by caller, its streams listening to each watch,
	// and streamCaller is the caller of each stream that listens.
	callerWatches map[string]map[watchKey]int
	streamCaller  map[*streamWriter]string
}

// sessionSubs are one legacy session's subscriptions, by exposed URI.
type sessionSubs struct {
	session, identity string
	subs              map[string]subscription
	bytes             int
	elem, callerElem  *list.Element
}

// resourceWatch is one watch of a server's resource and the streams that
// hear of it, each with the event it is told (its URI as its endpoint
// offers it, tagged for a 2026-07-28 stream).
type resourceWatch struct {
	cancel    context.CancelFunc
	changed   chan struct{}
	listeners map[*streamWriter][]byte
}

func newSubscriptions(c *Catalog) *subscriptions {
	return &subscriptions{catalog: c, sessions: map[string]*sessionSubs{}, recency: list.New(), callerSubs: map[string]int{}, callerRecency: map[string]*list.List{},
		sessionStreams: map[string]map[*streamWriter]struct{}{}, watches: map[watchKey]*resourceWatch{},
		callerWatches: map[string]map[watchKey]int{}, streamCaller: map[*streamWriter]string{}}
}

var errTooManyWatches = fmt.Errorf("this replica of the catalog watches %d resources of servers already, its most", maxResourceWatches)

// subscriptionBytes is what a subscription costs the table that keeps it.
func subscriptionBytes(sub subscription) int {
	return len(sub.exposed) + len(sub.watch.server) + len(sub.watch.uri) + 128
}

// subscribe adds a legacy session's subscription and has its streams open
// here hear of it.
func (s *subscriptions) subscribe(session, identity string, sub subscription) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[session]
	if ss != nil {
		if _, ok := ss.subs[sub.exposed]; ok {
			s.recency.MoveToFront(ss.elem)
			return nil
		}
	}
	switch {
	case ss != nil && len(ss.subs) >= maxSubscriptionsPerListener:
		return &protocolError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf("this session subscribes to %d resources, its most: unsubscribe from one first", maxSubscriptionsPerListener)}
	case s.watches[sub.watch] == nil && len(s.watches) >= maxResourceWatches && len(s.sessionStreams[session]) > 0:
		// A watch would open here now, for the session's stream.
		return &protocolError{code: mcp.INTERNAL_ERROR, message: errTooManyWatches.Error(), outcome: "busy"}
	}
	if ss == nil {
		ss = &sessionSubs{session: session, identity: identity, subs: map[string]subscription{}}
		ss.elem = s.recency.PushFront(ss)
		mine := s.callerRecency[identity]
		if mine == nil {
			mine = list.New()
			s.callerRecency[identity] = mine
		}
		ss.callerElem = mine.PushFront(ss)
		s.sessions[session] = ss
	} else {
		s.recency.MoveToFront(ss.elem)
		s.callerRecency[identity].MoveToFront(ss.callerElem)
	}
	for s.callerSubs[identity] >= maxCallerSubscriptions {
		// The caller's session that subscribed least recently, not this one.
		oldest := s.callerRecency[identity].Back()
		if oldest.Value == ss {
			oldest = oldest.Prev()
		}
		s.forgetLocked(oldest.Value.(*sessionSubs))
	}
	ss.subs[sub.exposed] = sub
	cost := subscriptionBytes(sub)
	ss.bytes += cost
	s.bytes += cost
	s.callerSubs[identity]++
	for s.bytes > maxSubscriptionBytes {
		s.forgetLocked(s.recency.Back().Value.(*sessionSubs))
	}
	for stream := range s.sessionStreams[session] {
		s.attachSessionLocked(stream, identity, sub)
	}
	return nil
}

// unsubscribe drops a legacy session's subscription, if it has it.
func (s *subscriptions) unsubscribe(session, exposed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[session]
	if ss == nil {
		return
	}
	sub, ok := ss.subs[exposed]
	if !ok {
		return
	}
	delete(ss.subs, exposed)
	cost := subscriptionBytes(sub)
	ss.bytes -= cost
	s.bytes -= cost
	s.uncountLocked(ss.identity, 1)
	for stream := range s.sessionStreams[session] {
		s.detachLocked(stream, sub.watch)
	}
	if len(ss.subs) == 0 {
		s.forgetLocked(ss)
	}
}

// endSession forgets a legacy session's subscriptions (its DELETE).
func (s *subscriptions) endSession(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[session]; ss != nil {
		s.forgetLocked(ss)
	}
}

// forgetLocked forgets a session's subscriptions: its streams here hear
// of them no more.
func (s *subscriptions) forgetLocked(ss *sessionSubs) {
	delete(s.sessions, ss.session)
	s.recency.Remove(ss.elem)
	if mine := s.callerRecency[ss.identity]; mine != nil {
		if mine.Remove(ss.callerElem); mine.Len() == 0 {
			delete(s.callerRecency, ss.identity)
		}
	}
	s.bytes -= ss.bytes
	s.uncountLocked(ss.identity, len(ss.subs))
	for _, sub := range ss.subs {
		for stream := range s.sessionStreams[ss.session] {
			s.detachLocked(stream, sub.watch)
		}
	}
}

func (s *subscriptions) uncountLocked(identity string, n int) {
	if s.callerSubs[identity] -= n; s.callerSubs[identity] <= 0 {
		delete(s.callerSubs, identity)
	}
}

// legacyOpened has a legacy stream hear of its session's subscriptions,
// those made now and later, until the returned func is called.
func (s *subscriptions) legacyOpened(session, identity string, stream *streamWriter) func() {
	if session == "" {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	open := s.sessionStreams[session]
	if open == nil {
		open = map[*streamWriter]struct{}{}
		s.sessionStreams[session] = open
	}
	open[stream] = struct{}{}
	if ss := s.sessions[session]; ss != nil {
		for _, sub := range ss.subs {
			s.attachSessionLocked(stream, identity, sub)
		}
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		// The set the stream joined: one is dropped only once empty.
		open := s.sessionStreams[session]
		delete(open, stream)
		if len(open) == 0 {
			delete(s.sessionStreams, session)
		}
		s.detachAllLocked(stream)
	}
}

// listenOpened has a 2026-07-28 stream hear of the resources it subscribed
// to, as many as the limits allow, until the returned func is called, and
// says how many of subs, in order, it will hear of.
func (s *subscriptions) listenOpened(stream *streamWriter, identity string, id json.RawMessage, subs []subscription) (int, func()) {
	if len(subs) == 0 {
		return 0, func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sub := range subs {
		if !s.attachLocked(stream, identity, sub, listenUpdate(sub.exposed, id)) {
			break
		}
		n++
	}
	return n, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.detachAllLocked(stream)
	}
}

// attachLocked has stream told event when the subscription's resource
// changes, opening its watch if none is open, and reports whether it
// will be. Past maxCallerWatches for its caller or maxResourceWatches for
// the replica it is not.
func (s *subscriptions) attachLocked(stream *streamWriter, identity string, sub subscription, event []byte) bool {
	w := s.watches[sub.watch]
	mine := s.callerWatches[identity]
	switch {
	case w != nil:
		if _, listening := w.listeners[stream]; listening {
			w.listeners[stream] = event
			return true
		}
	case len(s.watches) >= maxResourceWatches:
		return false
	}
	if mine[sub.watch] == 0 && len(mine) >= maxCallerWatches {
		return false
	}
	if w == nil {
		ctx, cancel := context.WithCancel(s.catalog.streams)
		w = &resourceWatch{cancel: cancel, changed: make(chan struct{}, 1), listeners: map[*streamWriter][]byte{}}
		s.watches[sub.watch] = w
		resourceWatches.Inc()
		go s.run(ctx, sub.watch, w)
	}
	if mine == nil {
		mine = map[watchKey]int{}
		s.callerWatches[identity] = mine
	}
	mine[sub.watch]++
	s.streamCaller[stream] = identity
	w.listeners[stream] = event
	return true
}

// attachSessionLocked is attachLocked for a legacy session's stream, whose
// subscription was answered already: one past the limits is logged.
func (s *subscriptions) attachSessionLocked(stream *streamWriter, identity string, sub subscription) {
	if !s.attachLocked(stream, identity, sub, legacyUpdate(sub.exposed)) {
		s.catalog.log.Info("A session's stream on this replica does not hear of a resource it subscribed to: the caller's streams, or the replica, hear of their most",
			"server", sub.watch.server, "resource", recordedURI(sub.watch.uri))
	}
}

func (s *subscriptions) detachLocked(stream *streamWriter, key watchKey) {
	w := s.watches[key]
	if w == nil {
		return
	}
	if _, listening := w.listeners[stream]; !listening {
		return
	}
	delete(w.listeners, stream)
	identity := s.streamCaller[stream]
	if mine := s.callerWatches[identity]; mine != nil {
		if mine[key]--; mine[key] <= 0 {
			delete(mine, key)
		}
		if len(mine) == 0 {
			delete(s.callerWatches, identity)
		}
	}
	if len(w.listeners) == 0 {
		w.cancel()
		delete(s.watches, key)
		resourceWatches.Dec()
	}
}

func (s *subscriptions) detachAllLocked(stream *streamWriter) {
	if _, listening := s.streamCaller[stream]; !listening {
		return // most streams: no resource subscribed to
	}
	for key, w := range s.watches {
		if _, ok := w.listeners[stream]; ok {
			s.detachLocked(stream, key)
		}
	}
	delete(s.streamCaller, stream)
}

// run holds a watch of a server's resource until ctx ends, opening it
// again when it breaks (after a pause that grows to watchRetryMax), and
// tells the listeners of every update. A watch opened again tells them
// the resource changed, since it may have while the watch was broken.
func (s *subscriptions) run(ctx context.Context, key watchKey, w *resourceWatch) {
	go s.deliver(ctx, w)
	changed := func() {
		select {
		case w.changed <- struct{}{}:
		default: // already due: listeners re-read the resource once
		}
	}
	var opened atomic.Bool
	pause := time.Second
	for ctx.Err() == nil {
		var subscribed atomic.Bool
		target, err := s.catalog.watchTarget(ctx, key.server)
		if err == nil {
			err = mcpclient.WatchResource(ctx, target, key.uri, func() {
				subscribed.Store(true)
				if opened.Swap(true) {
					changed()
				}
			}, changed)
		}
		if ctx.Err() != nil {
			return
		}
		switch {
		case subscribed.Load():
			pause = time.Second // it broke after working: no backlog of failures
		case errors.Is(err, mcpclient.ErrNotSubscribable):
			pause = watchRetryMax // it may come to offer them (a new version)
		}
		s.catalog.log.Info("A subscription to a server's resource ended; subscribing again", "server", key.server,
			"resource", recordedURI(key.uri), "after", pause.String(), "error", errorText(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, watchRetryMax)
	}
}

// errorText is an error's text, or why there is none.
func errorText(err error) string {
	if err == nil {
		return "the server ended it"
	}
	return err.Error()
}

// deliver tells the watch's listeners of each change, every listener at
// once, so that a slow one holds up no other; changes that come while it
// does are told once more after.
func (s *subscriptions) deliver(ctx context.Context, w *resourceWatch) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.changed:
		}
		s.mu.Lock()
		type told struct {
			stream *streamWriter
			event  []byte
		}
		listeners := make([]told, 0, len(w.listeners))
		for stream, event := range w.listeners {
			listeners = append(listeners, told{stream, event})
		}
		s.mu.Unlock()
		resourceUpdates.Inc()
		var wg sync.WaitGroup
		for _, l := range listeners {
			wg.Go(func() { l.stream.notify(l.event) })
		}
		wg.Wait()
	}
}

// legacyUpdate and listenUpdate are the events a stream is told a resource
// changed with: a 2026-07-28 stream's tagged with its subscription.
func legacyUpdate(exposed string) []byte {
	return sseEvent(map[string]any{"jsonrpc": "2.0", "method": string(mcp.MethodNotificationResourceUpdated),
		"params": map[string]any{"uri": exposed}})
}

func listenUpdate(exposed string, id json.RawMessage) []byte {
	return sseEvent(map[string]any{"jsonrpc": "2.0", "method": string(mcp.MethodNotificationResourceUpdated),
		"params": map[string]any{"uri": exposed, "_meta": map[string]json.RawMessage{mcp.MetaKeySubscriptionID: id}}})
}

// watchTarget is how a replica reaches a server to watch its resources.
func (c *Catalog) watchTarget(ctx context.Context, server string) (mcpclient.Target, error) {
	namespace, name, _ := strings.Cut(server, "/")
	up, err := c.upstreamOf(ctx, namespace, name)
	if err != nil {
		return mcpclient.Target{}, err
	}
	return c.targetOf(ctx, up)
}

// subscribable is what a caller may subscribe to under the URI it named:
// what it may read, of a server that sends updates and is reached with the
// catalog's own credentials (a server reached as each caller would need a
// watch of its own for each).
func (c *Catalog) subscribable(ctx context.Context, key viewKey, set *surfaceSet, uri string) (surfaceTarget, subscription, error) {
	if len(uri) > maxSubscribedURI {
		return surfaceTarget{kind: resourcesKind, exposed: uri}, subscription{}, &protocolError{code: mcp.INVALID_PARAMS,
			message: fmt.Sprintf("a URI of more than %d bytes cannot be subscribed to", maxSubscribedURI)}
	}
	target, err := c.findResource(ctx, set, uri)
	if err != nil {
		return target, subscription{}, err
	}
	if err := c.authorizeSurface(ctx, key, target.server); err != nil {
		return target, subscription{}, err
	}
	switch {
	case !target.server.subscriptions:
		return target, subscription{}, &protocolError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf(
			"MCPServer %s does not send updates of its resources (it does not announce resources.subscribe)", target.server.key())}
	case target.server.perCaller:
		return target, subscription{}, &protocolError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf(
			"MCPServer %s is reached with each caller's own token (spec.auth.tokenExchange): the catalog does not subscribe to its resources", target.server.key())}
	}
	return target, subscription{watch: watchKey{server: target.server.key(), uri: target.original}, exposed: uri}, nil
}

// serveSubscribe answers a legacy session's resources/subscribe and
// resources/unsubscribe, and forwards them to the other replicas.
func (m *mcpHandlers) serveSubscribe(ctx context.Context, w http.ResponseWriter, r *http.Request, key viewKey, set *surfaceSet, msg *rpcMessage) {
	c := m.catalog
	var params struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(msg.rawParams, &params); err != nil || params.URI == "" {
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, "params.uri is required")
		return
	}
	session := sessionSubscriber(r, key)
	target := surfaceTarget{kind: resourcesKind, exposed: params.URI}
	err := c.callers.allow(ctx)
	switch {
	case err != nil:
	case msg.Method == string(mcp.MethodResourcesUnsubscribe):
		m.subs.unsubscribe(session, params.URI)
	default:
		var sub subscription
		if target, sub, err = c.subscribable(ctx, key, set, params.URI); err == nil {
			err = m.subs.subscribe(session, callerKeyOf(ctx), sub)
		}
	}
	// Recorded by every replica that takes it, the ones it was forwarded
	// to included: a caller may send the header that says so.
	c.recordSurface(ctx, key, msg.Method, target, err)
	if err != nil {
		writeSurfaceError(w, msg.ID, err)
		return
	}
	m.forwardToAll(r, msg)
	writeListAnswer(w, msg.ID, json.RawMessage("{}"))
}

// takeListenSubscriptions takes the resources a 2026-07-28
// subscriptions/listen asks to hear of that its caller may subscribe to,
// and passes the request on to mcp-go with only those, so that its
// acknowledgment names what the stream will carry. A URI the caller may
// not subscribe to is left out, and recorded. It reports false when it
// answered the request itself.
func (m *mcpHandlers) takeListenSubscriptions(w http.ResponseWriter, r *http.Request, key viewKey, msg *rpcMessage) bool {
	var params struct {
		Notifications struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(msg.rawParams, &params) != nil || len(params.Notifications.ResourceSubscriptions) == 0 {
		return true // mcp-go answers what it cannot read
	}
	uris := params.Notifications.ResourceSubscriptions
	slices.Sort(uris)
	if uris = slices.Compact(uris); len(uris) > maxSubscriptionsPerListener {
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, fmt.Sprintf("a stream subscribes to %d resources at most", maxSubscriptionsPerListener))
		return false
	}
	if err := m.catalog.callers.allow(r.Context()); err != nil {
		writeSurfaceError(w, msg.ID, err)
		return false
	}
	listen, err := m.listenSubscriptions(r.Context(), key, uris)
	if err != nil {
		writeRPCError(w, http.StatusServiceUnavailable, msg.ID, mcp.INTERNAL_ERROR, "the catalog cannot read its cache or check permissions yet; retry")
		return false
	}
	msg.listen = listen
	return true
}

// listenResources are the resources a subscriptions/listen names that its
// caller may subscribe to, and what each names.
type listenResources struct {
	subs    []subscription
	targets []surfaceTarget
}

// listenSubscriptions are those of uris a caller may subscribe to; the
// others are recorded as refused.
func (m *mcpHandlers) listenSubscriptions(ctx context.Context, key viewKey, uris []string) (*listenResources, error) {
	c := m.catalog
	listen := &listenResources{}
	vw, err := c.menus.view(ctx, key)
	if err != nil || vw.missing != "" || vw.surfaces == nil {
		return listen, err
	}
	set, err := c.visibleSurfaces(ctx, key, vw.surfaces)
	if err != nil {
		return nil, err
	}
	for _, uri := range uris {
		target, sub, err := c.subscribable(ctx, key, set, uri)
		if err != nil {
			c.recordSurface(ctx, key, string(mcp.MethodSubscriptionsListen), target, err)
			continue
		}
		listen.subs, listen.targets = append(listen.subs, sub), append(listen.targets, target)
	}
	return listen, nil
}

// openListen has a 2026-07-28 stream hear of the resources its request
// named, as many as the limits allow, and gives mcp-go the request with
// only those, so that its acknowledgment names what the stream carries.
// The returned func ends it.
func (m *mcpHandlers) openListen(r *http.Request, key viewKey, msg *rpcMessage, stream *streamWriter) func() {
	listen := msg.listen
	if listen == nil {
		return func() {}
	}
	ctx := r.Context()
	n, release := m.subs.listenOpened(stream, callerKeyOf(ctx), msg.ID, listen.subs)
	for i, target := range listen.targets {
		var err error
		if i >= n {
			err = &protocolError{code: mcp.INTERNAL_ERROR, message: "the caller's streams, or this replica, hear of their most resources", outcome: "busy"}
		}
		m.catalog.recordSurface(ctx, key, string(mcp.MethodSubscriptionsListen), target, err)
	}
	if body, err := withResourceSubscriptions(msg, listen.subs[:n]); err == nil {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	return release
}

// sessionSubscriber names a legacy session's subscriptions: its id, scoped to
// the endpoint and to the caller (callerKeyOf), so that nobody else
// subscribes for it or hears it, and a caller whose token changed (they
// expire long before a stream ends) keeps them. "" when the request names
// no session.
func sessionSubscriber(r *http.Request, key viewKey) string {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return ""
	}
	return strings.Join([]string{callerKeyOf(r.Context()), menuLabel(key), id}, "\x00")
}

// callerKeyOf names the caller whose share of a replica's subscriptions
// and parked calls a request takes: its issuer and user name, as its rate
// is kept (a caller's tokens change; it stays); "" for none (no
// authentication).
func callerKeyOf(ctx context.Context) string {
	if who := callerFrom(ctx); who != nil {
		return who.issuer + "\x00" + who.username
	}
	return ""
}

// withResourceSubscriptions is a subscriptions/listen request's body with
// its resourceSubscriptions only those subs name.
func withResourceSubscriptions(msg *rpcMessage, subs []subscription) ([]byte, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(msg.rawParams, &params); err != nil {
		return nil, err
	}
	var notifications map[string]json.RawMessage
	if err := json.Unmarshal(params["notifications"], &notifications); err != nil {
		return nil, err
	}
	uris := make([]string, 0, len(subs))
	for _, sub := range subs {
		uris = append(uris, sub.exposed)
	}
	if len(uris) == 0 {
		delete(notifications, "resourceSubscriptions")
	} else {
		notifications["resourceSubscriptions"], _ = json.Marshal(uris)
	}
	var err error
	if params["notifications"], err = json.Marshal(notifications); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": msg.ID, "method": msg.Method, "params": json.RawMessage(raw)})
}

// subscribeForwardTimeout bounds forwarding a subscription to a replica.
const subscribeForwardTimeout = 5 * time.Second

// forwardToAll sends a legacy session's subscription request, as it came,
// to every other replica, so that whichever holds the session's stream,
// now or later, keeps it too; each checks it as if it came directly. A
// replica that cannot be reached is logged: its streams of the session
// will not hear of the change.
func (m *mcpHandlers) forwardToAll(r *http.Request, msg *rpcMessage) {
	peers := m.catalog.opts.Peers
	if !peers.enabled() || r.Header.Get(forwardedHeader) != "" {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), subscribeForwardTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": msg.ID, "method": msg.Method, "params": msg.rawParams})
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for name, address := range m.peers.others(ctx, peers, m.catalog.log.Info) {
		wg.Go(func() {
			if err := forwardOnce(ctx, r, address, body); err != nil {
				m.catalog.log.Info("Forwarding a resource subscription to another replica failed", "replica", name, "error", err.Error())
			}
		})
	}
	wg.Wait()
}

// forwardOnce sends body to the replica at address as r came, marked as
// forwarded, and wants a 200 back.
func forwardOnce(ctx context.Context, r *http.Request, address string, body []byte) error {
	req, err := peerRequest(ctx, r, address, body)
	if err != nil {
		return err
	}
	resp, err := peerClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case err != nil:
		return err
	case resp.StatusCode != http.StatusOK:
		return errors.New("it answered " + resp.Status)
	case len(wire.Member(answer, "error")) > 0:
		return errors.New("it answered with an error: " + string(wire.Member(wire.Member(answer, "error"), "message")))
	}
	return nil
}
