// Package controller holds the operator's reconcilers: MCPServer, which
// runs a server's workload when it has one and discovers a server's tools
// into status, and ToolCollection, which resolves menus over them. They
// meet the catalog only through the API types.
package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/reach"
	"github.com/toolmesh/mcp-operator/internal/tracing"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

const (
	secretIndex    = ".spec.secretRefs"
	configMapIndex = ".spec.configMapRefs"
	// DefaultMaxDescriptionBytes is where untrusted descriptions are cut.
	DefaultMaxDescriptionBytes = 8 << 10
	// DefaultStatusBudget bounds the serialized tools in status, well under
	// etcd's object limit of about 1.5 MiB.
	DefaultStatusBudget = 768 << 10
)

// MCPServerReconciler connects to each MCPServer's endpoint, lists its tools
// and publishes them in status, refreshing on spec.refreshInterval and when
// the server announces a change.
type MCPServerReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// StatusBudget is the most bytes of serialized tools kept in status.
	StatusBudget int
	// Limits bound how much of a tool list is read.
	Limits mcpclient.Limits
	// MaxConcurrentReconciles is how many servers are discovered at once.
	MaxConcurrentReconciles int
	// Egress limits the addresses discovery may dial.
	Egress *mcpclient.EgressPolicy
	// AuthSources hands out the Credentials of servers with spec.auth,
	// keeping their tokens across reconciles (default: one of its own).
	AuthSources *upstreamauth.Sources
	// MaxDescriptionBytes cuts longer tool descriptions (0: no limit).
	MaxDescriptionBytes int
	// ListChangedInterval is the least time between two re-lists a
	// server's notifications trigger (default DefaultListChangedInterval).
	ListChangedInterval time.Duration
	// BridgeImage is the image the init container of a Stdio workload
	// copies the bridge from, at BridgeInImage: the operator's own.
	BridgeImage string
	// WorkloadIngress names the pods each workload's NetworkPolicy admits;
	// without a namespace workloads get none.
	WorkloadIngress WorkloadIngress
	// APIReader reads what the cache does not hold: objects without the
	// operator's label that a workload's name would take over.
	APIReader client.Reader

	// progressGrace is how long a generation's work may take before its
	// in-progress status is written (0: defaultProgressGrace).
	progressGrace time.Duration
	sessions      *mcpclient.Pool
	lastEqual     lastEqualStatuses
	listChanged   *debouncer
	changes       chan event.TypedGenericEvent[*mcpv1alpha1.MCPServer]
}

// +kubebuilder:rbac:groups=mcp.toolmesh.io,resources=mcpservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=mcp.toolmesh.io,resources=mcpservers/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=mcp.toolmesh.io,resources=mcpservers/finalizers,verbs=update

// Reconcile brings one MCPServer's status in line with its server.
func (r *MCPServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	var srv mcpv1alpha1.MCPServer
	if err := r.Get(ctx, req.NamespacedName, &srv); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if srv.Spec.Suspend {
		r.forget(req.String())
		return ctrl.Result{}, nil
	}

	before := srv.DeepCopy()
	var progress *progressWrite
	if startsGeneration(&srv) {
		// Once per generation: Reconciling=True while the slow part runs,
		// written only if it outlasts defaultProgressGrace. A narrowed
		// toolFilter takes its tools out of the menus at once, not at the
		// next discovery.
		markReconciling(&srv)
		if withdrawFiltered(&srv) {
			if _, err := r.commit(ctx, before, &srv); err != nil {
				return afterFailedStatusWrite(ctx, ctrl.Result{}, nil, err)
			}
			before = srv.DeepCopy()
		} else {
			progress = r.writeProgressLater(ctx, before, &srv)
		}
	}
	// inputs is set once discovery of a server without a workload
	// succeeded; unchanged when this version of the object needed no write
	// the last time it was refreshed with them.
	var (
		inputs    *[sha256.Size]byte
		unchanged bool
	)
	defer func() {
		from, err := progress.settle(before, &srv)
		wrote := false
		if err == nil && !unchanged {
			wrote, err = r.commit(ctx, from, &srv)
		}
		if err != nil {
			result, retErr = afterFailedStatusWrite(ctx, result, retErr, err)
			return
		}
		if inputs != nil && !unchanged && !wrote {
			r.lastEqual.remember(req.String(), from.ResourceVersion, *inputs)
		}
		// Every reconcile, not only those that write: a restarted manager
		// or a new leader writes nothing for a server whose status holds,
		// and the MCPServerNotReady alert needs the series.
		exportReady(&srv)
	}()

	if err := validateToolFilter(srv.Spec.ToolFilter); err != nil {
		return r.failed(&srv, err)
	}
	if err := r.reconcileWorkload(ctx, &srv); err != nil {
		return r.failed(&srv, err)
	}
	target, err := reach.Read(ctx, r.Client, &srv, r.Egress, r.AuthSources)
	if err != nil {
		return r.failed(&srv, err)
	}
	discovered, err := r.discover(ctx, req.NamespacedName, target)
	if err != nil {
		return r.failed(&srv, err)
	}
	if digest, ok := discoveryInputs(&srv, discovered); ok {
		inputs, unchanged = &digest, r.lastEqual.matches(req.String(), srv.ResourceVersion, digest)
	}
	if !unchanged {
		r.publish(&srv, before, discovered)
	}
	// A server that says how long its list stays fresh (2026-07-28 ttlMs)
	// is not asked again sooner.
	return ctrl.Result{RequeueAfter: max(wait.Jitter(reach.DurationOr(srv.Spec.RefreshInterval, time.Minute), 0.1), discovered.tools.TTL)}, nil
}

// forget closes what the controller holds for a server it no longer
// reconciles (deleted or suspended).
func (r *MCPServerReconciler) forget(key string) {
	r.sessions.Drop(key)
	r.lastEqual.forget(key)
	r.listChanged.forget(key)
	forgetServerMetrics(key)
}

// discover lists the server's tools, then its prompts and resources
// (discovery.listSurfaces), over a held session, or a short-lived one for
// servers that do not announce list changes. A session that broke
// ends itself and is replaced on the next use; a failed listing alone
// keeps it.
func (r *MCPServerReconciler) discover(ctx context.Context, key types.NamespacedName, target mcpclient.Target) (d discovery, err error) {
	ctx, span := tracing.Tracer().Start(ctx, "discover", trace.WithAttributes(tracing.Server.String(key.String())))
	// Discovery is the operator's own: a server whose tokens are exchanged
	// for its callers' gets the exchanging client's own token here.
	ctx = upstreamauth.WithServiceIdentity(ctx)
	defer func(started time.Time) {
		outcome := "success"
		if err != nil {
			outcome = "failure"
			span.SetStatus(codes.Error, string(mcpclient.KindOf(err)))
		}
		span.End()
		discoveryDuration.WithLabelValues(key.String(), outcome).Observe(time.Since(started).Seconds())
	}(time.Now())
	err = r.sessions.Do(ctx, key.String(), target, func(s *mcpclient.Session) error {
		// Until the next refresh the session needs only its stream.
		defer s.ReleaseIdle()
		d = discovery{info: s.Info()}
		var err error
		if d.tools, err = s.ListTools(ctx, r.Limits); err != nil {
			return err
		}
		d.listSurfaces(ctx, s, r.Limits)
		return nil
	})
	if err != nil {
		return discovery{}, err
	}
	return d, nil
}

// publish writes a successful discovery into status and says what changed.
func (r *MCPServerReconciler) publish(srv, before *mcpv1alpha1.MCPServer, d discovery) {
	list, info := d.tools, d.info
	prefix := srv.Spec.ToolPrefix
	if prefix == "" {
		prefix = srv.Name
	}
	all := publishedTools(prefix, list.Tools, srv.Spec.ToolFilter, r.MaxDescriptionBytes)
	tools, left := withinBudget(all, r.StatusBudget)

	srv.Status.ServerInfo = &mcpv1alpha1.ServerInfo{
		Name: info.Name, Version: info.Version, ProtocolVersion: info.ProtocolVersion,
		Transport: mcpv1alpha1.TransportType(info.Transport), ListChanged: info.ListChanged,
		Completions: info.Capabilities.Completions, ResourceSubscriptions: info.Capabilities.ResourcesSubscribe,
	}
	srv.Status.Prompts = d.keptOr("prompts", d.prompts, before.Status.Prompts)
	srv.Status.Resources = d.keptOr("resources", d.resources, before.Status.Resources)
	srv.Status.ResourceTemplates = d.keptOr("resource templates", d.templates, before.Status.ResourceTemplates)
	srv.Status.Tools = tools
	srv.Status.ToolCount = int32(len(tools))
	srv.Status.ToolsHash = toolsHash(tools)
	switch {
	case left > 0:
		markTruncated(srv, mcpv1alpha1.ReasonStatusBudgetExceeded, fmt.Sprintf(
			"%d of %d tools do not fit the status budget of %d bytes and are left out; narrow spec.toolFilter", left, len(all), r.StatusBudget))
	case list.Truncated:
		markTruncated(srv, mcpv1alpha1.ReasonTooManyTools, fmt.Sprintf(
			"The server offers more tools than the %d tools in %d pages read; the first ones are kept", r.Limits.MaxTools, r.Limits.MaxPages))
	default:
		markTruncated(srv, "", "")
	}
	markWarnings(srv)
	markReady(srv, fmt.Sprintf("Discovered %d tools", len(tools)))

	if !diffTools(before.Status.Tools, tools).empty() || before.Status.LastChangeTime == nil {
		now := metav1.Now()
		srv.Status.LastChangeTime = &now
	}
	if !statusEquality.DeepEqual(before.Status, srv.Status) {
		now := metav1.Now()
		srv.Status.LastSyncTime = &now
	}
}

// failed records why discovery did not work and decides how to retry: a
// spec that cannot work waits for a new spec; a missing Secret for the
// Secret (it is watched); a server that failed, or a workload that is not
// available (its Deployment and pods are watched too), backs off up to
// its refresh interval; anything else (the API server) backs off as an
// error. A failure of the server, or of what the spec names, ends the
// attempt and stalls the generation until an attempt succeeds
// (markFailed); a workload that does not serve leaves the generation
// under way until its Deployment's progress deadline (markWaiting).
func (r *MCPServerReconciler) failed(srv *mcpv1alpha1.MCPServer, err error) (ctrl.Result, error) {
	var (
		spec     *reach.SpecError
		workload *workloadError
	)
	switch {
	case errors.As(err, &workload) && workload.stalled:
		// The Deployment and its pods are watched: a rollout that
		// recovers, or a new spec, brings the server back.
		markRolloutStalled(srv, workload)
		return ctrl.Result{}, nil
	case errors.As(err, &workload) && workload.rolling:
		markRollingOut(srv, workload.message)
		return ctrl.Result{RequeueAfter: wait.Jitter(reach.DurationOr(srv.Spec.RefreshInterval, time.Minute), 0.1)}, nil
	case errors.As(err, &workload):
		markWaiting(srv, workload.reason, workload.message)
		return ctrl.Result{RequeueAfter: retryDelay(srv)}, nil
	case errors.As(err, &spec) && spec.Terminal:
		markStalled(srv, spec.Reason, spec.Message)
		return ctrl.Result{}, reconcile.TerminalError(err)
	case errors.As(err, &spec):
		markFailed(srv, spec.Reason, spec.Message)
		return ctrl.Result{}, nil
	case mcpclient.KindOf(err) != "":
		markFailed(srv, failureReason(mcpclient.KindOf(err)), err.Error())
		return ctrl.Result{RequeueAfter: retryDelay(srv)}, nil
	default:
		// Not the server's fault (for example the API server); retry.
		return ctrl.Result{}, err
	}
}

// failureReason is the Ready reason of a failure of kind: the kind's own
// name, but for a token that spec.auth could not get, refused or not
// (AuthUnavailable, retried with backoff like an unreachable server).
func failureReason(kind mcpclient.ErrorKind) string {
	switch kind {
	case mcpclient.ErrAuthRefused, mcpclient.ErrAuthUnavailable:
		return mcpv1alpha1.ReasonAuthUnavailable
	}
	return string(kind)
}

// retryDelay backs off while a server stays down: as long as it has been
// down (from the Ready condition's transition, so it survives restarts), at
// least a second, at most the refresh interval, so a server that comes back
// is seen within one refresh.
func retryDelay(srv *mcpv1alpha1.MCPServer) time.Duration {
	delay := time.Second
	if ready := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady); ready != nil && ready.Status == metav1.ConditionFalse {
		delay = max(delay, time.Since(ready.LastTransitionTime.Time))
	}
	return min(delay, reach.DurationOr(srv.Spec.RefreshInterval, time.Minute))
}

// commit is the one place status is written, and the Events it calls for
// are emitted once it is: nothing is written, and nothing said, when
// nothing changed, so an unchanged server costs no API writes. It says
// whether it wrote.
func (r *MCPServerReconciler) commit(ctx context.Context, before, srv *mcpv1alpha1.MCPServer) (bool, error) {
	if statusEquality.DeepEqual(before.Status, srv.Status) {
		return false, nil
	}
	if err := writeStatus(ctx, r.Client, srv); err != nil {
		return false, fmt.Errorf("writing status of MCPServer %s: %w", srv.Name, err)
	}
	emit(r.Recorder, srv, serverEvents(before, srv))
	return true, nil
}

// SetupWithManager registers the controller, its indexes and its watches.
func (r *MCPServerReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.StatusBudget == 0 {
		r.StatusBudget = DefaultStatusBudget
	}
	if r.Limits == (mcpclient.Limits{}) {
		r.Limits = mcpclient.DefaultLimits
	}
	if r.ListChangedInterval == 0 {
		r.ListChangedInterval = DefaultListChangedInterval
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.AuthSources == nil {
		r.AuthSources = upstreamauth.NewSources()
	}
	r.changes = make(chan event.TypedGenericEvent[*mcpv1alpha1.MCPServer])
	r.listChanged = newDebouncer(r.ListChangedInterval, func(key string) {
		namespace, name, _ := strings.Cut(key, "/")
		obj := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		select {
		case r.changes <- event.TypedGenericEvent[*mcpv1alpha1.MCPServer]{Object: obj}:
		case <-ctx.Done():
		}
	})
	// Held sessions are those of servers that announce list changes: their
	// notifications, and their loss, trigger a reconcile, debounced.
	r.sessions = &mcpclient.Pool{
		Hold:    mcpclient.ServerInfo.HearsListChanges,
		OnEvent: r.listChanged.notify,
		Owner:   "controller",
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.sessions.CloseAll()
		return nil
	})); err != nil {
		return err
	}

	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &mcpv1alpha1.MCPServer{}, secretIndex, func(o client.Object) []string {
		return reach.SecretsNamed(o.(*mcpv1alpha1.MCPServer))
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &mcpv1alpha1.MCPServer{}, configMapIndex, func(o client.Object) []string {
		return reach.ConfigMapsNamed(o.(*mcpv1alpha1.MCPServer))
	}); err != nil {
		return err
	}

	concurrency := r.MaxConcurrentReconciles
	if concurrency == 0 {
		concurrency = 16
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&mcpv1alpha1.MCPServer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Metadata only: the manager never caches Secret or ConfigMap data;
		// reach.Read reads the few it needs from the API server.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.serversReferencing(secretIndex)), builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.serversReferencing(configMapIndex)), builder.OnlyMetadata).
		// A workload's objects: drift is put back, availability followed.
		// The cache holds only those with the operator's label.
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(serverOfPod)).
		WatchesRawSource(source.Channel(r.changes, &handler.TypedEnqueueRequestForObject[*mcpv1alpha1.MCPServer]{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: concurrency,
			// Failures of the API server are retried from 1s up to every
			// minute; unreachable servers follow retryDelay.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute),
		}).
		Named("mcpserver").
		Complete(r)
}

// serversReferencing maps a Secret or ConfigMap to the MCPServers that name it.
func (r *MCPServerReconciler) serversReferencing(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list mcpv1alpha1.MCPServerList
		if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing MCPServers that reference an object", "index", index, "name", o.GetName())
			return nil
		}
		requests := make([]reconcile.Request, len(list.Items))
		for i, item := range list.Items {
			requests[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&item)}
		}
		return requests
	}
}
