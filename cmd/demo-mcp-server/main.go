// Command demo-mcp-server is a small, genuinely useful MCP server for `make
// demo` and the samples: date and time arithmetic, unit conversion and text
// statistics. It serves Streamable HTTP at /mcp and HTTP+SSE at /sse, and
// the same tools behind a bearer token at /private/mcp; with --stdio it
// serves them over stdin and stdout instead, as most MCP servers do, for
// mcp-bridge to put on HTTP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata" // time zones without the host's zoneinfo: the image has none

	"github.com/mark3labs/mcp-go/server"
)

func main() {
	if err := run(); err != nil {
		log.Printf("demo-mcp-server: %v", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8765", "address to serve on")
	token := flag.String("token", "demo-token", "bearer token /private/mcp requires")
	stdio := flag.Bool("stdio", false, "serve over stdin and stdout instead of HTTP")
	flag.Parse()

	mcpServer := server.NewMCPServer("demo-tools", "1.0.0", server.WithToolCapabilities(true))
	addTools(mcpServer)
	if *stdio {
		return serveStdio(mcpServer)
	}

	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(mcpServer, server.WithEndpointPath("/mcp")))
	sse := server.NewSSEServer(mcpServer, server.WithBaseURL("http://"+*listen), server.WithKeepAlive(true))
	mux.Handle("/sse", sse.SSEHandler())
	mux.Handle("/message", sse.MessageHandler())
	private := server.NewStreamableHTTPServer(mcpServer, server.WithEndpointPath("/private/mcp"))
	mux.Handle("/private/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+*token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		private.ServeHTTP(w, r)
	}))

	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sse.CloseSessions()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("demo-mcp-server: serving on http://%s (/mcp, /sse, /private/mcp)\n", *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveStdio serves until stdin closes or a signal comes. Stdout carries the
// protocol, so everything else goes to stderr.
func serveStdio(mcpServer *server.MCPServer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Whoever runs a stdio server timestamps its stderr lines.
	log.SetFlags(0)
	stdio := server.NewStdioServer(mcpServer)
	stdio.SetErrorLogger(log.New(os.Stderr, "demo-mcp-server: ", 0))
	log.Printf("demo-mcp-server: serving on stdin and stdout")
	err := stdio.Listen(ctx, os.Stdin, os.Stdout)
	if ctx.Err() != nil {
		log.Printf("demo-mcp-server: stopping: %v", context.Cause(ctx))
		return nil
	}
	return err
}
