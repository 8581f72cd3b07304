package bridge

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// dispatch handles one line the child wrote to stdout: answers go to the
// call they answer, notifications to the sessions that should see them, and
// requests from the child are relayed to a client or answered by the
// bridge.
func (u *upstream) dispatch(proc *child, line []byte) {
	m, err := wire.ParseMessage(line)
	switch {
	case err != nil:
		u.log.Warn("Skipped a line on the MCP server's stdout that is not a JSON-RPC message",
			"pid", proc.pid, "line", preview(line), "error", err)
	case m.IsRequest():
		u.serverRequest(proc, m)
	case m.IsNotification():
		u.notification(proc, m, line)
	case m.HasID():
		u.response(m)
	default:
		u.log.Warn("Skipped a JSON-RPC error without an id from the MCP server", "pid", proc.pid, "line", preview(line))
	}
}

func (u *upstream) response(m message) {
	id, ok := bridgeID(m.ID)
	if !ok || !u.finish(id, reply{result: m.Result, err: m.Error}) {
		// Cancelled, timed out, or never the bridge's.
		u.log.Debug("Dropped an answer no request waits for", "id", string(m.ID))
	}
}

// serverRequest handles a request from the child to "the client": ping is
// answered by the bridge, elicitation and sampling are relayed to the
// client of the call that asked when that call can be told (relay.go), and
// anything else is refused with method-not-found.
func (u *upstream) serverRequest(proc *child, m message) {
	switch m.Method {
	case string(mcp.MethodPing):
		u.sendBestEffort(proc, encodeReply(m.ID, reply{result: json.RawMessage("{}")}))
	case string(mcp.MethodElicitationCreate), string(mcp.MethodSamplingCreateMessage):
		u.relayRequest(proc, m)
	case string(mcp.MethodListRoots):
		// Roots describe one client's workspace, and servers keep them per
		// session: on the child's one session, one client's roots would
		// serve every client.
		u.refuse(proc, m, codeMethodNotFound, "the bridge declared no roots capability: the MCP server's one session is shared by every client, and roots belong to one client")
	default:
		u.refuse(proc, m, codeMethodNotFound, fmt.Sprintf("the bridge relays no %s requests from the MCP server to clients", m.Method))
	}
}

func (u *upstream) notification(proc *child, m message, line []byte) {
	switch m.Method {
	case string(mcp.MethodNotificationProgress):
		u.progress(m)
	case string(mcp.MethodNotificationCancelled):
		// The child cancelling a request of its own.
		u.relayCancelled(proc, m.Params)
	case string(mcp.MethodNotificationMessage):
		var p struct {
			Level string `json:"level"`
		}
		_ = json.Unmarshal(m.Params, &p)
		u.sessions.broadcast(line, wire.LogLevelRank(p.Level))
	default:
		// list_changed, resources/updated, tasks/status and anything
		// newer: every session, as the child's one session stands for
		// them all.
		u.sessions.broadcast(line, -1)
	}
}

// progress delivers a progress notification to the one call whose token it
// carries, with the client's own token put back.
func (u *upstream) progress(m message) {
	id, ok := bridgeID(wire.Member(m.Params, "progressToken"))
	if !ok {
		return
	}
	u.mu.Lock()
	c := u.calls[id]
	u.mu.Unlock()
	if c == nil || c.token == nil {
		return
	}
	params, err := wire.WithProgressToken(m.Params, c.token)
	if err != nil {
		return
	}
	select {
	case c.progress <- encodeNotification(m.Method, params):
	default:
		u.log.Debug("Dropped a progress notification the client is not reading", "id", id)
	}
}

// oversized handles a line over the limit: it is logged, and if it answered
// a request, that request fails now rather than at its timeout.
func (u *upstream) oversized(proc *child, o *oversized) {
	u.log.Warn("Refused a line on the MCP server's stdout over the size limit",
		"pid", proc.pid, "bytes", o.size, "limit", u.opts.MaxMessage, "start", preview(o.head))
	if id, ok := answeredID(o); ok {
		u.finish(id, errorReply(codeTooLarge, "the MCP server's answer (%d bytes) is larger than the bridge's limit of %d bytes (--max-message)", o.size, u.opts.MaxMessage))
	}
}

// preview is the start of a line, short enough for a log.
func preview(b []byte) string {
	const n = 200
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
