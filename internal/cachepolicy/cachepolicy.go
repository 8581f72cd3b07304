// Package cachepolicy says what the manager keeps in memory and what it
// reads from the API server when needed. Secrets and ConfigMaps are never
// cached: the controllers watch them metadata-only (to know when a
// referenced one changes) and read the few an MCPServer names directly, so
// memory does not grow with the cluster's Secrets and the process does not
// hold their values. Deployments, Services, NetworkPolicies and Pods are
// cached only when they carry the operator's managed-by label (those of
// MCPServer workloads), so memory does not grow with every workload in the
// cluster.
// managedFields, which nothing here reads, are dropped from every cached
// object, and the status lists of MCPServers and ToolCollections that grow
// with their tools are kept in arrays of their length: decoding grows a
// list as it reads, and the spare capacity it leaves would stay in memory
// as long as the object is cached.
package cachepolicy

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// ManagedByLabel and ManagedBy mark the objects the operator makes for
// MCPServer workloads; only those are in the cache.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "mcp-operator"
)

// Apply sets the policy on manager options.
func Apply(opts *ctrl.Options) {
	opts.Cache.DefaultTransform = transform
	if opts.Client.Cache == nil {
		opts.Client.Cache = &client.CacheOptions{}
	}
	opts.Client.Cache.DisableFor = append(opts.Client.Cache.DisableFor, &corev1.Secret{}, &corev1.ConfigMap{})

	if opts.Cache.ByObject == nil {
		opts.Cache.ByObject = map[client.Object]cache.ByObject{}
	}
	managed := labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedBy})
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}, &corev1.Pod{}} {
		opts.Cache.ByObject[obj] = cache.ByObject{Label: managed}
	}
}

var stripManagedFields = cache.TransformStripManagedFields()

// transform is what every object the cache keeps goes through: a freshly
// decoded object of its own, changed in place. Running it again on its
// result changes nothing (client-go may transform an object twice).
// Anything else, a tombstone or a metadata-only object, passes as it is
// but for its managedFields.
func transform(in any) (any, error) {
	out, err := stripManagedFields(in)
	if err != nil {
		return nil, err
	}
	switch obj := out.(type) {
	case *mcpv1alpha1.MCPServer:
		obj.Status.Tools = exact(obj.Status.Tools)
	case *mcpv1alpha1.ToolCollection:
		obj.Status.Tools = exact(obj.Status.Tools)
		obj.Status.Conflicts = exact(obj.Status.Conflicts)
		obj.Status.UnapprovedTools = exact(obj.Status.UnapprovedTools)
	}
	return out, nil
}

// exact is s in a new array of its length, or s when it has no spare
// capacity. Clipping it (s[:n:n]) would keep the larger array alive.
func exact[T any](s []T) []T {
	if cap(s) == len(s) {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}
