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

// Tool is one tool definition, every field but its name and texts kept as
// the JSON the server sent: mcp-go's own Tool type drops schema keys it
// does not know, and both SDKs type icons and execution, which would drop
// keys a newer revision adds to them.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Icons, Execution and Meta came with MCP 2025-11-25: images a client
	// may show for the tool, whether it takes task-augmented calls
	// (2025-11-25 only; 2026-07-28 moved tasks to an extension), and
	// metadata for clients (an MCP App's ui.resourceUri, say).
	Icons     json.RawMessage `json:"icons,omitempty"`
	Execution json.RawMessage `json:"execution,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
}

// Hash is the SHA-256 of the tool's canonical definition: the fields above
// with object keys sorted, so that formatting or key order on the wire does
// not count as a change.
//
// Icons, execution and _meta count. The hash is what a ToolCollection's
// pinning approves, what tells a changed tool in status and Events, and
// (through status.toolsHash and each menu's revision) what makes the
// catalog render its menus and MCP listings again: left out, a changed
// _meta would reach no client until something else changed, and a server
// could swap, after review, the icon a person picks the tool by, the UI
// an MCP App renders for it (_meta.ui.resourceUri), or make it require
// tasks, all without pinning noticing. A tool without them hashes as it
// did before they were kept (each is left out when absent), so hashes
// approved before stay valid.
func (t Tool) Hash() string {
	return t.hashOf(t.decoded())
}

// Canonical is the tool with its JSON fields in canonical form, and its
// Hash, each field decoded once for both. The canonical form is the JSON
// decoded and encoded again by encoding/json: object keys sorted, no white
// space, <, > and & escaped, numbers as written. It is the form the API
// server stores JSON in (but for numbers: it writes 1.0 as 1). A field
// that is absent, null or does not decode is returned as it is.
func (t Tool) Canonical() (Tool, string) {
	var v definition
	v.input, t.InputSchema = canonicalForms(t.InputSchema)
	v.output, t.OutputSchema = canonicalForms(t.OutputSchema)
	v.annotations, t.Annotations = canonicalForms(t.Annotations)
	v.icons, t.Icons = canonicalForms(t.Icons)
	v.execution, t.Execution = canonicalForms(t.Execution)
	v.meta, t.Meta = canonicalForms(t.Meta)
	return t, t.hashOf(v)
}

// definition is a tool's JSON fields decoded, as its hash takes them.
type definition struct {
	input, output, annotations, icons, execution, meta any
}

func (t Tool) decoded() definition {
	return definition{
		input: canonicalJSON(t.InputSchema), output: canonicalJSON(t.OutputSchema), annotations: canonicalJSON(t.Annotations),
		icons: canonicalJSON(t.Icons), execution: canonicalJSON(t.Execution), meta: canonicalJSON(t.Meta),
	}
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

func (t Tool) hashOf(v definition) string {
	// Fields only ever go after the ones before them, each omitted when
	// absent, so that a definition without them keeps its hash.
	canonical, err := json.Marshal(struct {
		Name         string `json:"name"`
		Title        string `json:"title,omitempty"`
		Description  string `json:"description,omitempty"`
		InputSchema  any    `json:"inputSchema"`
		OutputSchema any    `json:"outputSchema,omitempty"`
		Annotations  any    `json:"annotations,omitempty"`
		Icons        any    `json:"icons,omitempty"`
		Execution    any    `json:"execution,omitempty"`
		Meta         any    `json:"_meta,omitempty"`
	}{t.Name, t.Title, t.Description, v.input, v.output, v.annotations, v.icons, v.execution, v.meta})
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

// isNullOrEmpty reports a field the server left out or sent as null.
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
	// An empty list or object says no more than none, and counts as none
	// in the hash, so that a server that starts sending "icons": [] does
	// not make its tools look changed.
	for _, field := range []*json.RawMessage{&t.Icons, &t.Execution, &t.Meta} {
		if isNullOrEmpty(*field) || isEmptyContainer(*field) {
			*field = nil
		}
	}
	return t, nil
}

// isEmptyContainer reports [] or {}, white space aside.
func isEmptyContainer(raw json.RawMessage) bool {
	trimmed := bytes.Join(bytes.Fields(raw), nil)
	return bytes.Equal(trimmed, []byte("[]")) || bytes.Equal(trimmed, []byte("{}"))
}
