package toolcatalog

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics on the manager's metrics endpoint. Servers are labelled
// namespace/name; no label ever carries an argument or a header.
var (
	toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_tool_calls_total",
		Help: "Tool calls executed through the catalog, by server, tool and outcome.",
	}, []string{"server", "tool", "outcome"})

	toolCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_catalog_tool_call_duration_seconds",
		Help:    "Time from receiving an execute request to answering it, by server.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"server"})

	upstreamErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_upstream_errors_total",
		Help: "Failures reaching MCP servers during tool calls, by server and kind.",
	}, []string{"server", "kind"})

	toolsServed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_tools_served",
		Help: "Tools in the last rendered menu, by menu (global, collection ns/name, server ns/name).",
	}, []string{"menu"})

	busyCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_busy_total",
		Help: "Tool calls turned away (429) because their server had spec.maxConcurrentCalls calls in flight and as many waiting, by server.",
	}, []string{"server"})

	surfaceRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_requests_total",
		Help: "Requests other than tool calls sent to MCP servers through the catalog (prompts/get, resources/read, completion/complete), and resource subscriptions (resources/subscribe, resources/unsubscribe, and each resource a subscriptions/listen asks for), by method and outcome.",
	}, []string{"method", "outcome"})

	relayedRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_relayed_requests_total",
		Help: "Requests MCP servers sent back to the callers of their tool calls (elicitation/create, sampling/createMessage, roots/list, or other), by method and outcome: answered, refused, call_ended.",
	}, []string{"method", "outcome"})

	refusedTools = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_tools_refused",
		Help: "Tools left out of an MCP endpoint because the MCP library refuses their definition, by menu (global or collection ns/name).",
	}, []string{"menu"})

	catalogSessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_sessions",
		Help: "Legacy MCP sessions this replica keeps, by menu (global or collection ns/name): from initialize until DELETE, --catalog-session-idle-timeout without a request or stream, or more than --catalog-max-sessions without a stream. 2026-07-28 has no sessions; see mcp_catalog_streams.",
	}, []string{"menu"})

	streamsWatchedAlone = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcp_catalog_streams_watched_alone_total",
		Help: "Listening streams watched for their client's close by a goroutine of their own, because the replica's epoll watch could not take them (off Linux, or descriptors or fs.epoll.max_user_watches ran out). Each costs a goroutine and its stack while open.",
	})

	endedSessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_sessions_ended_total",
		Help: "Legacy MCP sessions the catalog ended itself, by reason: idle (--catalog-session-idle-timeout) or capacity (past --catalog-max-sessions, the least recently used first). Their ids stay valid.",
	}, []string{"reason"})

	openStreams = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_catalog_streams",
		Help: "Listening streams open on this replica, by kind: legacy (a session's GET) or listen (2026-07-28 subscriptions/listen).",
	}, []string{"kind"})

	refusedStreams = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_streams_refused_total",
		Help: "Listening streams refused, by reason: capacity (--catalog-max-streams, 503) or caller (--catalog-max-caller-streams, 429).",
	}, []string{"reason"})

	resourceWatches = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mcp_catalog_resource_watches",
		Help: "Servers' resources this replica watches for the callers subscribed to them on its streams, each a connection to its server.",
	})

	resourceUpdates = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcp_catalog_resource_updates_total",
		Help: "Updates of resources servers sent this replica, each told to the streams subscribed to the resource.",
	})

	mcpSyncFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcp_catalog_mcp_sync_failures_total",
		Help: "Times an MCP endpoint could not take up a new menu revision (the catalog's cache could not be read).",
	})

	menuRevisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_catalog_menu_renders_total",
		Help: "Menus rendered because their content or the cache changed, by menu.",
	}, []string{"menu"})
)

func init() {
	metrics.Registry.MustRegister(toolCalls, relayedRequests, toolCallDuration, upstreamErrors, toolsServed, menuRevisions, busyCalls, refusedTools, mcpSyncFailures, catalogSessions, endedSessions, streamsWatchedAlone,
		openStreams, refusedStreams, resourceWatches, resourceUpdates,
		policyDecisions, surfaceRequests)
}

// menuLabel names a view for metrics.
func menuLabel(key viewKey) string {
	switch key.kind {
	case collectionView:
		return "collection " + key.namespace + "/" + key.name
	case serverView:
		return "server " + key.namespace + "/" + key.name
	}
	// The namespace a caller filters the global menu by is not a label:
	// any caller could make up thousands of them.
	return "global"
}
