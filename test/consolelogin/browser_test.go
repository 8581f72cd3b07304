package consolelogin_test

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"net/url"
	"sync/atomic"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testbrowser"
)

// chrome is the suite's browser; every spec opens tabs of it.
var chrome *testbrowser.Browser

// startBrowser starts headless Chromium (see testbrowser.Start). The
// provider's certificate is issued by a CA made for the suite; the
// browser accepts it by its key, and no other certificate it cannot
// verify.
func startBrowser(chromium string, providerCert *x509.Certificate) {
	GinkgoHelper()
	spki := sha256.Sum256(providerCert.RawSubjectPublicKeyInfo)
	chrome = testbrowser.Start(chromium, testbrowser.Options{Flags: []chromedp.ExecAllocatorOption{
		chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(spki[:])),
	}})
}

// tab is one browser tab of a spec, with a sessionStorage of its own.
type tab struct{ *testbrowser.Tab }

// openTab opens a tab that records its console; when the spec ends it is
// checked (see testbrowser.Tab.CheckClean: the page's CSP allows the
// provider's origin, so a violation means the page could not reach it)
// and closed.
func openTab(name string) *tab {
	GinkgoHelper()
	return &tab{chrome.OpenTab(name, testbrowser.TabOptions{})}
}

// waitOnConsole waits until an element sel matches is rendered on the
// console's page (not on another origin's, on the way).
func (t *tab) waitOnConsole(sel string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var state struct {
			Origin  string `json:"origin"`
			Visible bool   `json:"visible"`
		}
		t.JSG(g, `({origin: location.origin, visible: `+testbrowser.VisibleJS(sel)+`})`, &state)
		g.Expect(state.Origin).To(Equal(catalogURL), "the tab is not on the console")
		g.Expect(state.Visible).To(BeTrue(), "%s is not visible", sel)
	}).Should(Succeed(), "waiting for %s on %s", sel, t.Name)
}

// address is where the tab is, as its address bar shows it.
func (t *tab) address() *url.URL {
	GinkgoHelper()
	var href string
	t.JS(`location.href`, &href)
	u, err := url.Parse(href)
	Expect(err).NotTo(HaveOccurred())
	return u
}

// session is what the page keeps in its sessionStorage.
func (t *tab) session() map[string]string {
	GinkgoHelper()
	var s map[string]string
	t.JS(`Object.fromEntries(Object.entries(sessionStorage))`, &s)
	return s
}

// history is the URL of every entry of the tab's history.
func (t *tab) history() []string {
	GinkgoHelper()
	h, err := chromedp.Call(t.Ctx, page.GetNavigationHistory, cdp.Empty{})
	Expect(err).NotTo(HaveOccurred())
	var urls []string
	for _, e := range h.Entries {
		urls = append(urls, e.URL)
	}
	return urls
}

// tamper changes the provider's redirect back to the console as it
// reaches the browser, as an attacker who sends the viewer a link of
// their own would: the page is loaded with the query parameter key set to
// value. It returns whether a redirect was changed.
func (t *tab) tamper(key, value string) *atomic.Bool {
	GinkgoHelper()
	var changed atomic.Bool
	t.Intercept(&fetch.RequestPattern{
		// '?' matches one character: the query's.
		URLPattern: catalogURL + "/ui/?code=*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest,
	}, func(ev fetch.EventRequestPaused) {
		u, err := url.Parse(ev.Request.URL)
		if err == nil && u.Query().Get(key) != value {
			query := u.Query()
			query.Set(key, value)
			u.RawQuery = query.Encode()
			_, err = chromedp.Call(t.Ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 302,
				ResponseHeaders: []*fetch.HeaderEntry{{Name: "Location", Value: u.String()}, {Name: "Cache-Control", Value: "no-store"}}})
			if err == nil {
				changed.Store(true)
			}
			return
		}
		t.Continue(ev)
	})
	return &changed
}
