package mcpclient

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// pieces reads r at most n bytes at a time, as a TLS connection or a
// proxy hands a large event on.
type pieces struct {
	r io.Reader
	n int
}

func (p *pieces) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.n)]) }

func (p *pieces) Close() error { return nil }

// TestAHeldStreamsChunkFollowsItsEvents: a held stream reads a large event
// through a chunk that grows and stays grown while the event lasts, however
// small the pieces it arrives in (shrinking on each short read allocated a
// chunk per read: 668 allocations for one 1 MiB event in 3,000-byte
// pieces), and goes back to idleChunk once the stream waits between events.
func TestAHeldStreamsChunkFollowsItsEvents(t *testing.T) {
	event := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"big\",\"params\":\"" + strings.Repeat("x", 1<<20) + "\"}\n\n"
	small := "event: message\ndata: {}\n\n"
	var c *eventCappedBody
	allocs := testing.AllocsPerRun(3, func() {
		c = &eventCappedBody{body: &pieces{r: strings.NewReader(event + small), n: 3000}, max: 16 << 20}
		got, err := io.ReadAll(c)
		if err != nil || !bytes.Equal(got, []byte(event+small)) {
			t.Fatalf("read %d bytes (%v), want the %d of the stream", len(got), err, len(event+small))
		}
	})
	// The event itself is held whole (about 20 allocations as it grows).
	if allocs > 100 {
		t.Errorf("reading one 1 MiB event in 3,000-byte pieces took %.0f allocations", allocs)
	}
	if len(c.chunk) != idleChunk {
		t.Errorf("between events the chunk is %d bytes, want %d", len(c.chunk), idleChunk)
	}
}
