package wire

import (
	"encoding/json"
	"testing"
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
			m, err := ParseMessage([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if m.IsRequest() != tt.request || m.IsNotification() != tt.notification || (m.Result != nil || m.Error != nil) != tt.hasAnswer {
				t.Errorf("request %v notification %v answer %v", m.IsRequest(), m.IsNotification(), m.Result != nil || m.Error != nil)
			}
		})
	}
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
		if got := SameID(json.RawMessage(tt.a), json.RawMessage(tt.b)); got != tt.want {
			t.Errorf("SameID(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestAnswersAndRequests(t *testing.T) {
	result := json.RawMessage(`{"tools": [ {"name":"a<b>&c"} ]}`)
	for _, tt := range []struct {
		name string
		got  []byte
		want string
	}{
		{"a result as it came", AppendResult(nil, json.RawMessage(`7`), result), `{"jsonrpc":"2.0","id":7,"result":` + string(result) + `}`},
		{"no result is an empty object", AppendResult(nil, json.RawMessage(`"a"`), nil), `{"jsonrpc":"2.0","id":"a","result":{}}`},
		{"an error without id", AppendError(nil, nil, ErrorObject(-32700, "bad <json>")), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad <json>"}}`},
		{"a request", AppendRequest(nil, json.RawMessage(`"op-1"`), "tools/call", json.RawMessage(`{"name":"x"}`)), `{"jsonrpc":"2.0","id":"op-1","method":"tools/call","params":{"name":"x"}}`},
		{"a notification without params", AppendRequest(nil, nil, "notifications/initialized", nil), `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	} {
		if string(tt.got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, tt.got, tt.want)
		}
		if !json.Valid(tt.got) {
			t.Errorf("%s: not JSON: %s", tt.name, tt.got)
		}
	}
}
