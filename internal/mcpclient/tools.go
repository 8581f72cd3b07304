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
	canonical, err := json.Marshal(struct {
		Name         string `json:"name"`
		Title        string `json:"title,omitempty"`
		Description  string `json:"description,omitempty"`
		InputSchema  any    `json:"inputSchema"`
		OutputSchema any    `json:"outputSchema,omitempty"`
		Annotations  any    `json:"annotations,omitempty"`
	}{t.Name, t.Title, t.Description, canonicalJSON(t.InputSchema), canonicalJSON(t.OutputSchema), canonicalJSON(t.Annotations)})
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
	if len(raw) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return v
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
		// A copy: the tool goes into an MCPServer's status, and a status
		// write decodes the API server's answer into the same bytes
		// (the keys come back sorted, in as many bytes), which would
		// rewrite the shared value under every other reconcile reading it.
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
