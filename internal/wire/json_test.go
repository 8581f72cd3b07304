package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendStringMatchesEncodingJSON: random bytes, valid UTF-8 or not,
// quote as encoding/json quotes them.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if rng.IntN(3) == 0 {
			b = append(b, "\u2028é<"...)
		}
		want, _ := json.Marshal(string(b))
		if got := AppendString(nil, string(b)); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", b, got, want)
		}
	}
}

func TestProgressTokens(t *testing.T) {
	tests := []struct {
		name   string
		params string
		token  string
		want   string
	}{
		{"a request's token is replaced in _meta, other members kept", `{"name":"x","_meta":{"progressToken":"theirs","k":1}}`, `7`, `{"_meta":{"k":1,"progressToken":7},"name":"x"}`},
		{"a request without _meta gets one", `{"name":"x"}`, `"mine"`, `{"_meta":{"progressToken":"mine"},"name":"x"}`},
		{"null params become an object", `null`, `1`, `{"_meta":{"progressToken":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WithRequestProgressToken(json.RawMessage(tt.params), json.RawMessage(tt.token))
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v; want %s", got, err, tt.want)
			}
			if token := ProgressTokenOf(got); string(token) != tt.token {
				t.Errorf("ProgressTokenOf = %s, want %s", token, tt.token)
			}
		})
	}
	got, err := WithProgressToken(json.RawMessage(`{"progressToken":"progress-3","progress":1,"message":"<b>"}`), json.RawMessage(`"p9"`))
	if err != nil || string(got) != `{"message":"<b>","progress":1,"progressToken":"p9"}` {
		t.Errorf("a notification's token: got %s, %v", got, err)
	}
	if _, err := WithProgressToken(json.RawMessage(`[1]`), json.RawMessage(`1`)); err == nil {
		t.Error("params that are not an object were taken")
	}
	if token := ProgressTokenOf(json.RawMessage(`{"_meta":{"progressToken":null}}`)); token != nil {
		t.Errorf("a null token asks for progress: %s", token)
	}
}

func TestRelayedMeta(t *testing.T) {
	got := RelayedMeta(map[string]json.RawMessage{
		"io.modelcontextprotocol/protocolVersion": json.RawMessage(`"2026-07-28"`),
		"progressToken": json.RawMessage(`1`), "baggage": json.RawMessage(`"k=v"`),
		"traceparent": json.RawMessage(`"00-x"`), "vendor/key": json.RawMessage(`{}`),
	}, "baggage")
	if len(got) != 2 || got["traceparent"] == nil || got["vendor/key"] == nil {
		t.Errorf("relayed %v, want traceparent and vendor/key only", got)
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
			token := ProgressTokenOf(json.RawMessage(tt.params))
			if string(token) != tt.wantToken {
				t.Fatalf("token %s, want %s", token, tt.wantToken)
			}
			if token == nil {
				return
			}
			rewritten, err := WithRequestProgressToken(json.RawMessage(tt.params), json.RawMessage(`99`))
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
