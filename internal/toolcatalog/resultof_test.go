package toolcatalog

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestResultOf: a tools/call result carries resultType "complete" for a
// 2026-07-28 caller, which requires it, and none for older ones.
func TestResultOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result *mcp.CallToolResult
		modern bool
		want   string
	}{
		{"2026-07-28", mcp.NewToolResultText("hi"), true, `{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`},
		{"2025-11-25", mcp.NewToolResultText("hi"), false, `{"content":[{"type":"text","text":"hi"}]}`},
		{"2025-11-25, a result that had a type", &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeComplete}, Content: []mcp.Content{mcp.NewTextContent("hi")}}, false, `{"content":[{"type":"text","text":"hi"}]}`},
		{"2026-07-28, an error", mcp.NewToolResultError("the disk is full"), true, `{"content":[{"type":"text","text":"the disk is full"}],"isError":true,"resultType":"complete"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want any
			if err := json.Unmarshal(resultOf(tc.result, tc.modern), &got); err != nil {
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
