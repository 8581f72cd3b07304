package mcpclient

import (
	"encoding/json"
	"reflect"
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
		canonical, hash := tool.Canonical()
		if string(canonical.InputSchema) != tc.wantIn || string(canonical.OutputSchema) != tc.wantOut {
			t.Errorf("%s: schemas %s and %s, want %s and %s", tc.name, canonical.InputSchema, canonical.OutputSchema, tc.wantIn, tc.wantOut)
		}
		if hash != tool.Hash() {
			t.Errorf("%s: Canonical's hash %s, Hash %s", tc.name, hash, tool.Hash())
		}
	}

	// Every JSON field, not the schemas alone.
	tool := Tool{Name: "t", InputSchema: json.RawMessage(`{}`), Annotations: json.RawMessage(`{ "title":"T", "readOnlyHint":true }`),
		Icons:     json.RawMessage(`[ {"src":"https://example.com/a.png?x=1&y=2", "mimeType":"image/png"} ]`),
		Execution: json.RawMessage(`{ "taskSupport" : "optional" }`), Meta: json.RawMessage(`{"b":1.50, "a":{"d":"<x>","c":null}}`)}
	canonical, hash := tool.Canonical()
	for _, field := range []struct{ name, got, want string }{
		{"annotations", string(canonical.Annotations), `{"readOnlyHint":true,"title":"T"}`},
		{"icons", string(canonical.Icons), `[{"mimeType":"image/png","src":"https://example.com/a.png?x=1\u0026y=2"}]`},
		{"execution", string(canonical.Execution), `{"taskSupport":"optional"}`},
		{"_meta", string(canonical.Meta), `{"a":{"c":null,"d":"\u003cx\u003e"},"b":1.50}`},
	} {
		if field.got != field.want {
			t.Errorf("canonical %s %s, want %s", field.name, field.got, field.want)
		}
	}
	if hash != tool.Hash() || hash != canonical.Hash() {
		t.Errorf("Canonical's hash %s, Hash %s, the canonical tool's Hash %s", hash, tool.Hash(), canonical.Hash())
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
		// Computed when icons, execution and _meta were first kept.
		{Tool{Name: "pictured", InputSchema: json.RawMessage(`{"type":"object"}`),
			Icons:     json.RawMessage(`[{"src":"https://example.com/p.png","sizes":["48x48"]}]`),
			Execution: json.RawMessage(`{"taskSupport":"optional"}`), Meta: json.RawMessage(`{"ui":{"resourceUri":"ui://p/view"}}`)},
			"8b617e090c1500ed9551f100e3e989be70fa4eab40eb8199639a76fab2812247"},
	} {
		_, canonical := tc.tool.Canonical()
		if got := tc.tool.Hash(); got != tc.want || canonical != tc.want {
			t.Errorf("%s: Hash %s, Canonical's %s, want %s", tc.tool.Name, got, canonical, tc.want)
		}
	}
}

// TestDecodeToolKeepsIconsMetaAndExecution: the fields of a tool definition
// beyond its schemas and annotations (icons and _meta since MCP 2025-11-25
// and 2026-07-28, execution in 2025-11-25) survive decoding as the server
// sent them, keys the operator does not know included, so that they can
// reach status and menus; null is as absent.
func TestDecodeToolKeepsIconsMetaAndExecution(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"all three",
			`{"name":"a","inputSchema":{"type":"object"},"icons":[{"src":"https://example.com/a.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],` +
				`"_meta":{"ui":{"resourceUri":"ui://a/view"},"n":1e2},"execution":{"taskSupport":"optional"}}`,
			`{"name":"a","inputSchema":{"type":"object"},"icons":[{"src":"https://example.com/a.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],` +
				`"_meta":{"ui":{"resourceUri":"ui://a/view"},"n":1e2},"execution":{"taskSupport":"optional"}}`},
		{"keys a newer revision may add",
			`{"name":"a","inputSchema":{"type":"object"},"icons":[{"src":"data:image/png;base64,AA==","future":1}],"execution":{"taskSupport":"required","future":true}}`,
			`{"name":"a","inputSchema":{"type":"object"},"icons":[{"src":"data:image/png;base64,AA==","future":1}],"execution":{"taskSupport":"required","future":true}}`},
		{"only _meta", `{"name":"a","inputSchema":{"type":"object"},"_meta":{"k":1}}`, `{"name":"a","inputSchema":{"type":"object"},"_meta":{"k":1}}`},
		{"empty is absent", `{"name":"a","inputSchema":{"type":"object"},"icons":[ ],"_meta":{},"execution":{ }}`, `{"name":"a","inputSchema":{"type":"object"}}`},
		{"null is absent", `{"name":"a","inputSchema":{"type":"object"},"icons":null,"_meta":null,"execution":null}`, `{"name":"a","inputSchema":{"type":"object"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := decodeTool(json.RawMessage(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			var gotValue, wantValue any
			if err := json.Unmarshal(got, &gotValue); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &wantValue); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotValue, wantValue) {
				t.Errorf("decoded to %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHashCoversIconsMetaAndExecution: icons, _meta and execution are part
// of the definition a ToolCollection's pinning approves, so a change to
// any of them is a change of hash; their key order and white space are
// not. A tool without them keeps the hash it always had (TestHashIsStable).
func TestHashCoversIconsMetaAndExecution(t *testing.T) {
	const bare = `{"name":"a","inputSchema":{"type":"object"}`
	hashOf := func(raw string) string {
		t.Helper()
		tool, err := decodeTool(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		return tool.Hash()
	}
	base := hashOf(bare + `}`)
	if want := (Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}).Hash(); base != want {
		t.Fatalf("a tool without icons, _meta or execution hashes to %s, want %s", base, want)
	}
	seen := map[string]string{base: "none of them"}
	for _, tc := range []struct{ name, fields string }{
		{"an icon", `,"icons":[{"src":"https://example.com/a.png"}]`},
		{"another icon", `,"icons":[{"src":"https://example.com/b.png"}]`},
		{"_meta", `,"_meta":{"ui":{"resourceUri":"ui://a/view"}}`},
		{"other _meta", `,"_meta":{"ui":{"resourceUri":"ui://b/view"}}`},
		{"execution", `,"execution":{"taskSupport":"optional"}`},
		{"other execution", `,"execution":{"taskSupport":"required"}`},
	} {
		h := hashOf(bare + tc.fields + `}`)
		if other, ok := seen[h]; ok {
			t.Errorf("a tool with %s hashes as one with %s", tc.name, other)
		}
		seen[h] = tc.name
	}
	if a, b := hashOf(bare+`,"_meta":{"x":1,"y":[1,2]}}`), hashOf(bare+`,"_meta":{ "y":[1, 2], "x":1 }}`); a != b {
		t.Errorf("the key order and white space of _meta changed the hash: %s and %s", a, b)
	}
}
