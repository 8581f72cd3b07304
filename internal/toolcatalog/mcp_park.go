package toolcatalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// A 2026-07-28 caller and a server of an older revision: the server asks
// (elicitation/create, sampling/createMessage) on the call's answer stream
// and waits for the answer there, while a 2026-07-28 client answers only by
// sending the call again with its inputResponses. So the catalog parks the
// call: it goes on, no longer tied to the caller's request, and the caller
// is answered "input_required" with the server's requests as its
// inputRequests (as the server sent them) and a requestState sealed to it
// that names the parked call (request_state.go). The call sent again with
// that state goes to the replica that parked it (relay_forward.go), which
// hands each answer to the server's waiting request and answers the call
// sent again with what the call does next: its result, or input_required
// for the server's next requests.
//
// A parked call waits as long as its call may (the server's spec.timeout
// bounds a person's answer as it bounds the call); a caller that does not
// come back leaves its server's requests refused when that ends, and the
// call's end is kept for parkKeep more, for a caller that comes back late.
// A caller's request that ends while its call is not parked cancels the
// call, as closing a 2026-07-28 request does.

const (
	// maxParked bounds the calls a replica holds for 2026-07-28 callers'
	// answers, asking or ended and kept, and maxCallerParked those of one
	// caller, so that one caller's abandoned calls do not take the others'
	// room.
	maxParked       = 1000
	maxCallerParked = 100
	// parkKeep is how long an ended parked call's end is kept for its
	// caller.
	parkKeep = 2 * time.Minute
	// maxParkedFor bounds a parked call's life, whatever its server's
	// timeout.
	maxParkedFor = maxForwarded
)

// errCallerLeft is why a call whose caller's request ended was cancelled.
var errCallerLeft = errors.New("the caller closed the request")

// parkedCalls are a replica's calls that asked their 2026-07-28 callers.
type parkedCalls struct {
	mu       sync.Mutex
	byID     map[string]*parkedCall
	byCaller map[string]int
}

func newParkedCalls() *parkedCalls {
	return &parkedCalls{byID: map[string]*parkedCall{}, byCaller: map[string]int{}}
}

// parkedCall is one call of a 2026-07-28 caller to a server of an older
// revision, its server's requests, and its end.
type parkedCall struct {
	calls *parkedCalls
	// id names it in its caller's requestState; identity is its caller's.
	id, identity string
	asks         callerAsks
	cancel       context.CancelCauseFunc

	mu sync.Mutex
	// serving is the request serving the call now: progress and log
	// messages go on it, as it asked for them.
	serving serving
	// asked are the server's requests waiting on the caller, by key in
	// inputRequests; sent says the caller was given them all.
	asked   map[string]*parkedAsk
	nextKey int
	sent    bool
	// served says a request of the caller serves the call; when none
	// does, the call is parked.
	served  bool
	ended   *parkedEnd
	changed chan struct{}
}

// parkedAsk is one of the server's requests, and where its answer goes.
type parkedAsk struct {
	method string
	params json.RawMessage
	answer chan json.RawMessage
}

// parkedEnd is how the call ended.
type parkedEnd struct {
	envelope Envelope
	err      error
}

// start runs call for a 2026-07-28 caller that declared asks, on its own,
// so that it may be parked, and serves it on the caller's request.
func (p *parkedCalls) start(ctx context.Context, identity string, asks callerAsks) (*parkedCall, context.Context) {
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	callCtx, stop := context.WithTimeout(callCtx, maxParkedFor)
	var b [16]byte
	_, _ = rand.Read(b[:])
	pc := &parkedCall{calls: p, id: hex.EncodeToString(b[:]), identity: identity, asks: asks,
		cancel: func(cause error) { cancel(cause); stop() }, changed: make(chan struct{}, 1), served: true}
	return pc, callCtx
}

// run runs the call to its end and keeps the end for whoever serves it.
func (pc *parkedCall) run(fn func() (Envelope, error)) {
	envelope, err := fn()
	pc.cancel(nil)
	pc.mu.Lock()
	pc.ended = &parkedEnd{envelope: envelope, err: err}
	asked := len(pc.asked) > 0 || pc.nextKey > 0
	pc.mu.Unlock()
	pc.signal()
	if asked {
		// Its caller may come back for it, for a while.
		time.AfterFunc(parkKeep, func() { pc.calls.remove(pc.id) })
	}
}

func (pc *parkedCall) signal() {
	select {
	case pc.changed <- struct{}{}:
	default:
	}
}

// serving is a request that serves a call: its answer, and the progress
// token and log messages it asked for.
type serving struct {
	stream *callStream
	token  json.RawMessage
	logs   bool
}

// servedBy says which request serves the call now: what the call says
// from then on goes to it.
func (pc *parkedCall) servedBy(by serving) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.serving = by
}

// current is the request serving the call now.
func (pc *parkedCall) current() serving {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.serving
}

// onRequest is the call's mcpclient.CallOptions.OnRequest: a request the
// caller declared it answers waits for the caller's answer, given with the
// call sent again; any other is refused.
func (pc *parkedCall) onRequest(ctx context.Context, method string, params json.RawMessage) mcpclient.Answer {
	if refused, ok := unaskable(method, params, pc.asks); ok {
		return refused
	}
	ask := &parkedAsk{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	key, why := pc.add(ask)
	if key == "" {
		return refuseAsk(method, mcp.INTERNAL_ERROR, why)
	}
	select {
	case answer := <-ask.answer:
		relayedRequests.WithLabelValues(method, "answered").Inc()
		return mcpclient.Answer{Result: answer}
	case <-ctx.Done():
		pc.mu.Lock()
		delete(pc.asked, key)
		pc.mu.Unlock()
		relayedRequests.WithLabelValues(method, "call_ended").Inc()
		return mcpclient.Refusal(mcp.REQUEST_INTERRUPTED, "the tool call ended before its caller answered")
	}
}

// add takes a request of the server's for the caller; "" and why when it
// cannot be taken.
func (pc *parkedCall) add(ask *parkedAsk) (string, string) {
	pc.mu.Lock()
	if len(pc.asked) >= maxRelaysPerCall {
		pc.mu.Unlock()
		return "", fmt.Sprintf("this call has %d requests waiting on its caller already", maxRelaysPerCall)
	}
	first := pc.nextKey == 0
	pc.mu.Unlock()
	if first {
		if why := pc.calls.add(pc); why != "" {
			return "", why
		}
	}
	pc.mu.Lock()
	if pc.asked == nil {
		pc.asked = map[string]*parkedAsk{}
	}
	pc.nextKey++
	key := "mcp-operator-" + strconv.Itoa(pc.nextKey)
	pc.asked[key] = ask
	pc.sent = false
	pc.mu.Unlock()
	pc.signal()
	return key, ""
}

// add holds a call that asked its caller; it says why when it cannot.
func (p *parkedCalls) add(pc *parkedCall) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.byID[pc.id] != nil:
		return ""
	case len(p.byID) >= maxParked:
		return "this catalog replica has too many calls waiting on their callers; retry later"
	case p.byCaller[pc.identity] >= maxCallerParked:
		return fmt.Sprintf("this caller has %d calls waiting on its answers on this catalog replica; answer them, or let them end, first", maxCallerParked)
	}
	p.byID[pc.id] = pc
	p.byCaller[pc.identity]++
	return ""
}

func (p *parkedCalls) remove(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.byID[id]
	if pc == nil {
		return
	}
	delete(p.byID, id)
	if p.byCaller[pc.identity]--; p.byCaller[pc.identity] <= 0 {
		delete(p.byCaller, pc.identity)
	}
}

// resume takes a parked call for the caller's request that brings its
// answers; nil when there is none by that id, or a request serves it.
func (p *parkedCalls) resume(id string) *parkedCall {
	p.mu.Lock()
	pc := p.byID[id]
	p.mu.Unlock()
	if pc == nil {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.served {
		return nil
	}
	pc.served = true
	return pc
}

// answer hands the caller's inputResponses to the server's requests they
// answer; the others stay asked.
func (pc *parkedCall) answer(responses json.RawMessage) {
	var byKey map[string]json.RawMessage
	if json.Unmarshal(responses, &byKey) != nil {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for key, response := range byKey {
		if ask, ok := pc.asked[key]; ok && isObject(response) {
			delete(pc.asked, key)
			ask.answer <- response // buffered, and the only send
		}
	}
	pc.sent = false
}

// isObject says raw is a JSON object, as every answer is.
func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b == '{'
	}
	return false
}

// serve waits, on the caller's request, for what the call does next: its
// end, returned with ended true, or requests of the server's for the
// caller, answered as input_required with the call parked. A request that
// ends first cancels the call.
func (pc *parkedCall) serve(ctx context.Context, answerAsked func(json.RawMessage)) (Envelope, error, bool) {
	for {
		pc.mu.Lock()
		if end := pc.ended; end != nil {
			pc.mu.Unlock()
			pc.calls.remove(pc.id)
			return end.envelope, end.err, true
		}
		if len(pc.asked) > 0 && !pc.sent {
			pc.sent, pc.served = true, false
			requests := pc.inputRequestsLocked()
			pc.mu.Unlock()
			answerAsked(requests)
			return Envelope{}, nil, false
		}
		pc.mu.Unlock()
		select {
		case <-pc.changed:
		case <-ctx.Done():
			pc.cancel(errCallerLeft)
			return Envelope{}, context.Cause(ctx), false
		}
	}
}

// inputRequestsLocked are the server's requests waiting on the caller, as
// a 2026-07-28 result's inputRequests.
func (pc *parkedCall) inputRequestsLocked() json.RawMessage {
	keys := make([]string, 0, len(pc.asked))
	for key := range pc.asked {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	out := []byte{'{'}
	for i, key := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		ask := pc.asked[key]
		out = wire.AppendString(out, key)
		out = append(out, `:{"method":`...)
		out = wire.AppendString(out, ask.method)
		out = append(out, `,"params":`...)
		params := ask.params
		if len(params) == 0 {
			params = json.RawMessage("{}")
		}
		out = append(out, params...)
		out = append(out, '}')
	}
	return append(out, '}')
}

// parkedAnswer is the input_required result that parks a call: the
// server's requests, and the state that names the call, sealed to it
// (binding, its stateBinding: read only when a call is parked, for most
// calls never are).
func (m *mcpHandlers) parkedAnswer(pc *parkedCall, binding string, requests json.RawMessage) json.RawMessage {
	answer := []byte(`{"resultType":"input_required","inputRequests":`)
	answer = append(answer, requests...)
	answer = append(answer, `,"requestState":`...)
	answer = wire.AppendString(answer, m.states.sealParked(pc.id, binding, time.Now()))
	return append(answer, '}')
}

// errParkedGone is why a call sent again with the state of a parked call
// this replica no longer holds is refused.
var errParkedGone = errors.New("the call this requestState belongs to is over (it waited longer than its server's timeout for the answers) " +
	"or is being answered by another request; call the tool again")

// writeParkedGone answers a call sent again for a parked call that is gone.
func writeParkedGone(w http.ResponseWriter, id json.RawMessage) {
	writeRPCError(w, http.StatusOK, id, mcp.INVALID_PARAMS, errParkedGone.Error())
}
