package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// errResponseTooLarge marks an answer cut at MaxResponseBytes.
var errResponseTooLarge = errors.New("response too large")

// cappedBody fails a read past its limit instead of buffering on.
type cappedBody struct {
	body io.ReadCloser
	left int64
	ex   *exchange
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.ex != nil {
			c.ex.tooLarge.Store(true)
		}
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.body.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.body.Close() }

// Answers to requests that arrive on a long-lived event stream (the
// legacy SSE transport) and grow past the cap are replaced by this
// JSON-RPC error, which request turns back into errResponseTooLarge.
const (
	codeAnswerTooLarge    = -32099
	messageAnswerTooLarge = "mcp-operator: the answer passed the size cap and was dropped"
)

// eventCappedBody keeps each server-sent event (the bytes up to a blank
// line) of a long-lived stream within max. An event is handed on only
// once it ends (the library buffers it whole anyway); one that grows past
// max is dropped unread, and when it answered one of the operator's
// requests it is replaced by an error for that request alone, so that an
// oversized answer fails its own call and not the stream, with every
// other call on it.
type eventCappedBody struct {
	body io.ReadCloser
	max  int64
	ex   *exchange

	ready     []byte // what Read hands on next
	event     []byte // the event being read, held back
	over      bool   // the event passed max and is being skipped
	head      []byte // the first bytes of a skipped event
	tail      []byte // its last bytes
	skipped   int64  // bytes of it skipped so far
	lineStart bool
	chunk     []byte
	filled    bool // the last read filled chunk
	err       error
}

// The chunk a held stream is read through is small while the stream waits
// (a manager holds one stream per server that announces list changes, and
// the chunk for as long as it waits) and grows while reads fill it, for a
// legacy SSE stream carrying large answers.
const (
	idleChunk = 512
	maxChunk  = 32 << 10
)

// size picks the chunk for the next read: twice the last one when that
// read filled it; back to idleChunk only once the stream is between
// events, since reads of a large event come in pieces of any size (a TLS
// record, a proxy's flush) and shrinking on each would allocate a chunk
// per read.
func (c *eventCappedBody) size() {
	between := len(c.event) == 0 && !c.over
	switch {
	case c.chunk == nil || (!c.filled && between && len(c.chunk) > idleChunk):
		c.chunk = make([]byte, idleChunk)
	case c.filled && len(c.chunk) < maxChunk:
		c.chunk = make([]byte, 2*len(c.chunk))
	}
}

// keepEnds is how much of each end of a skipped event is kept to find
// its id: servers write the id before the result (mcp-go) or after it
// (the TypeScript SDK).
const keepEnds = 512

// skipLimit is how many times the cap an event may run on, skipped,
// before the stream is given up.
const skipLimit = 4

func (c *eventCappedBody) Read(p []byte) (int, error) {
	for len(c.ready) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		c.size()
		n, err := c.body.Read(c.chunk)
		c.filled = n == len(c.chunk)
		c.take(c.chunk[:n])
		if c.err != nil {
			return 0, c.err
		}
		if err != nil {
			// What is held of an unfinished event goes on, as the stream
			// itself would have; the reader sees the error after it.
			if !c.over {
				c.ready = append(c.ready, c.event...)
			}
			c.event, c.err = nil, err
		}
	}
	n := copy(p, c.ready)
	c.ready = c.ready[n:]
	return n, nil
}

// take sorts incoming bytes into events.
func (c *eventCappedBody) take(b []byte) {
	for len(b) > 0 && c.err == nil {
		end := c.eventEnd(b)
		part := b
		if end >= 0 {
			part = b[:end+1]
		}
		c.hold(part)
		b = b[len(part):]
		if end >= 0 {
			c.endEvent()
		}
	}
}

// eventEnd is the index in b of the newline that ends the current event
// (the second of two in a row, carriage returns aside), or -1.
func (c *eventCappedBody) eventEnd(b []byte) int {
	for i, ch := range b {
		switch {
		case ch == '\n' && c.lineStart:
			c.lineStart = false
			return i
		case ch == '\n':
			c.lineStart = true
		case ch != '\r':
			c.lineStart = false
		}
	}
	return -1
}

func (c *eventCappedBody) hold(part []byte) {
	if !c.over && int64(len(c.event)+len(part)) <= c.max {
		c.event = append(c.event, part...)
		return
	}
	if !c.over {
		c.over = true
		c.head = append([]byte(nil), c.event[:min(len(c.event), keepEnds)]...)
		c.tail = append(c.tail[:0], c.event[max(0, len(c.event)-keepEnds):]...)
		c.event = nil
		if c.ex != nil {
			c.ex.tooLarge.Store(true)
		}
	}
	c.skipped += int64(len(part))
	if c.skipped > skipLimit*c.max {
		// An event this long is a stream stuck in one event, not an answer:
		// every later answer would vanish into it. End the stream.
		c.err = errResponseTooLarge
		return
	}
	c.tail = append(c.tail, part...)
	if len(c.tail) > keepEnds {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-keepEnds:]...)
	}
}

// endEvent hands on the event that just ended, or the error that stands in
// for a skipped answer.
func (c *eventCappedBody) endEvent() {
	if !c.over {
		c.ready = append(c.ready, c.event...)
		c.event = c.event[:0]
		return
	}
	if id := answeredID(c.head, c.tail); id != nil {
		c.ready = append(c.ready, fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%q}}\n\n",
			id, codeAnswerTooLarge, messageAnswerTooLarge)...)
	}
	c.over, c.head, c.tail, c.skipped = false, nil, c.tail[:0], 0
}

// answeredID is the operator's request id ("op-N", see request) a
// skipped event answered, nil when its ends name none (a notification, or
// another's id). The head holds the event's fields before the message.
func answeredID(head, tail []byte) json.RawMessage {
	if i := bytes.Index(head, []byte("data:")); i >= 0 {
		head = bytes.TrimLeft(head[i+len("data:"):], " ")
	}
	id := wire.AnsweredID(head, tail)
	var s string
	if json.Unmarshal(id, &s) != nil || !strings.HasPrefix(s, "op-") {
		return nil
	}
	return id
}

func (c *eventCappedBody) Close() error { return c.body.Close() }
