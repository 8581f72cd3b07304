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

func TestPinnedToolName(t *testing.T) {
	tests := []struct{ zone, want string }{
		{"Europe/Paris", "time_in_europe_paris"},
		{"America/Argentina/Buenos_Aires", "time_in_america_argentina_buenos_aires"},
		{"Etc/GMT+5", "time_in_etc_gmt_5"},
		{"UTC", "time_in_utc"},
	}
	for _, tt := range tests {
		if got := pinnedToolName(tt.zone); got != tt.want {
			t.Errorf("pinnedToolName(%q) = %q, want %q", tt.zone, got, tt.want)
		}
	}
}

func TestPinTimezoneAddsATool(t *testing.T) {
	s := server.NewMCPServer("test", "1", server.WithToolCapabilities(true))
	pins := &pinnedZones{server: s}
	pin := func(zone string) (string, bool) {
		return call(t, pins.pin, map[string]any{"timezone": zone})
	}
	if got, isError := pin("Europe/Paris"); got != "added time_in_europe_paris" || isError {
		t.Fatalf("first pin: %q (error %v)", got, isError)
	}
	if s.GetTool("time_in_europe_paris") == nil {
		t.Fatal("pinning did not add the tool")
	}
	if got, isError := pin("Europe/Paris"); got != "time_in_europe_paris is pinned already" || isError {
		t.Errorf("second pin: %q (error %v)", got, isError)
	}
	if got, isError := pin("Mars/Olympus"); got != `unknown time zone "Mars/Olympus"` || !isError {
		t.Errorf("unknown zone: %q (error %v)", got, isError)
	}
	zones := []string{"Asia/Tokyo", "Asia/Kolkata", "Africa/Cairo", "America/New_York", "America/Chicago",
		"America/Denver", "America/Los_Angeles", "Australia/Sydney", "Europe/London", "Europe/Berlin",
		"Europe/Madrid", "Europe/Rome", "Pacific/Auckland", "Asia/Singapore", "Asia/Dubai"}
	for _, zone := range zones {
		if _, isError := pin(zone); isError {
			t.Fatalf("pinning %s failed", zone)
		}
	}
	if got, isError := pin("UTC"); got != "16 zones are pinned, the most there can be" || !isError {
		t.Errorf("pin over the bound: %q (error %v)", got, isError)
	}
}
