package bridge

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// How much of a refused line is kept to find out which request it answered.
const (
	keptHead = 4096
	keptTail = 256
)

// lineReader splits the child's output into lines of at most max bytes. A
// longer line is read to its end but not kept: only its size, its first
// keptHead and last keptTail bytes, so memory stays bounded whatever the
// child writes.
type lineReader struct {
	r   *bufio.Reader
	max int
}

// oversized describes a line that was refused.
type oversized struct {
	size int64
	head []byte
	tail []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64*1024), max: max}
}

// next returns the next line without its line ending, or, for a line over the
// limit, nil and what was seen of it. At the end of the stream it returns
// io.EOF; a last line without a newline is returned first.
func (l *lineReader) next() ([]byte, *oversized, error) {
	var line []byte
	var big *oversized
	for {
		chunk, err := l.r.ReadSlice('\n')
		if big == nil && len(line)+len(chunk) > l.max+2 { // +2: the line ending is not counted
			big = &oversized{size: int64(len(line)), head: clip(append(line, chunk...), keptHead), tail: lastBytes(line, keptTail)}
			line = nil
		}
		if big != nil {
			big.size += int64(len(chunk))
			big.tail = lastBytes(append(big.tail, chunk...), keptTail)
		} else {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		// At the end of the stream a last line without newline still counts.
		if err != nil && (!errors.Is(err, io.EOF) || (big == nil && len(line) == 0)) {
			return nil, nil, err
		}
		return endLine(line, big, l.max)
	}
}

func endLine(line []byte, big *oversized, max int) ([]byte, *oversized, error) {
	if big != nil {
		trimmed := bytes.TrimRight(big.tail, "\r\n")
		big.size -= int64(len(big.tail) - len(trimmed))
		big.tail = trimmed
		return nil, big, nil
	}
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > max {
		return nil, &oversized{size: int64(len(line)), head: clip(line, keptHead), tail: lastBytes(line, keptTail)}, nil
	}
	return line, nil, nil
}

func clip(b []byte, n int) []byte {
	return append([]byte(nil), b[:min(len(b), n)]...)
}

func lastBytes(b []byte, n int) []byte {
	return append([]byte(nil), b[max(0, len(b)-n):]...)
}

// answeredID finds which of the bridge's requests a refused line answered,
// so that request fails at once instead of waiting for its timeout.
func answeredID(o *oversized) (int64, bool) {
	return bridgeID(wire.AnsweredID(o.head, o.tail))
}
