package controller

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// ToolCollectionReconciler resolves each ToolCollection's menu from the
// MCPServers of its namespace. It does no network I/O: it reads what the
// MCPServer controller published, from the cache.
type ToolCollectionReconciler struct {
	client.Client
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=mcp.toolmesh.io,resources=toolcollections,verbs=get;list;watch
// +kubebuilder:rbac:groups=mcp.toolmesh.io,resources=toolcollections/status,verbs=get;update

// Reconcile resolves one collection and writes its status if it changed.
func (r *ToolCollectionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	var tc mcpv1alpha1.ToolCollection
	if err := r.Get(ctx, req.NamespacedName, &tc); err != nil {
		if apierrors.IsNotFound(err) {
			toolsWithheld.DeleteLabelValues(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := tc.DeepCopy()
	defer func() {
		if err := r.commit(ctx, before, &tc); err != nil {
			result, retErr = afterFailedStatusWrite(ctx, result, retErr, err)
		}
	}()

	// The policy's outcome is recorded even when the menu cannot be
	// resolved; it is the catalog's to enforce either way.
	policyProblem := collectionPolicy(&tc)
	if err := menu.Validate(&tc.Spec); err != nil {
		collectionStalled(&tc, mcpv1alpha1.ReasonInvalidSpec, err.Error()+"; fix the spec to resume")
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	// The cache's own objects, not copies: a collection is reconciled
	// after every change to a server of its namespace, and copying every
	// server's status (each tool's schemas) on each was most of the work.
	// The menu only reads them, and the status it yields holds strings
	// and slices of its own, never the servers'.
	var servers mcpv1alpha1.MCPServerList
	if err := r.List(ctx, &servers, client.InNamespace(tc.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing MCPServers in %s: %w", tc.Namespace, err)
	}
	m := menu.ForCollection(&tc.Spec, servers.Items)
	collectionStatus(&tc, m, policyProblem)
	withheld := 0
	if tc.Spec.Pinning != nil && tc.Spec.Pinning.Mode != mcpv1alpha1.PinningWarn {
		withheld = len(m.Unapproved)
	}
	toolsWithheld.WithLabelValues(req.String()).Set(float64(withheld))
	return ctrl.Result{}, nil
}

// collectionEvents are the Events a collection's status transition calls
// for: a spec or a policy that turned invalid, and conflicts or
// unapproved tools that changed.
func collectionEvents(before, after *mcpv1alpha1.ToolCollection) []statusEvent {
	var list []statusEvent
	warn := func(c *metav1.Condition) {
		list = append(list, statusEvent{eventType: corev1.EventTypeWarning, reason: c.Reason, action: "Resolve", message: c.Message})
	}
	// A policy that does not compile stalls the collection too, with the
	// same message: PolicyInvalid tells of it, once.
	if c := conditionChanged(before.Status.Conditions, after.Status.Conditions, mcpv1alpha1.ConditionStalled); c != nil &&
		c.Reason != mcpv1alpha1.ReasonInvalidPolicy {
		warn(c)
	}
	if c := conditionChanged(before.Status.Conditions, after.Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid); c != nil {
		warn(c)
	}
	if c := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionConflicts); c != nil &&
		!reflect.DeepEqual(before.Status.Conflicts, after.Status.Conflicts) {
		warn(c)
	}
	if c := conditionChanged(before.Status.Conditions, after.Status.Conditions, mcpv1alpha1.ConditionToolsRefused); c != nil {
		warn(c)
	}
	if c := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionUnapprovedTools); c != nil &&
		!reflect.DeepEqual(before.Status.UnapprovedTools, after.Status.UnapprovedTools) {
		warn(c)
	}
	return list
}

// commit writes status when it changed, then emits the Events the change
// calls for.
func (r *ToolCollectionReconciler) commit(ctx context.Context, before, tc *mcpv1alpha1.ToolCollection) error {
	if equality.Semantic.DeepEqual(before.Status, tc.Status) {
		return nil
	}
	if err := writeStatus(ctx, r.Client, tc); err != nil {
		return fmt.Errorf("writing status of ToolCollection %s: %w", tc.Name, err)
	}
	emit(r.Recorder, tc, collectionEvents(before, tc))
	return nil
}

// SetupWithManager watches collections, and MCPServers whose changes can
// change a menu: created, deleted, relabelled, or their tools or readiness.
func (r *ToolCollectionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&mcpv1alpha1.ToolCollection{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&mcpv1alpha1.MCPServer{}, handler.EnqueueRequestsFromMapFunc(r.collectionsSelecting),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: menuRelevantChange})).
		Named("toolcollection").
		Complete(r)
}

// menuRelevantChange passes MCPServer updates that can change a menu.
func menuRelevantChange(e event.UpdateEvent) bool {
	old, okOld := e.ObjectOld.(*mcpv1alpha1.MCPServer)
	cur, okNew := e.ObjectNew.(*mcpv1alpha1.MCPServer)
	if !okOld || !okNew {
		return true
	}
	return !reflect.DeepEqual(old.Labels, cur.Labels) ||
		old.Status.ToolsHash != cur.Status.ToolsHash ||
		menu.IsReady(old) != menu.IsReady(cur)
}

// collectionsSelecting maps an MCPServer to the collections of its
// namespace that select it. Called for the old and the new object of an
// update, so a relabelled server leaves the collections it left.
func (r *ToolCollectionReconciler) collectionsSelecting(ctx context.Context, o client.Object) []reconcile.Request {
	srv, ok := o.(*mcpv1alpha1.MCPServer)
	if !ok {
		return nil
	}
	var list mcpv1alpha1.ToolCollectionList
	if err := r.List(ctx, &list, client.InNamespace(srv.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ToolCollections", "namespace", srv.Namespace)
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if menu.Selects(&list.Items[i].Spec, srv) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}
