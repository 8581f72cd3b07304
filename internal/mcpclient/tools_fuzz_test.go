package mcpclient

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeTool: a tools/list entry from any server decodes to a tool with
// a JSON input schema, or an error; never a panic, and hashing always works.
func FuzzDecodeTool(f *testing.F) {
	for _, seed := range []string{
		`{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}`,
		`{"name":"bare","inputSchema":null}`,
		`{"name":"x","title":"T","description":"d","outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
		`{"name":1}`, `[]`, `{"name":"n","inputSchema":"not an object"}`, `{`,
		`{"name":"i","icons":[{"src":"https://example.com/i.png"}],"_meta":{"a":1},"execution":{"taskSupport":"optional"}}`,
		`{"name":"j","icons":{"src":"x"},"_meta":"text","execution":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		tool, err := decodeTool(raw)
		if err != nil {
			return
		}
		if !json.Valid(tool.InputSchema) {
			t.Fatalf("input schema %q is not JSON", tool.InputSchema)
		}
		if len(tool.Hash()) != 64 {
			t.Fatalf("hash %q", tool.Hash())
		}
		canonical, hash := tool.Canonical()
		if hash != tool.Hash() || !json.Valid(canonical.InputSchema) {
			t.Fatalf("Canonical gives hash %s and input schema %q; Hash gives %s", hash, canonical.InputSchema, tool.Hash())
		}
	})
}
