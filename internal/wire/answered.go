package wire

import (
	"bytes"
	"encoding/json"
	"regexp"
)

// trailingID matches a top-level id at the very end of a message, where the
// TypeScript SDK writes it ({"result":…,"jsonrpc":"2.0","id":7}). A nested
// object ending in an id is followed by at least two closing braces and
// does not match.
var trailingID = regexp.MustCompile(`"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*}\s*$`)

// AnsweredID finds which request a JSON-RPC message too large to keep
// answered, from its first and last bytes, so that the request fails at
// once instead of waiting for its timeout: a leading id (the Go and Python
// SDKs write jsonrpc, id, then result), else a trailing one (the
// TypeScript SDK). head starts at the message's opening brace; tail is its
// end, white space after it allowed. nil when neither end names one (a
// notification, or a head cut before its id).
func AnsweredID(head, tail []byte) json.RawMessage {
	if id := leadingID(head); id != nil {
		return id
	}
	if m := trailingID.FindSubmatch(tail); m != nil {
		return json.RawMessage(append([]byte(nil), m[1]...))
	}
	return nil
}

// leadingID reads the members at the start of a JSON object up to the
// first one it cannot hold whole, looking for "id".
func leadingID(head []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if key == "id" {
			// A value that ends where the head was cut may be cut
			// itself (id 12 of 123): only one something follows is whole.
			if len(bytes.TrimSpace(head[dec.InputOffset():])) == 0 {
				return nil
			}
			return value
		}
	}
	return nil
}
