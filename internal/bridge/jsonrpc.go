package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// message is one JSON-RPC 2.0 message with its parts kept as raw JSON: the
// bridge reads ids, methods and a few params, and passes everything else on
// exactly as it came.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

var errNotJSONRPC = errors.New("not a JSON-RPC message")

// parseMessage decodes one JSON-RPC message. A batch (a JSON array) is an
// error: the stdio transport never carries one, and the revisions that allow
// them over HTTP (2025-03-26 only) are answered that batches are unsupported.
func parseMessage(b []byte) (message, error) {
	var m message
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return m, errNotJSONRPC
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return m, errNotJSONRPC
	}
	return m, nil
}

func (m message) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

func (m message) isRequest() bool      { return m.Method != "" && m.hasID() }
func (m message) isNotification() bool { return m.Method != "" && !m.hasID() }

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
	b, _ := wire.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, "mcp-bridge: " + fmt.Sprintf(format, args...)})
	return reply{err: b}
}

// failed reports whether the reply is an error.
func (r reply) failed() bool { return r.err != nil }

// encodeReply addresses a reply to id. It splices bytes rather than
// re-encoding, so a result reaches the client byte for byte as the child
// wrote it (encoding/json would compact it and escape <, > and &).
func encodeReply(id json.RawMessage, r reply) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	if len(id) == 0 {
		b.WriteString("null")
	} else {
		b.Write(id)
	}
	if r.err != nil {
		b.WriteString(`,"error":`)
		b.Write(r.err)
	} else {
		b.WriteString(`,"result":`)
		if r.result == nil {
			b.WriteString("{}")
		} else {
			b.Write(r.result)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// encodeRequest writes a request under one of the bridge's own ids.
func encodeRequest(id int64, method string, params json.RawMessage) []byte {
	return encodeCall(strconv.FormatInt(id, 10), method, params)
}

// encodeNotification writes a notification (no id).
func encodeNotification(method string, params json.RawMessage) []byte {
	return encodeCall("", method, params)
}

func encodeCall(id, method string, params json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0"`)
	if id != "" {
		b.WriteString(`,"id":`)
		b.WriteString(id)
	}
	name, _ := wire.Marshal(method)
	b.WriteString(`,"method":`)
	b.Write(name)
	if len(params) > 0 {
		b.WriteString(`,"params":`)
		b.Write(params)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// sameID compares two JSON-RPC ids as values: 7 is 7.0, "7" is neither.
// Ids are strings or numbers; anything else matches nothing.
func sameID(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	switch x.(type) {
	case string, float64:
		return x == y
	}
	return false
}
