package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The server dies in the middle of a call: the call fails at once naming the
// exit, /readyz turns false until the server is back, a request sent
// meanwhile waits for the restart and succeeds, and sessions hear that the
// tools may have changed.
func TestAServerKilledMidCallIsRestarted(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	env := []string{"STARTED=" + filepath.Join(dir, "started"), "GATE=" + gate}
	command := append([]string{script("gated.sh")}, everythingCommand(t)...)
	b := startBridge(t, env, []string{"--debug", "--restart-backoff", "100ms"}, command...)
	c, received := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	ctx := timeout(t)

	callDone, pid := killMidCall(t, b, c, received)
	err := <-callDone
	if err == nil || !strings.Contains(err.Error(), "exited (signal: killed)") {
		t.Fatalf("the call in flight ended with %v, want an error naming the exit", err)
	}
	// The restart waits at the gate: the bridge is not ready.
	if status, body := b.probe("/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "exited (signal: killed)") {
		t.Errorf("/readyz while the server is down: %d %s", status, body)
	}

	mark := b.logMark()
	next := make(chan error, 1)
	go func() {
		got, err := callText(ctx, c, "echo", map[string]any{"message": "after the restart"})
		if err == nil && got != "Echo: after the restart" {
			err = errors.New("unexpected answer " + got)
		}
		next <- err
	}()
	b.waitLogAfter(mark, `Waiting for the MCP server to be ready`) // the request waits
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-next; err != nil {
		t.Fatalf("the call sent while the server restarted: %v", err)
	}
	if status, body := b.probe("/readyz"); status != http.StatusOK || b.childPID() == pid {
		t.Errorf("/readyz after the restart: %d %s", status, body)
	}
	received.waitFor(t, mcp.MethodNotificationToolsListChanged)
}

// killMidCall starts a long call, waits until the server has it (its
// first progress), kills the server with SIGKILL and returns where the
// call's outcome comes, and the killed server's pid.
func killMidCall(t *testing.T, b *bridgeProc, c *client.Client, received *notes) (<-chan error, int) {
	t.Helper()
	ctx := timeout(t)
	done := make(chan error, 1)
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "trigger-long-running-operation"
		req.Params.Arguments = map[string]any{"duration": 600, "steps": 600}
		req.Params.Meta = &mcp.Meta{ProgressToken: "long"}
		_, err := c.CallTool(ctx, req)
		done <- err
	}()
	received.waitFor(t, string(mcp.MethodNotificationProgress))
	pid := b.childPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return done, pid
}

// A call sent right after the server died, before the bridge has let go of
// the dead process, was never written to it: it goes to the restarted server
// and succeeds. The call the server was working on fails naming the exit (it
// may have had effects, so it is never sent twice). A process the server
// started keeps its stdout open, which holds the bridge reading it for a
// while after the exit: time to send the call in between.
func TestACallSentRightAfterACrashGoesToTheRestartedServer(t *testing.T) {
	command := append([]string{script("lingering.sh")}, everythingCommand(t)...)
	b := startBridge(t, nil, []string{"--debug", "--restart-backoff", "100ms"}, command...)
	c, received := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	ctx := timeout(t)

	inFlight, pid := killMidCall(t, b, c, received)
	// Only the bridge reaps its child: once the pid is gone, the process is
	// gone and the bridge's wait for it has returned.
	eventually(t, time.Minute, "the killed server to be reaped", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
	// The bridge holds on to the dead server for 2 s while its output
	// stays open: the call below must be sent in that window to prove
	// anything (after it, any call waits for the restart).
	if status, body := b.probe("/readyz"); status != http.StatusOK {
		t.Fatalf("the bridge let go of the dead server before the call was sent: %d %s", status, body)
	}

	got, err := callText(ctx, c, "echo", map[string]any{"message": "right after the crash"})
	if err != nil || got != "Echo: right after the crash" {
		t.Fatalf("the call sent right after the crash answered %q (%v), want the restarted server's echo", got, err)
	}
	if b.childPID() == pid {
		t.Errorf("the call was answered, but the server was not restarted (pid %d)", pid)
	}
	if err := <-inFlight; err == nil || !strings.Contains(err.Error(), "exited (signal: killed) before answering") {
		t.Errorf("the call in flight ended with %v, want an error naming the exit", err)
	}
}

// A server that never answers initialize: /readyz stays false, the log
// says why, and requests fail after --ready-wait with a message that says
// so too.
func TestAServerThatNeverInitializes(t *testing.T) {
	b := startBridge(t, nil, []string{"--init-timeout", "500ms", "--ready-wait", "1s", "--restart-backoff", "100ms"}, script("silent.sh"))
	// Two rounds of starting, waiting and giving up.
	b.waitLog(`(?s)did not answer initialize in time.*did not answer initialize in time`)
	status, body := b.probe("/readyz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "initialize") {
		t.Errorf("/readyz: %d %s", status, body)
	}
	if !strings.Contains(b.log.String(), `msg="The MCP server did not answer initialize in time; stopping it to start it again"`) ||
		!strings.Contains(b.log.String(), `line="silent server starting"`) {
		t.Errorf("the log does not say what happened")
	}
	resp, err := http.Post(b.url("/mcp"), "application/json", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer := readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(answer, "the MCP server is not ready after waiting 1s") ||
		!strings.Contains(answer, "initialize") || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("initialize while the server never initializes: %d %s", resp.StatusCode, answer)
	}
}

// Lines on stdout that are not JSON-RPC, before the server starts and
// between every two of its lines, are logged and skipped.
func TestJunkOnStdoutIsSkipped(t *testing.T) {
	b := startBridge(t, nil, nil, append([]string{script("noisy.sh")}, demoCommand()...)...)
	for _, kind := range []clientKind{streamable, sse} {
		c, _ := connect(t, b, kind, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		if got, err := callText(timeout(t), c, "convert_units", map[string]any{"value": 100, "from": "C", "to": "F"}); err != nil || got != "212 F" {
			t.Errorf("over %s the call answered %q (%v)", kind, got, err)
		}
	}
	for _, line := range []string{`line="Starting server v1.2.3..."`, `line="{not json"`, `line="log: line 1"`, `line=[1,2,3]`} {
		if !strings.Contains(b.log.String(), `msg="Skipped a line on the MCP server's stdout that is not a JSON-RPC message" pid=`) ||
			!strings.Contains(b.log.String(), line) {
			t.Errorf("the log does not show the skipped %s", line)
		}
	}
}

// An answer over --max-message is refused without being kept, the call it
// answered fails at once saying so, and the next call works. Both places an
// id can be are covered: last (TypeScript SDK) and first (mcp-go).
func TestAnOversizedAnswerIsRefused(t *testing.T) {
	echo := func(message string) func(context.Context, *client.Client) error {
		return func(ctx context.Context, c *client.Client) error {
			_, err := callText(ctx, c, "echo", map[string]any{"message": message})
			return err
		}
	}
	tests := []struct {
		name       string
		command    []string
		limit      string
		big, small func(context.Context, *client.Client) error
	}{
		{"id last", everythingCommand(t), "4096", echo(strings.Repeat("x", 10_000)), echo("small")},
		{"id first", demoCommand(), "1024",
			func(ctx context.Context, c *client.Client) error {
				_, err := c.ListTools(ctx, mcp.ListToolsRequest{}) // about 2 KiB
				return err
			},
			func(ctx context.Context, c *client.Client) error {
				_, err := callText(ctx, c, "convert_units", map[string]any{"value": 1, "from": "kg", "to": "g"})
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startBridge(t, nil, []string{"--max-message", tt.limit}, tt.command...)
			c, _ := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			ctx := timeout(t)
			if err := tt.big(ctx, c); err == nil || !strings.Contains(err.Error(), "larger than the bridge's limit of "+tt.limit+" bytes") {
				t.Errorf("the oversized answer gave %v", err)
			}
			b.waitLog(`msg="Refused a line on the MCP server's stdout over the size limit" pid=\d+ bytes=\d+ limit=` + tt.limit)
			if err := tt.small(ctx, c); err != nil {
				t.Errorf("the next call failed: %v", err)
			}
		})
	}
}

// SIGTERM reaches the server, which stops on its own; the bridge exits
// once it has.
func TestSIGTERMIsPassedToTheServer(t *testing.T) {
	b := startBridge(t, nil, nil, demoCommand()...)
	connect(t, b, sse, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	b.stop()
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the bridge exited with %d", code)
	}
	log := b.log.String()
	if !strings.Contains(log, `line="demo-mcp-server: stopping: terminated signal received"`) ||
		!strings.Contains(log, `msg="The MCP server exited" pid=`) || !strings.Contains(log, `status="exit status 0"`) {
		t.Errorf("the server did not stop on SIGTERM:\n%s", log)
	}
}

// A server that ignores SIGTERM is killed after --grace, and nothing of it
// outlives the bridge.
func TestAServerIgnoringSIGTERMIsKilledAfterGrace(t *testing.T) {
	b := startBridge(t, nil, []string{"--grace", "500ms"}, script("stubborn.sh"))
	b.waitLog(`line="stubborn server starting"`)
	pid := b.childPID()
	b.stop()
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the bridge exited with %d", code)
	}
	if !strings.Contains(b.log.String(), `msg="The MCP server did not stop within its grace period; killing it"`) ||
		!strings.Contains(b.log.String(), `status="signal: killed"`) {
		t.Errorf("the log does not show the kill")
	}
	// Its process group is gone: the shell and the sleep it started.
	// (Killed processes are group members until reaped, so this waits.)
	eventually(t, time.Minute, "the server's process group to be gone", func() bool {
		return errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
	})
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// On SIGTERM the bridge stops accepting connections at once, but lives as
// long as its server does.
func TestShutdownStopsAcceptingAndWaitsForTheServer(t *testing.T) {
	b := startBridge(t, nil, []string{"--grace", "10m"}, script("stubborn.sh"))
	b.waitLog(`line="stubborn server starting"`)
	pid := b.childPID()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.waitLog(`msg="Stopping the MCP server" pid=\d+ signal=SIGTERM`)
	if conn, err := net.Dial("tcp", b.addr); err == nil {
		conn.Close()
		t.Error("the bridge accepts connections after SIGTERM")
	}
	select {
	case <-b.exited:
		t.Fatal("the bridge exited while its server still ran")
	default:
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the bridge exited with %d", code)
	}
}
