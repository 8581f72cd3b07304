package toolcatalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// Relaying a server's requests to the caller of the call they belong to
// (elicitation, sampling; never roots), for callers of the revisions before
// 2026-07-28 (docs/protocol.md, "Requests from servers"):
//
//  1. The caller declares what it can answer in initialize. The catalog
//     keeps no session, so the declaration travels in the session id it
//     issues (sessionIDs): any replica reads it from the id.
//  2. The server's request comes on the call's answer stream upstream
//     (mcpclient, ask.go), and is sent on the call's answer stream to the
//     caller with an id of the catalog's (callAsker), its params as they
//     came.
//  3. The caller POSTs its answer to the endpoint with that id; the
//     replica that runs the call hands it to the waiting request
//     (relayTable.deliver), and the answer goes upstream as it came.
//
// A request the caller did not declare it can answer, or that comes when
// the caller cannot be asked (REST, 2026-07-28), is refused upstream at
// once, saying why. A wait ends with the call: the server's spec.timeout
// bounds a person's answer as it bounds the call. An answer that reaches
// another replica is forwarded to this one (relay_forward.go); a
// 2026-07-28 caller is asked with input_required results (mcp_input.go).

// callerAsks are the requests a caller declared it answers.
type callerAsks uint8

const (
	asksElicitForm callerAsks = 1 << iota
	asksElicitURL
	asksSampling
	asksSamplingTools
	// asksRoots is read only from a 2026-07-28 request's capabilities:
	// roots are never asked of a legacy caller, so never in a session id.
	asksRoots
)

// askLetters spell callerAsks in a session id, one letter a flag, in
// this order.
const askLetters = "fust"

// asksOfInitialize reads the capabilities an initialize request declares.
func asksOfInitialize(params json.RawMessage) callerAsks {
	var p struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return 0
	}
	return asksOfCapabilities(p.Capabilities) &^ asksRoots
}

// asksOfCapabilities reads a client's capabilities object.
func asksOfCapabilities(raw json.RawMessage) callerAsks {
	var c struct {
		Elicitation map[string]json.RawMessage `json:"elicitation"`
		Sampling    map[string]json.RawMessage `json:"sampling"`
		Roots       json.RawMessage            `json:"roots"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &c) != nil {
		return 0
	}
	var asks callerAsks
	if e := c.Elicitation; e != nil {
		_, form := e["form"]
		_, url := e["url"]
		if form || !url {
			// elicitation: {} declares form mode (2025-11-25).
			asks |= asksElicitForm
		}
		if url {
			asks |= asksElicitURL
		}
	}
	if s := c.Sampling; s != nil {
		asks |= asksSampling
		if _, tools := s["tools"]; tools {
			asks |= asksSamplingTools
		}
	}
	if r := c.Roots; len(r) > 0 && string(r) != "null" {
		asks |= asksRoots
	}
	return asks
}

// capabilities are the client capabilities a declares, as a 2026-07-28
// server is told them: only what the catalog relays. Encoded once for each
// set, as every call asks for its caller's.
func (a callerAsks) capabilities() json.RawMessage { return encodedAsks[a] }

var encodedAsks = func() (all [asksRoots << 1]json.RawMessage) {
	for a := range all {
		all[a] = callerAsks(a).encode()
	}
	return all
}()

func (a callerAsks) encode() json.RawMessage {
	caps := map[string]any{}
	if a&(asksElicitForm|asksElicitURL) != 0 {
		modes := map[string]any{}
		if a&asksElicitForm != 0 {
			modes["form"] = struct{}{}
		}
		if a&asksElicitURL != 0 {
			modes["url"] = struct{}{}
		}
		caps["elicitation"] = modes
	}
	if a&asksSampling != 0 {
		sampling := map[string]any{}
		if a&asksSamplingTools != 0 {
			sampling["tools"] = struct{}{}
		}
		caps["sampling"] = sampling
	}
	if a&asksRoots != 0 {
		caps["roots"] = struct{}{}
	}
	raw, _ := json.Marshal(caps)
	return raw
}

func (a callerAsks) letters() string {
	var b strings.Builder
	for i := range len(askLetters) {
		if a&(1<<i) != 0 {
			b.WriteByte(askLetters[i])
		}
	}
	return b.String()
}

// asksOfSession reads a session id the catalog issued: mcp-go's form (a
// prefix and a UUID), then, when the caller declared any, "." and its
// letters. ok is false for any other id.
func asksOfSession(id string) (asks callerAsks, ok bool) {
	base, letters, flagged := strings.Cut(id, ".")
	if _, err := (&server.StatelessGeneratingSessionIdManager{}).Validate(base); err != nil {
		return 0, false
	}
	if flagged && letters == "" {
		return 0, false
	}
	for _, l := range []byte(letters) {
		i := strings.IndexByte(askLetters, l)
		if i < 0 || asks&(1<<i) != 0 {
			return 0, false
		}
		asks |= 1 << i
	}
	return asks, true
}

// asksKey carries, in an initialize request's context, what it declared.
type asksKey struct{}

// sessionIDs issues and checks the catalog's session ids (asksOfSession)
// for mcp-go, which keeps no session of its own across replicas.
type sessionIDs struct{}

func (sessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	var asks callerAsks
	if r != nil {
		asks, _ = r.Context().Value(asksKey{}).(callerAsks)
	}
	return sessionIDManager{asks: asks}
}

type sessionIDManager struct{ asks callerAsks }

func (m sessionIDManager) Generate() string {
	id := (&server.StatelessGeneratingSessionIdManager{}).Generate()
	if m.asks != 0 {
		id += "." + m.asks.letters()
	}
	return id
}

func (sessionIDManager) Validate(id string) (isTerminated bool, err error) {
	if _, ok := asksOfSession(id); !ok {
		return false, errors.New("invalid session id")
	}
	return false, nil
}

func (sessionIDManager) Terminate(string) (isNotAllowed bool, err error) { return false, nil }

// askNeeds is what a caller must have declared to be sent a request of
// method with params; ok is false for a method the catalog does not relay.
func askNeeds(method string, params json.RawMessage) (need callerAsks, capability string, ok bool) {
	switch method {
	case string(mcp.MethodElicitationCreate):
		if string(wire.Member(params, "mode")) == `"url"` {
			return asksElicitURL, "elicitation.url", true
		}
		return asksElicitForm, "elicitation (form mode)", true
	case string(mcp.MethodSamplingCreateMessage):
		if tools := wire.Member(params, "tools"); len(tools) > 0 && string(tools) != "null" {
			return asksSamplingTools, "sampling.tools", true
		}
		return asksSampling, "sampling", true
	}
	return 0, "", false
}

// relayIDPrefix starts the id of every request the catalog relays to a
// caller, so that the answer is told apart from any other message.
const relayIDPrefix = "mcp-operator-relay-"

// maxRelaysPerCall bounds the requests one call may have waiting on its
// caller at once; maxRelays, those of all calls on a replica.
const (
	maxRelaysPerCall = 8
	maxRelays        = 10000
)

// relayTable holds the requests waiting on callers' answers, by relay id.
// An entry lives as long as its wait, so the table is bounded by the
// calls in flight (maxRelaysPerCall each) and by maxRelays.
type relayTable struct {
	// self is this replica's pod name (Peers.Self), ending each id.
	self    string
	mu      sync.Mutex
	waiting map[string]*relayWait
}

type relayWait struct {
	// binding is the caller's session (sessionOf): only the caller that
	// was asked may answer.
	binding string
	answer  chan wire.Message
}

func newRelayTable(self string) *relayTable {
	return &relayTable{self: self, waiting: map[string]*relayWait{}}
}

// callAsker relays one call's server requests to its caller.
type callAsker struct {
	table   *relayTable
	binding string
	asks    callerAsks
	stream  *callStream
	mu      sync.Mutex
	// pending are the ids of the requests waiting on the caller; ended
	// says the call is over and no more are sent.
	pending map[string]bool
	ended   bool
}

// asker returns what relays the server requests of one call of a legacy
// caller: a request the caller declared it answers is sent on the call's
// stream and waited for; any other is refused. end must be called before
// the call's answer is written.
func (t *relayTable) asker(binding string, asks callerAsks, stream *callStream) *callAsker {
	return &callAsker{table: t, binding: binding, asks: asks, stream: stream}
}

// onRequest is the call's mcpclient.CallOptions.OnRequest.
func (a *callAsker) onRequest(ctx context.Context, method string, params json.RawMessage) mcpclient.Answer {
	if refused, ok := unaskable(method, params, a.asks); ok {
		return refused
	}
	id := newRelayID(a.table.self)
	wait, code, why := a.send(id, method, params)
	if wait == nil {
		return refuseAsk(method, code, why)
	}
	select {
	case msg := <-wait.answer:
		a.forget(id, false)
		relayedRequests.WithLabelValues(method, "answered").Inc()
		return mcpclient.Answer{Result: msg.Result, Error: msg.Error}
	case <-ctx.Done():
		a.forget(id, true)
		relayedRequests.WithLabelValues(method, "call_ended").Inc()
		return mcpclient.Refusal(mcp.REQUEST_INTERRUPTED, "the tool call ended before its caller answered")
	}
}

// send registers the request to wait for its answer and sends it on the
// call's stream, both under the call's lock, so that end never misses a
// request sent before the call's answer.
// Without a wait, code and why say why it was not sent.
func (a *callAsker) send(id, method string, params json.RawMessage) (wait *relayWait, code int, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.ended:
		return nil, mcp.REQUEST_INTERRUPTED, "the call was answered before its caller could be asked"
	case len(a.pending) >= maxRelaysPerCall:
		return nil, mcp.INTERNAL_ERROR, fmt.Sprintf("this call has %d requests waiting on its caller already", maxRelaysPerCall)
	}
	wait = &relayWait{binding: a.binding, answer: make(chan wire.Message, 1)}
	t := a.table
	t.mu.Lock()
	if len(t.waiting) >= maxRelays {
		t.mu.Unlock()
		return nil, mcp.INTERNAL_ERROR, "this catalog replica has too many requests waiting on callers; retry later"
	}
	t.waiting[id] = wait
	t.mu.Unlock()
	if a.pending == nil {
		a.pending = map[string]bool{} // most calls ask nothing
	}
	a.pending[id] = true
	rawID, _ := json.Marshal(id)
	a.stream.request(rawID, method, params) // not ended: the call's answer is not written yet
	return wait, 0, ""
}

// end tells the caller that every question of the call still waiting is
// off, before the call's answer, and sends no more.
func (a *callAsker) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	for id := range a.pending {
		a.cancel(id)
	}
}

// forget drops a request that was answered, or, with off, whose call
// ended: the caller hears that the question is off, once (end may have
// told it already).
func (a *callAsker) forget(id string, off bool) {
	t := a.table
	t.mu.Lock()
	delete(t.waiting, id)
	t.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if off && !a.ended && a.pending[id] {
		a.cancel(id)
	}
	delete(a.pending, id)
}

// cancel tells the caller the question id is off; a.mu is held.
func (a *callAsker) cancel(id string) {
	cancelled, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the tool call ended"})
	a.stream.notify(string(mcp.MethodNotificationCancelled), cancelled)
}

// unaskable is the refusal of a server's request its caller cannot be
// asked, and true: one the catalog does not relay, or that needs what the
// caller did not declare it answers (asks).
func unaskable(method string, params json.RawMessage, asks callerAsks) (mcpclient.Answer, bool) {
	need, capability, ok := askNeeds(method, params)
	switch {
	case !ok:
		// roots/list included: the operator declares no roots, since one
		// caller's would be shown to a server for every caller of its
		// shared session.
		return refuseAsk(method, mcp.METHOD_NOT_FOUND, "mcp-operator does not relay this request from a server to its caller"), true
	case asks&need == 0:
		return refuseAsk(method, mcp.METHOD_NOT_FOUND, fmt.Sprintf(
			"the caller of this tool did not declare the %s capability, so mcp-operator cannot ask it", capability)), true
	}
	return mcpclient.Answer{}, false
}

// refuseAsk refuses a server's request, counted.
func refuseAsk(method string, code int, why string) mcpclient.Answer {
	if _, _, ok := askNeeds(method, nil); !ok {
		method = "other" // a metric label never carries a server's text
	}
	relayedRequests.WithLabelValues(method, "refused").Inc()
	return mcpclient.Refusal(code, why)
}

// deliver hands a caller's answer to the request waiting for it, if this
// replica has one with that id for that caller's session.
func (t *relayTable) deliver(id, binding string, msg wire.Message) bool {
	t.mu.Lock()
	wait, ok := t.waiting[id]
	if ok && wait.binding == binding && binding != "" {
		delete(t.waiting, id) // one answer only
	} else {
		ok = false
	}
	t.mu.Unlock()
	if ok {
		wait.answer <- msg // buffered, and the only send
	}
	return ok
}

// newRelayID is a fresh relay id: random, then "." and this replica's
// pod name when it has one, for another replica to forward the answer to
// (relay_forward.go).
func newRelayID(self string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := relayIDPrefix + hex.EncodeToString(b[:])
	if self != "" {
		id += "." + self
	}
	return id
}

// relayAnswerID is the relay id a caller's POST answers, if it is an
// answer (an id and a result or error, no method) to one.
func relayAnswerID(body []byte) (string, wire.Message, bool) {
	msg, err := wire.ParseMessage(body)
	if err != nil || msg.Method != "" || !msg.HasID() {
		return "", msg, false
	}
	var id string
	if json.Unmarshal(msg.ID, &id) != nil || !strings.HasPrefix(id, relayIDPrefix) {
		return "", msg, false
	}
	if string(msg.Error) == "null" {
		msg.Error = nil // a result, with an error member of null
	}
	return id, msg, true
}

// refuseAsking is the OnRequest of a call whose caller cannot be asked:
// why, for whom.
func refuseAsking(why string) func(context.Context, string, json.RawMessage) mcpclient.Answer {
	return func(_ context.Context, method string, _ json.RawMessage) mcpclient.Answer {
		return refuseAsk(method, mcp.METHOD_NOT_FOUND, why)
	}
}

// Why callers that cannot be asked are not.
const (
	restCannotAnswer = "this tool was called through mcp-operator's REST API, which cannot answer a server's request (elicitation, sampling, roots); " +
		"call it over MCP from a client that declares the capability"
	noEventStream         = "the caller does not accept an event stream (its Accept header), the only way a server's request can reach it during a call"
	statelessCannotAnswer = "the caller speaks MCP 2026-07-28 and declared no capability in its request's clientCapabilities " +
		"(elicitation, sampling) for mcp-operator to ask it with"
)
