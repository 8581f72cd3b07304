package main

import (
	"flag"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/toolmesh/mcp-operator/internal/controller"
)

func TestParseCIDRs(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []netip.Prefix
		invalid bool
	}{
		{"a list with spaces", "10.0.0.0/8, fd00::/8", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}, false},
		{"host bits are masked", "169.254.169.254/16", []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, false},
		{"empty denies nothing", "", nil, false},
		{"a bare address is refused", "10.0.0.1", nil, true},
		{"garbage is refused", "ten/8", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCIDRs(tt.value)
			if (err != nil) != tt.invalid {
				t.Fatalf("error %v, want invalid=%v", err, tt.invalid)
			}
			if !tt.invalid && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestVersionIsStamped builds the manager as the Makefile and Dockerfile do
// and checks that --version prints what was stamped.
func TestVersionIsStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v0.0.0-test.1", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("manager --version: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "mcp-operator v0.0.0-test.1" {
		t.Errorf("--version printed %q, want %q", got, "mcp-operator v0.0.0-test.1")
	}
	// Unless told otherwise, stdio workloads copy the bridge from the
	// image of the same release.
	help, _ := exec.Command(bin, "--help").CombinedOutput()
	if want := `(default "ghcr.io/toolmesh/mcp-operator:v0.0.0-test.1")`; !strings.Contains(string(help), want) {
		t.Errorf("--bridge-image does not default to the release's image %s:\n%s", want, help)
	}
}

// The init container of stdio workloads runs the bridge at
// controller.BridgeInImage in the operator's image: the Dockerfile must
// build it statically and put it exactly there.
func TestTheImageHoldsTheBridgeWhereWorkloadsLookForIt(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(raw)
	for _, want := range []string{
		"CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \\\n    go build -trimpath -ldflags=\"-s -w\" -o mcp-bridge ./cmd/mcp-bridge",
		"COPY --from=builder /workspace/mcp-bridge " + controller.BridgeInImage + "\n",
	} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"the defaults", nil, ""},
		{"an unknown auth mode", []string{"--catalog-auth=ldap"}, `--catalog-auth must be none, kubernetes or oidc, not "ldap"`},
		{"a renew deadline past the lease", []string{"--leader-elect", "--leader-election-renew-deadline=20s"}, "leader election needs retry period (2s) < renew deadline (20s) < lease duration (15s)"},
		{"a Lease name no Lease may have", []string{"--leader-elect", "--leader-election-id=Leader_Election"},
			`--leader-election-id "Leader_Election" is not a Lease name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"a drain longer than the shutdown", []string{"--catalog-drain-timeout=40s"}, "--graceful-shutdown-timeout (30s) must be longer than --catalog-drain-timeout (40s)"},
		{"a negative caller rate", []string{"--catalog-caller-rate=-1"}, "--catalog-caller-rate must not be negative"},
		{"an idle timeout that would end sessions between requests", []string{"--catalog-session-idle-timeout=100ms"}, "--catalog-session-idle-timeout (100ms) must be at least 1s"},
		{"a negative stream cap", []string{"--catalog-max-streams=-1"}, "--catalog-max-streams must not be negative"},
		{"a negative caller stream cap", []string{"--catalog-max-caller-streams=-2"}, "--catalog-max-caller-streams must not be negative"},
		{"a negative session cap", []string{"--catalog-max-sessions=-1"}, "--catalog-max-sessions must not be negative"},
		{"oidc without an issuer", []string{"--catalog-auth=oidc"}, "--catalog-auth=oidc needs --catalog-oidc-issuer-url"},
		{"an issuer without authentication", []string{"--catalog-oidc-issuer-url=https://idp.example.com"}, "--catalog-oidc-issuer-url needs --catalog-auth=oidc or kubernetes"},
		{"an issuer without the public URL", []string{"--catalog-auth=kubernetes", "--catalog-oidc-issuer-url=https://idp.example.com"},
			"--catalog-oidc-issuer-url needs --catalog-public-url: the catalog accepts only tokens meant for it"},
		{"a CA without an issuer", []string{"--catalog-auth=kubernetes", "--catalog-oidc-ca-file=/nonexistent"}, "--catalog-oidc-ca-file needs --catalog-oidc-issuer-url"},
		{"a symmetric signing algorithm", []string{"--catalog-oidc-signing-algs=RS256,HS256"},
			`invalid value "RS256,HS256" for flag -catalog-oidc-signing-algs: signing algorithm "HS256" is not accepted: use asymmetric ones (RS256, RS384, RS512, ES256, ES384, ES512, PS256, PS384, PS512, EdDSA)`},
		{"a token exchange URL that is not one", []string{"--token-exchange-urls=https://idp.example.com/token,idp.example.com/token"},
			`invalid value "https://idp.example.com/token,idp.example.com/token" for flag -token-exchange-urls: "idp.example.com/token" is not an absolute http(s) URL`},
		{"oidc as it should be", []string{"--catalog-auth=oidc", "--catalog-oidc-issuer-url=https://idp.example.com", "--catalog-public-url=https://tools.example.com"}, ""},
		{"a console client without an issuer", []string{"--catalog-auth=kubernetes", "--console-oidc-client-id=console"},
			"--console-oidc-client-id needs --catalog-oidc-issuer-url: the console signs in through the provider the catalog trusts"},
		{"a console client of an issuer that is no URL", consoleIssuer("idp.example.com"),
			`--console-oidc-client-id cannot sign in through --catalog-oidc-issuer-url "idp.example.com": it is not an http(s) URL`},
		{"a console client of an issuer with a wildcard host", consoleIssuer("https://*.example.com"),
			`--console-oidc-client-id cannot sign in through --catalog-oidc-issuer-url "https://*.example.com": its host holds a wildcard (*)`},
		{"a console client of an issuer with a wildcard in its host", consoleIssuer("https://exa*mple.com"),
			`--console-oidc-client-id cannot sign in through --catalog-oidc-issuer-url "https://exa*mple.com": its host holds a wildcard (*)`},
		{"a console client of an issuer with an empty port", consoleIssuer("https://example.com:"),
			`--console-oidc-client-id cannot sign in through --catalog-oidc-issuer-url "https://example.com:": its port is empty`},
		{"a console client of an issuer with a password", consoleIssuer("https://user:pw@idp.example.com"),
			`--console-oidc-client-id cannot sign in through --catalog-oidc-issuer-url "https://user:pw@idp.example.com": it holds a user name or password`},
		{"a console client of an issuer on an IPv6 address", consoleIssuer("https://[::1]:8443"),
			`--console-oidc-client-id cannot sign in through --catalog-oidc-issuer-url "https://[::1]:8443": its host is an IPv6 address, which a Content-Security-Policy cannot name: use a DNS name`},
		{"a console client of an issuer with a port and a path", consoleIssuer("https://idp.example.com:8443/realms/tools"), ""},
		{"an issuer on an IPv6 address, without the console's client", []string{"--catalog-auth=oidc", "--catalog-oidc-issuer-url=https://[::1]:8443", "--catalog-public-url=https://tools.example.com"}, ""},
		{"a console client without the console", []string{"--catalog-auth=oidc", "--catalog-oidc-issuer-url=https://idp.example.com", "--catalog-public-url=https://tools.example.com", "--console-oidc-client-id=console", "--console=false"},
			"--console-oidc-client-id needs the console (--console)"},
		{"a console client with no scopes", []string{"--catalog-auth=oidc", "--catalog-oidc-issuer-url=https://idp.example.com", "--catalog-public-url=https://tools.example.com", "--console-oidc-client-id=console", "--console-oidc-scopes="},
			"--console-oidc-scopes needs at least one scope (openid, usually)"},
		{"console scopes without a console client", []string{"--console-oidc-scopes=openid,tools"}, "--console-oidc-scopes needs --console-oidc-client-id"},
		{"console scopes separated by spaces", []string{"--console-oidc-scopes=openid profile"},
			`invalid value "openid profile" for flag -console-oidc-scopes: "openid profile" is not a scope: separate scopes with commas`},
		{"console sign-in as it should be", []string{"--catalog-auth=kubernetes", "--catalog-oidc-issuer-url=https://idp.example.com", "--catalog-public-url=https://tools.example.com", "--console-oidc-client-id=console", "--console-oidc-scopes=openid,tools.read"}, ""},
		{"no tools to read", []string{"--max-tools=0"}, "--max-tools (0) and --max-tool-pages (1000) must be at least 1"},
		{"a negative page limit", []string{"--max-tool-pages=-1"}, "--max-tools (5000) and --max-tool-pages (-1) must be at least 1"},
		{"a namespace that cannot name one", []string{"--workload-ingress-from-namespace=Tools_NS"},
			`--workload-ingress-from-namespace "Tools_NS" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"labels that are not key=value", []string{"--workload-ingress-from-labels=app=a=b"},
			`invalid value "app=a=b" for flag -workload-ingress-from-labels: invalid selector: [app a b]`},
		{"a label value no label may have", []string{"--workload-ingress-from-labels=app=a b"},
			`invalid value "app=a b" for flag -workload-ingress-from-labels: [app]: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(flag.NewFlagSet("manager", flag.ContinueOnError), tt.args)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// consoleIssuer are the flags of console sign-in through issuer, as they
// should be but for the issuer.
func consoleIssuer(issuer string) []string {
	return []string{"--catalog-auth=oidc", "--catalog-oidc-issuer-url=" + issuer, "--catalog-public-url=https://tools.example.com", "--console-oidc-client-id=console"}
}

func TestConsoleSignInFlags(t *testing.T) {
	base := []string{"--catalog-auth=oidc", "--catalog-oidc-issuer-url=https://idp.example.com", "--catalog-public-url=https://tools.example.com", "--console-oidc-client-id=console"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"openid"}},
		{[]string{"--console-oidc-scopes=openid, tools.read"}, []string{"openid", "tools.read"}},
		{[]string{"--console-oidc-scopes=tools.read", "--console-oidc-scopes=openid"}, []string{"tools.read", "openid"}},
	} {
		cfg, err := parseFlags(flag.NewFlagSet("manager", flag.ContinueOnError), append(base, tc.args...))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := cfg.catalog.Console; got.OIDCClientID != "console" || !reflect.DeepEqual(got.OIDCScopes, tc.want) {
			t.Errorf("%v: client %q scopes %q, want console and %q", tc.args, got.OIDCClientID, got.OIDCScopes, tc.want)
		}
	}
}

func TestOIDCCAFile(t *testing.T) {
	base := []string{"--catalog-auth=oidc", "--catalog-oidc-issuer-url=https://idp.example.com", "--catalog-public-url=https://tools.example.com"}
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"/nonexistent/ca.crt": "--catalog-oidc-ca-file: open /nonexistent/ca.crt: no such file or directory",
		notPEM:                "--catalog-oidc-ca-file " + notPEM + " holds no PEM certificate",
	} {
		cfg, err := parseFlags(flag.NewFlagSet("manager", flag.ContinueOnError), append(base, "--catalog-oidc-ca-file="+file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := cfg.setUpOIDC(); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", file, err, want)
		}
	}
	cfg, err := parseFlags(flag.NewFlagSet("manager", flag.ContinueOnError), base)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.setUpOIDC(); err != nil || cfg.catalog.OIDC == nil || cfg.catalog.OIDC.HTTPClient == nil {
		t.Errorf("system roots: got %v and %+v, want the OIDC options with a client", err, cfg.catalog.OIDC)
	}
}

func TestWorkloadIngressFlags(t *testing.T) {
	manager := map[string]string{"app.kubernetes.io/name": "mcp-operator", "app.kubernetes.io/component": "manager"}
	tests := []struct {
		name string
		env  string
		args []string
		want controller.WorkloadIngress
	}{
		{"out of a cluster, nothing: no NetworkPolicy", "", nil, controller.WorkloadIngress{}},
		{"the namespace from POD_NAMESPACE", "mcp-operator-system", nil, controller.WorkloadIngress{Namespace: "mcp-operator-system"}},
		{"the flag over POD_NAMESPACE", "mcp-operator-system", []string{"--workload-ingress-from-namespace=ops"}, controller.WorkloadIngress{Namespace: "ops"}},
		{"the labels, spaces trimmed", "mcp-operator-system",
			[]string{"--workload-ingress-from-labels=app.kubernetes.io/name=mcp-operator, app.kubernetes.io/component=manager"},
			controller.WorkloadIngress{Namespace: "mcp-operator-system", PodLabels: manager}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.env)
			cfg, err := parseFlags(flag.NewFlagSet("manager", flag.ContinueOnError), tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.controllers.WorkloadIngress; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestDeployedArgsAreValid parses the manager's arguments in
// config/manager as the binary would, and checks that the pod's grace
// period outlasts the manager's shutdown, which outlasts the drain.
func TestDeployedArgsAreValid(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var deployment appsv1.Deployment
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.Contains(doc, "kind: Deployment") {
			if err := yaml.Unmarshal([]byte(doc), &deployment); err != nil {
				t.Fatal(err)
			}
		}
	}
	pod := deployment.Spec.Template.Spec
	if len(pod.Containers) == 0 || pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("config/manager has no manager container or no terminationGracePeriodSeconds")
	}
	// The kubelet sets POD_NAMESPACE and POD_NAME from the downward API.
	var fromPod, nameFromPod bool
	for _, e := range pod.Containers[0].Env {
		fromPod = fromPod || e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
		nameFromPod = nameFromPod || e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}
	if !fromPod {
		t.Error("config/manager does not set POD_NAMESPACE from metadata.namespace: workloads would get no NetworkPolicy")
	}
	if !nameFromPod {
		t.Error("config/manager does not set POD_NAME from metadata.name: answers to questions relayed by one replica would not reach it from another")
	}
	var catalogPort bool
	for _, p := range pod.Containers[0].Ports {
		catalogPort = catalogPort || p.Name == "catalog"
	}
	if !catalogPort {
		t.Error("config/manager's container has no port named catalog, where replicas forward answers to each other")
	}
	t.Setenv("POD_NAMESPACE", "mcp-operator-system")
	cfg, err := parseFlags(flag.NewFlagSet("manager", flag.ContinueOnError), pod.Containers[0].Args)
	if err != nil {
		t.Fatalf("config/manager's arguments: %v", err)
	}
	// A label the pods lack would shut the manager out of every workload.
	if got, want := cfg.controllers.WorkloadIngress.PodLabels, deployment.Spec.Template.Labels; !reflect.DeepEqual(got, want) {
		t.Errorf("--workload-ingress-from-labels says %v, the manager's pods carry %v", got, want)
	}
	if grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second; grace <= cfg.shutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds (%s) must outlast --graceful-shutdown-timeout (%s)", grace, cfg.shutdownTimeout)
	}
}

func TestAuditWriter(t *testing.T) {
	for where, want := range map[string]any{"off": nil, "": nil, "stdout": os.Stdout, "stderr": os.Stderr} {
		got, err := auditWriter(where)
		if err != nil || got != want {
			t.Errorf("--audit-log=%q: got %v, %v; want %v", where, got, err, want)
		}
	}

	// A path is appended to, readable by the manager alone: a restart
	// keeps what the trail held.
	path := filepath.Join(t.TempDir(), "audit.log")
	for _, line := range []string{"first\n", "second\n"} {
		w, err := auditWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		_ = w.(*os.File).Close()
	}
	held, err := os.ReadFile(path)
	if err != nil || string(held) != "first\nsecond\n" {
		t.Errorf("the trail holds %q, %v", held, err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("the trail's mode is %v, want 0600", info.Mode().Perm())
	}

	if _, err := auditWriter(filepath.Join(t.TempDir(), "missing", "audit.log")); err == nil || !strings.Contains(err.Error(), "opening the audit log") {
		t.Errorf("a path that cannot be opened: %v", err)
	}
}
