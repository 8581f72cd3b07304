// Package bridge serves one MCP server that speaks stdio to many HTTP
// clients, over Streamable HTTP (/mcp) and the legacy HTTP+SSE transport
// (/sse, then /message), with /healthz (the process runs) and /readyz (it
// answered initialize). It is the core of cmd/mcp-bridge.
//
// # One child, many sessions
//
// The child process has one MCP session: the bridge's. The bridge
// initializes it once, itself, declaring the client capabilities it can
// relay (elicitation, form and URL modes, and sampling; never roots), and
// multiplexes every client session onto it:
//
//   - Requests get ids of the bridge's own (a counter, unique across
//     restarts), and the answer goes back to the client that asked, under
//     its own id. A request's progressToken is rewritten to the bridge's id
//     for it, so two clients using the same token never collide, and
//     notifications/progress reach only that client, with its token put back.
//   - initialize is answered by the bridge from the child's initialize result,
//     with a revision negotiated per client (see negotiate); a client's
//     notifications/initialized stops at the bridge.
//   - notifications/cancelled from a client is forwarded with the bridge's id;
//     a client that hangs up or times out has its request cancelled likewise.
//   - Notifications from the child not tied to a request (list_changed,
//     resources/updated, notifications/message …) go to every initialized
//     session: on its listening GET stream for Streamable HTTP, on its
//     stream for SSE. logging/setLevel is per session: the child is asked
//     for the most verbose level any client wants, and each session gets the
//     messages at or above its own.
//   - Requests from the child to "the client": ping is answered by the
//     bridge; roots/list, and any method the bridge does not know, are
//     refused with method-not-found (-32601) and a message saying why
//     (servers keep a session's roots, so on the child's one session one
//     client's roots would serve every client); elicitation/create and
//     sampling/createMessage are relayed, as described next.
//   - resources/subscribe and unsubscribe go to the child as they are:
//     subscriptions belong to the child's one session, so every session
//     gets resources/updated, and one client's unsubscribe ends the
//     subscription for all.
//
// # Relaying the child's requests
//
// A request from the child names no request of the bridge's: SDKs tie it
// to the call it serves only to pick an HTTP stream, which stdio does not
// have. So the bridge relays elicitation/create and sampling/createMessage
// only when exactly one call that may ask (tools/call, prompts/get,
// resources/read, completion/complete) is in flight, to that call's
// client, and only if that client declared the capability at initialize:
// sampling; elicitation, which means form mode, or elicitation.url for a
// request in URL mode. The request goes on the call's answer stream under
// an id of the bridge's ("bridge-relay-<n>"), its params as the child
// wrote them: for Streamable HTTP the call's answer becomes an event stream
// then, which its Accept must allow; for HTTP+SSE it goes on the session's
// stream. The client's answer, a POST of a JSON-RPC response with that id
// from the same session, is answered 202 and written to the child under the
// child's own id, its result or error byte for byte; an answer with any
// other id, or from another session, is 400 with a JSON-RPC error (not 404,
// which would tell a Streamable HTTP client to initialize again).
//
// Otherwise the child is answered at once with an error (codeNotRelayed)
// that says why: no call that may ask is in flight, or several are ("3
// calls … are in flight; stdio gives no way to tell which one asked"), the
// client did not declare the capability, its Accept allows no event stream,
// or the call has 8 requests waiting for its client already. Attribution
// depends on timing: behind a client that overlaps calls (the catalog's
// pooled session), a request is relayed only while its call runs alone. A
// call the bridge ended without the child's answer (its client went away
// or cancelled it, it timed out, its session ended) may still run in the
// child: it counts as in flight until the child answers it, for
// RequestTimeout but at most a minute, so that its requests are refused
// rather than shown to another call's client. A child that works on past
// that and then asks could still have its request taken for the one call
// in flight.
//
// A relayed request never outlives its call: when the call ends (answered,
// cancelled, timed out after RequestTimeout, its stream broken or its
// session ended) the child is answered with an error that says so
// (codeRelayEnded). The child's notifications/cancelled for a relayed
// request drops it and reaches the client under the bridge's id. Progress
// a client sends for a relayed request is dropped.
//
// # Transports
//
// Streamable HTTP follows the 2025-11-25 specification: initialize (which
// waits up to ReadyWait for the child, and answers 503 if it is not ready)
// issues an Mcp-Session-Id; any other POST without one is 400, with an
// unknown one 404 (initialize again); DELETE ends the session; GET opens the
// session's one listening stream (a second is 409); an MCP-Protocol-Version
// header must name a revision the bridge speaks (400 otherwise); a browser
// Origin other than the bridge's own is 403. Requests are answered with JSON,
// or with an event stream when they asked for progress or the child asks
// their client something during them. The stateless
// 2026-07-28 clients' server/discover, sent without a session, gets the 400
// and they fall back to initialize, as mcp-go's client does.
//
// HTTP+SSE (2024-11-05): GET /sse opens a session whose stream first names
// a relative endpoint (message?sessionId=…), so it resolves through any
// proxy or path prefix; answers travel on the stream. A request other than
// initialize or ping before initialize is refused.
//
// The bridge works on raw JSON-RPC messages rather than on mcp-go's server or
// client: it forwards methods it does not know, and must pass results byte
// for byte (mcp-go's mcp.Tool drops schema keywords it does not model); mcp-go
// supplies method names, revisions and levels.
//
// # The child's lifecycle
//
// The child runs in its own process group, dies with the bridge (Pdeathsig)
// and gets the bridge's environment. Its stderr goes to the log line by
// line. A stdout line that is not JSON-RPC is logged and skipped; one over
// MaxMessage is read to its end without being kept, logged, and if it
// answered a request that request fails (codeTooLarge).
//
// A child that exits is started again after a backoff (RestartBackoff,
// doubling up to 30 s; back to the start after a minute of running).
// Requests written to it fail with codeServerExited and the exit status: it
// may have acted on them, so they are never sent twice. Requests not written
// to it (still queued, or sent after it died but before the bridge noticed)
// go to the new child, waiting for it as new requests do: up to ReadyWait,
// then they fail with codeNotReady. /readyz is 503 meanwhile, and every
// session is sent list_changed once the new child is ready. A child that
// does not answer initialize within InitTimeout is stopped and restarted the
// same way.
// When Run's context ends, the child gets SIGTERM and Grace to exit before
// SIGKILL. The JSON-RPC error codes of the bridge's own answers are listed
// in errors.go.
//
// # Limits
//
// Every queue and table is bounded: MaxSessions sessions, each ending after
// SessionIdle without a stream or request; 256 requests in flight per
// session and 4096 in all; 8 relayed requests waiting per call, each
// ending with its call; 256 queued messages per stream (an SSE client
// that falls behind loses its session; a Streamable HTTP listener misses
// notifications); request bodies up to MaxRequestBody; each write to a
// client bounded in time. JSON-RPC batches are refused.
package bridge
