package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// listTools starts a server over stdio, initializes an MCP session with
// mcp-go's client and pages through tools/list. It keeps each tool as the raw
// JSON the server sent: mcp.Tool would drop schema keys it does not model.
func listTools(ctx context.Context, s server, command, home, configDir string) ([]json.RawMessage, error) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("making home for %s: %w", s.Name, err)
	}
	stdio := transport.NewStdio(command, serverEnv(s, home, configDir), s.Args...)
	if err := stdio.Start(ctx); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Name, err)
	}
	c := client.NewClient(stdio)
	defer c.Close()

	hello := mcp.InitializeRequest{}
	hello.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	hello.Params.ClientInfo = mcp.Implementation{Name: "mcp-operator-search-corpus", Version: "0.1.0"}
	if _, err := c.Initialize(ctx, hello); err != nil {
		return nil, fmt.Errorf("initializing %s: %w", s.Name, err)
	}
	var tools []json.RawMessage
	cursor := ""
	for page := 1; ; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		// Sent on the transport, past the client, to keep the raw result;
		// ids from 1001 stay clear of the few the client used.
		resp, err := stdio.SendRequest(ctx, transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1000 + page)),
			Method: string(mcp.MethodToolsList), Params: params,
		})
		if err != nil {
			return nil, fmt.Errorf("listing tools of %s: %w", s.Name, err)
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("listing tools of %s: %s", s.Name, resp.Error.Message)
		}
		var result struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &result); err != nil {
			return nil, fmt.Errorf("decoding tools of %s: %w", s.Name, err)
		}
		tools = append(tools, result.Tools...)
		if result.NextCursor == "" {
			return tools, nil
		}
		cursor = result.NextCursor
	}
}

// serverEnv gives a server a private HOME and its dummy settings, plus PATH
// so that npm's launchers find node. ${CONFIG_DIR} in a value names the
// directory of servers.json, where files such as a dummy kubeconfig live.
func serverEnv(s server, home, configDir string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := os.Expand(s.Env[k], func(name string) string {
			if name == "CONFIG_DIR" {
				return configDir
			}
			return ""
		})
		env = append(env, k+"="+v)
	}
	return env
}
