package bridge

import (
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// clientRevisions are the MCP revisions the bridge speaks with its clients,
// newest first: every revision that has the initialize handshake and
// sessions, which sharing one child among many clients needs. The stateless
// 2026-07-28 core has neither; its clients probe with server/discover, are
// refused, and fall back to initialize.
var clientRevisions = []string{
	mcp.ProtocolVersion20251125,
	mcp.ProtocolVersion20250618,
	mcp.ProtocolVersion20250326,
	mcp.ProtocolVersion20241105,
}

// childRevision is what the bridge asks the child for.
const childRevision = mcp.ProtocolVersion20251125

// negotiate picks the revision to answer a client's initialize with, given
// the one the child settled on.
//
// A client gets the revision it asked for when the bridge speaks it and the
// child's is not older; otherwise the child's, which the client may accept or
// hang up on, as the specification says. The bridge translates transports,
// not messages: what travels is the child's JSON, so a client must not be
// promised a revision newer than the child's. Handing an older client the
// messages of a newer child is safe because every revision since 2024-11-05
// only added fields and methods, and clients ignore fields they do not know.
func negotiate(requested, child string) string {
	if slices.Contains(clientRevisions, requested) && requested <= child {
		return requested
	}
	return child
}

// acceptedRevision reports whether an MCP-Protocol-Version header names a
// revision the bridge speaks. An absent header is accepted: the
// specification tells servers to assume 2025-03-26 then.
func acceptedRevision(header, negotiated string) bool {
	return header == "" || header == negotiated || slices.Contains(clientRevisions, header)
}
