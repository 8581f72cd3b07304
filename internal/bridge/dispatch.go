package bridge

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// dispatch handles one line the child wrote to stdout: answers go to the
// call they answer, notifications to the sessions that should see them, and
// requests from the child are answered by the bridge.
func (u *upstream) dispatch(proc *child, line []byte) {
	m, err := wire.ParseMessage(line)
	switch {
	case err != nil:
		u.log.Warn("Skipped a line on the MCP server's stdout that is not a JSON-RPC message",
			"pid", proc.pid, "line", preview(line), "error", err)
	case m.IsRequest():
		u.answerServerRequest(proc, m)
	case m.IsNotification():
		u.notification(m, line)
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

// refusedServerRequest is what a request from the child to "the client" is
// answered with. The child has one session, the bridge's, shared by every
// client, so such a request has no one client it is meant for; and the bridge
// declared none of the capabilities (roots, sampling, elicitation) these
// requests need, so a well-behaved server does not send them.
const refusedServerRequest = "mcp-bridge serves this MCP server to many clients over one session, so requests from the server to a client (%s) have no single client to go to and are not supported"

// answerServerRequest answers the child's requests itself: ping is answered,
// everything else refused with method-not-found.
func (u *upstream) answerServerRequest(proc *child, m message) {
	r := reply{result: json.RawMessage("{}")}
	if m.Method != string(mcp.MethodPing) {
		u.log.Info("Refused a request from the MCP server", "method", m.Method)
		r = reply{err: errorReply(mcp.METHOD_NOT_FOUND, refusedServerRequest, m.Method).err}
	}
	u.sendBestEffort(proc, encodeReply(m.ID, r))
}

func (u *upstream) notification(m message, line []byte) {
	switch m.Method {
	case string(mcp.MethodNotificationProgress):
		u.progress(m)
	case string(mcp.MethodNotificationCancelled):
		// The child cancelling a request of its own: the bridge answered
		// those already.
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
