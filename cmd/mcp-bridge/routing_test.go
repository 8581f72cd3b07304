package main

import (
	"fmt"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// 100 calls at once from four clients over both transports, each with a
// value of its own: every answer reaches the call that asked.
func TestConcurrentCallsReachTheirCallers(t *testing.T) {
	b := startBridge(t, nil, nil, everythingCommand(t)...)
	var clients []*client.Client
	for _, spec := range []struct {
		kind     clientKind
		revision string
	}{
		{streamable, "2025-11-25"},
		{streamable, "2025-06-18"},
		{sse, ""}, // mcp-go's default: probes server/discover, then initializes
		{sse, "2024-11-05"},
	} {
		c, _ := connect(t, b, spec.kind, spec.revision)
		clients = append(clients, c)
	}
	ctx := timeout(t)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for ci, c := range clients {
		for k := range 25 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				message := fmt.Sprintf("client %d call %d", ci, k)
				got, err := callText(ctx, c, "echo", map[string]any{"message": message})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", message, err)
				} else if got != "Echo: "+message {
					errs <- fmt.Errorf("%s got the answer %q", message, got)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Three clients use the same progress token at once; each gets exactly its
// own call's progress, with its own token.
func TestProgressReachesOnlyItsCaller(t *testing.T) {
	b := startBridge(t, nil, nil, everythingCommand(t)...)
	type caller struct {
		client *client.Client
		notes  *notes
		steps  int
	}
	var callers []caller
	for i, kind := range []clientKind{streamable, sse, streamable} {
		c, n := connect(t, b, kind, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		callers = append(callers, caller{c, n, 2 + i})
	}
	ctx := timeout(t)
	var wg sync.WaitGroup
	for _, c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var req mcp.CallToolRequest
			req.Params.Name = "trigger-long-running-operation"
			req.Params.Arguments = map[string]any{"duration": 0.2 * float64(c.steps), "steps": c.steps}
			req.Params.Meta = &mcp.Meta{ProgressToken: "shared"}
			if _, err := c.client.CallTool(ctx, req); err != nil {
				t.Errorf("the call with %d steps failed: %v", c.steps, err)
			}
		}()
	}
	wg.Wait()
	// A log message goes to every session after the progress: once each
	// client has it, any progress sent its way has arrived too.
	if _, err := callText(ctx, callers[0].client, "toggle-simulated-logging", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range callers {
		c.notes.waitFor(t, string(mcp.MethodNotificationMessage))
		got := c.notes.of(string(mcp.MethodNotificationProgress))
		if len(got) != c.steps {
			t.Errorf("the caller with %d steps got %d progress notifications: %v", c.steps, len(got), got)
			continue
		}
		for i, note := range got {
			p := note.Params.AdditionalFields
			if p["progressToken"] != "shared" || p["total"] != float64(c.steps) || p["progress"] != float64(i+1) {
				t.Errorf("the caller with %d steps got progress %v", c.steps, p)
			}
		}
	}
}

// A tool that adds a tool: every session hears tools/list_changed, on the
// listening stream (Streamable HTTP) or the SSE stream, including the
// operator's own client, and the new tool is listed.
func TestListChangedReachesEverySession(t *testing.T) {
	b := startBridge(t, nil, nil, demoCommand()...)
	streamer, streamerNotes := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	_, sseNotes := connect(t, b, sse, "2024-11-05")
	operatorHeard := make(chan struct{}, 1)
	ctx := timeout(t)
	operator, err := mcpclient.Connect(ctx, mcpclient.Target{URL: b.url("/mcp")}, func() {
		select {
		case operatorHeard <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatalf("the operator's client could not connect: %v", err)
	}
	t.Cleanup(operator.Close)
	if !operator.Info().ListChanged {
		t.Fatal("the operator's client was not told the tools can change")
	}

	if got, err := callText(ctx, streamer, "pin_timezone", map[string]any{"timezone": "Europe/Paris"}); err != nil || got != "added time_in_europe_paris" {
		t.Fatalf("pin_timezone: %q %v", got, err)
	}
	streamerNotes.waitFor(t, mcp.MethodNotificationToolsListChanged)
	sseNotes.waitFor(t, mcp.MethodNotificationToolsListChanged)
	select {
	case <-operatorHeard:
	case <-ctx.Done():
		t.Fatal("the operator's client did not hear tools/list_changed")
	}
	list, err := operator.ListTools(ctx, mcpclient.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range list.Tools {
		found = found || tool.Name == "time_in_europe_paris"
	}
	if !found {
		t.Errorf("the new tool is not listed: %v", list.Tools)
	}
}
