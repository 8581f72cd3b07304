package bridge

import (
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// levels are the MCP logging levels (RFC 5424 severities), most verbose first.
var levels = []mcp.LoggingLevel{
	mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice, mcp.LoggingLevelWarning,
	mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency,
}

// levelRank orders levels from debug (0) to emergency (7); -1 for anything
// else.
func levelRank(level string) int {
	return slices.Index(levels, mcp.LoggingLevel(level))
}
