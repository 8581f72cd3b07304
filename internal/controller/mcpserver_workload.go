package controller

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/cachepolicy"
	"github.com/toolmesh/mcp-operator/internal/reach"
)

// fieldOwner is the operator's field manager in server-side apply: it owns
// exactly the fields it renders, puts them back when someone changes them,
// and leaves every other field (an HPA's replicas, a sidecar a webhook
// injected, kubectl rollout restart's annotation) to its owner.
const fieldOwner = client.FieldOwner("mcp-operator")

// workloadError stops discovery: the workload cannot serve (yet), or
// serves from pods of an earlier rollout (rolling) while its current spec
// rolls out, or that rollout missed its progress deadline (stalled).
type workloadError struct {
	reason, message  string
	rolling, stalled bool
}

func (e *workloadError) Error() string { return e.message }

// reconcileWorkload runs spec.workload: it applies the NetworkPolicy, the
// Service and the Deployment, reads how available the Deployment is into
// WorkloadAvailable, and returns a *workloadError until it is, so that
// discovery never dials a server that is not up. Without a workload it removes the objects an
// earlier one left.
func (r *MCPServerReconciler) reconcileWorkload(ctx context.Context, srv *mcpv1alpha1.MCPServer) error {
	w := srv.Spec.Workload
	if w == nil {
		if err := r.removeWorkload(ctx, srv); err != nil {
			return err
		}
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionWorkloadAvailable)
		return nil
	}
	deploy, err := r.applyWorkload(ctx, srv)
	if err != nil {
		return err
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(srv.Namespace), client.MatchingLabels(workloadLabels(srv))); err != nil {
		return fmt.Errorf("listing the pods of MCPServer %s: %w", srv.Name, err)
	}
	a := workloadAvailability(deploy, pods.Items)
	setCondition(srv, mcpv1alpha1.ConditionWorkloadAvailable, a.status, a.reason, a.message)
	switch {
	case a.available():
		rolledOut(srv)
		return nil
	case a.reason == mcpv1alpha1.ReasonProgressDeadlineExceeded:
		return &workloadError{reason: a.reason, stalled: true, rolling: a.serving,
			message: fmt.Sprintf("The workload (image %s) did not roll out: %s", w.Image, a.message)}
	case a.serving:
		return &workloadError{reason: a.reason, rolling: true,
			message: fmt.Sprintf("The workload (image %s) is rolling out: %s", w.Image, a.message)}
	}
	return &workloadError{reason: mcpv1alpha1.ReasonWorkloadUnavailable,
		message: fmt.Sprintf("The workload (image %s) is not available: %s", w.Image, a.message)}
}

// applyWorkload brings the NetworkPolicy (when the manager knows its
// namespace), the Service and the Deployment in line with the spec and
// returns the Deployment as the API server stored it. The NetworkPolicy
// comes first, so that no pod of the workload runs without it. A manager
// that does not know its namespace leaves an existing one as it is:
// removing isolation because of a missing setting would be worse than
// keeping a policy for the manager pods it was made for.
func (r *MCPServerReconciler) applyWorkload(ctx context.Context, srv *mcpv1alpha1.MCPServer) (*appsv1.Deployment, error) {
	isolate := r.WorkloadIngress.enabled()
	if isolate {
		if err := r.claim(ctx, srv, &networkingv1.NetworkPolicy{}, "NetworkPolicy"); err != nil {
			return nil, err
		}
	}
	if err := r.claim(ctx, srv, &corev1.Service{}, "Service"); err != nil {
		return nil, err
	}
	if err := r.claim(ctx, srv, &appsv1.Deployment{}, "Deployment"); err != nil {
		return nil, err
	}
	if isolate {
		if err := r.apply(ctx, renderNetworkPolicy(srv, r.WorkloadIngress), &networkingv1ac.NetworkPolicyApplyConfiguration{}, nil, "NetworkPolicy"); err != nil {
			return nil, err
		}
	}
	if err := r.apply(ctx, renderService(srv), &corev1ac.ServiceApplyConfiguration{}, nil, "Service"); err != nil {
		return nil, err
	}
	var stored appsv1.Deployment
	if err := r.apply(ctx, renderDeployment(srv, r.BridgeImage), &appsv1ac.DeploymentApplyConfiguration{}, &stored, "Deployment"); err != nil {
		return nil, err
	}
	return &stored, nil
}

// claim makes sure srv's name is free for an object of kind, or already
// srv's own: the operator never takes over an object someone else made.
func (r *MCPServerReconciler) claim(ctx context.Context, srv *mcpv1alpha1.MCPServer, obj client.Object, kind string) error {
	key := client.ObjectKeyFromObject(srv)
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		// The cache holds only objects with the operator's label; one
		// without it may still be there.
		err = r.APIReader.Get(ctx, key, obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", kind, srv.Name, err)
	case !metav1.IsControlledBy(obj, srv):
		return &workloadError{reason: mcpv1alpha1.ReasonWorkloadConflict, message: fmt.Sprintf(
			"A %s named %s exists and does not belong to this MCPServer; the operator leaves it alone. Rename the MCPServer or remove the %s",
			kind, srv.Name, kind)}
	}
	return nil
}

// apply server-side applies desired (a typed object, converted to the
// apply configuration ac through their common JSON form, without status)
// and decodes what the API server stored into stored, when not nil.
func (r *MCPServerReconciler) apply(ctx context.Context, desired client.Object, ac runtime.ApplyConfiguration, stored any, kind string) error {
	if err := applyConfiguration(desired, ac); err != nil {
		return fmt.Errorf("rendering %s %s: %w", kind, desired.GetName(), err)
	}
	if err := r.Apply(ctx, ac, fieldOwner, client.ForceOwnership); err != nil {
		if apierrors.IsInvalid(err) {
			// The CRD schema cannot check everything a pod spec must be
			// (a mount of an undeclared volume, say); the API server can.
			return &reach.SpecError{Reason: mcpv1alpha1.ReasonInvalidSpec, Terminal: true,
				Message: fmt.Sprintf("The API server refuses the workload's %s: %s; fix spec.workload", kind, err.Error())}
		}
		return fmt.Errorf("applying %s %s: %w", kind, desired.GetName(), err)
	}
	if stored == nil {
		return nil
	}
	raw, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("reading the applied %s %s: %w", kind, desired.GetName(), err)
	}
	return json.Unmarshal(raw, stored)
}

// applyConfiguration fills ac from obj. The typed object leaves out what
// it does not set (pointers, omitempty), except status, which apply must
// not carry.
func applyConfiguration(obj any, ac any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	delete(fields, "status")
	if raw, err = json.Marshal(fields); err != nil {
		return err
	}
	return json.Unmarshal(raw, ac)
}

// removeWorkload deletes the Deployment, the Service and the
// NetworkPolicy an earlier spec.workload made, and nothing else: only
// objects srv controls.
func (r *MCPServerReconciler) removeWorkload(ctx context.Context, srv *mcpv1alpha1.MCPServer) error {
	for _, o := range []struct {
		obj  client.Object
		kind string
	}{{&appsv1.Deployment{}, "Deployment"}, {&corev1.Service{}, "Service"}, {&networkingv1.NetworkPolicy{}, "NetworkPolicy"}} {
		obj := o.obj
		if err := r.Get(ctx, client.ObjectKeyFromObject(srv), obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading %s %s: %w", o.kind, srv.Name, err)
		}
		if !metav1.IsControlledBy(obj, srv) {
			continue
		}
		uid := obj.GetUID()
		if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing %s %s: %w", o.kind, srv.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Removed a workload object the spec no longer asks for", "kind", o.kind)
	}
	return nil
}

// serverOfPod maps a workload's pod to its MCPServer: a pod that cannot
// start changes nothing in its Deployment's status, but the reason it
// gives belongs in the MCPServer's.
func serverOfPod(_ context.Context, pod client.Object) []reconcile.Request {
	labels := pod.GetLabels()
	name := labels[labelInstance]
	if name == "" || labels[labelName] != nameValue || labels[cachepolicy.ManagedByLabel] != cachepolicy.ManagedBy {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: name}}}
}
