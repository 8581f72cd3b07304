package controller

import (
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// readyServer starts an MCP server with the tools, points an MCPServer with
// the labels at it and waits until it is Ready.
func readyServer(ns, name string, lbls map[string]string, tools ...string) (*testmcp.Server, *mcpv1alpha1.MCPServer) {
	mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
	mcp.AddTools(tools...)
	srv := createServer(ns, name, mcp.URL(), func(s *mcpv1alpha1.MCPServer) { s.Labels = lbls })
	Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
	return mcp, srv
}

func createCollection(ns, name string, spec mcpv1alpha1.ToolCollectionSpec) *mcpv1alpha1.ToolCollection {
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	Expect(k8sClient.Create(ctx, tc)).To(Succeed())
	return tc
}

func fetchTC(tc *mcpv1alpha1.ToolCollection) *mcpv1alpha1.ToolCollection {
	var got mcpv1alpha1.ToolCollection
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc), &got)).To(Succeed())
	return &got
}

// menuOf lists "server/name" of the collection's tools.
func menuOf(tc *mcpv1alpha1.ToolCollection) func() []string {
	return func() []string {
		out := []string{}
		for _, t := range fetchTC(tc).Status.Tools {
			out = append(out, t.Server+"/"+t.Name)
		}
		return out
	}
}

func conditionOf(tc *mcpv1alpha1.ToolCollection, condType string) func() string {
	return func() string {
		got := fetchTC(tc)
		c := meta.FindStatusCondition(got.Status.Conditions, condType)
		if c == nil || c.ObservedGeneration != got.Generation {
			return "none"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

func byLabels(lbls map[string]string) mcpv1alpha1.ServerSelection {
	return mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{MatchLabels: lbls}}
}

var _ = Describe("ToolCollection", func() {
	team := map[string]string{"team": "a"}

	It("selects servers by labels, by names and by both", func() {
		ns := newNamespace()
		readyServer(ns, "alpha", team, "read")
		readyServer(ns, "beta", map[string]string{"team": "b"}, "read")
		readyServer(ns, "gamma", nil, "read")

		labelled := createCollection(ns, "labelled", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team)})
		named := createCollection(ns, "named", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"gamma"}}})
		both := createCollection(ns, "both", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{
			Selector: &metav1.LabelSelector{MatchLabels: team}, Names: []string{"gamma"}}})
		everything := createCollection(ns, "everything", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(nil)})

		Eventually(menuOf(labelled)).Should(Equal([]string{"alpha/mcp_alpha_read"}))
		Eventually(menuOf(named)).Should(Equal([]string{"gamma/mcp_gamma_read"}))
		Eventually(menuOf(both)).Should(Equal([]string{"alpha/mcp_alpha_read", "gamma/mcp_gamma_read"}))
		Eventually(menuOf(everything)).Should(HaveLen(3))
		Eventually(conditionOf(labelled, mcpv1alpha1.ConditionReady)).Should(Equal("True/MenuResolved"))
		got := fetchTC(both)
		Expect(got.Status.Servers).To(Equal([]mcpv1alpha1.CollectionServer{
			{Name: "alpha", Ready: true, ToolCount: 1}, {Name: "gamma", Ready: true, ToolCount: 1}}))
		Expect(got.Status.Tools[0].OriginalName).To(Equal("read"))
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	})

	It("filters, renames and redescribes, and reports an override of a missing tool", func() {
		ns := newNamespace()
		readyServer(ns, "gh", team, "list_repos", "get_issue", "delete_repo")
		tc := createCollection(ns, "shaped", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team),
			Tools: &mcpv1alpha1.ToolSelection{
				Include: []string{"mcp_gh_*"},
				Exclude: []string{"mcp_gh_delete_*"},
				Overrides: []mcpv1alpha1.ToolOverride{
					{Name: "mcp_gh_list_repos", Rename: "repos", Description: ptr.To("Lists the team's repositories.")},
					{Name: "mcp_gh_nothing", Rename: "ghost"},
				},
			}})
		Eventually(menuOf(tc)).Should(Equal([]string{"gh/mcp_gh_get_issue", "gh/repos"}))
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionUnmatchedOverrides)).Should(Equal("True/OverrideTargetMissing"))
		Expect(meta.FindStatusCondition(fetchTC(tc).Status.Conditions, mcpv1alpha1.ConditionUnmatchedOverrides).Message).
			To(ContainSubstring("mcp_gh_nothing"))
		Expect(fetchTC(tc).Status.Tools[1].OriginalName).To(Equal("list_repos"))
	})

	It("resolves a conflict between servers with one prefix deterministically and visibly", func() {
		ns := newNamespace()
		for _, name := range []string{"gh-b", "gh-a"} {
			mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
			mcp.AddTools("issue")
			srv := createServer(ns, name, mcp.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.ToolPrefix = "gh" })
			Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		}
		tc := createCollection(ns, "contested", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(nil)})
		Eventually(menuOf(tc)).Should(Equal([]string{"gh-a/mcp_gh_issue"}))
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionConflicts)).Should(Equal("True/NameConflicts"))
		Expect(fetchTC(tc).Status.Conflicts).To(Equal([]mcpv1alpha1.ToolConflict{{Name: "mcp_gh_issue", Servers: []string{"gh-a", "gh-b"}}}))
		Eventually(eventsOf(tc)).Should(ConsistOf(ContainSubstring("NameConflicts: Names offered more than once: mcp_gh_issue (gh-a, gh-b; gh-a wins)")))

		// An override scoped to one server resolves it.
		got := fetchTC(tc)
		got.Spec.Tools = &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_gh_issue", Server: "gh-b", Rename: "issue_b"}}}
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(menuOf(tc)).Should(Equal([]string{"gh-b/issue_b", "gh-a/mcp_gh_issue"}))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionConflicts)()).To(Equal("none"))
		Expect(fetchTC(tc).Status.Conflicts).To(BeEmpty())
	})

	It("leaves out the tools of a server that is not Ready, and takes them back when it recovers", func() {
		ns := newNamespace()
		readyServer(ns, "steady", team, "a")
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.AddTools("b")
		flaky := createServer(ns, "flaky", mcp.URL(), every(10*time.Second), func(s *mcpv1alpha1.MCPServer) { s.Labels = team })
		Eventually(readyOf(flaky)).Should(Equal("True/ToolsDiscovered"))
		tc := createCollection(ns, "resilient", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team)})
		Eventually(menuOf(tc)).Should(Equal([]string{"flaky/mcp_flaky_b", "steady/mcp_steady_a"}))
		Expect(meta.FindStatusCondition(fetchTC(tc).Status.Conditions, mcpv1alpha1.ConditionDegraded)).To(BeNil())

		mcp.Stop()
		Eventually(menuOf(tc), 30*time.Second).Should(Equal([]string{"steady/mcp_steady_a"}))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionDegraded)()).To(Equal("True/ServersNotReady"))
		Expect(meta.FindStatusCondition(fetchTC(tc).Status.Conditions, mcpv1alpha1.ConditionDegraded).Message).To(ContainSubstring("flaky"))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionReady)()).To(Equal("True/MenuResolved"))

		Expect(mcp.Restart()).To(Succeed())
		Eventually(menuOf(tc), 40*time.Second).Should(Equal([]string{"flaky/mcp_flaky_b", "steady/mcp_steady_a"}))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionDegraded)()).To(Equal("none"))
	})

	It("takes in a server created later, drops a deleted one, and never touches servers when deleted itself", func() {
		ns := newNamespace()
		tc := createCollection(ns, "growing", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team)})
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionReady)).Should(Equal("False/NoToolsServed"))

		_, first := readyServer(ns, "first", team, "x")
		Eventually(menuOf(tc)).Should(Equal([]string{"first/mcp_first_x"}))
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionReady)).Should(Equal("True/MenuResolved"))
		_, second := readyServer(ns, "second", team, "y")
		Eventually(menuOf(tc)).Should(Equal([]string{"first/mcp_first_x", "second/mcp_second_y"}))

		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(menuOf(tc)).Should(Equal([]string{"second/mcp_second_y"}))

		// Relabelling a server out of the selection removes it too. The
		// client reads the whole object and writes it back, as Go clients
		// do: with the defaults in canonical form that is no spec change,
		// so the server keeps its generation and stays Ready.
		got := fetch(second)
		generation := got.Generation
		got.Labels = map[string]string{"team": "other"}
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Expect(fetch(second).Generation).To(Equal(generation), "a relabel is not a new generation")
		Eventually(menuOf(tc)).Should(BeEmpty())

		Expect(k8sClient.Delete(ctx, tc)).To(Succeed())
		Consistently(readyOf(second)).Should(Equal("True/ToolsDiscovered"))
	})

	It("says when a menu holds more tools than function-calling APIs accept, and cuts at maxTools", func() {
		ns := newNamespace()
		readyServer(ns, "wide", team, toolNamesN("t", 130)...)
		uncapped := createCollection(ns, "uncapped", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team)})
		capped := createCollection(ns, "capped", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team), MaxTools: ptr.To[int32](100)})

		Eventually(conditionOf(uncapped, mcpv1alpha1.ConditionTooManyTools)).Should(Equal("True/OverFunctionCallingLimit"))
		Expect(fetchTC(uncapped).Status.ToolCount).To(BeEquivalentTo(130))
		Eventually(conditionOf(capped, mcpv1alpha1.ConditionTooManyTools)).Should(Equal("True/MaxToolsExceeded"))
		Expect(fetchTC(capped).Status.ToolCount).To(BeEquivalentTo(100))
		all := exposed("wide", toolNamesN("t", 130)...)
		sort.Strings(all)
		Expect(fetchTC(capped).Status.Tools[99].Name).To(Equal(all[99]), "the first 100 in name order are kept")
	})

	It("reports its exposure and alwaysInclude names the menu does not offer, and follows a switch back to All", func() {
		ns := newNamespace()
		readyServer(ns, "wide", team, toolNamesN("t", 130)...)
		first := exposed("wide", "t00")[0]
		tc := createCollection(ns, "searched", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team),
			Exposure: mcpv1alpha1.ExposureSearch, AlwaysInclude: []string{first, "mcp_wide_nope"}})

		// The collection may be resolved once before the manager's cache
		// holds the server (then both names are unmatched): wait for the
		// resolution that sees it.
		messageOf := func(condType string) func() string {
			return func() string {
				if c := meta.FindStatusCondition(fetchTC(tc).Status.Conditions, condType); c != nil {
					return string(c.Status) + "/" + c.Reason + ": " + c.Message
				}
				return "none"
			}
		}
		Eventually(messageOf(mcpv1alpha1.ConditionUnmatchedAlwaysInclude)).Should(Equal("True/AlwaysIncludeTargetMissing: " +
			"spec.alwaysInclude names tools the menu does not offer, so the MCP endpoint cannot list them: mcp_wide_nope"))
		Eventually(messageOf(mcpv1alpha1.ConditionReady)).Should(HaveSuffix(
			": 130 tools from 1 of 1 servers; the MCP endpoint offers them through find_tools and call_tool (exposure Search), with 1 listed from spec.alwaysInclude"))
		got := fetchTC(tc)
		Expect(got.Status.Exposure).To(Equal(mcpv1alpha1.ExposureSearch))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionTooManyTools)()).To(Equal("none"), "agents search a collection with exposure Search")

		got.Spec.Exposure = mcpv1alpha1.ExposureAll
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionTooManyTools)).Should(Equal("True/OverFunctionCallingLimit"))
		got = fetchTC(tc)
		Expect(got.Status.Exposure).To(Equal(mcpv1alpha1.ExposureAll))
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionUnmatchedAlwaysInclude)).To(BeNil(), "alwaysInclude is ignored with All")
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReady).Message).To(Equal("130 tools from 1 of 1 servers"))
	})

	It("defaults exposure to All and refuses an unknown one", func() {
		ns := newNamespace()
		tc := createCollection(ns, "plain", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team)})
		Expect(fetchTC(tc).Spec.Exposure).To(Equal(mcpv1alpha1.ExposureAll))
		Eventually(func() mcpv1alpha1.Exposure { return fetchTC(tc).Status.Exposure }).Should(Equal(mcpv1alpha1.ExposureAll))
		bad := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "odd"},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team), Exposure: "Some"}}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring(`spec.exposure: Unsupported value: "Some"`)))
	})

	It("keeps menuHash across reconciles and changes it with a description", func() {
		ns := newNamespace()
		mcp, _ := readyServer(ns, "desc", team, "a")
		tc := createCollection(ns, "hashed", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team)})
		Eventually(func() string { return fetchTC(tc).Status.MenuHash }).ShouldNot(BeEmpty())
		first := fetchTC(tc)

		// An unrelated edit makes the collection reconcile again.
		first.Spec.Servers.Names = []string{"nobody"}
		Expect(k8sClient.Update(ctx, first)).To(Succeed())
		Eventually(func() int64 { return fetchTC(tc).Status.ObservedGeneration }).Should(BeEquivalentTo(2))
		Expect(fetchTC(tc).Status.MenuHash).To(Equal(first.Status.MenuHash))

		mcp.AddTool("a", "a new description", `{"type":"object","properties":{"message":{"type":"string"}}}`)
		Eventually(func() string { return fetchTC(tc).Status.MenuHash }).ShouldNot(Equal(first.Status.MenuHash))
	})

	It("stalls on a glob that cannot match", func() {
		ns := newNamespace()
		tc := createCollection(ns, "broken", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team),
			Tools: &mcpv1alpha1.ToolSelection{Include: []string{"mcp_["}}})
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionReady)()).To(Equal("False/InvalidSpec"))
	})

	It("refuses a collection that selects nothing, and a rename with bad characters", func() {
		bad := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "bad-"}}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("set selector, names, or both")))
		bad.Spec.Servers.Names = []string{"a"}
		bad.Spec.Tools = &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "x", Rename: "has space"}}}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("spec.tools.overrides[0].rename")))
	})
})

var _ = Describe("kubectl", func() {
	It("shows Ready, the counts and the transport in its columns", func() {
		ns := newNamespace()
		readyServer(ns, "shown", map[string]string{"team": "a"}, "one", "two")
		tc := createCollection(ns, "shown", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(map[string]string{"team": "a"})})
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionReady)).Should(Equal("True/MenuResolved"))

		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(env.Kubeconfig(kubeconfig)).To(Succeed())
		kubectl := func(args ...string) string {
			out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			return string(out)
		}
		Expect(kubectl("get", "mcps")).To(MatchRegexp(`NAME\s+READY\s+TOOLS\s+TRANSPORT\s+AGE\nshown\s+True\s+2\s+StreamableHTTP\s+`))
		Expect(kubectl("get", "tc")).To(MatchRegexp(`NAME\s+READY\s+SERVERS\s+TOOLS\s+CONFLICTS\s+EXPOSURE\s+AGE\nshown\s+True\s+1\s+2\s+0\s+All\s+`))
		wide := kubectl("get", "mcps", "-o", "wide")
		Expect(wide).To(MatchRegexp(`NAME\s+READY\s+TOOLS\s+TRANSPORT\s+AGE\s+REASON\s+URL\s+SERVICE\s+IMAGE\s+REVISION\s+LAST-SYNC\s+MESSAGE\n` +
			`shown\s+True\s+2\s+StreamableHTTP\s+\S+\s+ToolsDiscovered\s+http://127\.0\.0\.1:\d+/mcp\s+2026-07-28\s+\S+\s+Discovered 2 tools`))
		Expect(kubectl("wait", "--for=condition=Ready", "mcps/shown", "tc/shown", "--timeout=5s")).To(ContainSubstring("condition met"))
	})
})
