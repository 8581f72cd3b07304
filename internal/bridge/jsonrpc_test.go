package bridge

import (
	"encoding/json"
	"testing"
)

func TestEncodeReplyKeepsTheResultsBytes(t *testing.T) {
	// Whitespace, member order and characters encoding/json would escape.
	result := json.RawMessage(`{"tools": [ {"name":"a<b>&c","inputSchema":{"z":1,"a":{"$ref":"#/x"}}} ]}`)
	tests := []struct {
		name string
		id   json.RawMessage
		rep  reply
		want string
	}{
		{"a result under a number id", json.RawMessage(`7`), reply{result: result}, `{"jsonrpc":"2.0","id":7,"result":` + string(result) + `}`},
		{"a result under a string id", json.RawMessage(`"x-1"`), reply{result: result}, `{"jsonrpc":"2.0","id":"x-1","result":` + string(result) + `}`},
		{"an error", json.RawMessage(`1`), reply{err: json.RawMessage(`{"code":-1,"message":"m"}`)}, `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`},
		{"an error without id", nil, errorReply(codeParseError, "bad <json>"), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"mcp-bridge: bad <json>"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(encodeReply(tt.id, tt.rep)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestBridgeID(t *testing.T) {
	tests := []struct {
		raw  string
		want int64
		ok   bool
	}{
		{`12`, 12, true},
		{` 12 `, 12, true},
		{`"12"`, 0, false},
		{`0`, 0, false},
		{`-3`, 0, false},
		{`1.5`, 0, false},
	}
	for _, tt := range tests {
		if got, ok := bridgeID(json.RawMessage(tt.raw)); ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("bridgeID(%s) = %d, %v; want %d, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}
