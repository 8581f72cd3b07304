package console_test

import (
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// liveTimeout bounds how long a change takes to reach an open page: the
// controller's discovery or refresh, then the page's next poll (5 s).
const liveTimeout = 60 * time.Second

var _ = Describe("The console, left open", func() {
	It("shows a server that appears, a tool its upstream adds and a server that goes, without a reload", func() {
		up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		up.AddTool("ping", "Answers with what it got.", `{"type":"object","properties":{"message":{"type":"string"}}}`)

		t := openTab("live")
		t.signIn("/servers", callerToken)
		t.waitCount(`tr[data-testid=server-row]`, 4)
		// A reload would lose this.
		var kept string
		t.js(`(window.__kept = 'kept')`, &kept)

		By("a new MCPServer shows up in the list, Ready")
		late := env.CreateServer(ns, "late", up.URL())
		row := `tr[data-testid=server-row][data-name="` + ns + `/late"]`
		Eventually(func() string { return strings.TrimSpace(t.text(row + ` [data-testid=ready]`)) }, liveTimeout).Should(HavePrefix("True"))
		t.shot("live-added")

		By("its page shows a tool its upstream adds")
		t.click(row + ` a[href$="#/servers/` + ns + `/late"]`)
		Eventually(func() []string { return t.attrs(`[data-testid=tool]`, "data-name") }).Should(ConsistOf("mcp_late_ping"))
		up.AddTools("pong")
		Eventually(func() []string { return t.attrs(`[data-testid=tool]`, "data-name") }, liveTimeout).Should(
			ConsistOf("mcp_late_ping", "mcp_late_pong"))
		t.shot("live-tool-added")

		By("deleted, it leaves the list")
		t.click(`a[data-testid=nav-servers]`)
		t.waitCount(`tr[data-testid=server-row]`, 5)
		Expect(env.Client.Delete(ctx, late)).To(Succeed())
		Eventually(func() []string { return t.attrs(`tr[data-testid=server-row]`, "data-name") }, liveTimeout).ShouldNot(
			ContainElement(ns + "/late"))
		Expect(t.count(`tr[data-testid=server-row]`)).To(Equal(4))
		t.js(`window.__kept`, &kept)
		Expect(kept).To(Equal("kept"), "the page was reloaded")
		t.shot("live-removed")
	})

	It("answers the page's polls with ETags, and 304 when nothing changed", func() {
		for _, path := range []string{"/v1/mcpservers", serverPath("echo"), serverPath("echo") + "/events",
			"/v1/toolcollections", kitPath, kitPath + "/events", kitPath + "/access"} {
			Eventually(func(g Gomega) {
				code, h, body := get(path, callerToken)
				g.Expect(code).To(Equal(http.StatusOK), "%s: %s", path, body)
				etag := h.Get("ETag")
				g.Expect(etag).NotTo(BeEmpty(), "%s has no ETag", path)
				code, _, _ = get(path, callerToken, "If-None-Match", etag)
				g.Expect(code).To(Equal(http.StatusNotModified), path)
			}, 10*time.Second).Should(Succeed())
		}
	})
})
