package mcpclient

import (
	"encoding/json"
	"testing"
)

// TestMissingSchemaIsAToolsOwn: a tool the server sent without an input
// schema gets the empty object schema in bytes of its own. The tool goes
// into status, and writing status decodes the API server's answer into
// those very bytes ({"properties":{},"type":"object"}: the same length,
// keys sorted): shared, that rewrote the schema of every schemaless tool
// of every server while other reconciles read it.
func TestMissingSchemaIsAToolsOwn(t *testing.T) {
	want := string(emptyObjectSchema)
	first, err := decodeTool(json.RawMessage(`{"name":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	second, err := decodeTool(json.RawMessage(`{"name":"b","inputSchema":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(first.InputSchema) != want || string(second.InputSchema) != want {
		t.Fatalf("schemas %s and %s, want %s", first.InputSchema, second.InputSchema, want)
	}
	// What a status write's answer does to the tool's bytes.
	if err := json.Unmarshal([]byte(`{"properties":{},"type":"object"}`), &first.InputSchema); err != nil {
		t.Fatal(err)
	}
	if string(second.InputSchema) != want || string(emptyObjectSchema) != want {
		t.Errorf("another tool's schema is %s and the shared one %s after one tool's changed", second.InputSchema, emptyObjectSchema)
	}
}
