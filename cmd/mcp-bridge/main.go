// Command mcp-bridge runs an MCP server that speaks stdio and serves it over
// HTTP to many clients: Streamable HTTP at /mcp, HTTP+SSE at /sse, with
// /healthz and /readyz for probes.
//
//	mcp-bridge --listen :8080 -- COMMAND ARGS...
//	mcp-bridge --install /mcp-bridge/mcp-bridge
//
// The operator copies this static binary into the pods of stdio MCPServers
// (an init container runs --install, since the operator's distroless image
// has no cp) and makes it the server container's command. See internal/bridge for how
// one server process is shared.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/toolmesh/mcp-operator/internal/bridge"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "mcp-bridge: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	listen   string
	addrFile string
	debug    bool
	install  string
	opts     bridge.Options
}

func parseFlags(args []string) (config, error) {
	c := config{opts: bridge.DefaultOptions()}
	fs := flag.NewFlagSet("mcp-bridge", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: mcp-bridge [flags] -- COMMAND [ARGS...]\n       mcp-bridge --install PATH\n\nServes the stdio MCP server COMMAND over Streamable HTTP (/mcp) and HTTP+SSE (/sse).\n\n")
		fs.PrintDefaults()
	}
	o := &c.opts
	fs.StringVar(&c.listen, "listen", ":8080", "address to serve on")
	fs.StringVar(&c.addrFile, "addr-file", "", "write the address served on to this file once listening (useful with port 0)")
	fs.BoolVar(&c.debug, "debug", false, "log debug detail")
	fs.StringVar(&c.install, "install", "", "copy this executable to the given path and exit (how the operator's init container installs the bridge into a pod)")
	fs.IntVar(&o.MaxMessage, "max-message", o.MaxMessage, "longest line accepted from the server's stdout, in bytes; longer ones are refused")
	fs.Int64Var(&o.MaxRequestBody, "max-request-body", o.MaxRequestBody, "largest HTTP request body accepted from a client, in bytes")
	fs.DurationVar(&o.InitTimeout, "init-timeout", o.InitTimeout, "how long the server has to answer initialize before it is restarted")
	fs.DurationVar(&o.ReadyWait, "ready-wait", o.ReadyWait, "how long a request waits for the server to (re)start before failing")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "how long a request waits for its answer before it is cancelled")
	fs.DurationVar(&o.Grace, "grace", o.Grace, "how long the server has to exit after SIGTERM before SIGKILL")
	fs.DurationVar(&o.RestartBackoff, "restart-backoff", o.RestartBackoff, "first wait before restarting an exited server; doubles up to 30s")
	fs.IntVar(&o.MaxSessions, "max-sessions", o.MaxSessions, "most client sessions at once")
	fs.DurationVar(&o.SessionIdle, "session-idle", o.SessionIdle, "end a session with no stream and no request for this long")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	o.Command = fs.Args()
	if c.install != "" {
		if len(o.Command) > 0 {
			return c, errors.New("--install copies the bridge and exits; it takes no server command")
		}
		return c, nil
	}
	if len(o.Command) == 0 {
		fs.Usage()
		return c, errors.New("no MCP server command given after --")
	}
	return c, nil
}

func run() error {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if c.install != "" {
		return install(c.install)
	}
	level := slog.LevelInfo
	if c.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b, err := bridge.New(c.opts, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", c.listen, err)
	}
	if c.addrFile != "" {
		if err := writeAtomically(c.addrFile, ln.Addr().String()); err != nil {
			ln.Close()
			return fmt.Errorf("writing the address file: %w", err)
		}
	}
	log.Info("Listening", "address", ln.Addr().String())
	return serve(b, ln, c.opts.Grace, log)
}

// serve runs the bridge until SIGTERM or SIGINT: then it stops accepting
// connections, stops the server process (SIGTERM, then SIGKILL after
// grace), and returns once that has exited.
func serve(b *bridge.Bridge, ln net.Listener, grace time.Duration, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{
		Handler:           b.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// No ReadTimeout or WriteTimeout: they would end the event streams.
		// The bridge bounds each body read and each write itself.
	}
	closing := &closeSignalling{Listener: ln, closed: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(closing) }()
	ran := make(chan struct{})
	bridgeCtx, stopBridge := context.WithCancel(context.Background())
	defer stopBridge()
	go func() { defer close(ran); b.Run(bridgeCtx) }()

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("Stopping", "signal", context.Cause(ctx))
	case serveErr = <-served:
		log.Error("Serving failed; stopping", "error", serveErr)
	}
	// Shutdown closes the listener at once, then waits for the streams,
	// which end when the bridge ends the sessions after the server exited.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(shutdownCtx) }()
	<-closing.closed // no new connections from here on
	stopBridge()
	<-ran
	if err := <-shutdown; err != nil {
		_ = srv.Close()
	}
	log.Info("Stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// closeSignalling tells when the listener is closed.
type closeSignalling struct {
	net.Listener
	closed  chan struct{}
	closeOn sync.Once
}

func (l *closeSignalling) Close() error {
	err := l.Listener.Close()
	l.closeOn.Do(func() { close(l.closed) })
	return err
}

// writeAtomically writes content to path so that a reader never sees it
// half written.
func writeAtomically(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
