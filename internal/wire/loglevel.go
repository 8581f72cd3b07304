package wire

import "slices"

// logLevels are MCP's log levels (RFC 5424 severities), least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogLevelRank orders MCP's log levels from debug (0) to emergency (7); -1
// for anything else.
func LogLevelRank(level string) int { return slices.Index(logLevels, level) }

// KnownLogLevel reports whether level is one of MCP's log levels.
func KnownLogLevel(level string) bool { return LogLevelRank(level) >= 0 }
