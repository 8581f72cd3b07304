package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// bridgeCapabilities are the client capabilities the bridge declares to the
// server: what it relays (elicitation in both modes, sampling), no roots.
var bridgeCapabilities = map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}, "sampling": map[string]any{}}

// listDirect lists a server's tools over stdio with no bridge, introducing
// itself as the bridge does (bridgeCapabilities), and returns the tools/list
// result exactly as the server wrote it.
func listDirect(t *testing.T, command []string) json.RawMessage {
	t.Helper()
	tr := transport.NewStdioWithOptions(command[0], nil, command[1:],
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			return cmd, nil
		}),
		transport.WithCommandLogger(quiet))
	ctx := timeout(t)
	if err := tr.Start(ctx); err != nil {
		t.Fatalf("starting %v: %v", command, err)
	}
	defer tr.Close()
	resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "initialize",
		Params: map[string]any{"protocolVersion": "2025-11-25", "capabilities": bridgeCapabilities, "clientInfo": map[string]any{"name": "direct", "version": "1"}}})
	if err != nil || resp.Error != nil {
		t.Fatalf("initializing %v directly: %v %v", command, err, resp)
	}
	if err := tr.SendNotification(ctx, mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"}}); err != nil {
		t.Fatal(err)
	}
	return rawToolsList(t, ctx, tr)
}

func rawToolsList(t *testing.T, ctx context.Context, tr transport.Interface) json.RawMessage {
	t.Helper()
	resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("raw-tools-list"), Method: "tools/list"})
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/list: %v %v", err, resp)
	}
	return resp.Result
}

type toolList struct {
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
}

// Every tool reaches every client with its definition byte for byte as the
// server wrote it: schemas keep every keyword, order and escape.
// server-everything lists 16 tools to the bridge: its 13, and the three that
// need elicitation (form, URL) and sampling, which the bridge declares.
func TestDiscoveryKeepsEveryToolByteForByte(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		tools   int
		oneTool string
	}{
		{"server-everything", everythingCommand(t), 16, "trigger-sampling-request"},
		{"server-filesystem", filesystemCommand(t, t.TempDir()), 14, "read_text_file"},
		{"demo server", demoCommand(), 6, "pin_timezone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			direct := listDirect(t, tt.command)
			var list toolList
			if err := json.Unmarshal(direct, &list); err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, tool := range list.Tools {
				names[tool.Name] = true
				if len(tool.InputSchema) == 0 {
					t.Errorf("the server sent %s without an input schema", tool.Name)
				}
			}
			if len(list.Tools) != tt.tools || !names[tt.oneTool] {
				t.Fatalf("the server lists %d tools (%v), want %d with %s", len(list.Tools), names, tt.tools, tt.oneTool)
			}

			b := startBridge(t, nil, nil, tt.command...)
			for _, kind := range []clientKind{streamable, sse} {
				c, _ := connect(t, b, kind, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
				bridged := rawToolsList(t, timeout(t), c.GetTransport())
				if string(bridged) != string(direct) {
					t.Errorf("over %s the list differs from the server's at byte %d:\nbridged %s\ndirect  %s", kind, firstDifference(bridged, direct), bridged, direct)
				}
			}
		})
	}
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestCallsThroughTheBridge(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("bridged over stdio"), 0o600); err != nil {
		t.Fatal(err)
	}
	type check struct {
		tool string
		args map[string]any
		want func(string) bool
	}
	is := func(want string) func(string) bool { return func(got string) bool { return got == want } }
	tests := []struct {
		name    string
		command []string
		checks  []check
	}{
		{"server-everything", everythingCommand(t), []check{
			{"echo", map[string]any{"message": "héllo <world>"}, is("Echo: héllo <world>")},
			{"get-sum", map[string]any{"a": 2, "b": 40}, func(got string) bool { return strings.Contains(got, "42") }},
		}},
		{"server-filesystem", filesystemCommand(t, root), []check{
			{"read_text_file", map[string]any{"path": filepath.Join(root, "notes.txt")}, is("bridged over stdio")},
			{"list_directory", map[string]any{"path": root}, is("[FILE] notes.txt")},
		}},
		{"demo server", demoCommand(), []check{
			{"convert_units", map[string]any{"value": 1, "from": "mi", "to": "km"}, is("1.60934 km")},
			{"time_add", map[string]any{"time": "2026-11-30T12:00:00Z", "duration": "-36h"}, is("2026-11-29T00:00:00Z")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startBridge(t, nil, nil, tt.command...)
			for _, kind := range []clientKind{streamable, sse} {
				c, _ := connect(t, b, kind, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
				for _, ch := range tt.checks {
					got, err := callText(timeout(t), c, ch.tool, ch.args)
					if err != nil || !ch.want(got) {
						t.Errorf("over %s, %s answered %q (%v)", kind, ch.tool, got, err)
					}
				}
			}
		})
	}
}
