package controller

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// server builds an MCPServer status for the event tables.
func eventServer(gen int64, conditions []metav1.Condition, changed bool, tools ...string) *mcpv1alpha1.MCPServer {
	srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: gen}}
	srv.Status.Conditions = conditions
	if changed {
		srv.Status.LastChangeTime = &metav1.Time{}
	}
	for _, t := range tools {
		srv.Status.Tools = append(srv.Status.Tools, mcpv1alpha1.Tool{Name: t, Hash: "h-" + t})
	}
	return srv
}

// observed sets the generation the status speaks for.
func observed(srv *mcpv1alpha1.MCPServer, gen int64) *mcpv1alpha1.MCPServer {
	srv.Status.ObservedGeneration = gen
	return srv
}

func cond(t, status, reason, message string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: message, ObservedGeneration: gen}
}

func TestServerEvents(t *testing.T) {
	readyTrue := cond("Ready", "True", "ToolsDiscovered", "Discovered 1 tools", 1)
	down := cond("Ready", "False", "Unreachable", "connecting: x refused the connection", 1)
	timeout := cond("Ready", "False", "Timeout", "connecting: x did not answer within 1s", 1)
	reconciling := cond("Reconciling", "True", "Progressing", "Discovering", 2)
	readyTrue2 := cond("Ready", "True", "ToolsDiscovered", "Discovered 1 tools", 2)
	wlPending := cond("WorkloadAvailable", "False", "DeploymentPending", "not reported yet", 1)
	wlPulling := cond("WorkloadAvailable", "False", "PodFailing", "Pod p: ImagePullBackOff", 1)
	wlStarting := cond("WorkloadAvailable", "False", "DeploymentUnavailable", "pods not ready", 1)
	wlScaledDown := cond("WorkloadAvailable", "False", "ScaledToZero", "scaled to 0", 1)
	wlAvailable := cond("WorkloadAvailable", "True", "DeploymentAvailable", "Deployment has minimum availability.", 1)
	wlRolling := cond("WorkloadAvailable", "False", "RolloutInProgress", "Waiting for the rollout to finish", 2)
	wlStuck := cond("WorkloadAvailable", "False", "ProgressDeadlineExceeded", "timed out", 2)
	unavailable := func(w metav1.Condition) metav1.Condition {
		return cond("Ready", "False", "WorkloadUnavailable", "The workload (image i) is not available: "+w.Message, 1)
	}
	insecure := func(s *mcpv1alpha1.MCPServer) *mcpv1alpha1.MCPServer {
		s.Spec.TLS = &mcpv1alpha1.TLSSpec{InsecureSkipVerify: true}
		return s
	}
	insecureIdP := func(s *mcpv1alpha1.MCPServer) *mcpv1alpha1.MCPServer {
		s.Spec.Auth = &mcpv1alpha1.UpstreamAuth{TokenExchange: &mcpv1alpha1.TokenExchange{
			OAuth2Client: mcpv1alpha1.OAuth2Client{TLS: &mcpv1alpha1.TLSSpec{InsecureSkipVerify: true}}}}
		return s
	}
	tests := []struct {
		name          string
		before, after *mcpv1alpha1.MCPServer
		want          []string
	}{
		{"first discovery says how many tools", eventServer(1, nil, false), eventServer(1, []metav1.Condition{readyTrue}, true, "a"),
			[]string{"Normal ToolsDiscovered Discovered 1 tools"}},
		{"nothing changed says nothing", eventServer(1, []metav1.Condition{readyTrue}, true, "a"), eventServer(1, []metav1.Condition{readyTrue}, true, "a"), nil},
		{"a changed list names what changed", eventServer(1, []metav1.Condition{readyTrue}, true, "a", "b"), eventServer(1, []metav1.Condition{readyTrue}, true, "a", "c"),
			[]string{"Normal ToolsChanged Tools changed: added c; removed b"}},
		{"turning unreachable warns once", eventServer(1, []metav1.Condition{readyTrue}, true, "a"), eventServer(1, []metav1.Condition{down}, true, "a"),
			[]string{"Warning Unreachable connecting: x refused the connection"}},
		{"staying unreachable does not warn again", eventServer(1, []metav1.Condition{down}, true, "a"), eventServer(1, []metav1.Condition{down}, true, "a"), nil},
		{"another reason warns again", eventServer(1, []metav1.Condition{down}, true, "a"), eventServer(1, []metav1.Condition{timeout}, true, "a"),
			[]string{"Warning Timeout connecting: x did not answer within 1s"}},
		{"a stalled spec warns once, not twice through Ready",
			eventServer(1, nil, false), eventServer(1, []metav1.Condition{cond("Stalled", "True", "InvalidSpec", "bad glob", 1), cond("Ready", "False", "InvalidSpec", "bad glob", 1)}, false),
			[]string{"Warning InvalidSpec bad glob"}},
		{"insecureSkipVerify warns when a generation starts", insecure(eventServer(2, []metav1.Condition{readyTrue}, true, "a")), insecure(eventServer(2, []metav1.Condition{readyTrue, reconciling}, true, "a")),
			[]string{"Warning InsecureSkipVerify spec.tls.insecureSkipVerify is set: the server's certificate is not verified, so anyone on the path can read and change the traffic"}},
		{"insecureSkipVerify warns when a quick generation's first write is its finished status",
			insecure(observed(eventServer(2, []metav1.Condition{readyTrue}, true, "a"), 1)), insecure(observed(eventServer(2, []metav1.Condition{readyTrue2}, true, "a"), 2)),
			[]string{"Warning InsecureSkipVerify spec.tls.insecureSkipVerify is set: the server's certificate is not verified, so anyone on the path can read and change the traffic"}},
		{"insecureSkipVerify of the token endpoint warns when a generation starts",
			insecureIdP(eventServer(2, []metav1.Condition{readyTrue}, true, "a")), insecureIdP(eventServer(2, []metav1.Condition{readyTrue, reconciling}, true, "a")),
			[]string{"Warning InsecureSkipVerify spec.auth.tokenExchange.tls.insecureSkipVerify is set: the token endpoint's certificate is not verified, so anyone on the path can read the client secret and the tokens"}},
		{"insecureSkipVerify of the token endpoint does not warn on every refresh",
			insecureIdP(observed(eventServer(2, []metav1.Condition{readyTrue2}, true, "a"), 2)), insecureIdP(observed(eventServer(2, []metav1.Condition{readyTrue2}, true, "a"), 2)), nil},
		{"insecureSkipVerify does not warn again when a generation in progress finishes",
			insecure(eventServer(2, []metav1.Condition{readyTrue, reconciling}, true, "a")), insecure(observed(eventServer(2, []metav1.Condition{readyTrue2}, true, "a"), 2)), nil},
		{"insecureSkipVerify does not warn on every refresh",
			insecure(observed(eventServer(2, []metav1.Condition{readyTrue2}, true, "a"), 2)), insecure(observed(eventServer(2, []metav1.Condition{readyTrue2}, true, "a"), 2)), nil},
		{"a failed attempt warns once, through Stalled", eventServer(1, []metav1.Condition{readyTrue}, true, "a"),
			observed(eventServer(1, []metav1.Condition{cond("Stalled", "True", "HTTPError", "answered HTTP 500: request 1", 1), cond("Ready", "False", "HTTPError", "answered HTTP 500: request 1", 1)}, true, "a"), 1),
			[]string{"Warning HTTPError answered HTTP 500: request 1"}},
		{"a retry that fails the same way with other text does not warn again",
			observed(eventServer(1, []metav1.Condition{cond("Stalled", "True", "HTTPError", "answered HTTP 500: request 1", 1), cond("Ready", "False", "HTTPError", "answered HTTP 500: request 1", 1)}, true, "a"), 1),
			observed(eventServer(1, []metav1.Condition{cond("Stalled", "True", "HTTPError", "answered HTTP 500: request 2", 1), cond("Ready", "False", "HTTPError", "answered HTTP 500: request 2", 1)}, true, "a"), 1), nil},
		{"a new generation that stalls another way warns again",
			observed(eventServer(2, []metav1.Condition{cond("Stalled", "True", "InvalidSpec", "bad glob [", 1), cond("Ready", "False", "InvalidSpec", "bad glob [", 1)}, false), 1),
			observed(eventServer(2, []metav1.Condition{cond("Stalled", "True", "InvalidSpec", "bad glob ]", 2), cond("Ready", "False", "InvalidSpec", "bad glob ]", 2)}, false), 2),
			[]string{"Warning InvalidSpec bad glob ]"}},
		{"a server's own text with % is kept as it is", eventServer(1, nil, false), eventServer(1, []metav1.Condition{cond("Ready", "False", "HTTPError", "answered HTTP 500: 100% broken %s %d", 1)}, false),
			[]string{"Warning HTTPError answered HTTP 500: 100% broken %s %d"}},

		// Workloads: a person hears when one is up, goes down, fails, or is
		// removed; not while it starts.
		{"a workload starting up is not a warning", eventServer(1, nil, false), eventServer(1, []metav1.Condition{wlPending, unavailable(wlPending)}, false), nil},
		{"a failing pod warns, in Ready's words", eventServer(1, []metav1.Condition{wlPending, unavailable(wlPending)}, false),
			eventServer(1, []metav1.Condition{wlPulling, unavailable(wlPulling)}, false),
			[]string{"Warning WorkloadUnavailable The workload (image i) is not available: Pod p: ImagePullBackOff"}},
		{"the same failure does not warn again", eventServer(1, []metav1.Condition{wlPulling, unavailable(wlPulling)}, false),
			eventServer(1, []metav1.Condition{wlPulling, unavailable(wlPulling)}, false), nil},
		{"becoming available is said once", eventServer(1, []metav1.Condition{wlPulling, unavailable(wlPulling)}, false),
			eventServer(1, []metav1.Condition{wlAvailable, down}, false),
			[]string{"Normal WorkloadAvailable The workload is available: Deployment has minimum availability.", "Warning Unreachable connecting: x refused the connection"}},
		{"losing availability warns even for a reason that is not a failure", eventServer(1, []metav1.Condition{wlAvailable, readyTrue}, true, "a"),
			eventServer(1, []metav1.Condition{wlStarting, unavailable(wlStarting)}, true, "a"),
			[]string{"Warning WorkloadUnavailable The workload (image i) is not available: pods not ready"}},
		{"scaling to zero is a note, not a warning", eventServer(1, []metav1.Condition{wlAvailable, readyTrue}, true, "a"),
			eventServer(1, []metav1.Condition{wlScaledDown, unavailable(wlScaledDown)}, true, "a"),
			[]string{"Normal ScaledToZero scaled to 0"}},
		{"a rollout while the previous pods serve is not a warning", eventServer(2, []metav1.Condition{wlAvailable, readyTrue}, true, "a"),
			eventServer(2, []metav1.Condition{wlRolling, readyTrue, cond("Reconciling", "True", "RolloutInProgress", "rolling", 2)}, true, "a"), nil},
		{"a finished rollout says the workload is available", eventServer(2, []metav1.Condition{wlRolling, readyTrue}, true, "a"),
			eventServer(2, []metav1.Condition{wlAvailable, readyTrue}, true, "a"),
			[]string{"Normal WorkloadAvailable The workload is available: Deployment has minimum availability."}},
		{"a stuck rollout warns once, through Stalled", eventServer(2, []metav1.Condition{wlRolling, readyTrue}, true, "a"),
			eventServer(2, []metav1.Condition{wlStuck, readyTrue, cond("Stalled", "True", "ProgressDeadlineExceeded", "The workload (image i) did not roll out: timed out", 2)}, true, "a"),
			[]string{"Warning ProgressDeadlineExceeded The workload (image i) did not roll out: timed out"}},
		{"removing the workload says so", eventServer(1, []metav1.Condition{wlAvailable, readyTrue}, true, "a"), eventServer(1, []metav1.Condition{readyTrue}, true, "a"),
			[]string{"Normal WorkloadRemoved spec.workload was removed: its Deployment, Service and NetworkPolicy are deleted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range serverEvents(tt.before, tt.after) {
				got = append(got, e.eventType+" "+e.reason+" "+e.message)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestCollectionEvents(t *testing.T) {
	conflicts := cond("Conflicts", "True", "NameConflicts", "Names offered more than once: a", 1)
	tc := func(conditions []metav1.Condition, conflicted ...string) *mcpv1alpha1.ToolCollection {
		c := &mcpv1alpha1.ToolCollection{}
		c.Status.Conditions = conditions
		for _, name := range conflicted {
			c.Status.Conflicts = append(c.Status.Conflicts, mcpv1alpha1.ToolConflict{Name: name, Servers: []string{"x", "y"}})
		}
		return c
	}
	tests := []struct {
		name          string
		before, after *mcpv1alpha1.ToolCollection
		want          int
	}{
		{"a new conflict warns", tc(nil), tc([]metav1.Condition{conflicts}, "a"), 1},
		{"the same conflict does not warn again", tc([]metav1.Condition{conflicts}, "a"), tc([]metav1.Condition{conflicts}, "a"), 0},
		{"an invalid spec warns", tc(nil), tc([]metav1.Condition{cond("Stalled", "True", "InvalidSpec", "bad", 1)}), 1},
		{"a resolved conflict says nothing", tc([]metav1.Condition{conflicts}, "a"), tc(nil), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := collectionEvents(tt.before, tt.after); len(got) != tt.want {
				t.Errorf("got %d events %v, want %d", len(got), got, tt.want)
			}
		})
	}
}
