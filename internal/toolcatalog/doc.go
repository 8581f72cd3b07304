// Package toolcatalog is the catalog agents query: it serves each menu in
// the function-calling formats models take and executes tool calls through
// the right MCP server. It reads MCPServers and ToolCollections from the
// manager's cache and never imports the controllers: status is the
// interface between them.
package toolcatalog
