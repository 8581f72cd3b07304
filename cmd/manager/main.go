// Command manager runs the mcp-operator: the MCPServer and ToolCollection
// controllers (on the elected leader) and, on every replica, the catalog.
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
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
)

// version is stamped at build time (-ldflags "-X main.version=...", see
// the Makefile and Dockerfile); "dev" marks a build that was not stamped.
var version = "dev"

// imageRepository is where the operator's image is published; with the
// version it names the image this binary ships in.
const imageRepository = "ghcr.io/toolmesh/mcp-operator"

func main() {
	var (
		metricsAddr     string
		probeAddr       string
		leaderElect     bool
		concurrency     int
		statusBudget    int
		maxToolPages    int
		maxTools        int
		leaderElectNSID string
		catalogOpts     toolcatalog.Options
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address /healthz and /readyz bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one replica runs the controllers.")
	flag.StringVar(&leaderElectNSID, "leader-election-namespace", "", "Namespace of the leader election Lease; defaults to the manager's own.")
	var leaseDuration, renewDeadline, retryPeriod time.Duration
	flag.DurationVar(&leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long followers wait after the leader's last renewal before taking over.")
	flag.DurationVar(&renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it stops leading (and exits); less than the lease duration.")
	flag.DurationVar(&retryPeriod, "leader-election-retry-period", 2*time.Second, "How often candidates try to acquire or renew the lease.")
	flag.IntVar(&concurrency, "mcpserver-concurrency", 16, "How many MCPServers are discovered in parallel.")
	flag.IntVar(&statusBudget, "status-tools-budget", controller.DefaultStatusBudget, "Most bytes of serialized tool definitions kept in one MCPServer's status.")
	flag.IntVar(&maxToolPages, "max-tool-pages", mcpclient.DefaultLimits.MaxPages, "Most tools/list pages read from one server.")
	flag.IntVar(&maxTools, "max-tools", mcpclient.DefaultLimits.MaxTools, "Most tools read from one server.")
	flag.StringVar(&catalogOpts.BindAddress, "catalog-bind-address", ":8090", "Address the catalog (menus and tool execution) listens on.")
	flag.Int64Var(&catalogOpts.MaxRequestBytes, "catalog-max-request-bytes", 4<<20, "Largest execute request body the catalog accepts.")
	flag.IntVar(&catalogOpts.MaxResultText, "catalog-max-result-bytes", 1<<20, "Longest result text returned; longer output is cut with a note.")
	var bridgeImage string
	flag.StringVar(&bridgeImage, "bridge-image", imageRepository+":"+version,
		"Image the init container of Stdio workloads copies mcp-bridge from (at "+controller.BridgeInImage+"): the operator's own image. config/default sets it to the manager's image.")
	var maxDescription int
	flag.IntVar(&maxDescription, "max-description-bytes", controller.DefaultMaxDescriptionBytes, "Tool descriptions longer than this are cut, with a warning in status; 0 keeps them whole.")
	var catalogAuth string
	flag.StringVar(&catalogAuth, "catalog-auth", string(toolcatalog.AuthNone), "How the catalog authorizes callers: none (local runs) or kubernetes (bearer tokens, TokenReview and SubjectAccessReview).")
	flag.DurationVar(&catalogOpts.AuthCacheTTL, "catalog-auth-cache-ttl", 10*time.Second, "How long the catalog reuses a token or permission answer.")
	flag.Func("catalog-allowed-origins", "Comma-separated browser origins the MCP endpoints accept; requests with another Origin get 403.", func(v string) error {
		for _, origin := range strings.Split(v, ",") {
			if origin = strings.TrimSpace(origin); origin != "" {
				catalogOpts.AllowedOrigins = append(catalogOpts.AllowedOrigins, origin)
			}
		}
		return nil
	})
	egress := &mcpclient.EgressPolicy{Deny: mcpclient.DefaultEgressDeny}
	flag.Func("egress-deny-cidrs", "Comma-separated CIDRs discovery and tool calls never dial (default: link-local and cloud metadata addresses; an empty value denies nothing).", func(v string) error {
		prefixes, err := parseCIDRs(v)
		egress.Deny = prefixes
		return err
	})
	flag.Func("egress-allow-cidrs", "Comma-separated CIDRs that are the only ones dialed (default: any not denied).", func(v string) error {
		prefixes, err := parseCIDRs(v)
		egress.Allow = prefixes
		return err
	})
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println("mcp-operator", version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")
	switch toolcatalog.AuthMode(catalogAuth) {
	case toolcatalog.AuthNone, toolcatalog.AuthKubernetes:
		catalogOpts.Auth = toolcatalog.AuthMode(catalogAuth)
	default:
		log.Error(nil, "--catalog-auth must be none or kubernetes", "value", catalogAuth)
		os.Exit(2)
	}

	if bridgeImage == "" {
		log.Error(nil, "--bridge-image must name the operator's image, which Stdio workloads copy mcp-bridge from")
		os.Exit(2)
	}

	if leaderElect && (renewDeadline >= leaseDuration || retryPeriod >= renewDeadline) {
		log.Error(nil, "Leader election needs retry period < renew deadline < lease duration",
			"leaseDuration", leaseDuration, "renewDeadline", renewDeadline, "retryPeriod", retryPeriod)
		os.Exit(2)
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(mcpv1alpha1.AddToScheme(scheme))

	// --kubeconfig is registered by controller-runtime's config package.
	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "mcp-operator.mcp.toolmesh.io",
		LeaderElectionNamespace: leaderElectNSID,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		// The new leader starts at once instead of waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
	}
	cachepolicy.Apply(&mgrOpts)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOpts)
	if err != nil {
		log.Error(err, "Creating the manager")
		os.Exit(1)
	}

	ctx := ctrl.SetupSignalHandler()
	if err := controller.SetupWithManager(ctx, mgr, controller.Options{
		StatusBudget:            statusBudget,
		Limits:                  mcpclient.Limits{MaxPages: maxToolPages, MaxTools: maxTools},
		MaxConcurrentReconciles: concurrency,
		Egress:                  egress,
		MaxDescriptionBytes:     maxDescription,
		BridgeImage:             bridgeImage,
	}); err != nil {
		log.Error(err, "Setting up the controllers")
		os.Exit(1)
	}

	catalogOpts.Log = ctrl.Log.WithName("catalog")
	catalogOpts.Reviewer = mgr.GetClient()
	catalogOpts.Egress = egress
	if err := mgr.Add(&toolcatalog.Runnable{
		Catalog:   toolcatalog.New(mgr.GetClient(), catalogOpts),
		Informers: mgr.GetCache(),
	}); err != nil {
		log.Error(err, "Adding the catalog")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Adding the readiness check")
		os.Exit(1)
	}

	log.Info("Starting the manager", "version", version)
	// SIGTERM cancels ctx: controllers drain, sessions close, the lease is
	// released, then Start returns.
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Running the manager")
		os.Exit(1)
	}
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
