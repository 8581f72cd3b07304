//go:build !linux

package toolcatalog

// closeWatch watches each stream alone, from a goroutine of its own, off
// Linux (stream_watch_linux.go watches them all from one).
type closeWatch struct{}

func newCloseWatch() *closeWatch { return &closeWatch{} }

// watch ends s (s.end) once its connection closes.
func (c *closeWatch) watch(s *streamWriter) { watchAlone(s) }

// forget stops watching s: its reader ends as its connection closes.
func (c *closeWatch) forget(*streamWriter) {}
