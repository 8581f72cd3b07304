package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// defaultProgressGrace is how long a new generation's work may take
// before its in-progress status (Reconciling=True) is written. Most
// discoveries take milliseconds, and for them that write was one of the
// two status writes a generation cost: the API server's most expensive
// request, 5,000 times over for a fleet of 5,000 new servers. kstatus, Flux and Argo CD need no
// write to see a generation in progress: status.observedGeneration lags
// it (a new object's is defaulted to -1). A person or a tool watching
// conditions sees Reconciling=True for work that takes longer than this,
// as before. The grace runs from the reconcile's read of the object, so
// under a loaded API server (a fleet created at once) more generations
// outlast it and are written twice, as all were before.
const defaultProgressGrace = time.Second

// progressWrite writes a generation's in-progress status once its work
// has taken the reconciler's progressGrace, unless the reconcile settles
// it first.
type progressWrite struct {
	timer *time.Timer
	// done is closed once the timer's write has returned.
	done chan struct{}
	// written is the in-progress object as the API server returned it;
	// nil until done, and after a failed write, whose error is err.
	written *mcpv1alpha1.MCPServer
	err     error
}

// writeProgressLater schedules the write of srv's status as it is now.
// The reconcile must call settle before it returns, and before its own
// write: the two are never in flight together, and the timer's write
// never outlives ctx.
func (r *MCPServerReconciler) writeProgressLater(ctx context.Context, before, srv *mcpv1alpha1.MCPServer) *progressWrite {
	p := &progressWrite{done: make(chan struct{})}
	pending := srv.DeepCopy()
	grace := r.progressGrace
	if grace == 0 {
		grace = defaultProgressGrace
	}
	p.timer = time.AfterFunc(grace, func() {
		defer func() {
			// The timer's goroutine is not the reconcile's, whose panics
			// controller-runtime recovers: a panic here is an error of the
			// write, not the manager's end.
			if v := recover(); v != nil {
				p.err = fmt.Errorf("writing the in-progress status panicked: %v", v)
			}
			close(p.done)
		}()
		if _, p.err = r.commit(ctx, before, pending); p.err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("The in-progress status was not written", "reason", p.err.Error())
			return
		}
		p.written = pending
	})
	return p
}

// settle stops the timer, or waits for its write, and returns what the
// reconcile's own write of srv is a change from: the in-progress status
// if it was written (srv takes its metadata, so that the update carries
// the resourceVersion that write left), before otherwise. A conflict is
// returned instead: the object changed since the reconcile read it, so
// its own write would be refused too, and the reconcile is run again on
// the fresh object (the discovery it finished meanwhile is not kept: a
// conflict is rare).
func (p *progressWrite) settle(before, srv *mcpv1alpha1.MCPServer) (*mcpv1alpha1.MCPServer, error) {
	if p == nil || p.timer.Stop() {
		return before, nil
	}
	<-p.done
	switch {
	case p.written != nil:
		p.written.ObjectMeta.DeepCopyInto(&srv.ObjectMeta)
		return p.written, nil
	case apierrors.IsConflict(p.err):
		return nil, p.err
	}
	// Any other failure may be the API server's alone: the reconcile's
	// own write tries, and handles its error.
	return before, nil
}
