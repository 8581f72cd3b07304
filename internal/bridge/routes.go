package bridge

import (
	"fmt"
	"net/http"
)

// Handler serves every route of the bridge.
func (b *Bridge) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", b.serveStreamable)
	mux.HandleFunc("/sse", b.serveSSE)
	mux.HandleFunc("/message", b.serveMessage)
	mux.HandleFunc("GET /healthz", b.serveHealthz)
	mux.HandleFunc("GET /readyz", b.serveReadyz)
	return mux
}

// serveHealthz is the liveness probe: the server process is running. It
// fails between an exit and the restart, so a server that keeps exiting
// makes the container restart too, where Kubernetes shows it.
func (b *Bridge) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	h := b.up.health()
	if !h.running {
		http.Error(w, "not running: "+h.notReady, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "ok: the MCP server process (pid %d) is running\n", h.pid)
}

// serveReadyz is the readiness probe: the server answered the bridge's
// initialize, so clients can be served.
func (b *Bridge) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	h := b.up.health()
	if !h.ready {
		http.Error(w, "not ready: "+h.notReady, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "ready: the MCP server (pid %d, start %d) answered initialize\n", h.pid, h.gen)
}
