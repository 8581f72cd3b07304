package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
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
	// MaxDescriptionBytes cuts longer tool descriptions (0: no limit).
	MaxDescriptionBytes int
	// ListChangedInterval is the least time between two re-lists a
	// server's notifications trigger.
	ListChangedInterval time.Duration
	// BridgeImage holds the bridge Stdio workloads run behind (the
	// operator's own image).
	BridgeImage string
}

// SetupWithManager registers both controllers, as the manager runs them.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := (&MCPServerReconciler{
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("mcpserver-controller"),
		StatusBudget:            opts.StatusBudget,
		Limits:                  opts.Limits,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		Egress:                  opts.Egress,
		MaxDescriptionBytes:     opts.MaxDescriptionBytes,
		ListChangedInterval:     opts.ListChangedInterval,
		BridgeImage:             opts.BridgeImage,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	return (&ToolCollectionReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("toolcollection-controller"),
	}).SetupWithManager(mgr)
}
