package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

const (
	maxBackoff = 30 * time.Second
	// stableRun is how long a child must run for the backoff to start over.
	stableRun = time.Minute
)

// run keeps a child running until ctx ends, restarting it with exponential
// backoff (RestartBackoff doubling up to 30 s, back to RestartBackoff after
// a minute of running). It returns once ctx ended and the child has exited.
func (u *upstream) run(ctx context.Context) {
	stopCloser := context.AfterFunc(ctx, func() { close(u.stopping) })
	defer stopCloser()
	backoff := u.opts.RestartBackoff
	for {
		started := time.Now()
		why := u.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) >= stableRun {
			backoff = u.opts.RestartBackoff
		}
		u.log.Warn("Restarting the MCP server", "in", backoff, "reason", why)
		u.setNotReady(fmt.Sprintf("%s; restarting in %s", why, backoff))
		timer := time.NewTimer(backoff)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// runOnce starts a child, initializes it and serves through it until it
// exits, then fails what was in flight. It returns why the child is gone.
func (u *upstream) runOnce(ctx context.Context) string {
	proc, err := startChild(u.opts.Command, u.opts.MaxMessage, u.log, lineHandlers{line: u.dispatch, oversized: u.oversized})
	if err != nil {
		u.log.Error("Could not start the MCP server", "program", u.opts.Command[0], "error", err)
		return fmt.Sprintf("could not start the MCP server: %v", err)
	}
	gen := u.setStarting(proc)
	// The program only: arguments can hold secrets (Kubernetes expands
	// $(VAR) in them).
	u.log.Info("Started the MCP server", "pid", proc.pid, "program", u.opts.Command[0], "arguments", len(u.opts.Command)-1)
	stopOnShutdown := context.AfterFunc(ctx, func() { proc.stop(u.opts.Grace) })
	defer stopOnShutdown()

	initErr := u.initialize(ctx, proc, gen)
	if initErr != nil && ctx.Err() == nil && proc.running() {
		proc.stop(u.opts.Grace)
	}
	<-proc.exited

	why := fmt.Sprintf("the MCP server process (pid %d) exited (%v)", proc.pid, proc.exitErr)
	switch {
	case ctx.Err() != nil:
		why = "the bridge is shutting down: " + why
		u.log.Info("The MCP server exited", "pid", proc.pid, "status", proc.exitErr.Error())
	case initErr != nil && !errors.Is(initErr, errExited):
		why = fmt.Sprintf("%v; it was stopped (%v)", initErr, proc.exitErr)
	default:
		u.log.Warn("The MCP server exited", "pid", proc.pid, "status", proc.exitErr.Error())
	}
	u.setDown(why, errorReply(codeServerExited, "%s before answering", why))
	return why
}

// initialize performs the MCP handshake with a new child, once for all
// clients, and makes it ready.
func (u *upstream) initialize(ctx context.Context, proc *child, gen uint64) error {
	c := u.registerOwn()
	if err := proc.send(ctx, encodeRequest(c.id, string(mcp.MethodInitialize), initializeParams), nil); err != nil {
		return err
	}
	timer := time.NewTimer(u.opts.InitTimeout)
	defer timer.Stop()
	var r reply
	select {
	case r = <-c.reply:
	case <-timer.C:
		u.finish(c.id, reply{})
		u.log.Error("The MCP server did not answer initialize in time; stopping it to start it again",
			"pid", proc.pid, "timeout", u.opts.InitTimeout)
		return fmt.Errorf("the MCP server did not answer initialize within %s", u.opts.InitTimeout)
	case <-proc.exited:
		return errExited
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.failed() {
		u.log.Error("The MCP server answered initialize with an error; stopping it to start it again", "pid", proc.pid, "error", string(r.err))
		return fmt.Errorf("the MCP server answered initialize with an error: %s", r.err)
	}
	init, err := parseInit(r.result)
	if err != nil {
		u.log.Error("The MCP server's initialize result is unusable; stopping it to start it again", "pid", proc.pid, "error", err)
		return err
	}
	if err := proc.send(ctx, encodeNotification(string(mcp.MethodNotificationInitialized), nil), nil); err != nil {
		return err
	}
	if !u.setReady(gen, init) {
		return errExited
	}
	u.log.Info("The MCP server is ready", "pid", proc.pid, "server", init.name, "revision", init.revision)
	if gen > 1 {
		// Clients listed what the previous process offered.
		for _, method := range init.changed {
			u.sessions.broadcast(encodeNotification(method, nil), -1)
		}
	}
	return nil
}

// initializeParams introduce the bridge to the child. It declares what it
// can relay to a client (relay.go): elicitation in both modes, and
// sampling. Not roots: the child's one session stands for every client,
// and servers keep a session's roots, so one client's would serve all.
var initializeParams, _ = wire.Marshal(map[string]any{
	"protocolVersion": childRevision,
	"capabilities": map[string]any{
		"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
		"sampling":    map[string]any{},
	},
	"clientInfo": map[string]any{"name": "mcp-bridge", "version": Version},
})

func parseInit(result json.RawMessage) (*serverInit, error) {
	type changes struct {
		ListChanged bool `json:"listChanged"`
	}
	var head struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools, Prompts, Resources *changes
		} `json:"capabilities"`
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	init := &serverInit{}
	if err := json.Unmarshal(result, &init.result); err != nil {
		return nil, fmt.Errorf("reading the initialize result: %w", err)
	}
	if err := json.Unmarshal(result, &head); err != nil || head.ProtocolVersion == "" {
		return nil, fmt.Errorf("the initialize result names no protocolVersion: %s", preview(result))
	}
	init.revision, init.name = head.ProtocolVersion, head.ServerInfo.Name
	for method, c := range map[string]*changes{
		mcp.MethodNotificationToolsListChanged:     head.Capabilities.Tools,
		mcp.MethodNotificationPromptsListChanged:   head.Capabilities.Prompts,
		mcp.MethodNotificationResourcesListChanged: head.Capabilities.Resources,
	} {
		if c != nil && c.ListChanged {
			init.changed = append(init.changed, method)
		}
	}
	return init, nil
}
