package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"strings"
)

// AsksForEventStream says the Accept header names text/event-stream
// itself: the caller asked for an answer as events, where a plain answer
// would do too (the catalog's REST execute).
func AsksForEventStream(accept string) bool {
	return acceptsMedia(accept, func(media string) bool { return media == "text/event-stream" })
}

// AcceptsEventStream says the Accept header admits text/event-stream,
// wildcards included: the caller can read an answer that only comes as
// events (a Streamable HTTP GET).
func AcceptsEventStream(accept string) bool {
	return acceptsMedia(accept, func(media string) bool {
		return media == "text/event-stream" || media == "text/*" || media == "*/*"
	})
}

func acceptsMedia(accept string, match func(string) bool) bool {
	for part := range strings.SplitSeq(accept, ",") {
		if media, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && match(media) {
			return true
		}
	}
	return false
}

// WriteEvent writes one server-sent event. data is one JSON value; SSE
// would read a line break in it as the end of the data field, and in JSON
// a line break can only be whitespace between tokens, so such data is
// compacted first (data that is not JSON has its line breaks made spaces).
func WriteEvent(w io.Writer, event string, data []byte) error {
	if bytes.ContainsAny(data, "\r\n") {
		var compact bytes.Buffer
		if json.Compact(&compact, data) == nil {
			data = compact.Bytes()
		} else {
			data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r"), []byte(" ")), []byte("\n"), []byte(" "))
		}
	}
	buf := make([]byte, 0, len("event: \ndata: \n\n")+len(event)+len(data))
	buf = append(buf, "event: "...)
	buf = append(buf, event...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, err := w.Write(buf)
	return err
}

// EventSplitter gathers the data of server-sent events from lines: data
// fields make up an event, a blank line ends it; other fields and comments
// are passed over. Its zero value is ready.
type EventSplitter struct {
	data    bytes.Buffer
	pending []byte // a line not yet ended, for Write
	emit    func(data []byte)
}

// Line takes one line, without its line ending, and returns the event's
// data when the line ended one (valid until the next call), else nil.
func (s *EventSplitter) Line(line []byte) []byte {
	switch {
	case len(line) == 0 && s.data.Len() > 0:
		event := s.data.Bytes()
		s.data.Reset()
		return event
	case bytes.HasPrefix(line, []byte("data:")):
		if s.data.Len() > 0 {
			s.data.WriteByte('\n')
		}
		value := line[len("data:"):]
		s.data.Write(bytes.TrimPrefix(value, []byte(" ")))
	}
	return nil
}

// NewEventSplitter is a splitter to Write a stream's bytes into, as they
// are read, calling emit with each event's data (valid during the call).
func NewEventSplitter(emit func(data []byte)) *EventSplitter {
	return &EventSplitter{emit: emit}
}

// Write takes bytes of the stream in pieces of any size.
func (s *EventSplitter) Write(p []byte) (int, error) {
	rest := p
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			s.pending = append(s.pending, rest...)
			return len(p), nil
		}
		line := rest[:i]
		if len(s.pending) > 0 {
			line = append(s.pending, line...)
			s.pending = s.pending[:0]
		}
		if event := s.Line(bytes.TrimRight(line, "\r")); event != nil && s.emit != nil {
			s.emit(event)
		}
		rest = rest[i+1:]
	}
}

// ReadEvents hands the data of each server-sent event on r to f until the
// stream ends or f says to stop, and returns what ended it (io.EOF for the
// stream's own end, nil when f stopped). size is the read buffer; lines
// longer than it are read on past it.
func ReadEvents(r io.Reader, size int, f func(data []byte) (stop bool)) error {
	lines := bufio.NewReaderSize(r, size)
	var s EventSplitter
	for {
		line, err := lines.ReadBytes('\n')
		if err != nil && len(line) == 0 {
			// The stream ended: an event not ended by a blank line is
			// dropped, as SSE says.
			return err
		}
		if event := s.Line(bytes.TrimRight(line, "\r\n")); event != nil && f(event) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
