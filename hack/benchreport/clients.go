package main

import (
	"fmt"
	"io"
)

// BenchmarkClients' goals and table: the catalog called by stock clients,
// each against the bare proxy called by the same client.

// stockClients are BenchmarkClients' clients, as it names them.
var stockClients = []string{"mcpclient-stateless", "mcpclient-session", "mcp-go-session", "go-sdk-stateless", "go-sdk-session", "net-http"}

// clientLabels name them in the report.
var clientLabels = map[string]string{
	"mcpclient-stateless": "the project's client (2026-07-28, stateless)",
	"mcpclient-session":   "the project's client (2025-11-25 session)",
	"mcp-go-session":      "mcp-go v1.2.1's client (2025-11-25 session)",
	"go-sdk-stateless":    "go-sdk v1.8.0's client (2026-07-28)",
	"go-sdk-session":      "go-sdk v1.8.0's client (2025-11-25 session)",
	"net-http":            "net/http",
}

// clientCatalogPath is what a client calls through the catalog.
func clientCatalogPath(client string) string {
	if client == "net-http" {
		return "REST execute"
	}
	return "/mcp tools/call"
}

// clientGoal is the catalog path of one client of BenchmarkClients against
// the bare proxy called by that same client: its own floor.
func clientGoal(get getter, client string) (goal, bool) {
	name := "BenchmarkClients/client/" + client
	return ratioGoal(get, fmt.Sprintf("%s, called by %s", clientCatalogPath(client), clientLabels[client]), name, name, "catalog")
}

// writeClientTable is every path of every client, as measured, with what
// makes the floor what it is. It reports how many clients it found and
// how many of them had a catalog-b path.
func writeClientTable(out io.Writer, get getter) (clients, withB int) {
	for _, client := range stockClients {
		if _, ok := get("BenchmarkClients/client/"+client, "direct-p50-µs"); ok {
			clients++
		}
	}
	if clients == 0 {
		return 0, 0
	}
	fmt.Fprintf(out, "\n## Call path, by client\n\n%s\n\n", clientTableNotes)
	fmt.Fprintf(out, "| client | path | p50 µs | added p50 µs | p99 µs | calls/s at 32 | CPU µs/call of the server (direct), the proxy or the manager, sequential / at 32 |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, client := range stockClients {
		name := "BenchmarkClients/client/" + client
		direct, ok := get(name, "direct-p50-µs")
		if !ok {
			continue
		}
		if _, ok := get(name, "catalog-b-p50-µs"); ok {
			withB++
		}
		for _, path := range []string{"direct", "proxy", "catalog", "catalog-b"} {
			row, ok := pathRowOf(get, name, path)
			if !ok {
				continue
			}
			added := ""
			if path != "direct" {
				added = fmt.Sprintf("%+.0f", row.p50-direct)
			}
			fmt.Fprintf(out, "| %s | %s | %.0f | %s | %.0f | %.0f | %s |\n", client, path, row.p50, added, row.p99, row.busy, row.cpu)
		}
	}
	return clients, withB
}

const clientTableNotes = `BenchmarkClients calls one mcp-go server of 11 tools (echo among them)
that runs in a process of its own (./test/bench/echoserver), by each
client, three ways: direct; through the bare proxy (httputil.ReverseProxy,
process of its own, FlushInterval -1, net/http's Transport); and through a
manager that serves the catalog as a follower (a third one, not measured,
runs the controllers): a collection's /mcp, or for net/http REST execute,
where its direct and proxy paths post a 2026-07-28 tools/call. Every path
of a client uses that client at that revision, with the same connection
policy (mcp-go's and go-sdk's sessions share one pool of 64 idle
connections per host; mcpclient's sessions each have their own transport;
its 2025-11-25 sessions keep their list-change stream open, go-sdk's are
opened without one, mcp-go's client opens none), sessions opened before
timing; the rounds interleave every path of every client as
BenchmarkCatalog's do. A path's added latency is its p50 less the same
client's direct p50, so what the client itself costs cancels out. The
direct path's CPU is the MCP server's: what a call of that client's
revision costs an mcp-go server (the manager calls it on a 2025-11-25
session for a caller that hears only the answer, as these clients' calls
do but for a 2026-07-28 caller's and mcpclient's 2025-11-25 session's,
which may be asked; stateless otherwise). catalog-b, when present, is a
manager built from the commit BENCH_AB_REF names (make bench-ab), a second
follower serving the same collection: two builds in the same rounds.
Why this floor and not BenchmarkCatalog's: there the MCP server runs
inside the benchmark process, so a direct call crosses no process and
wakes nothing, while the proxy and the manager each cross the process
boundary twice more; and its direct path uses the project's stateless
client whatever client the catalog path uses. On one quiet machine
(docs/performance-notes.md, "The floor users see"), the server inside the
measuring process made the bare proxy's added p50 42–70 µs higher than
with the server outside (+298–317 against +246–256 µs).`
