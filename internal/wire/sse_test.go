package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestEventStreamMediaTypes(t *testing.T) {
	tests := []struct {
		accept        string
		asks, accepts bool
	}{
		{"text/event-stream", true, true},
		{"application/json, text/event-stream;q=0.9", true, true},
		{"*/*", false, true},
		{"text/*", false, true},
		{"application/json", false, false},
		{"", false, false},
		{"text/event-streams", false, false},
	}
	for _, tt := range tests {
		if got := AsksForEventStream(tt.accept); got != tt.asks {
			t.Errorf("AsksForEventStream(%q) = %v", tt.accept, got)
		}
		if got := AcceptsEventStream(tt.accept); got != tt.accepts {
			t.Errorf("AcceptsEventStream(%q) = %v", tt.accept, got)
		}
	}
}

// stream is events as servers write them: fields other than data, CRLF
// line ends, a comment, data over several lines, an event at the end
// without its blank line (which never ends).
const stream = "event: message\r\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\nid: 4\ndata: line one\ndata:line two\n\ndata: {\"b\":2}\n\ndata: unfinished"

var wantEvents = []string{`{"a":1}`, "line one\nline two", `{"b":2}`}

func TestReadEventsAndSplitterAgree(t *testing.T) {
	var read []string
	err := ReadEvents(strings.NewReader(stream), 16, func(data []byte) bool {
		read = append(read, string(data))
		return false
	})
	if !errors.Is(err, io.EOF) || strings.Join(read, "|") != strings.Join(wantEvents, "|") {
		t.Fatalf("ReadEvents: %q, %v", read, err)
	}
	for _, size := range []int{1, 2, 3, 7, len(stream)} {
		var split []string
		s := NewEventSplitter(func(data []byte) { split = append(split, string(data)) })
		for b := []byte(stream); len(b) > 0; {
			n := min(size, len(b))
			_, _ = s.Write(b[:n])
			b = b[n:]
		}
		if strings.Join(split, "|") != strings.Join(wantEvents, "|") {
			t.Errorf("pieces of %d: %q", size, split)
		}
	}
	var unended []string
	_ = ReadEvents(strings.NewReader("data: x\n\ndata: y\n"), 64, func(data []byte) bool { unended = append(unended, string(data)); return false })
	if strings.Join(unended, "|") != "x" {
		t.Errorf("an event the stream's end cut: %q, want only the ended one", unended)
	}
	stopped := 0
	if err := ReadEvents(strings.NewReader(stream), 64, func([]byte) bool { stopped++; return true }); err != nil || stopped != 1 {
		t.Errorf("stopping: %d events, %v", stopped, err)
	}
}

func TestWriteEvent(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"one line as it is", `{"a":1}`, "event: message\ndata: {\"a\":1}\n\n"},
		{"JSON over lines is compacted", "{\n  \"a\": \"x\\ny\"\r\n}", "event: message\ndata: {\"a\":\"x\\ny\"}\n\n"},
		{"text that is not JSON gets spaces", "a\nb", "event: message\ndata: a b\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteEvent(&b, "message", []byte(tt.data)); err != nil || b.String() != tt.want {
				t.Errorf("got %q, %v", b.String(), err)
			}
			var back []string
			_ = ReadEvents(&b, 64, func(data []byte) bool { back = append(back, string(data)); return false })
			if len(back) != 1 {
				t.Errorf("read back %q", back)
			}
		})
	}
}
