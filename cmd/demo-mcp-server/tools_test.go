package main

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func call(t *testing.T, handler server.ToolHandlerFunc, args map[string]any) (string, bool) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Arguments = args
	res, err := handler(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError
}

func TestTools(t *testing.T) {
	tests := []struct {
		name    string
		handler server.ToolHandlerFunc
		args    map[string]any
		want    string
		isError bool
	}{
		{"miles to kilometres", convertUnits, map[string]any{"value": 1.0, "from": "mi", "to": "km"}, "1.60934 km", false},
		{"pounds to grams", convertUnits, map[string]any{"value": 2.0, "from": "lb", "to": "g"}, "907.185 g", false},
		{"boiling water in Fahrenheit", convertUnits, map[string]any{"value": 100.0, "from": "C", "to": "F"}, "212 F", false},
		{"length to mass is refused", convertUnits, map[string]any{"value": 1.0, "from": "m", "to": "kg"}, "cannot convert m to kg", true},
		{"adding a duration", timeAdd, map[string]any{"time": "2026-11-30T12:00:00Z", "duration": "-36h"}, "2026-11-29T00:00:00Z", false},
		{"a bad duration is explained", timeAdd, map[string]any{"time": "2026-11-30T12:00:00Z", "duration": "soon"}, "duration must look like 90m, -36h or 1h30m", true},
		{"days across a leap day", daysBetween, map[string]any{"from": "2028-02-27", "to": "2028-03-01"}, "3", false},
		{"text statistics", textStats, map[string]any{"text": "Héllo world. Bye!\nAgain?"}, "characters: 24, words: 4, lines: 2, sentences: 3", false},
		{"an unknown zone", timeNow, map[string]any{"timezone": "Mars/Olympus"}, `unknown time zone "Mars/Olympus"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isError := call(t, tt.handler, tt.args)
			if got != tt.want || isError != tt.isError {
				t.Errorf("got %q (error %v), want %q (error %v)", got, isError, tt.want, tt.isError)
			}
		})
	}
}
