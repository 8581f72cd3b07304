// Package cachepolicy says what the manager keeps in memory and what it
// reads from the API server when needed. Secrets and ConfigMaps are never
// cached: the controllers watch them metadata-only (to know when a
// referenced one changes) and read the few an MCPServer names directly, so
// memory does not grow with the cluster's Secrets and the process does not
// hold their values. managedFields, which nothing here reads, are dropped
// from every cached object.
package cachepolicy

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply sets the policy on manager options.
func Apply(opts *ctrl.Options) {
	opts.Cache.DefaultTransform = cache.TransformStripManagedFields()
	if opts.Client.Cache == nil {
		opts.Client.Cache = &client.CacheOptions{}
	}
	opts.Client.Cache.DisableFor = append(opts.Client.Cache.DisableFor, &corev1.Secret{}, &corev1.ConfigMap{})
}
