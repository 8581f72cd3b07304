package main

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The cost of the bridge: one small tool call to the demo server through
// the bridge over each transport, and straight over stdio.
func BenchmarkCall(b *testing.B) {
	for _, kind := range []clientKind{streamable, sse} {
		b.Run("bridge "+string(kind), func(b *testing.B) {
			c, _ := connect(b, startBridge(b, nil, nil, demoCommand()...), kind, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			benchCalls(b, c)
		})
	}
	b.Run("stdio", func(b *testing.B) {
		tr := transport.NewStdioWithOptions(demoBin, nil, []string{"--stdio"},
			transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
				cmd := exec.CommandContext(ctx, command, args...)
				cmd.Env = append(os.Environ(), env...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
				return cmd, nil
			}), transport.WithCommandLogger(quiet))
		c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
		ctx := timeout(b)
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			b.Fatal(err)
		}
		benchCalls(b, c)
	})
}

func benchCalls(b *testing.B, c *client.Client) {
	ctx := context.Background()
	args := map[string]any{"value": 1, "from": "mi", "to": "km"}
	for b.Loop() {
		if got, err := callText(ctx, c, "convert_units", args); err != nil || got != "1.60934 km" {
			b.Fatalf("%q %v", got, err)
		}
	}
}
