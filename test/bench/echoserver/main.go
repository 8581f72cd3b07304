// Command echoserver is the MCP server the stock-client benchmark calls
// (test/bench BenchmarkClients): an mcp-go Streamable HTTP server with an
// echo tool and -tools more, at /mcp, in a process of its own on loopback,
// so that a call made to it directly crosses a process boundary as one made
// through the bare proxy or the manager does. It prints the address it
// listens on as its first line of output.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	extra := flag.Int("tools", 10, "tools besides echo, each answering its own name")
	flag.Parse()
	s := server.NewMCPServer("bench-echo", "1.0.0", server.WithToolCapabilities(true))
	tools := []server.ServerTool{{
		Tool: mcp.NewToolWithRawSchema("echo", "Echoes the message",
			json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)),
		Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("message", "")), nil
		},
	}}
	for i := range *extra {
		name := fmt.Sprintf("t%04d", i)
		tools = append(tools, server.ServerTool{
			Tool: mcp.Tool{Name: name, RawInputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(name), nil
			},
		})
	}
	s.AddTools(tools...)
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("listening: %v", err)
	}
	fmt.Fprintln(os.Stdout, ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	log.Fatal(srv.Serve(ln))
}
