package toolcatalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestResultOf: a tools/call result carries resultType "complete" for a
// 2026-07-28 caller, which requires it, and none for older ones.
func TestResultOf(t *testing.T) {
	for _, tc := range []struct {
		name      string
		result    *mcp.CallToolResult
		stateless bool
		want      string
	}{
		{"2026-07-28", mcp.NewToolResultText("hi"), true, `{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`},
		{"2025-11-25", mcp.NewToolResultText("hi"), false, `{"content":[{"type":"text","text":"hi"}]}`},
		{"2025-11-25, a result that had a type", &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeComplete}, Content: []mcp.Content{mcp.NewTextContent("hi")}}, false, `{"content":[{"type":"text","text":"hi"}]}`},
		{"2026-07-28, an error", mcp.NewToolResultError("the disk is full"), true, `{"content":[{"type":"text","text":"the disk is full"}],"isError":true,"resultType":"complete"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want any
			if err := json.Unmarshal(resultOf(tc.result, tc.stateless), &got); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tc.want), &want)
			gotRaw, _ := json.Marshal(got)
			wantRaw, _ := json.Marshal(want)
			if string(gotRaw) != string(wantRaw) {
				t.Errorf("resultOf = %s, want %s", gotRaw, wantRaw)
			}
		})
	}
}

// TestCallAnswerOf: the /mcp answer built from an envelope in one encoding
// says what the typed round trip through mcp-go said, for both eras, and
// relays content mcp-go does not know as the server sent it.
func TestCallAnswerOf(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name string
		env  Envelope
		want string // "" to compare with resultOf(callResultOf(env))
	}{
		{"text", Envelope{Content: []json.RawMessage{raw(`{"type":"text","text":"3"}`)}}, ""},
		{"an image and structured content", Envelope{Content: []json.RawMessage{raw(`{"type":"image","data":"AAAA","mimeType":"image/png"}`)},
			StructuredContent: raw(`{"sum":3}`)}, ""},
		{"a tool error with content", Envelope{IsError: true, Error: "x", Content: []json.RawMessage{raw(`{"type":"text","text":"the disk is full"}`)}}, ""},
		{"an error without content", Envelope{IsError: true, Error: "the server said no"}, ""},
		{"the catalog's note", Envelope{Content: []json.RawMessage{raw(`{"type":"text","text":"long"}`)}, System: "the result was cut to 10 characters"}, ""},
		{"no content", Envelope{}, ""},
		{"content mcp-go does not know", Envelope{Content: []json.RawMessage{raw(`{"type":"hologram","x":1,"_meta":{"k":"v"}}`)}},
			`{"content":[{"type":"hologram","x":1,"_meta":{"k":"v"}}]}`},
		{"an empty item and blank structured content", Envelope{Content: []json.RawMessage{nil}, StructuredContent: raw(" \n")},
			`{"content":[null]}`},
	} {
		for _, stateless := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, stateless %v", tc.name, stateless), func(t *testing.T) {
				want := tc.want
				if want == "" {
					want = string(resultOf(callResultOf(tc.env), stateless))
				} else if stateless {
					want = want[:len(want)-1] + `,"resultType":"complete"}`
				}
				var got, wanted any
				if err := json.Unmarshal(callAnswerOf(tc.env, stateless), &got); err != nil {
					t.Fatal(err)
				}
				_ = json.Unmarshal([]byte(want), &wanted)
				if !reflect.DeepEqual(got, wanted) {
					gotRaw, _ := json.Marshal(got)
					t.Errorf("callAnswerOf = %s\nwant          %s", gotRaw, want)
				}
			})
		}
	}
}

// callResultOf is the envelope as an MCP result through mcp-go's types,
// content items as the server returned them: the oracle resultOf is held
// to.
func callResultOf(env Envelope) *mcp.CallToolResult {
	raw, _ := json.Marshal(struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
		IsError           bool              `json:"isError,omitempty"`
	}{env.Content, env.StructuredContent, env.IsError})
	var result mcp.CallToolResult
	if err := json.Unmarshal(raw, &result); err != nil {
		return mcp.NewToolResultError("the server's result could not be read")
	}
	if env.IsError && len(result.Content) == 0 {
		result.Content = []mcp.Content{mcp.NewTextContent(env.Error)}
	}
	if env.System != "" {
		result.Content = append(result.Content, mcp.NewTextContent(env.System))
	}
	return &result
}

// TestResultAnswer: the JSON-RPC answer around a result is valid JSON with
// the id and the result as they were, in a buffer of its exact size (one
// byte short, the closing brace copied the whole answer again).
func TestResultAnswer(t *testing.T) {
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 100000) + `"}]}`)
	for _, tc := range []struct {
		name       string
		id, result json.RawMessage
		wantID     string
	}{
		{"a number id", json.RawMessage(`7`), json.RawMessage(`{}`), `7`},
		{"a string id", json.RawMessage(`"a"`), big, `"a"`},
		{"no id", nil, json.RawMessage(`{}`), `null`},
		{"no result", json.RawMessage(`1`), nil, `1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := resultAnswer(tc.id, tc.result)
			if len(answer) != cap(answer) {
				t.Errorf("len %d, cap %d: the buffer was not made to size", len(answer), cap(answer))
			}
			var got struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(answer, &got); err != nil {
				t.Fatalf("%v: %.200s", err, answer)
			}
			wantResult := string(tc.result)
			if wantResult == "" {
				wantResult = "{}"
			}
			if got.JSONRPC != "2.0" || string(got.ID) != tc.wantID || string(got.Result) != wantResult {
				t.Errorf("answer = %.200s", answer)
			}
		})
	}
}
