package mcpclient

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestParamsWithMeta: the request params a session sends are the call's
// params with its _meta, whatever shape the params came in.
func TestParamsWithMeta(t *testing.T) {
	meta := map[string]any{"traceparent": "00-1-2-01"}
	for _, tc := range []struct {
		name   string
		params any
		want   string // "" for an error
	}{
		{"no params", nil, `{"_meta":{"traceparent":"00-1-2-01"}}`},
		{"a call", struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{"add", json.RawMessage(`{"a":1,"_meta":"an argument named _meta"}`)},
			`{"name":"add","arguments":{"a":1,"_meta":"an argument named _meta"},"_meta":{"traceparent":"00-1-2-01"}}`},
		{"an empty object", json.RawMessage(`{ }`), `{"_meta":{"traceparent":"00-1-2-01"}}`},
		{"raw, with space around", json.RawMessage(" {\"cursor\":\"c\"}\n"), `{"cursor":"c","_meta":{"traceparent":"00-1-2-01"}}`},
		{"a _meta of its own is replaced", json.RawMessage(`{"cursor":"c","_meta":{"old":true}}`), `{"cursor":"c","_meta":{"traceparent":"00-1-2-01"}}`},
		{"not an object", json.RawMessage(`[1]`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := paramsWithMeta(tc.params, meta)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("paramsWithMeta = %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatalf("not JSON: %s", got)
			}
			_ = json.Unmarshal([]byte(tc.want), &wantV)
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("paramsWithMeta = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestStandardHeaders: a tool call's headers, built from the name in hand,
// are what mcp-go derives from the encoded params.
func TestStandardHeaders(t *testing.T) {
	for _, name := range []string{"add", "名前", "with space", "a\nb", ""} {
		params, err := paramsWithMeta(struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{name, json.RawMessage(`{"x":1}`)}, map[string]any{"k": "v"})
		if err != nil {
			t.Fatal(err)
		}
		got := standardHeaders(call{method: "tools/call", tool: name}, params)
		want := mcp.StandardHeaders(RevisionModern, mcp.MethodToolsCall, params)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: headers %v, mcp-go says %v", name, got, want)
		}
	}
}
