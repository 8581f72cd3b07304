package mcpclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// emptyObjectSchema stands in for a missing or null inputSchema, so that
// every tool can be handed to a model as it is.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Tool is one tool definition, its schemas kept as the JSON the server sent
// (mcp-go's own Tool type drops schema keys it does not know).
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Hash is the SHA-256 of the tool's canonical definition: the fields above
// with object keys sorted, so that formatting or key order on the wire does
// not count as a change.
func (t Tool) Hash() string {
	return t.hashOf(canonicalJSON(t.InputSchema), canonicalJSON(t.OutputSchema))
}

// Canonical is the tool's schemas in canonical form and its Hash, each
// schema decoded once for both. The canonical form is the JSON decoded and
// encoded again by encoding/json: object keys sorted, no white space, <, >
// and & escaped, numbers as written. It is the form the API server stores
// JSON in (but for numbers: it writes 1.0 as 1). A schema that is absent,
// null or does not decode is returned as it is.
func (t Tool) Canonical() (input, output json.RawMessage, hash string) {
	inputValue, input := canonicalForms(t.InputSchema)
	outputValue, output := canonicalForms(t.OutputSchema)
	return input, output, t.hashOf(inputValue, outputValue)
}

// canonicalForms is raw decoded (canonicalJSON's value) and encoded again:
// the value for a hash, and the bytes. The value of encoded bytes is the
// bytes themselves, which encode as the decoded value does (json.Marshal
// writes a RawMessage compacted and escaped, which they already are).
func canonicalForms(raw json.RawMessage) (any, json.RawMessage) {
	value, ok := decodeCanonical(raw)
	switch {
	case !ok:
		return string(raw), raw
	case value == nil:
		return nil, raw
	}
	encoded, err := json.Marshal(value)
	if err != nil {
		return value, raw
	}
	return json.RawMessage(encoded), encoded
}

func (t Tool) hashOf(input, output any) string {
	canonical, err := json.Marshal(struct {
		Name         string `json:"name"`
		Title        string `json:"title,omitempty"`
		Description  string `json:"description,omitempty"`
		InputSchema  any    `json:"inputSchema"`
		OutputSchema any    `json:"outputSchema,omitempty"`
		Annotations  any    `json:"annotations,omitempty"`
	}{t.Name, t.Title, t.Description, input, output, canonicalJSON(t.Annotations)})
	if err != nil {
		// Every field is decoded JSON, which always encodes again.
		panic(err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// canonicalJSON decodes raw JSON into generic values, which encoding/json
// writes back with sorted keys and without insignificant white space.
func canonicalJSON(raw json.RawMessage) any {
	if value, ok := decodeCanonical(raw); ok {
		return value
	}
	return string(raw)
}

// decodeCanonical decodes raw JSON into generic values, numbers as
// written; nil for no JSON at all, and false for JSON that does not decode.
func decodeCanonical(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// isNullOrEmpty reports a schema the server left out or sent as null.
func isNullOrEmpty(raw json.RawMessage) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null"))
}

// decodeTool reads one entry of a tools/list result.
func decodeTool(raw json.RawMessage) (Tool, error) {
	var t Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return Tool{}, err
	}
	if isNullOrEmpty(t.InputSchema) {
		// A copy: a tool's schema bytes are its own, since whoever keeps
		// them may have them decoded into (a status write decodes the
		// API server's answer into status's bytes, and status once held
		// these).
		t.InputSchema = bytes.Clone(emptyObjectSchema)
	}
	if isNullOrEmpty(t.OutputSchema) {
		t.OutputSchema = nil
	}
	if isNullOrEmpty(t.Annotations) {
		t.Annotations = nil
	}
	return t, nil
}
