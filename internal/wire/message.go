package wire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Message is one JSON-RPC 2.0 message with its parts kept as raw JSON: a
// relay reads ids, methods and a few params, and passes everything else on
// exactly as it came.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// ErrNotJSONRPC says bytes are not one JSON-RPC message.
var ErrNotJSONRPC = errors.New("not a JSON-RPC message")

// ParseMessage decodes one JSON-RPC message. A batch (a JSON array) is
// not one: no revision in use carries batches (2025-03-26 alone allowed
// them over HTTP).
func ParseMessage(b []byte) (Message, error) {
	var m Message
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return m, ErrNotJSONRPC
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return m, ErrNotJSONRPC
	}
	return m, nil
}

// HasID says the message carries an id (null is none).
func (m Message) HasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// IsRequest says the message is a request: a method and an id.
func (m Message) IsRequest() bool { return m.Method != "" && m.HasID() }

// IsNotification says the message is a notification: a method, no id.
func (m Message) IsNotification() bool { return m.Method != "" && !m.HasID() }

// SameID compares two JSON-RPC ids as values: 7 is 7.0, "7" is neither.
// Ids are strings or numbers; anything else matches nothing.
func SameID(a, b json.RawMessage) bool {
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

// AppendRequest appends a request with id and params as they are (raw
// JSON, not scanned again); an empty id makes it a notification and empty
// params leave them out.
func AppendRequest(b []byte, id json.RawMessage, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0"`...)
	if len(id) > 0 {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	b = append(b, `,"method":`...)
	b = AppendString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// AppendResult appends the answer to id (null when empty) with result as
// it is, byte for byte: encoding/json would compact it and escape <, >
// and &. An empty result is {}.
func AppendResult(b []byte, id, result json.RawMessage) []byte {
	if len(result) == 0 {
		result = json.RawMessage("{}")
	}
	return appendAnswer(b, id, `,"result":`, result)
}

// AppendError appends the error answer to id (null when empty), errObject
// being the error object as it is.
func AppendError(b []byte, id, errObject json.RawMessage) []byte {
	return appendAnswer(b, id, `,"error":`, errObject)
}

func appendAnswer(b []byte, id json.RawMessage, member string, value json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	b = append(b, member...)
	b = append(b, value...)
	return append(b, '}')
}

// ErrorObject is a JSON-RPC error object of code and message, the text
// as it is (no HTML escapes).
func ErrorObject(code int, message string) json.RawMessage {
	b, _ := Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}) // an int and a string always encode
	return b
}
