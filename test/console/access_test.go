package console_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// quietly is how long a spec watches that something the page must never
// show stays away, once the answer it would come from has arrived.
const quietly = time.Second

// secrets are texts only a viewer who may read the servers may see.
var secrets = []string{ns + "/echo", ns + "/media", ns + "/shady", configureTool, configureDescription, forecastDescription}

// expectNoData fails when the page shows anything of the servers or
// collections beyond what its route names (route: texts the viewer typed,
// which the page may repeat).
func (t *tab) expectNoData(route ...string) {
	GinkgoHelper()
	Expect(t.Count(`tr[data-testid=server-row]`)).To(BeZero())
	Expect(t.Count(`tr[data-testid=collection-row]`)).To(BeZero())
	Expect(t.Count(`[data-testid=tool]`)).To(BeZero())
	Expect(t.Count(`[data-testid=event]`)).To(BeZero())
	Expect(t.Count(`[data-testid=search-result]`)).To(BeZero())
	body := t.bodyText()
	for _, s := range secrets {
		if slices.Contains(route, s) {
			continue
		}
		Expect(body).NotTo(ContainSubstring(s), "the page shows what the viewer may not see")
	}
}

var _ = Describe("The console, to a viewer bound to nothing", func() {
	It("lists no servers and no collections", func() {
		t := openTab("forbidden-servers")
		t.signIn("/servers", strangerToken)
		// A list is never a 403: the viewer gets what they may see, nothing.
		Expect(t.waitAnswered(`/v1/mcpservers(\?|$)`)).To(ContainElement(int64(http.StatusOK)))
		t.WaitVisible(`table[data-testid=servers]`)
		Consistently(func() int { return t.Count(`tr[data-testid=server-row]`) }, quietly).Should(BeZero())
		t.expectNoData()
		t.Shot("forbidden-servers")

		t.goTo("/collections")
		t.waitAnswered(`/v1/toolcollections(\?|$)`)
		Consistently(func() int { return t.Count(`tr[data-testid=collection-row]`) }, quietly).Should(BeZero())
		t.expectNoData()
	})

	It("shows a 403 state with the API's message, and no data, on a server's page", func() {
		code, _, body := get(serverPath("echo"), strangerToken)
		Expect(code).To(Equal(http.StatusForbidden))
		message := apiError(body)

		t := openTab("forbidden-server")
		t.signIn("/servers/"+ns+"/echo", strangerToken)
		t.WaitVisible(`[data-testid=forbidden]`)
		Eventually(func() string { return t.Text(`[data-testid=forbidden]`) }).Should(ContainSubstring(message))
		Expect(t.Count(`[data-testid=conditions] tr`)).To(BeZero())
		t.expectNoData(ns + "/echo")
		t.Shot("forbidden-server")
	})

	It("shows a 403 state with the API's message, and no data, on a collection's page and its try page", func() {
		code, _, body := get(kitPath, strangerToken)
		Expect(code).To(Equal(http.StatusForbidden))
		message := apiError(body)

		t := openTab("forbidden-collection")
		t.signIn("/collections/"+ns+"/"+kit, strangerToken)
		t.WaitVisible(`[data-testid=forbidden]`)
		Eventually(func() string { return t.Text(`[data-testid=forbidden]`) }).Should(ContainSubstring(message))
		Expect(strings.TrimSpace(t.Text(`pre[data-testid=menu-json]`))).To(BeEmpty())
		t.expectNoData()
		t.Shot("forbidden-collection")

		t2 := openTab("forbidden-try")
		t2.signIn(tryRoute(configureTool), strangerToken)
		// The collection itself is forbidden: the try page says so.
		t2.WaitVisible(`[data-testid=forbidden]`)
		Eventually(func() string { return t2.Text(`[data-testid=forbidden]`) }).Should(ContainSubstring(message))
		Expect(t2.Count(`form[data-testid=try-form]`)).To(BeZero())
		t2.expectNoData(configureTool)
		t2.Shot("forbidden-try")
	})

	It("finds nothing", func() {
		query := "weather forecast for a city"
		code, _, body := get("/v1/tools/search?q="+url.QueryEscape(query), strangerToken)
		Expect(code).To(Equal(http.StatusOK), string(body))
		Expect(menuNames(body)).To(BeEmpty())

		t := openTab("forbidden-search")
		t.signIn("/search", strangerToken)
		t.typeInto(`input[data-testid=search-input]`, query)
		t.Do(chromedp.SendKeys(chromedp.CSS(`input[data-testid=search-input]`), "\n"))
		t.waitAnswered(`/v1/tools/search\?`)
		Consistently(func() int { return t.Count(`[data-testid=search-result]`) }, quietly).Should(BeZero())
		t.expectNoData()
		t.Shot("forbidden-search")
	})
})

var _ = Describe("The console, to a viewer bound to catalog-reader", func() {
	It("shows a collection's tools but offers no try-it, and the try page says why", func() {
		t := openTab("reader-collection")
		t.signIn("/collections/"+ns+"/"+kit, readerToken)
		t.waitCount(`[data-testid=tool]`, len(kitTools))
		Expect(t.waitAnswered(`/toolcollections/` + kit + `/access$`)).To(ContainElement(int64(http.StatusOK)))
		Consistently(func() int { return t.Count(`a[data-testid=try-link]`) }, quietly).Should(BeZero())
		t.Shot("reader-collection")

		t.goTo(tryRoute(configureTool))
		t.WaitVisible(`[data-testid=try-unavailable]`)
		Expect(strings.TrimSpace(t.Text(`[data-testid=try-unavailable]`))).NotTo(BeEmpty(), "try-unavailable does not say why")
		Expect(t.Count(`form[data-testid=try-form]`)).To(BeZero())
		Expect(t.Count(`button[data-testid=try-submit]`)).To(BeZero())
		t.Shot("reader-try")
	})
})
