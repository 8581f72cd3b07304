package wire

import (
	"strings"
	"testing"
)

func TestAnsweredID(t *testing.T) {
	big := strings.Repeat("x", 100)
	tests := []struct {
		name       string
		head, tail string
		want       string
	}{
		{"a leading number id (Go, Python SDKs)", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"` + big, big + `"}]}}`, "7"},
		{"a leading string id", `{"jsonrpc":"2.0","id":"op-12","result":{"x":"` + big, big + `"}}`, `"op-12"`},
		{"a trailing number id (TypeScript SDK)", `{"result":{"content":[{"text":"` + big, big + `"}]},"jsonrpc":"2.0","id":42}`, "42"},
		{"a trailing string id, white space after it", `{"result":{"x":"` + big, big + `"},"jsonrpc":"2.0","id":"op-3"}` + "\n\n", `"op-3"`},
		{"an id nested in the result is not the answer's", `{"result":{"x":"` + big, big + `","item":{"id":5}}}`, ""},
		{"an id in a value cut off by the head is not read", `{"result":{"id":9,"x":"` + big, big + `"}}`, ""},
		{"an id the head cut off is not read", `{"jsonrpc":"2.0","id":12`, `3,"result":{}}x`, ""},
		{"a notification names none", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big, big + `"}}`, ""},
		{"a head that is not an object", `event: x`, `nothing`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AnsweredID([]byte(tt.head), []byte(tt.tail)); string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
