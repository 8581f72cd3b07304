package wire

import (
	"slices"
	"strings"
)

// RelayedMeta is what of a request's _meta a relay passes on to the next
// hop: all but the protocol's own keys (io.modelcontextprotocol/…, which
// the next hop's sender sets for its own revision), the progress token
// (which the relay replaces with its own) and the keys in drop.
func RelayedMeta[V any](meta map[string]V, drop ...string) map[string]any {
	out := make(map[string]any, len(meta))
	for k, v := range meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") || k == "progressToken" || slices.Contains(drop, k) {
			continue
		}
		out[k] = v
	}
	return out
}
