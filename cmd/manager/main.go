// Command manager runs the mcp-operator: the MCPServer and ToolCollection
// controllers (on the elected leader) and, on every replica, the catalog.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/cachepolicy"
	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
	"github.com/toolmesh/mcp-operator/internal/tracing"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

// imageRepository is where the operator's image is published; with the
// version it names the image this binary ships in.
const imageRepository = "ghcr.io/toolmesh/mcp-operator"

// version is stamped at build time (-ldflags "-X main.version=...", see
// the Makefile and Dockerfile); "dev" marks a build that was not stamped.
var version = "dev"

// config is everything the flags say.
type config struct {
	metricsAddr, probeAddr string
	leaderElect            bool
	leaderElectionNS       string
	leaderElectionID       string
	leaseDuration          time.Duration
	renewDeadline          time.Duration
	retryPeriod            time.Duration
	shutdownTimeout        time.Duration
	controllers            controller.Options
	catalog                toolcatalog.Options
	catalogAuth            string
	oidc                   toolcatalog.OIDCOptions
	oidcCAFile             string
	tokenExchangeURLs      []string
	showVersion            bool
	tracing                bool
	auditLog               string
	zap                    zap.Options
}

func main() { os.Exit(run()) }

// run is the manager's life; it returns the exit code once deferred work
// (flushing traces) is done.
func run() int {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if cfg.showVersion {
		fmt.Println("mcp-operator", version)
		return 0
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&cfg.zap)))
	log := ctrl.Log.WithName("setup")
	applyMemoryLimit(log)

	mgr, err := newManager(cfg)
	if err != nil {
		log.Error(err, "Creating the manager")
		return 1
	}
	ctx := ctrl.SetupSignalHandler()
	stopTracing, err := tracing.Setup(ctx, version, cfg.tracing)
	if err != nil {
		log.Error(err, "Setting up tracing")
		return 1
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			log.Error(err, "Flushing traces")
		}
	}()
	if err := setUp(ctx, mgr, cfg); err != nil {
		log.Error(err, "Setting up the manager")
		return 1
	}
	log.Info("Starting the manager", "version", version)
	// SIGTERM cancels ctx: the catalog drains, controllers stop, sessions
	// close, the lease is released, then Start returns.
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Running the manager")
		return 1
	}
	return 0
}

// parseFlags reads the command line into a config and checks it.
func parseFlags(fs *flag.FlagSet, args []string) (*config, error) {
	cfg := &config{}
	fs.StringVar(&cfg.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":8081", "Address /healthz and /readyz bind to.")
	fs.BoolVar(&cfg.leaderElect, "leader-elect", false, "Elect a leader so that only one replica runs the controllers.")
	fs.StringVar(&cfg.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease; defaults to the manager's own.")
	fs.StringVar(&cfg.leaderElectionID, "leader-election-id", "mcp-operator.mcp.toolmesh.io", "Name of the leader election Lease: one per installation. The chart and config/default create it, so that uninstalling deletes it.")
	fs.DurationVar(&cfg.leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long followers wait after the leader's last renewal before taking over.")
	fs.DurationVar(&cfg.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it stops leading (and exits); less than the lease duration.")
	fs.DurationVar(&cfg.retryPeriod, "leader-election-retry-period", 2*time.Second, "How often candidates try to acquire or renew the lease.")
	fs.DurationVar(&cfg.shutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "How long the manager waits for everything to stop after SIGTERM; more than --catalog-drain-timeout, less than the pod's terminationGracePeriodSeconds.")
	bindControllerFlags(fs, &cfg.controllers)
	bindCatalogFlags(fs, cfg)
	fs.BoolVar(&cfg.showVersion, "version", false, "Print the version and exit.")
	fs.BoolVar(&cfg.tracing, "tracing", false, "Send OpenTelemetry traces over OTLP/HTTP even when no OTEL_EXPORTER_OTLP_ENDPOINT is set (the exporter's default endpoint). With OTEL_EXPORTER_OTLP_ENDPOINT set, traces are sent anyway; the other OTEL_* variables configure them.")
	cfg.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return cfg, cfg.check()
}

func bindControllerFlags(fs *flag.FlagSet, opts *controller.Options) {
	fs.IntVar(&opts.MaxConcurrentReconciles, "mcpserver-concurrency", 16, "How many MCPServers are discovered in parallel.")
	fs.IntVar(&opts.StatusBudget, "status-tools-budget", controller.DefaultStatusBudget, "Most bytes of serialized tool definitions kept in one MCPServer's status.")
	fs.IntVar(&opts.Limits.MaxPages, "max-tool-pages", mcpclient.DefaultLimits.MaxPages, "Most tools/list pages read from one server.")
	fs.IntVar(&opts.Limits.MaxTools, "max-tools", mcpclient.DefaultLimits.MaxTools, "Most tools read from one server.")
	fs.IntVar(&opts.MaxDescriptionBytes, "max-description-bytes", controller.DefaultMaxDescriptionBytes, "Tool descriptions longer than this are cut, with a warning in status; 0 keeps them whole.")
	fs.StringVar(&opts.BridgeImage, "bridge-image", imageRepository+":"+version,
		"Image the init container of Stdio workloads copies mcp-bridge from (at "+controller.BridgeInImage+"): the operator's own image. config/default sets it to the manager's image.")
	bindWorkloadIngressFlags(fs, &opts.WorkloadIngress)
	fs.DurationVar(&opts.ListChangedInterval, "list-changed-interval", controller.DefaultListChangedInterval, "Least time between two re-lists of one server that its list_changed notifications trigger.")
	egress := &mcpclient.EgressPolicy{Deny: mcpclient.DefaultEgressDeny}
	opts.Egress = egress
	fs.Func("egress-deny-cidrs", "Comma-separated CIDRs discovery and tool calls never dial (default: link-local and cloud metadata addresses; an empty value denies nothing).", func(v string) error {
		prefixes, err := parseCIDRs(v)
		egress.Deny = prefixes
		return err
	})
	fs.Func("egress-allow-cidrs", "Comma-separated CIDRs that are the only ones dialed (default: any not denied).", func(v string) error {
		prefixes, err := parseCIDRs(v)
		egress.Allow = prefixes
		return err
	})
}

// bindWorkloadIngressFlags says where the manager's pods are: each
// workload's NetworkPolicy admits only them. The namespace comes from the
// downward API (POD_NAMESPACE), the labels from the manager pod template's
// (config/manager and the chart pass them), since a pod cannot read its
// own labels from its environment and the pod-template-hash among them
// changes with every rollout.
func bindWorkloadIngressFlags(fs *flag.FlagSet, in *controller.WorkloadIngress) {
	fs.StringVar(&in.Namespace, "workload-ingress-from-namespace", os.Getenv("POD_NAMESPACE"),
		"Namespace of the manager's pods, the only pods each workload's NetworkPolicy admits (default: $POD_NAMESPACE, which config/manager sets from the downward API). Empty: workloads get no NetworkPolicy.")
	fs.Func("workload-ingress-from-labels", "Comma-separated key=value labels of the manager's pods: a workload's NetworkPolicy admits only pods in --workload-ingress-from-namespace carrying all of them (default: every pod of that namespace).", func(v string) error {
		set, err := labels.ConvertSelectorToLabelsMap(v)
		in.PodLabels = set
		return err
	})
}

func bindCatalogFlags(fs *flag.FlagSet, cfg *config) {
	opts := &cfg.catalog
	fs.StringVar(&opts.BindAddress, "catalog-bind-address", ":8090", "Address the catalog (menus and tool execution) listens on.")
	fs.Int64Var(&opts.MaxRequestBytes, "catalog-max-request-bytes", 4<<20, "Largest execute request body the catalog accepts.")
	fs.IntVar(&opts.MaxResultText, "catalog-max-result-bytes", 1<<20, "Longest result text returned; longer output is cut with a note.")
	fs.StringVar(&cfg.catalogAuth, "catalog-auth", string(toolcatalog.AuthNone), "How the catalog authenticates callers, who RBAC (SubjectAccessReviews) then authorizes: none (local runs), kubernetes (TokenReview; with --catalog-oidc-issuer-url, that issuer's JWTs are checked by the catalog and every other token by TokenReview) or oidc (only JWTs of --catalog-oidc-issuer-url). See docs/auth.md.")
	fs.DurationVar(&opts.AuthCacheTTL, "catalog-auth-cache-ttl", 10*time.Second, "How long the catalog reuses a token or permission answer (never past a token's exp).")
	bindIdentityFlags(fs, cfg)
	fs.Func("catalog-allowed-origins", "Comma-separated browser origins (scheme://host[:port]) whose cross-origin requests the catalog accepts; same-origin requests and clients that are not browsers always pass.", func(v string) error {
		opts.AllowedOrigins = append(opts.AllowedOrigins, commaList(v)...)
		return nil
	})
	fs.Func("catalog-allowed-hosts", "Comma-separated Host header values (host or host:port) the catalog answers; others get 403. The guard against DNS rebinding: set it when browsers can reach the catalog. Default: any.", func(v string) error {
		opts.AllowedHosts = append(opts.AllowedHosts, commaList(v)...)
		return nil
	})
	fs.DurationVar(&opts.QueueTimeout, "catalog-queue-timeout", 2*time.Second, "Longest a tool call waits for a turn when its server has spec.maxConcurrentCalls calls in flight; then it is answered 429.")
	fs.Float64Var(&opts.CallerRate, "catalog-caller-rate", 0, "Tool calls per second one authenticated caller may make (--catalog-auth=kubernetes); past it, 429. 0 turns the limit off.")
	fs.IntVar(&opts.CallerBurst, "catalog-caller-burst", 0, "Tool calls one caller may make at once above --catalog-caller-rate (default: the rate, rounded up).")
	fs.DurationVar(&opts.DrainTimeout, "catalog-drain-timeout", 20*time.Second, "How long tool calls in flight may finish after SIGTERM before they are cut.")
	fs.DurationVar(&opts.SessionIdleTimeout, "catalog-session-idle-timeout", 5*time.Minute, "How long a legacy MCP session (before 2026-07-28) that no request names and no listening stream holds is kept before the catalog ends it as a DELETE would. Its id stays valid: the client's next request is served as before.")
	fs.IntVar(&opts.MaxSessions, "catalog-max-sessions", 0, "Legacy MCP sessions (before 2026-07-28) with no listening stream open one replica keeps (one with a stream counts against --catalog-max-streams); past it, the least recently used are ended as --catalog-session-idle-timeout would end them, and their ids stay valid. 0: as many as a quarter of the heap limit has room for at 16 KiB a session, 65,536 with no limit.")
	fs.IntVar(&opts.MaxStreams, "catalog-max-streams", 0, "Listening streams (legacy GET streams and 2026-07-28 subscriptions/listen) one replica holds; past it, 503 with Retry-After. 0: the process's file descriptor limit less a tenth of it (at least 1024 less), kept for probes, metrics and connections to servers, and no more than half the heap limit has room for at 16 KiB a stream.")
	fs.IntVar(&opts.MaxCallerStreams, "catalog-max-caller-streams", 0, "Listening streams one authenticated caller may hold on one replica; past it, 429 with Retry-After; agents sharing one identity share it. 0: half of --catalog-max-streams.")
	fs.BoolVar(&opts.Console.Enabled, "console", true, "Serve the console, a web page for people, at /ui/ on the catalog's address. Its data comes from the catalog's API, with the viewer's token and permissions (docs/console.md).")
	fs.BoolVar(&opts.Console.TryIt, "console-try-it", true, "Let the console call tools from a form, for viewers who may execute them. Off, the page offers no form; the execute API is the same either way.")
	fs.StringVar(&cfg.auditLog, "audit-log", "stdout", "Where the audit trail goes, one JSON line per tool call: stdout (the manager's logs go to stderr), stderr, a file path (appended to), or off.")
}

// check refuses flag combinations that cannot work.
func (cfg *config) check() error {
	switch toolcatalog.AuthMode(cfg.catalogAuth) {
	case toolcatalog.AuthNone, toolcatalog.AuthKubernetes, toolcatalog.AuthOIDC:
		cfg.catalog.Auth = toolcatalog.AuthMode(cfg.catalogAuth)
	default:
		return fmt.Errorf("--catalog-auth must be none, kubernetes or oidc, not %q", cfg.catalogAuth)
	}
	if err := cfg.checkIdentity(); err != nil {
		return err
	}
	if cfg.leaderElect && (cfg.renewDeadline >= cfg.leaseDuration || cfg.retryPeriod >= cfg.renewDeadline) {
		return fmt.Errorf("leader election needs retry period (%s) < renew deadline (%s) < lease duration (%s)",
			cfg.retryPeriod, cfg.renewDeadline, cfg.leaseDuration)
	}
	if problems := validation.IsDNS1123Subdomain(cfg.leaderElectionID); cfg.leaderElect && len(problems) > 0 {
		return fmt.Errorf("--leader-election-id %q is not a Lease name: %s", cfg.leaderElectionID, strings.Join(problems, "; "))
	}
	if cfg.shutdownTimeout <= cfg.catalog.DrainTimeout {
		return fmt.Errorf("--graceful-shutdown-timeout (%s) must be longer than --catalog-drain-timeout (%s)", cfg.shutdownTimeout, cfg.catalog.DrainTimeout)
	}
	if cfg.controllers.BridgeImage == "" {
		return errors.New("--bridge-image must name the operator's image, which Stdio workloads copy mcp-bridge from")
	}
	if ns := cfg.controllers.WorkloadIngress.Namespace; ns != "" {
		if problems := validation.IsDNS1123Label(ns); len(problems) > 0 {
			return fmt.Errorf("--workload-ingress-from-namespace %q is not a namespace name: %s", ns, strings.Join(problems, "; "))
		}
	}
	if cfg.catalog.CallerRate < 0 {
		return errors.New("--catalog-caller-rate must not be negative")
	}
	switch {
	case cfg.catalog.SessionIdleTimeout < time.Second:
		return fmt.Errorf("--catalog-session-idle-timeout (%s) must be at least 1s", cfg.catalog.SessionIdleTimeout)
	case cfg.catalog.MaxSessions < 0:
		return errors.New("--catalog-max-sessions must not be negative")
	case cfg.catalog.MaxStreams < 0:
		return errors.New("--catalog-max-streams must not be negative")
	case cfg.catalog.MaxCallerStreams < 0:
		return errors.New("--catalog-max-caller-streams must not be negative")
	}
	// Below one, a server's tools could never be read: every discovery
	// would end at once with nothing.
	if limits := cfg.controllers.Limits; limits.MaxTools < 1 || limits.MaxPages < 1 {
		return fmt.Errorf("--max-tools (%d) and --max-tool-pages (%d) must be at least 1", limits.MaxTools, limits.MaxPages)
	}
	return nil
}

// newManager makes the manager: caching as internal/cachepolicy says,
// leader election as the flags say.
func newManager(cfg *config) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(mcpv1alpha1.AddToScheme(scheme))
	opts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: cfg.metricsAddr},
		HealthProbeBindAddress:  cfg.probeAddr,
		LeaderElection:          cfg.leaderElect,
		LeaderElectionID:        cfg.leaderElectionID,
		LeaderElectionNamespace: cfg.leaderElectionNS,
		LeaseDuration:           &cfg.leaseDuration,
		RenewDeadline:           &cfg.renewDeadline,
		RetryPeriod:             &cfg.retryPeriod,
		GracefulShutdownTimeout: &cfg.shutdownTimeout,
		// The new leader starts at once instead of waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
	}
	cachepolicy.Apply(&opts)
	// --kubeconfig is registered by controller-runtime's config package.
	return ctrl.NewManager(ctrl.GetConfigOrDie(), opts)
}

// setUp adds the controllers, the catalog and the probes to the manager.
func setUp(ctx context.Context, mgr ctrl.Manager, cfg *config) error {
	// One token cache for spec.auth, shared by discovery and tool calls.
	cfg.controllers.AuthSources = upstreamauth.NewSources(cfg.tokenExchangeURLs...)
	if err := controller.SetupWithManager(ctx, mgr, cfg.controllers); err != nil {
		return fmt.Errorf("setting up the controllers: %w", err)
	}
	cfg.catalog.Log = ctrl.Log.WithName("catalog")
	cfg.catalog.Reviewer = mgr.GetClient()
	cfg.catalog.APIReader = mgr.GetAPIReader()
	cfg.catalog.Egress = cfg.controllers.Egress
	cfg.catalog.AuthSources = cfg.controllers.AuthSources
	cfg.catalog.Limits = cfg.controllers.Limits
	// The manager's pods, where answers to relayed questions are forwarded:
	// in this pod's namespace, with the labels the workloads' NetworkPolicies
	// admit when those name the manager's own namespace (else none, and
	// nothing is forwarded); this pod's name and namespace from the
	// downward API.
	peers := toolcatalog.Peers{Self: os.Getenv("POD_NAME"), Namespace: os.Getenv("POD_NAMESPACE"), Reader: mgr.GetAPIReader()}
	if in := cfg.controllers.WorkloadIngress; in.Namespace == peers.Namespace {
		peers.Labels = in.PodLabels
	}
	cfg.catalog.Peers = peers
	if err := cfg.setUpOIDC(); err != nil {
		return err
	}
	audit, err := auditWriter(cfg.auditLog)
	if err != nil {
		return err
	}
	cfg.catalog.Audit = audit
	c, err := toolcatalog.New(mgr.GetClient(), cfg.catalog)
	if err != nil {
		return err
	}
	catalog := &toolcatalog.Runnable{Catalog: c, Cache: mgr.GetCache()}
	if err := mgr.Add(catalog); err != nil {
		return fmt.Errorf("adding the catalog: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	// Ready means: the cache has synced (menus are whole) and the catalog
	// accepts requests; false again as soon as shutdown begins.
	if err := mgr.AddReadyzCheck("cache", cacheSynced(mgr)); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	if err := mgr.AddReadyzCheck("catalog", catalog.Ready); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return nil
}

// cacheSynced is a readiness check that passes once the manager's cache
// has synced every informer it started.
func cacheSynced(mgr ctrl.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 100*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("the cache has not synced yet")
		}
		return nil
	}
}

// auditWriter opens where --audit-log says the audit trail goes.
func auditWriter(where string) (io.Writer, error) {
	switch where {
	case "off", "":
		return nil, nil
	case "stdout":
		return os.Stdout, nil
	case "stderr":
		return os.Stderr, nil
	}
	f, err := os.OpenFile(where, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return f, nil
}

// commaList splits a comma-separated flag value, dropping empty items.
func commaList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseCIDRs reads a comma-separated list of CIDRs.
func parseCIDRs(v string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, field := range strings.Split(v, ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(field)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", field)
		}
		prefixes = append(prefixes, prefix.Masked())
	}
	return prefixes, nil
}
