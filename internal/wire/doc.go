// Package wire is the MCP wire that the operator's client (mcpclient), the
// catalog's MCP endpoint and the stdio bridge share: server-sent events
// read and written, JSON strings appended as encoding/json writes them,
// log levels, progress tokens, the _meta a relay passes on, and the id of
// an answer too large to keep. It knows no Kubernetes type and no session:
// each function is a rule of the protocol, written once.
package wire
