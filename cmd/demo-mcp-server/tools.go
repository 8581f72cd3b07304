package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func addTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("time_now",
		mcp.WithDescription("The current date and time in an IANA time zone."),
		mcp.WithString("timezone", mcp.Description("IANA zone such as Europe/Paris; default UTC")),
		mcp.WithReadOnlyHintAnnotation(true),
	), timeNow)
	s.AddTool(mcp.NewTool("time_add",
		mcp.WithDescription("Adds a duration such as 90m or -36h to an RFC 3339 time."),
		mcp.WithString("time", mcp.Required(), mcp.Description("RFC 3339 time, e.g. 2026-11-30T12:00:00Z")),
		mcp.WithString("duration", mcp.Required(), mcp.Description("Go duration, e.g. 90m, -36h, 1h30m")),
		mcp.WithReadOnlyHintAnnotation(true),
	), timeAdd)
	s.AddTool(mcp.NewTool("days_between",
		mcp.WithDescription("Whole days from one date (YYYY-MM-DD) to another."),
		mcp.WithString("from", mcp.Required()),
		mcp.WithString("to", mcp.Required()),
		mcp.WithReadOnlyHintAnnotation(true),
	), daysBetween)
	s.AddTool(mcp.NewTool("convert_units",
		mcp.WithDescription("Converts a value between units of length (m, km, mi, ft, in), mass (kg, g, lb, oz) or temperature (C, F, K)."),
		mcp.WithNumber("value", mcp.Required()),
		mcp.WithString("from", mcp.Required()),
		mcp.WithString("to", mcp.Required()),
		mcp.WithReadOnlyHintAnnotation(true),
	), convertUnits)
	s.AddTool(mcp.NewTool("text_stats",
		mcp.WithDescription("Counts characters, words, lines and sentences of a text."),
		mcp.WithString("text", mcp.Required()),
		mcp.WithReadOnlyHintAnnotation(true),
	), textStats)
	pins := &pinnedZones{server: s}
	s.AddTool(mcp.NewTool("pin_timezone",
		mcp.WithDescription(fmt.Sprintf("Adds a tool time_in_<zone> that tells the current time in an IANA time zone without arguments; at most %d.", maxPinned)),
		mcp.WithString("timezone", mcp.Required(), mcp.Description("IANA zone such as Europe/Paris")),
		mcp.WithIdempotentHintAnnotation(true),
	), pins.pin)
}

// maxPinned bounds the tools pin_timezone adds.
const maxPinned = 16

// pinnedZones adds a tool per pinned time zone. Adding one changes the tool
// list, which the server announces with notifications/tools/list_changed.
type pinnedZones struct {
	server *server.MCPServer
	mu     sync.Mutex
	count  int
}

func (p *pinnedZones) pin(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	zone := req.GetString("timezone", "")
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" || zone == "Local" {
		return mcp.NewToolResultError(fmt.Sprintf("unknown time zone %q", zone)), nil
	}
	name := pinnedToolName(zone)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server.GetTool(name) != nil {
		return mcp.NewToolResultText(fmt.Sprintf("%s is pinned already", name)), nil
	}
	if p.count >= maxPinned {
		return mcp.NewToolResultError(fmt.Sprintf("%d zones are pinned, the most there can be", maxPinned)), nil
	}
	p.count++
	p.server.AddTool(mcp.NewTool(name,
		mcp.WithDescription("The current date and time in "+zone+"."),
		mcp.WithReadOnlyHintAnnotation(true),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(time.Now().In(loc).Format(time.RFC3339)), nil
	})
	return mcp.NewToolResultText("added " + name), nil
}

// pinnedToolName is time_in_ and the zone in lower case, other characters
// than letters and digits made underscores: Europe/Paris gives
// time_in_europe_paris.
func pinnedToolName(zone string) string {
	return "time_in_" + strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return unicode.ToLower(r)
		}
		return '_'
	}, zone)
}

func timeNow(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	zone := req.GetString("timezone", "UTC")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("unknown time zone %q", zone)), nil
	}
	return mcp.NewToolResultText(time.Now().In(loc).Format(time.RFC3339)), nil
}

func timeAdd(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	t, err := time.Parse(time.RFC3339, req.GetString("time", ""))
	if err != nil {
		return mcp.NewToolResultError("time must be RFC 3339, e.g. 2026-11-30T12:00:00Z"), nil
	}
	d, err := time.ParseDuration(req.GetString("duration", ""))
	if err != nil {
		return mcp.NewToolResultError("duration must look like 90m, -36h or 1h30m"), nil
	}
	return mcp.NewToolResultText(t.Add(d).Format(time.RFC3339)), nil
}

func daysBetween(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	from, err1 := time.Parse(time.DateOnly, req.GetString("from", ""))
	to, err2 := time.Parse(time.DateOnly, req.GetString("to", ""))
	if err1 != nil || err2 != nil {
		return mcp.NewToolResultError("dates must be YYYY-MM-DD"), nil
	}
	return mcp.NewToolResultText(fmt.Sprint(int(to.Sub(from).Hours() / 24))), nil
}

// toBase holds each unit's factor to its dimension's base unit.
var toBase = map[string]struct {
	dimension string
	factor    float64
}{
	"m": {"length", 1}, "km": {"length", 1000}, "mi": {"length", 1609.344}, "ft": {"length", 0.3048}, "in": {"length", 0.0254},
	"kg": {"mass", 1}, "g": {"mass", 0.001}, "lb": {"mass", 0.45359237}, "oz": {"mass", 0.028349523125},
}

func convertUnits(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	value := req.GetFloat("value", 0)
	from, to := req.GetString("from", ""), req.GetString("to", "")
	if result, ok := convertTemperature(value, from, to); ok {
		return mcp.NewToolResultText(fmt.Sprintf("%.4g %s", result, to)), nil
	}
	f, okFrom := toBase[from]
	t, okTo := toBase[to]
	if !okFrom || !okTo || f.dimension != t.dimension {
		return mcp.NewToolResultError(fmt.Sprintf("cannot convert %s to %s", from, to)), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("%.6g %s", value*f.factor/t.factor, to)), nil
}

func convertTemperature(v float64, from, to string) (float64, bool) {
	var kelvin float64
	switch from {
	case "C":
		kelvin = v + 273.15
	case "F":
		kelvin = (v-32)*5/9 + 273.15
	case "K":
		kelvin = v
	default:
		return 0, false
	}
	switch to {
	case "C":
		return kelvin - 273.15, true
	case "F":
		return (kelvin-273.15)*9/5 + 32, true
	case "K":
		return kelvin, true
	}
	return 0, false
}

func textStats(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text := req.GetString("text", "")
	sentences := strings.FieldsFunc(text, func(r rune) bool { return r == '.' || r == '!' || r == '?' })
	nonEmpty := 0
	for _, s := range sentences {
		if strings.IndexFunc(s, unicode.IsLetter) >= 0 {
			nonEmpty++
		}
	}
	lines := 0
	if text != "" {
		lines = strings.Count(text, "\n") + 1
	}
	return mcp.NewToolResultText(fmt.Sprintf("characters: %d, words: %d, lines: %d, sentences: %d",
		len([]rune(text)), len(strings.Fields(text)), lines, nonEmpty)), nil
}
