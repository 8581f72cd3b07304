package controller

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conflictRetry is how soon a reconcile whose status write lost a race runs
// again; by then the cache holds the newer object.
const conflictRetry = time.Second

// writeStatus patches obj's status with what changed since before. The
// patch carries before's resourceVersion, so a write by anyone else since
// the read (another controller's condition, a stale cache) fails with a
// conflict instead of being overwritten: a merge patch replaces whole
// lists such as conditions.
func writeStatus(ctx context.Context, c client.Client, before, obj client.Object) error {
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// afterFailedStatusWrite decides what a reconcile returns when its status
// write failed: a conflict runs the reconcile again shortly, on the fresh
// object; anything else is an error that backs off.
func afterFailedStatusWrite(ctx context.Context, result ctrl.Result, reconcileErr, writeErr error) (ctrl.Result, error) {
	if apierrors.IsConflict(writeErr) {
		ctrl.LoggerFrom(ctx).V(1).Info("The object changed since it was read; reconciling again on the fresh one", "after", conflictRetry)
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return result, errors.Join(reconcileErr, writeErr)
}
