package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

// Options configure the controllers; zero values take the defaults.
type Options struct {
	// StatusBudget is the most bytes of serialized tools in one status.
	StatusBudget int
	// Limits bound how much of one server's tool list is read.
	Limits mcpclient.Limits
	// MaxConcurrentReconciles is how many MCPServers are discovered at once.
	MaxConcurrentReconciles int
	// Egress limits the addresses discovery may dial.
	Egress *mcpclient.EgressPolicy
	// AuthSources hands out the Credentials of servers with spec.auth for
	// the life of the process (default: one of the controller's own).
	AuthSources *upstreamauth.Sources
	// MaxDescriptionBytes cuts longer tool descriptions (0: no limit).
	MaxDescriptionBytes int
	// ListChangedInterval is the least time between two re-lists a
	// server's notifications trigger.
	ListChangedInterval time.Duration
	// BridgeImage holds the bridge Stdio workloads run behind (the
	// operator's own image).
	BridgeImage string
	// WorkloadIngress names the pods each workload's NetworkPolicy admits:
	// the manager's. Without a namespace no NetworkPolicy is made.
	WorkloadIngress WorkloadIngress
}

// WorkloadIngress names the only pods that may reach a workload: those in
// Namespace carrying PodLabels (every pod there, when PodLabels is empty).
// The manager's own pods (discovery and the catalog on every replica) are
// the only clients a workload needs; anyone else would skip the catalog's
// authorization and audit trail.
type WorkloadIngress struct {
	Namespace string
	PodLabels map[string]string
}

// enabled says whether workloads get a NetworkPolicy.
func (w WorkloadIngress) enabled() bool { return w.Namespace != "" }

// SetupWithManager registers both controllers, as the manager runs them.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if !opts.WorkloadIngress.enabled() {
		// Said once, here, rather than on every workload's reconcile.
		mgr.GetLogger().WithName("setup").Info("Workloads get no NetworkPolicy: the manager's namespace is unknown (set POD_NAMESPACE or --workload-ingress-from-namespace); any pod that can reach a workload's Service can call its tools")
	}
	if err := (&MCPServerReconciler{
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("mcpserver-controller"),
		StatusBudget:            opts.StatusBudget,
		Limits:                  opts.Limits,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		Egress:                  opts.Egress,
		AuthSources:             opts.AuthSources,
		MaxDescriptionBytes:     opts.MaxDescriptionBytes,
		ListChangedInterval:     opts.ListChangedInterval,
		BridgeImage:             opts.BridgeImage,
		WorkloadIngress:         opts.WorkloadIngress,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	return (&ToolCollectionReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("toolcollection-controller"),
	}).SetupWithManager(mgr)
}
