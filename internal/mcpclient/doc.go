// Package mcpclient is the operator's MCP client side: it connects to a
// server over Streamable HTTP or HTTP+SSE (detecting which), lists every tool
// with its definition exactly as the server sent it, and its prompts,
// resources and resource templates as sent, calls tools, gets prompts, reads
// resources and completes arguments, watches for the list_changed
// notifications of tools, prompts and resources, and turns failures into
// stable, secret-free errors a condition can show. It imports no Kubernetes
// types.
package mcpclient
