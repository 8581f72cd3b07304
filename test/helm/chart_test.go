package helm

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	deploymentKey     = "Deployment.apps " + namespace + "/mcp-operator-controller-manager"
	metricsServiceKey = "Service " + namespace + "/mcp-operator-metrics"
	serviceMonitorKey = "ServiceMonitor.monitoring.coreos.com " + namespace + "/mcp-operator-metrics"
	pdbKey            = "PodDisruptionBudget.policy " + namespace + "/mcp-operator-controller-manager"
)

var everything = filepath.Join("testdata", "values-everything.yaml")

var _ = Describe("The Helm chart", func() {
	It("ships config/crd/bases, the generated role, the alerts and the dashboard byte for byte", func() {
		bases, err := filepath.Glob(filepath.Join(configDir, "crd", "bases", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(bases).NotTo(BeEmpty())
		copies, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(names(copies)).To(Equal(names(bases)), "charts/mcp-operator/crds must hold exactly config/crd/bases: run `make manifests`")
		pairs := map[string]string{
			filepath.Join(configDir, "rbac", "role.yaml"):                    filepath.Join(chartDir, "files", "manager-role.yaml"),
			filepath.Join(configDir, "prometheus", "prometheusrule.yaml"):    filepath.Join(chartDir, "files", "prometheusrule.yaml"),
			filepath.Join(configDir, "prometheus", "grafana-dashboard.json"): filepath.Join(chartDir, "files", "grafana-dashboard.json"),
		}
		for _, base := range bases {
			pairs[base] = filepath.Join(chartDir, "crds", filepath.Base(base))
		}
		for source, copied := range pairs {
			want, err := os.ReadFile(source)
			Expect(err).NotTo(HaveOccurred())
			got, err := os.ReadFile(copied)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal(string(want)), "%s is not a copy of %s: run `make manifests`", copied, source)
		}
	})

	It("renders what config/default renders, field for field, as the API server stores them", func() {
		kustomized := serverDryRun(renderKustomize())
		charted := serverDryRun(renderChart())
		Expect(kustomized).To(HaveKey(deploymentKey), "config/default renders %s", keysOf(kustomized))
		Expect(differences(kustomized, charted)).To(BeEmpty(),
			"charts/mcp-operator and config/default differ: make the chart (values.yaml, templates/) render what config/default does")
	})

	It("reports each difference by object and field", func() {
		// Against config/default itself, changed, so this holds whatever the chart says.
		kustomized := serverDryRun(renderKustomize())
		changed := map[string]*unstructured.Unstructured{}
		for key, obj := range kustomized {
			changed[key] = obj.DeepCopy()
		}
		deployment := changed[deploymentKey]
		container := []string{"spec", "template", "spec", "containers"}
		containers, _, _ := unstructured.NestedSlice(deployment.Object, container...)
		manager := containers[0].(map[string]any)
		args := len(manager["args"].([]any))
		manager["args"] = append(manager["args"].([]any), "--no-such-flag")
		delay, _, _ := unstructured.NestedInt64(manager, "livenessProbe", "initialDelaySeconds")
		Expect(unstructured.SetNestedField(manager, delay+5, "livenessProbe", "initialDelaySeconds")).To(Succeed())
		Expect(unstructured.SetNestedSlice(deployment.Object, containers, container...)).To(Succeed())
		labels := deployment.GetLabels()
		delete(labels, "app.kubernetes.io/component")
		labels["team"] = "x"
		deployment.SetLabels(labels)
		delete(changed, metricsServiceKey)
		delete(changed, "Namespace "+namespace)

		Expect(differences(kustomized, changed)).To(ConsistOf(
			deploymentKey+`: metadata.labels[app.kubernetes.io/component]: config/default has "manager", the chart has ""`,
			deploymentKey+`: metadata.labels[team]: the chart adds "x", config/default has no such label`,
			fmt.Sprintf(`%s: spec.template.spec.containers[0].args[%d]: config/default has nothing, the chart has "--no-such-flag"`, deploymentKey, args),
			fmt.Sprintf(`%s: spec.template.spec.containers[0].livenessProbe.initialDelaySeconds: config/default has %d, the chart has %d`, deploymentKey, delay, delay+5),
			metricsServiceKey+`: config/default has it, the chart does not render it`,
		))
	})

	It("passes helm lint --strict with the default values and with every option set", func() {
		for _, args := range [][]string{{}, {"--values", everything}} {
			out, err := helm(append([]string{"lint", "--strict", chartDir}, args...)...)
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(out).To(ContainSubstring("0 chart(s) failed"))
		}
	})

	It("puts every non-default value where it belongs, in objects the API server accepts", func() {
		charted := serverDryRun(renderChart(everything))
		deployment := charted[deploymentKey]
		Expect(deployment).NotTo(BeNil(), "rendered: %s", keysOf(charted))
		Expect(deployment.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicas", BeEquivalentTo(3))))
		manager := containerOf(deployment)
		Expect(manager).To(HaveKeyWithValue("image", "ghcr.io/toolmesh/mcp-operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
		Expect(manager).To(HaveKeyWithValue("imagePullPolicy", "Always"))
		Expect(manager["args"]).To(ContainElements(
			"--catalog-auth=oidc", "--egress-deny-cidrs=", "--egress-allow-cidrs=10.0.0.0/8,fd00::/8", "--max-tools=500",
			"--catalog-public-url=https://tools.example.com", "--catalog-authorization-servers=https://idp.example.com",
			"--catalog-scopes=tools", "--catalog-oidc-issuer-url=https://idp.example.com", "--catalog-oidc-username-claim=email",
			"--catalog-oidc-username-prefix=idp:", "--catalog-oidc-groups-claim=groups", "--catalog-oidc-groups-prefix=idp:",
			"--catalog-oidc-audiences=mcp-catalog", "--catalog-oidc-ca-file=/etc/mcp-operator/oidc-ca/ca.crt",
			"--token-exchange-urls=https://idp.example.com/oauth/v2/token", "--console-try-it=false",
			"--console-oidc-client-id=mcp-console", "--console-oidc-scopes=openid,tools"))
		Expect(manager["args"]).NotTo(ContainElement("--catalog-auth=kubernetes"))
		Expect(manager["volumeMounts"]).To(ConsistOf(map[string]any{"name": "oidc-ca", "mountPath": "/etc/mcp-operator/oidc-ca", "readOnly": true}))
		volumes, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "volumes")
		Expect(volumes).To(ConsistOf(map[string]any{"name": "oidc-ca", "configMap": map[string]any{"name": "idp-ca", "defaultMode": int64(420),
			"items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}}), "the CA file the flag names comes from the ConfigMap")
		Expect(manager["env"]).To(ContainElements(
			map[string]any{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability:4318"},
			map[string]any{"name": "OTEL_SERVICE_NAME", "value": "mcp-operator"},
			map[string]any{"name": "OTEL_EXPORTER_OTLP_HEADERS", "valueFrom": map[string]any{
				"secretKeyRef": map[string]any{"name": "otel-auth", "key": "headers"}}},
			map[string]any{"name": "GOMEMLIMIT", "value": "400MiB"},
		))

		podLabels, _, _ := unstructured.NestedStringMap(deployment.Object, "spec", "template", "metadata", "labels")
		var ingressFrom []string
		for _, key := range slices.Sorted(maps.Keys(podLabels)) {
			ingressFrom = append(ingressFrom, key+"="+podLabels[key])
		}
		Expect(manager["args"]).To(ContainElement("--workload-ingress-from-labels="+strings.Join(ingressFrom, ",")),
			"workloads' NetworkPolicies admit the manager's own pods")
		spread, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "topologySpreadConstraints")
		Expect(spread).To(ConsistOf(HaveKeyWithValue("labelSelector", map[string]any{"matchLabels": toAny(podLabels)})),
			"a constraint without labelSelector spreads the manager's own pods")

		pdb := charted[pdbKey]
		Expect(pdb).NotTo(BeNil(), "rendered: %s", keysOf(charted))
		Expect(pdb.Object["spec"]).To(HaveKeyWithValue("minAvailable", BeEquivalentTo(1)))
		Expect(pdb.Object["spec"]).To(HaveKeyWithValue("selector", deployment.Object["spec"].(map[string]any)["selector"]))

		monitor := charted[serviceMonitorKey]
		Expect(monitor).NotTo(BeNil(), "rendered: %s", keysOf(charted))
		Expect(monitor.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
		selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
		metricsService := charted[metricsServiceKey]
		for k, v := range selector {
			Expect(metricsService.GetLabels()).To(HaveKeyWithValue(k, v), "the ServiceMonitor selects the metrics Service")
		}
		ports, _, _ := unstructured.NestedSlice(metricsService.Object, "spec", "ports")
		Expect(ports).To(ContainElement(HaveKeyWithValue("name", "metrics")))
		Expect(monitor.Object["spec"]).To(HaveKeyWithValue("endpoints", ConsistOf(HaveKeyWithValue("port", "metrics"))))
	})

	It("renders no ServiceMonitor, PodDisruptionBudget or OTEL_* variable with the default values", func() {
		charted := serverDryRun(renderChart())
		Expect(charted).NotTo(HaveKey(serviceMonitorKey))
		Expect(charted).NotTo(HaveKey(pdbKey))
		Expect(containerOf(charted[deploymentKey])["env"]).To(ConsistOf(HaveKeyWithValue("name", "POD_NAMESPACE"), HaveKeyWithValue("name", "POD_NAME"),
			HaveKeyWithValue("name", "MCP_MEMORY_LIMIT")),
			"only the manager's namespace, which its workloads' NetworkPolicies admit, its pod's name, for relayed answers, and its container's memory limit, for the heap limit")
	})

	It("renders only flags the manager accepts", func() {
		bin := filepath.Join(GinkgoT().TempDir(), "manager")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/toolmesh/mcp-operator/cmd/manager").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		for _, values := range [][]string{nil, {everything}} {
			args := toStrings(containerOf(serverDryRun(renderChart(values...))[deploymentKey])["args"])
			// --version exits after parsing every flag; a flag the manager does
			// not know, or a value it cannot parse, fails the parse first.
			out, err := exec.Command(bin, append(args, "--version")...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "the manager refused %v:\n%s", args, out)
			Expect(string(out)).To(HavePrefix("mcp-operator "))
		}
		out, err = exec.Command(bin, "--egress-allow-cidrs=10.0.0.0", "--version").CombinedOutput()
		Expect(err).To(HaveOccurred(), "a CIDR without a prefix length must fail the parse: %s", out)
	})

	It("refuses values the manager would refuse, naming the value", func() {
		// signIn is console sign-in as it should be: the cases below
		// change it.
		const signIn = "catalog.console.oidcClientID=console,catalog.oidc.issuerURL=https://idp.example.com,catalog.publicURL=https://tools.example.com"
		for _, value := range []string{signIn, signIn + ",catalog.oidc.issuerURL=https://idp.example.com:8443/realms/tools,catalog.console.oidcScopes={openid,tools.read}"} {
			out, err := helm("template", release, chartDir, "--namespace", namespace, "--set", value)
			Expect(err).NotTo(HaveOccurred(), "--set %s:\n%s", value, out)
		}
		for value, path := range map[string]string{
			"catalog.auth=oauth":                             "/catalog/auth",
			"catalog.auth=oidc":                              "issuerURL",
			"catalog.oidc.issuerURL=https://idp.example.com": "publicURL",
			"tokenExchangeURLs={idp.example.com/token}":      "/tokenExchangeURLs/0",
			"egress.allowCIDRs={10.0.0.1}":                   "/egress/allowCIDRs/0",
			"tracing.sampler=sometimes":                      "/tracing/sampler",
			"extraArgs={catalog-auth=none}":                  "/extraArgs/0",
			"podDisruptionBudget.enable=true":                "enable",
			// Console sign-in: a client needs the console and the provider
			// the catalog trusts, at an issuer the page's CSP can name;
			// scopes need a client, and are printable ASCII but space,
			// comma (the flag's separator), quote and backslash.
			"catalog.console.oidcClientID=console":                                         "/catalog/oidc/issuerURL",
			"catalog.console.oidcClientID=console,catalog.console.enabled=false," + signIn: "/catalog/console/enabled",
			signIn + ",catalog.oidc.issuerURL=https://*.example.com":                       "/catalog/oidc/issuerURL",
			signIn + ",catalog.oidc.issuerURL=https://u:p@idp.example.com":                 "/catalog/oidc/issuerURL",
			signIn + ",catalog.oidc.issuerURL=https://[::1]:8443":                          "/catalog/oidc/issuerURL",
			"catalog.console.oidcScopes={openid}":                                          "/catalog/console/oidcClientID",
			`catalog.console.oidcScopes={openid\,tools},` + signIn:                         "/catalog/console/oidcScopes/0",
			"catalog.console.oidcScopes={openid tools}," + signIn:                          "/catalog/console/oidcScopes/0",
			`catalog.console.oidcScopes={tools\\read},` + signIn:                           "/catalog/console/oidcScopes/0",
			"catalog.console.oidcScopes={tööls}," + signIn:                                 "/catalog/console/oidcScopes/0",
		} {
			out, err := helm("template", release, chartDir, "--namespace", namespace, "--set", value)
			Expect(err).To(HaveOccurred(), "--set %s rendered:\n%s", value, out)
			Expect(out).To(ContainSubstring(path), "--set %s", value)
		}
	})
})

// containerOf is the manager container of a Deployment.
func containerOf(deployment *unstructured.Unstructured) map[string]any {
	Expect(deployment).NotTo(BeNil())
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	Expect(containers).To(HaveLen(1))
	return containers[0].(map[string]any)
}

func names(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

var _ = Describe("The chart's alerts and dashboard", func() {
	It("are config/prometheus's, in objects the API server accepts", func() {
		kustomized := serverDryRun(renderKustomize("prometheus"))
		Expect(kustomized).To(HaveLen(2), "config/prometheus renders %s", keysOf(kustomized))
		charted := serverDryRun(renderChart(everything))
		for key, want := range kustomized {
			got, ok := charted[key]
			Expect(ok).To(BeTrue(), "the chart with metrics.prometheusRule and metrics.grafanaDashboard enabled renders no %s; it renders %s", key, keysOf(charted))
			for name, value := range want.GetLabels() {
				Expect(got.GetLabels()).To(HaveKeyWithValue(name, value), key)
			}
			if got.GetKind() == "PrometheusRule" {
				Expect(got.GetLabels()).To(HaveKeyWithValue("release", "prometheus"), "metrics.prometheusRule.labels")
			}
			Expect(fieldDifferences(key, comparable(want), comparable(got))).To(BeEmpty())
		}
	})

	It("are not rendered by default", func() {
		charted := serverDryRun(renderChart())
		for key := range serverDryRun(renderKustomize("prometheus")) {
			Expect(charted).NotTo(HaveKey(key))
		}
	})
})
