package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testbrowser"
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
		t.JS(`(window.__kept = 'kept')`, &kept)

		By("a new MCPServer shows up in the list, Ready")
		late := env.CreateServer(ns, "late", up.URL())
		row := `tr[data-testid=server-row][data-name="` + ns + `/late"]`
		Eventually(func() string { return strings.TrimSpace(t.Text(row + ` [data-testid=ready]`)) }, liveTimeout).Should(HavePrefix("True"))
		t.Shot("live-added")

		By("its page shows a tool its upstream adds")
		t.Click(row + ` a[href$="#/servers/` + ns + `/late"]`)
		Eventually(func() []string { return t.Attrs(`[data-testid=tool]`, "data-name") }).Should(ConsistOf("mcp_late_ping"))
		up.AddTools("pong")
		Eventually(func() []string { return t.Attrs(`[data-testid=tool]`, "data-name") }, liveTimeout).Should(
			ConsistOf("mcp_late_ping", "mcp_late_pong"))
		t.Shot("live-tool-added")

		By("deleted, it leaves the list")
		t.Click(`a[data-testid=nav-servers]`)
		t.waitCount(`tr[data-testid=server-row]`, 5)
		Expect(env.Client.Delete(ctx, late)).To(Succeed())
		Eventually(func() []string { return t.Attrs(`tr[data-testid=server-row]`, "data-name") }, liveTimeout).ShouldNot(
			ContainElement(ns + "/late"))
		Expect(t.Count(`tr[data-testid=server-row]`)).To(Equal(4))
		t.JS(`window.__kept`, &kept)
		Expect(kept).To(Equal("kept"), "the page was reloaded")
		t.Shot("live-removed")
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

// pollInterval is how often an open page asks again (app.js POLL_MS).
const pollInterval = 5 * time.Second

// poke changes a ToolCollection's annotations, so that its answer
// changes and an open page of it redraws.
func poke(name string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"console.toolmesh.io/poked":%q}}}`, time.Now().Format(time.RFC3339Nano))
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(env.Client.Patch(ctx, tc, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// redrawn is whether the element sel matches is not the one markJS marked.
func (t *tab) redrawn(g Gomega, sel string) bool {
	var fresh bool
	t.JSG(g, `(() => { const e = document.querySelector(`+testbrowser.Q(sel)+`); return !!e && !e.__marked })()`, &fresh)
	return fresh
}

// markJS marks the element sel matches, as redrawn tells.
func markJS(sel string) string {
	return `(() => { const e = document.querySelector(` + testbrowser.Q(sel) + `); if (e) e.__marked = true; return !!e })()`
}

var _ = Describe("The console, left open for a while", func() {
	It("says when discovery last wrote a server's status, and ages that time without asking the catalog again", func() {
		echo := server("echo")
		Expect(echo.Status.LastSyncTime).NotTo(BeNil())
		t := openTab("times")
		t.signIn("/servers", callerToken)
		t.waitCount(`tr[data-testid=server-row]`, 4)
		var headings []string
		t.JS(`[...document.querySelectorAll('table[data-testid=servers] thead th')].map((th) => th.textContent.trim())`, &headings)
		// lastSyncTime moves when a discovery changes status, not at every
		// refresh (api/v1alpha1 MCPServerStatus).
		Expect(headings).To(ContainElement("Discovery written"))
		Expect(headings).NotTo(ContainElement(ContainSubstring("refresh")))
		cell := `tr[data-testid=server-row][data-name="` + ns + `/echo"] time`
		Expect(t.Attrs(cell, "datetime")).To(Equal([]string{echo.Status.LastSyncTime.UTC().Format(time.RFC3339)}))
		var title struct {
			Title string `json:"title"`
			Local string `json:"local"`
		}
		t.JS(`(() => { const e = document.querySelector(`+testbrowser.Q(cell)+`); return {title: e.title, local: new Date(e.getAttribute('datetime')).toLocaleString()} })()`, &title)
		Expect(title.Title).To(Equal(title.Local), "the title is not the time itself")
		Expect(t.Text(cell)).To(MatchRegexp(`^\d+ (s|min) ago$`))

		By("two hours on, the time says so, though the page was not redrawn")
		var marked bool
		t.JS(markJS(cell), &marked)
		Expect(marked).To(BeTrue())
		t.Do(chromedp.Evaluate[chromedp.Void](`{ const now = Date.now; Date.now = () => now() + 2 * 3600 * 1000; }`))
		Eventually(func(g Gomega) string {
			g.Expect(t.redrawn(g, cell)).To(BeFalse(), "the page was redrawn: the test shows nothing")
			return t.Text(cell)
		}, 45*time.Second, time.Second).Should(Equal("2 h ago"))
	})

	It("gives up a request that hangs after 30 s and goes on following the catalog, one poll at a time", func() {
		t := openTab("hung")
		t.signIn("/servers", callerToken)
		t.waitCount(`tr[data-testid=server-row]`, 4)

		By("the catalog's next answer to the list never comes")
		var seen atomic.Int32
		t.Intercept(&fetch.RequestPattern{URLPattern: t.base + "/v1/mcpservers*", RequestStage: fetch.RequestStageRequest},
			func(ev fetch.EventRequestPaused) {
				if seen.Add(1) == 1 {
					return // held: never answered
				}
				t.Continue(ev)
			})
		Eventually(seen.Load, pollInterval+5*time.Second).Should(Equal(int32(1)))

		By("meanwhile no other poll starts, not even when the tab is shown again")
		t.Do(chromedp.Evaluate[chromedp.Void](`document.dispatchEvent(new Event('visibilitychange'))`))
		Consistently(seen.Load, pollInterval+2*time.Second).Should(Equal(int32(1)))

		By("a server created meanwhile shows once the request is given up")
		env.CreateServer(ns, "pending", "http://127.0.0.1:1/mcp")
		Eventually(func() string { return t.Text(`[data-testid=error]`) }, 40*time.Second).Should(
			ContainSubstring("did not answer within 30 s"))
		Eventually(func() []string { return t.Attrs(`tr[data-testid=server-row]`, "data-name") }, liveTimeout).Should(
			ContainElement(ns + "/pending"))
		Expect(seen.Load()).To(BeNumerically(">=", 2))
	})

	It("keeps keyboard focus, and open details, on the same elements when a change redraws the page", func() {
		tool := func(name string) string { return `[data-testid=tool][data-name="` + name + `"]` }
		link := tool(configureTool) + ` a[href$="#/servers/` + ns + `/echo"]`
		summary := tool(forecastTool) + ` details > summary`
		t := openTab("focus")
		t.signIn("/collections/"+ns+"/"+kit, callerToken)
		t.waitCount(`[data-testid=tool]`, len(kitTools))
		t.Click(summary)
		Eventually(func() int { return t.Count(tool(forecastTool) + ` details[open]`) }).Should(BeNumerically(">", 0))

		focusThenRedraw := func(sel string) {
			GinkgoHelper()
			var focused bool
			t.JS(`(() => { const e = document.querySelector(`+testbrowser.Q(sel)+`); e.focus(); return document.activeElement === e })()`, &focused)
			Expect(focused).To(BeTrue(), "%s takes no focus", sel)
			var marked bool
			t.JS(markJS(sel), &marked)
			Expect(marked).To(BeTrue())
			poke(kit)
			Eventually(func(g Gomega) bool { return t.redrawn(g, sel) }, liveTimeout).Should(BeTrue(), "the page was not redrawn")
			var again bool
			t.JS(`document.activeElement === document.querySelector(`+testbrowser.Q(sel)+`)`, &again)
			Expect(again).To(BeTrue(), "focus is not on %s after the redraw", sel)
		}
		By("a link to a tool's server")
		focusThenRedraw(link)
		Expect(t.Count(tool(forecastTool)+` details[open] > summary`)).To(BeNumerically(">", 0), "an open <details> closed")
		By("a <summary>")
		focusThenRedraw(summary)
		Expect(t.Count(tool(forecastTool)+` details[open] > summary`)).To(BeNumerically(">", 0), "an open <details> closed")
	})

	It("keeps what it needs for If-None-Match only for the pages seen last", func() {
		echo := `/mcpservers/echo$`
		t := openTab("cache")
		t.signIn("/servers/"+ns+"/echo", callerToken)
		t.waitCount(`[data-testid=tool]`, 3)

		By("a page seen again soon is asked for with its ETag: the catalog answers 304")
		t.goTo("/servers")
		t.waitCount(`tr[data-testid=server-row]`, 4)
		mark := t.mark()
		t.goTo("/servers/" + ns + "/echo")
		Expect(t.waitAnsweredSince(mark, echo)[0]).To(Equal(int64(http.StatusNotModified)))

		By("after 33 other pages, it is asked for afresh")
		for i := range 33 {
			t.goTo(fmt.Sprintf("/search?q=probe-%d", i))
			t.waitAnsweredSince(mark, fmt.Sprintf(`/v1/tools/search\?q=probe-%d$`, i))
		}
		mark = t.mark()
		t.goTo("/servers/" + ns + "/echo")
		Expect(t.waitAnsweredSince(mark, echo)[0]).To(Equal(int64(http.StatusOK)))
		t.waitCount(`[data-testid=tool]`, 3)
	})
})
