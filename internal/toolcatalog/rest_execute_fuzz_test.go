package toolcatalog

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

// FuzzDecodeCall: any execute body, in any shape, is either a call with a
// tool name and a JSON object of arguments, or a 400 with a message; never
// a panic.
func FuzzDecodeCall(f *testing.F) {
	for _, seed := range []string{
		`{"name":"mcp_calc_add","arguments":{"a":1,"b":2}}`,
		`{"id":"call_1","type":"function","function":{"name":"mcp_calc_add","arguments":"{\"a\": 1}"}}`,
		`{"name":"x","arguments":[1]}`, `{"function":{"name":"x","arguments":"[1]"}}`, `{"name":"x","arguments":null}`,
		`{"function":{"name":"x","arguments":"\"nested\""}}`, `{"name":`, `null`, `"text"`, `{}`,
		`{"type":"function_call","call_id":"c","name":"x","arguments":"{}"}`, `{"type":"tool_use","id":"t","name":"x","input":{}}`,
		`{"functionCall":{"name":"x","args":{"a":1}}}`, `{"type":"tool_use","name":"x","arguments":{}}`, `{"functionCall":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodeCall(body)
		if err != nil {
			var reqErr *requestError
			if !errors.As(err, &reqErr) || reqErr.code != http.StatusBadRequest || reqErr.message == "" {
				t.Fatalf("a bad body must be a 400 with a message, got %v", err)
			}
			return
		}
		if c.name == "" {
			t.Fatal("a call without a tool name was accepted")
		}
		var object map[string]json.RawMessage
		if err := json.Unmarshal(c.arguments, &object); err != nil || object == nil {
			t.Fatalf("arguments %q are not a JSON object", c.arguments)
		}
	})
}
