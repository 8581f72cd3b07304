package controller

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// settledServers remembers, per MCPServer, the last refresh that found
// nothing to write: the resourceVersion of the object it read and a digest
// of what discovery returned. Publishing is a function of the two (the
// object's spec and status, the tools as sent, the server's info and the
// reconciler's fixed limits), so a refresh that reads the same version and
// discovers the same inputs would compute the status the object already
// holds. It skips publishing and comparing, which was a quarter of the
// manager's CPU in an unchanged refresh of 20 tools (the quiet window of
// test/bench's BenchmarkScale; BenchmarkRefreshOfAnUnchangedServer
// measures what is skipped).
//
// Only what was checked is remembered: an entry is written after a compare
// found the status equal, never after a write, so a status the API server
// changed on the way in is compared once more before it is trusted. Any
// write to the object, by this controller or anyone else, gives it a new
// resourceVersion, which no entry matches. Entries are per MCPServer in the
// cluster, dropped when it is deleted or suspended.
type settledServers struct {
	mu       sync.Mutex
	byServer map[string]settled
}

type settled struct {
	resourceVersion string
	inputs          [sha256.Size]byte
}

// holds says whether key's object at resourceVersion was found settled for
// these inputs.
func (s *settledServers) holds(key, resourceVersion string, inputs [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.byServer[key]
	return ok && last == settled{resourceVersion: resourceVersion, inputs: inputs}
}

// record remembers that key's object at resourceVersion needed no write for
// these inputs.
func (s *settledServers) record(key, resourceVersion string, inputs [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byServer == nil {
		s.byServer = map[string]settled{}
	}
	s.byServer[key] = settled{resourceVersion: resourceVersion, inputs: inputs}
}

func (s *settledServers) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byServer, key)
}

// discoveryInputs digests everything of a discovery that publish reads:
// the tools as sent (the list's own digest), whether the list was cut,
// and the server's info. The TTL is left out: it decides when to ask
// again, not what status says.
func discoveryInputs(list mcpclient.ToolList, info mcpclient.ServerInfo) [sha256.Size]byte {
	h := sha256.New()
	h.Write(list.Digest[:])
	flags := []byte{0, 0}
	if list.Truncated {
		flags[0] = 1
	}
	if info.ListChanged {
		flags[1] = 1
	}
	h.Write(flags)
	for _, field := range []string{info.Name, info.Version, info.ProtocolVersion, string(info.Transport)} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(field))))
		h.Write([]byte(field))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
