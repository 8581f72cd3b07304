package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// message is one JSON-RPC 2.0 message, its parts kept as raw JSON.
type message = wire.Message

// bridgeID reads an id the bridge gave a request to the child; ok is false
// for any id the bridge did not issue.
func bridgeID(raw json.RawMessage) (int64, bool) {
	id, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return id, err == nil && id > 0
}

// reply answers one request: a result or an error object, each exactly as the
// child sent it, or an error of the bridge's own.
type reply struct {
	result json.RawMessage
	err    json.RawMessage
	// resend is no answer but a request handed back: the child exited
	// before it was written, and it goes to the next one (upstream.resend).
	resend bool
}

// errorReply is an answer from the bridge itself.
func errorReply(code int, format string, args ...any) reply {
	return reply{err: wire.ErrorObject(code, "mcp-bridge: "+fmt.Sprintf(format, args...))}
}

// failed reports whether the reply is an error.
func (r reply) failed() bool { return r.err != nil }

// encodeReply addresses a reply to id, its result or error exactly as
// the child sent it.
func encodeReply(id json.RawMessage, r reply) []byte {
	if r.err != nil {
		return wire.AppendError(nil, id, r.err)
	}
	return wire.AppendResult(nil, id, r.result)
}

// encodeRequest writes a request under one of the bridge's own ids.
func encodeRequest(id int64, method string, params json.RawMessage) []byte {
	return wire.AppendRequest(nil, json.RawMessage(strconv.FormatInt(id, 10)), method, params)
}

// encodeNotification writes a notification (no id).
func encodeNotification(method string, params json.RawMessage) []byte {
	return wire.AppendRequest(nil, nil, method, params)
}
