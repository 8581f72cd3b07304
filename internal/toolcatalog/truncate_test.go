package toolcatalog

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestTruncateCutsOutputAndContentAlike(t *testing.T) {
	raw := func(items ...string) []json.RawMessage {
		out := []json.RawMessage{}
		for _, i := range items {
			out = append(out, json.RawMessage(i))
		}
		return out
	}
	tests := []struct {
		name        string
		in          Envelope
		wantOutput  string
		wantContent []json.RawMessage
		wantSystem  string
		structured  bool
	}{
		{
			name:        "short output is left alone",
			in:          Envelope{Output: "hello", Content: raw(`{"type":"text","text":"hello"}`)},
			wantOutput:  "hello",
			wantContent: raw(`{"type":"text","text":"hello"}`),
		},
		{
			name:        "one long item is cut like output",
			in:          Envelope{Output: "0123456789abc", Content: raw(`{"type":"text","text":"0123456789abc","annotations":{"priority":1}}`)},
			wantOutput:  "0123456789",
			wantContent: raw(`{"annotations":{"priority":1},"text":"0123456789","type":"text"}`),
			wantSystem:  "Output truncated: 10 of 13 bytes shown.",
		},
		{
			name: "items past the budget go, images stay",
			in: Envelope{Output: "01234\n56789\nabc", Content: raw(`{"type":"text","text":"01234"}`, `{"type":"image","data":"aW1n","mimeType":"image/png"}`,
				`{"type":"text","text":"56789"}`, `{"type":"text","text":"abc"}`)},
			wantOutput:  "01234\n5678",
			wantContent: raw(`{"type":"text","text":"01234"}`, `{"type":"image","data":"aW1n","mimeType":"image/png"}`, `{"text":"5678","type":"text"}`),
			wantSystem:  "Output truncated: 10 of 15 bytes shown.",
		},
		{
			name:        "a character is never split",
			in:          Envelope{Output: "ééééééé", Content: raw(`{"type":"text","text":"ééééééé"}`)},
			wantOutput:  "ééééé",
			wantContent: raw(`{"text":"ééééé","type":"text"}`),
			wantSystem:  "Output truncated: 10 of 14 bytes shown.",
		},
		{
			name:        "structured content past the limit is left out, not cut",
			in:          Envelope{Output: "ok", Content: raw(`{"type":"text","text":"ok"}`), StructuredContent: json.RawMessage(`{"rows":[1,2,3,4,5,6]}`)},
			wantOutput:  "ok",
			wantContent: raw(`{"type":"text","text":"ok"}`),
			wantSystem:  "Structured content of 22 bytes left out (limit 10).",
		},
		{
			name:        "short structured content stays",
			in:          Envelope{Output: "ok", Content: raw(`{"type":"text","text":"ok"}`), StructuredContent: json.RawMessage(`{"n":1}`)},
			wantOutput:  "ok",
			wantContent: raw(`{"type":"text","text":"ok"}`),
			structured:  true,
		},
	}
	c := &Catalog{opts: Options{MaxResultText: 10}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.in
			c.truncate(&env)
			if env.Output != tt.wantOutput || env.System != tt.wantSystem {
				t.Errorf("output %q, system %q; want %q, %q", env.Output, env.System, tt.wantOutput, tt.wantSystem)
			}
			if !reflect.DeepEqual(env.Content, tt.wantContent) {
				t.Errorf("content:\n got %s\nwant %s", env.Content, tt.wantContent)
			}
			if (env.StructuredContent != nil) != tt.structured {
				t.Errorf("structured content kept: %v, want %v", env.StructuredContent != nil, tt.structured)
			}
		})
	}
}
