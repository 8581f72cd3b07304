// Package mcpclient is the operator's MCP client side: it connects to a
// server over Streamable HTTP or HTTP+SSE (detecting which), lists every tool
// with its definition exactly as the server sent it, watches for
// notifications/tools/list_changed, and turns failures into stable, secret-free
// errors a condition can show. It imports no Kubernetes types.
package mcpclient
