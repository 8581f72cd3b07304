package bridge

import (
	"encoding/json"
	"testing"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		name                             string
		in                               string
		wantErr                          bool
		request, notification, hasAnswer bool
	}{
		{name: "a request", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, request: true},
		{name: "a request with a string id", in: `{"jsonrpc":"2.0","id":"a","method":"ping"}`, request: true},
		{name: "a notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, notification: true},
		{name: "a result", in: `{"jsonrpc":"2.0","id":3,"result":{}}`, hasAnswer: true},
		{name: "a null result is a result", in: `{"jsonrpc":"2.0","id":3,"result":null}`, hasAnswer: true},
		{name: "an error", in: `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`, hasAnswer: true},
		{name: "leading whitespace", in: "  \t{\"id\":1,\"method\":\"x\"}", request: true},
		{name: "a batch is refused", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, wantErr: true},
		{name: "a log line", in: `Starting server...`, wantErr: true},
		{name: "JSON that is no message", in: `{"jsonrpc":"2.0"}`, wantErr: true},
		{name: "a number", in: `42`, wantErr: true},
		{name: "cut JSON", in: `{"jsonrpc":"2.0","id":1,"meth`, wantErr: true},
		{name: "empty", in: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseMessage([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if m.isRequest() != tt.request || m.isNotification() != tt.notification || (m.Result != nil || m.Error != nil) != tt.hasAnswer {
				t.Errorf("request %v notification %v answer %v", m.isRequest(), m.isNotification(), m.Result != nil || m.Error != nil)
			}
		})
	}
}

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

func TestProgressTokenRewriting(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		wantToken string
	}{
		{"a string token", `{"name":"t","_meta":{"progressToken":"tok","other":1}}`, `"tok"`},
		{"a number token", `{"_meta":{"progressToken":12}}`, `12`},
		{"no _meta", `{"name":"t"}`, ``},
		{"a null token", `{"_meta":{"progressToken":null}}`, ``},
		{"no params", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := wire.ProgressTokenOf(json.RawMessage(tt.params))
			if string(token) != tt.wantToken {
				t.Fatalf("token %s, want %s", token, tt.wantToken)
			}
			if token == nil {
				return
			}
			rewritten, err := wire.WithRequestProgressToken(json.RawMessage(tt.params), json.RawMessage(`99`))
			if err != nil {
				t.Fatal(err)
			}
			var before, after map[string]any
			_ = json.Unmarshal([]byte(tt.params), &before)
			_ = json.Unmarshal(rewritten, &after)
			before["_meta"].(map[string]any)["progressToken"] = float64(99)
			if b, a := mustJSON(t, before), mustJSON(t, after); b != a {
				t.Errorf("rewritten params %s, want %s", a, b)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSameID(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`7`, `7`, true},
		{`7`, `7.0`, true},
		{`7`, `"7"`, false},
		{`"a"`, `"a"`, true},
		{`"a"`, `"b"`, false},
		{`{}`, `{}`, false},
		{`null`, `null`, false},
	}
	for _, tt := range tests {
		if got := sameID(json.RawMessage(tt.a), json.RawMessage(tt.b)); got != tt.want {
			t.Errorf("sameID(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
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
