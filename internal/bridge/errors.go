package bridge

// JSON-RPC error codes of the bridge's own answers. They are in the range
// JSON-RPC leaves to implementations (-32000 to -32099), away from the codes
// MCP and its SDKs use (-32002 resource not found, -32022 unsupported
// protocol version, -32042 URL elicitation required). Every message starts
// with "mcp-bridge:" and says what happened.
const (
	// codeServerExited: the server process exited before answering a
	// request written to it (the message names its exit status), or the
	// request could not be queued for it in time.
	codeServerExited = -32010
	// codeNotReady: the server was not ready (starting, restarting, or
	// never answering initialize) within --ready-wait, or the bridge is
	// shutting down.
	codeNotReady = -32011
	// codeOverloaded: too many requests in flight.
	codeOverloaded = -32012
	// codeTimeout: no answer within --request-timeout; the request was
	// cancelled towards the server.
	codeTimeout = -32013
	// codeTooLarge: the server's answer was over --max-message.
	codeTooLarge = -32014
	// codeCancelled: the client cancelled the request or ended its session
	// (the client ignores this answer, as the specification says).
	codeCancelled = -32015
	// codeNotRelayed: a request from the server (elicitation/create,
	// sampling/createMessage) was not relayed to a client; the message says
	// why: no call, or several calls, that may ask are in flight, the
	// client of the call did not declare the capability, its connection
	// cannot carry a request, or it has too many waiting already.
	codeNotRelayed = -32016
	// codeRelayEnded: a request from the server that was relayed to a
	// client ended unanswered: the call it was relayed for ended (answered,
	// cancelled, timed out), or the client's stream or session did.
	codeRelayEnded = -32017

	// Standard JSON-RPC codes. Invalid request also answers a request
	// without a session (HTTP 400), for an unknown one (HTTP 404), one
	// sent before initialize on a legacy SSE session, and a client's answer
	// that no relayed request of its session waits for (HTTP 400). Method
	// not found answers the server's requests the bridge never relays
	// (roots/list and any other method but ping).
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
)
