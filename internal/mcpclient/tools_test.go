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

// TestCanonical: a tool's schemas in canonical form (keys sorted, no white
// space, <, > and & escaped, numbers as written) and the tool's Hash, the
// same as Hash gives.
func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		name            string
		input, output   string
		wantIn, wantOut string
	}{
		{"keys sorted, spaces gone", `{"type":"object", "properties":{"b":{},"a":{"type":"string"}},"required":["a"]}`, ``,
			`{"properties":{"a":{"type":"string"},"b":{}},"required":["a"],"type":"object"}`, ``},
		{"escaped as the API server escapes", `{"description":"<b> & \u2028 é"}`, `{"type":"object"}`,
			`{"description":"\u003cb\u003e \u0026 \u2028 é"}`, `{"type":"object"}`},
		{"numbers as written", `{"minimum":1.0,"maximum":1e2,"default":-0}`, ``,
			`{"default":-0,"maximum":1e2,"minimum":1.0}`, ``},
		{"no schema", ``, ``, ``, ``},
		{"null", `null`, `null`, `null`, `null`},
		{"not JSON, kept as it came", `{"a":`, ``, `{"a":`, ``},
	} {
		tool := Tool{Name: "t", Description: "d", InputSchema: json.RawMessage(tc.input), OutputSchema: json.RawMessage(tc.output),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
		input, output, hash := tool.Canonical()
		if string(input) != tc.wantIn || string(output) != tc.wantOut {
			t.Errorf("%s: schemas %s and %s, want %s and %s", tc.name, input, output, tc.wantIn, tc.wantOut)
		}
		if hash != tool.Hash() {
			t.Errorf("%s: Canonical's hash %s, Hash %s", tc.name, hash, tool.Hash())
		}
	}
}

// TestHashIsStable: hashes are what pinning approves and what status
// holds, so a change to how they are computed must not change them. These
// were computed by the code before Canonical (b2c3fcd).
func TestHashIsStable(t *testing.T) {
	for _, tc := range []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "forecast", Title: "Forecast <beta>", Description: "Weather & more",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer","minimum":1.0}},"required":["days"]}`),
			OutputSchema: json.RawMessage(`{"type":"object", "properties":{"t":{"type":"number"}}}`),
			Annotations:  json.RawMessage(`{"readOnlyHint":true,"title":"F"}`)},
			"b23e4e59b00bf9a164f9c277a0e4190da623a6d184b2ee25b645055dc9bbe9b3"},
		{Tool{Name: "bare", InputSchema: json.RawMessage(`{"a":`)}, "198698177d2f3ae662ffe6459128bca1c722981281733e508aad9ef9c6e39056"},
		{Tool{Name: "empty"}, "b4c25a57fbeb915331177256a46c93a5c5b658a2c878ad2ff93b5e032d33d57e"},
	} {
		_, _, canonical := tc.tool.Canonical()
		if got := tc.tool.Hash(); got != tc.want || canonical != tc.want {
			t.Errorf("%s: Hash %s, Canonical's %s, want %s", tc.tool.Name, got, canonical, tc.want)
		}
	}
}
