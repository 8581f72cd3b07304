package bridge

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// readAll reads every line, writing refused ones as "!<size>".
func readAll(t *testing.T, in string, max int) []string {
	t.Helper()
	r := newLineReader(strings.NewReader(in), max)
	var got []string
	for {
		line, big, err := r.next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if big != nil {
			got = append(got, "!"+strconv.FormatInt(big.size, 10))
			continue
		}
		got = append(got, string(line))
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("a", 200_000) // longer than the reader's buffer
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"lines", "one\ntwo\n", 10, []string{"one", "two"}},
		{"CRLF endings", "one\r\ntwo\r\n", 10, []string{"one", "two"}},
		{"a last line without newline", "one\ntwo", 10, []string{"one", "two"}},
		{"an empty line", "one\n\ntwo\n", 10, []string{"one", "", "two"}},
		{"exactly the limit", "12345\n", 5, []string{"12345"}},
		{"one over the limit", "123456\nok\n", 5, []string{"!6", "ok"}},
		{"over the limit with CRLF", "123456\r\nok\n", 5, []string{"!6", "ok"}},
		{"a long line within a larger limit", long + "\nok\n", 300_000, []string{long, "ok"}},
		{"a long line over the limit, across buffers", "x\n" + long + "\nok\n", 1000, []string{"x", "!200000", "ok"}},
		{"a long last line without newline", long, 1000, []string{"!200000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, tt.in, tt.max)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %.80q, want %.80q", got, tt.want)
			}
		})
	}
}

func TestAnsweredID(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	tests := []struct {
		name string
		line string
		want int64
		ok   bool
	}{
		{"Go and Python SDKs: id first", `{"jsonrpc":"2.0","id":42,"result":{"content":"` + big + `"}}`, 42, true},
		{"TypeScript SDK: id last", `{"result":{"content":"` + big + `"},"jsonrpc":"2.0","id":43}`, 43, true},
		{"id last with spaces", `{"result":"` + big + `", "id" : 44 }`, 44, true},
		{"a nested id at the end is not the message's", `{"result":{"x":"` + big + `","id":45}}`, 0, false},
		{"a nested id at the start is not the message's", `{"result":{"id":46,"x":"` + big + `"}}`, 0, false},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`, 0, false},
		{"a string id is never the bridge's", `{"jsonrpc":"2.0","id":"47","result":"` + big + `"}`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLineReader(strings.NewReader(tt.line+"\n"), 1000)
			_, o, err := r.next()
			if err != nil || o == nil {
				t.Fatalf("the line was not refused (error %v)", err)
			}
			got, ok := answeredID(o)
			if ok != tt.ok || got != tt.want {
				t.Errorf("answeredID = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
