package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// The child's requests to "the client" (elicitation/create and
// sampling/createMessage) are relayed to the client of the call that asked.
// stdio does not say which call that is: a request from the server carries
// no link to the request it serves (SDKs use that link only to pick an HTTP
// stream), and the child's one session stands for every client. So a
// request is relayed only when exactly one call that may ask is in flight,
// and refused at once, saying why, otherwise.

const (
	// maxCallRelays bounds the child's requests waiting for one call's
	// client.
	maxCallRelays = 8
	// askQueue bounds what waits to be written to a call's client: its
	// relayed requests and their cancellations.
	askQueue = 2 * maxCallRelays
)

// askingMethods are the client requests during which a server may ask its
// client something.
var askingMethods = []string{
	string(mcp.MethodToolsCall),
	string(mcp.MethodPromptsGet),
	string(mcp.MethodResourcesRead),
	string(mcp.MethodCompletionComplete),
}

func mayAsk(method string) bool { return slices.Contains(askingMethods, method) }

// clientCaps are the capabilities a client declared at initialize that
// decide what may be relayed to it.
type clientCaps struct {
	elicitForm, elicitURL, sampling bool
}

// parseClientCaps reads a client's capabilities from its initialize params.
// An elicitation capability that names no mode means form mode, as it did
// before modes (2025-11-25).
func parseClientCaps(params json.RawMessage) clientCaps {
	var p struct {
		Capabilities struct {
			Elicitation *struct {
				Form *json.RawMessage `json:"form"`
				URL  *json.RawMessage `json:"url"`
			} `json:"elicitation"`
			Sampling *json.RawMessage `json:"sampling"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(params, &p)
	e := p.Capabilities.Elicitation
	return clientCaps{
		elicitForm: e != nil && (e.Form != nil || e.URL == nil),
		elicitURL:  e != nil && e.URL != nil,
		sampling:   p.Capabilities.Sampling != nil,
	}
}

// requirement is the capability the child's request m needs of a client:
// whether caps have it, and its name for messages. An elicitation mode
// other than form and url is an error.
func requirement(m message) (func(clientCaps) bool, string, error) {
	if m.Method == string(mcp.MethodSamplingCreateMessage) {
		return func(c clientCaps) bool { return c.sampling }, "the sampling capability", nil
	}
	var p struct {
		Mode string `json:"mode"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch p.Mode {
	case "", "form":
		return func(c clientCaps) bool { return c.elicitForm }, "form-mode elicitation (the elicitation capability, with form or no mode)", nil
	case "url":
		return func(c clientCaps) bool { return c.elicitURL }, "URL-mode elicitation (elicitation.url)", nil
	}
	return nil, "", fmt.Errorf("elicitation mode %q is neither form nor url", p.Mode)
}

// relayed is a request of the child's waiting for a client's answer.
type relayed struct {
	id      string          // the bridge's id for it, which the client answers
	childID json.RawMessage // the child's own id, which the answer goes back under
	call    *call           // the call it was relayed for; its session answers
	proc    *child          // the child that asked
}

func (r *relayed) wireID() json.RawMessage { return wire.AppendString(nil, r.id) }

// relayRequest relays the child's elicitation/create or
// sampling/createMessage to the client of the one call that may have asked,
// or refuses it at once, saying why.
func (u *upstream) relayRequest(proc *child, m message) {
	has, capability, err := requirement(m)
	if err != nil {
		u.refuse(proc, m, codeNotRelayed, err.Error())
		return
	}
	u.mu.Lock()
	c, why := u.askingCall()
	var r *relayed
	if c != nil {
		r, why = u.relayTo(c, proc, m, has, capability)
	}
	u.mu.Unlock()
	if r == nil {
		u.refuse(proc, m, codeNotRelayed, why)
		return
	}
	u.log.Debug("Relayed a request from the MCP server to a client", "method", m.Method, "id", r.id, "session", c.session.logID())
}

// askingCall is the one client call in flight that may have asked, or why
// there is none. Calls parked for the next child are not in flight; calls
// the child may still be working on after the bridge gave up on them
// (lingering) count, since their requests are as likely. Callers hold u.mu.
func (u *upstream) askingCall() (*call, string) {
	var found *call
	n := 0
	for _, c := range u.calls {
		if c.session != nil && !c.parked && mayAsk(c.request.Method) {
			found = c
			n++
		}
	}
	ended := u.lingeringCalls()
	switch {
	case n+ended == 0:
		return nil, "no call that may ask the client (" + strings.Join(askingMethods, ", ") + ") is in flight"
	case n == 1 && ended == 0:
		return found, ""
	case ended > 0:
		return nil, fmt.Sprintf("%d calls that may ask the client (%s) are in flight, %d of them ended by the bridge but not answered by the MCP server, which may still be working on them; stdio gives no way to tell which one asked",
			n+ended, strings.Join(askingMethods, ", "), ended)
	}
	return nil, fmt.Sprintf("%d calls that may ask the client (%s) are in flight; stdio gives no way to tell which one asked", n, strings.Join(askingMethods, ", "))
}

// lingering is a call that left upstream.calls without the child's
// answer: the child it was written to, and until when it counts.
type lingering struct {
	proc  *child
	until time.Time
}

// lingerFor bounds how long a call the bridge ended without the child's
// answer counts as one the child may still ask for: RequestTimeout, at
// most maxLinger. A child that works on past it and then asks could have
// its request relayed to the client of another call.
func (u *upstream) lingerFor() time.Duration { return min(u.opts.RequestTimeout, maxLinger) }

const (
	maxLinger = time.Minute
	// maxLingering bounds the calls kept lingering; past it, the oldest
	// goes first.
	maxLingering = 1024
)

// linger keeps a call that may ask and was written to the current child
// as lingering. Callers hold u.mu.
func (u *upstream) linger(c *call) {
	if c.parked || c.session == nil || !mayAsk(c.request.Method) || u.proc == nil {
		return
	}
	if len(u.lingering) >= maxLingering {
		var oldest int64
		for id, l := range u.lingering {
			if oldest == 0 || l.until.Before(u.lingering[oldest].until) {
				oldest = id
			}
		}
		delete(u.lingering, oldest)
	}
	u.lingering[c.id] = lingering{proc: u.proc, until: time.Now().Add(u.lingerFor())}
}

// lingeringCalls counts the current child's lingering calls, dropping the
// ones whose time is up or whose child exited. Callers hold u.mu.
func (u *upstream) lingeringCalls() int {
	now := time.Now()
	n := 0
	for id, l := range u.lingering {
		if l.proc != u.proc || now.After(l.until) {
			delete(u.lingering, id)
			continue
		}
		n++
	}
	return n
}

// relayTo queues the child's request m for the client of call c, under a
// new id of the bridge's, its params as the child sent them; or says why
// it cannot. Callers hold u.mu.
func (u *upstream) relayTo(c *call, proc *child, m message, has func(clientCaps) bool, capability string) (*relayed, string) {
	switch {
	case !has(c.session.capabilities()):
		return nil, "the client of this call did not declare " + capability
	case c.asks == nil:
		return nil, "the client of this call does not accept an event stream (its Accept header), so no request can reach it during the call"
	case c.relays >= maxCallRelays:
		return nil, fmt.Sprintf("the client of this call has %d requests of the MCP server to answer already, the most the bridge relays for one call", maxCallRelays)
	}
	u.lastRelay++
	r := &relayed{id: "bridge-relay-" + strconv.FormatInt(u.lastRelay, 10), childID: m.ID, call: c, proc: proc}
	select {
	case c.asks <- wire.AppendRequest(nil, r.wireID(), m.Method, m.Params):
	default:
		return nil, "the client of this call is not reading what the bridge sends it"
	}
	u.relays[r.id] = r
	c.relays++
	return r, ""
}

// refuse answers a request of the child's with an error saying why it
// went to no client.
func (u *upstream) refuse(proc *child, m message, code int, why string) {
	u.log.Info("Refused a request from the MCP server", "method", m.Method, "reason", why)
	u.sendBestEffort(proc, encodeReply(m.ID, errorReply(code, "%s", why)))
}

// answerRelayed writes a client's answer to a relayed request to the child
// that asked, under the child's own id, its result or error as the client
// sent it. known is false when no request relayed to session s waits for
// an answer with this id.
func (u *upstream) answerRelayed(ctx context.Context, s *session, m message) (known bool, err error) {
	var id string
	if json.Unmarshal(m.ID, &id) != nil {
		return false, nil // the bridge's ids are strings
	}
	u.mu.Lock()
	r := u.relays[id]
	if r == nil || r.call.session != s {
		u.mu.Unlock()
		return false, nil
	}
	delete(u.relays, id)
	r.call.relays--
	u.mu.Unlock()
	return true, r.proc.send(ctx, encodeReply(r.childID, reply{result: m.Result, err: m.Error}), nil)
}

// endRelays ends the relayed requests of a call that is over (it has left
// upstream.calls, so none can be added), answering the child with an error
// that says why: no answer can come through the call any more.
func (u *upstream) endRelays(c *call, why string) {
	if c == nil {
		return
	}
	u.mu.Lock()
	var ended []*relayed
	if c.relays > 0 {
		for id, r := range u.relays {
			if r.call == c {
				ended = append(ended, r)
				delete(u.relays, id)
			}
		}
		c.relays = 0
	}
	u.mu.Unlock()
	for _, r := range ended {
		u.log.Debug("Ended a relayed request with its call", "id", r.id, "reason", why)
		u.sendBestEffort(r.proc, encodeReply(r.childID, errorReply(codeRelayEnded, "%s", why)))
	}
}

// relayCancelled handles the child's notifications/cancelled. One that
// names a relayed request drops it and goes to its client under the
// bridge's id; others name requests the bridge answered itself.
func (u *upstream) relayCancelled(proc *child, params json.RawMessage) {
	requestID := wire.Member(params, "requestId")
	if requestID == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, r := range u.relays {
		if r.proc != proc || !wire.SameID(r.childID, requestID) {
			continue
		}
		delete(u.relays, id)
		r.call.relays--
		if p, err := wire.SetMember(params, "requestId", r.wireID()); err == nil {
			select {
			case r.call.asks <- encodeNotification(string(mcp.MethodNotificationCancelled), p):
			default: // the client is not reading; its answer will be refused
			}
		}
		return
	}
}

// relayEnded says why a call's relayed requests end with it, given the
// call's reply (ok false: there was none, the client went away).
func relayEnded(method string, rep reply, ok bool) string {
	what := "the MCP server answered it"
	switch {
	case !ok:
		what = "its client went away"
	case rep.failed():
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(rep.err, &e)
		what = "it failed: " + e.Message
	}
	return fmt.Sprintf("the %s request it was relayed for ended before its client answered: %s", method, what)
}

// answer handles a client's POSTed JSON-RPC response: the answer to a
// request relayed to it. It is 202 once on its way to the child, and 400,
// with a JSON-RPC error, for an id no request relayed to this session
// has: never 404, which tells a Streamable HTTP client to initialize
// again.
func (b *Bridge) answer(w http.ResponseWriter, r *http.Request, s *session, m message) {
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	known, err := b.up.answerRelayed(ctx, s, m)
	switch {
	case !known:
		id := []byte("null")
		if m.HasID() {
			id = m.ID
		}
		writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, "no request relayed to this session waits for an answer with id %s", preview(id))
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, nil, codeServerExited, "passing the answer to the MCP server: %v", err)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}
