package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testbrowser"
)

// chrome is the suite's browser; every spec opens tabs of it.
var chrome *testbrowser.Browser

// tab is one browser tab of a spec (see testbrowser.Tab) on a catalog's
// console, that records the answers to its requests.
type tab struct {
	*testbrowser.Tab
	// base is the URL of the catalog the tab shows the console of.
	base string

	mu sync.Mutex
	// exchanges are the tab's HTTP requests that were answered, in the
	// order they were, by request id.
	exchanges map[network.RequestID]*exchange
	answered  []network.RequestID
}

// exchange is an answered request of a tab: its URL, the status of the
// answer, and whether its body has arrived in full.
type exchange struct {
	URL      string
	Status   int64
	Finished bool
}

// openTab opens a tab on the suite's catalog, named for its screenshots,
// that records its console; when the spec ends it is checked (see
// testbrowser.Tab.CheckClean and checkHealth) and closed.
func openTab(name string) *tab {
	GinkgoHelper()
	return openTabAt(name, catalogURL)
}

// openTabAt is openTab on the catalog at base.
func openTabAt(name, base string) *tab {
	GinkgoHelper()
	t := &tab{base: base, exchanges: map[network.RequestID]*exchange{}}
	t.Tab = chrome.OpenTab(name, testbrowser.TabOptions{Listen: t.record, CheckPage: t.checkHealth, Failed: t.printAnswered})
	return t
}

// record records the answers to the tab's requests; it runs in the tab's
// event loop.
func (t *tab) record(ev any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventResponseReceived:
		t.exchanges[ev.RequestID] = &exchange{URL: ev.Response.URL, Status: ev.Response.Status}
		t.answered = append(t.answered, ev.RequestID)
	case *network.EventLoadingFinished:
		if e := t.exchanges[ev.RequestID]; e != nil {
			e.Finished = true
		}
	}
}

// printAnswered logs the answers to the tab's requests.
func (t *tab) printAnswered() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range t.answered {
		e := t.exchanges[id]
		GinkgoWriter.Printf("%s answered: %d %s (finished %t)\n", t.Name, e.Status, e.URL, e.Finished)
	}
}

// waitAnswered waits until a request of the page whose URL matches
// pattern has been answered in full, and returns the statuses of those
// that were.
func (t *tab) waitAnswered(pattern string) []int64 {
	GinkgoHelper()
	return t.waitAnsweredSince(0, pattern)
}

// mark is how many requests of the page have been answered so far.
func (t *tab) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.answered)
}

// waitAnsweredSince is waitAnswered for the requests answered after mark.
func (t *tab) waitAnsweredSince(mark int, pattern string) []int64 {
	GinkgoHelper()
	var statuses []int64
	Eventually(func() []int64 {
		statuses = t.answeredSince(mark, pattern)
		return statuses
	}).ShouldNot(BeEmpty(), "%s made no request matching %s", t.Name, pattern)
	return statuses
}

// answeredSince are the statuses of the requests answered in full after
// mark whose URL matches pattern (a 304 has no body to wait for: the
// browser reports no end of it).
func (t *tab) answeredSince(mark int, pattern string) []int64 {
	re := regexp.MustCompile(pattern)
	t.mu.Lock()
	defer t.mu.Unlock()
	var statuses []int64
	for _, id := range t.answered[mark:] {
		if e := t.exchanges[id]; (e.Finished || e.Status == http.StatusNotModified) && re.MatchString(e.URL) {
			statuses = append(statuses, e.Status)
		}
	}
	return statuses
}

// waitCount waits until sel matches n elements.
func (t *tab) waitCount(sel string, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) int {
		var got int
		t.JSG(g, `document.querySelectorAll(`+testbrowser.Q(sel)+`).length`, &got)
		return got
	}).Should(Equal(n), "waiting for %d of %s on %s", n, sel, t.Name)
}

// settled waits until the page's first data request answered
// (body[data-loading=false]) and the token form is gone.
func (t *tab) settled() {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var state struct {
			Loading string `json:"loading"`
			Form    bool   `json:"form"`
		}
		t.JSG(g, `({loading: document.body?.dataset.loading ?? "", form: `+testbrowser.VisibleJS(`[data-testid=token-form]`)+`})`, &state)
		g.Expect(state.Form).To(BeFalse(), "the token form is still shown")
		g.Expect(state.Loading).To(Equal("false"), "body[data-loading] is %q", state.Loading)
	}).Should(Succeed(), "waiting for %s to load", t.Name)
}

// open loads the console at a route (#/servers, ...) without a token.
func (t *tab) open(route string) {
	GinkgoHelper()
	t.Do(chromedp.Navigate(t.base + "/ui/#" + route))
}

// typeInto focuses a field and types text into it, as a keyboard would
// (the field sees input events), after what it held.
func (t *tab) typeInto(sel, text string) {
	GinkgoHelper()
	t.Do(chromedp.Focus(chromedp.CSS(sel)),
		chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, input.InsertText, input.InsertTextParams{Text: text})
			return err
		}))
}

// replaceText selects what a field holds and types text over it.
func (t *tab) replaceText(sel, text string) {
	GinkgoHelper()
	var ok bool
	t.JS(`(() => { const e = document.querySelector(`+testbrowser.Q(sel)+`); if (!e) return false; e.focus(); e.select(); return true })()`, &ok)
	Expect(ok).To(BeTrue(), "no %s", sel)
	t.typeInto(sel, text)
}

// choose picks the option of a select whose value or text is option, as
// a person does: the selection changes, then input and change fire.
func (t *tab) choose(sel, option string) {
	GinkgoHelper()
	var ok bool
	t.JS(`(() => { const s = document.querySelector(`+testbrowser.Q(sel)+`); if (!s) return false;
	  const i = [...s.options].findIndex((o) => o.value === `+testbrowser.Q(option)+` || o.text.trim() === `+testbrowser.Q(option)+`);
	  if (i < 0) return false;
	  s.focus(); s.selectedIndex = i;
	  s.dispatchEvent(new Event('input', {bubbles: true})); s.dispatchEvent(new Event('change', {bubbles: true}));
	  return true })()`, &ok)
	Expect(ok).To(BeTrue(), "%s has no option %q", sel, option)
}

// signIn opens the console at a route as a viewer: the page asks for a
// token, the token is typed into its form and submitted.
func (t *tab) signIn(route, token string) {
	GinkgoHelper()
	t.open(route)
	t.WaitVisible(`form[data-testid=token-form]`)
	t.typeInto(`input[data-testid=token-input]`, token)
	t.Click(`button[data-testid=token-submit]`)
	t.settled()
}

// goTo changes the route inside the page, as a link does (no reload).
func (t *tab) goTo(route string) {
	GinkgoHelper()
	t.Do(chromedp.Evaluate[chromedp.Void](`location.hash = ` + testbrowser.Q("#"+route)))
}

// bodyText is what the page shows.
func (t *tab) bodyText() string {
	GinkgoHelper()
	var s string
	t.JS(`document.body.innerText`, &s)
	return s
}

// html is the page's markup as it is now.
func (t *tab) html() string {
	GinkgoHelper()
	var s string
	t.JS(`document.documentElement.outerHTML`, &s)
	return s
}

// pageHealth is what checkHealth reads from a page.
type pageHealth struct {
	CSP            []string `json:"csp"`
	XSS            string   `json:"xss"`
	InlineScripts  int      `json:"inlineScripts"`
	ForeignScripts []string `json:"foreignScripts"`
	Handlers       []string `json:"handlers"`
	ImgX           int      `json:"imgX"`
}

const healthJS = `({
  csp: ` + testbrowser.CSPViolationsJS + `,
  xss: typeof window.__xss,
  inlineScripts: [...document.scripts].filter((s) => !s.src).length,
  foreignScripts: [...document.scripts].filter((s) => s.src && !s.src.startsWith(location.origin + '/ui/')).map((s) => s.src),
  handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => e.tagName + ' ' + a.name)),
  imgX: [...document.images].filter((i) => i.getAttribute('src') === 'x').length,
})`

// checkHealth is what CheckClean checks of the suite's pages, before
// their console: it fails the spec when the page broke its CSP, runs a
// script it did not load from /ui/, or holds an element or handler a
// tool description smuggled in.
func (t *tab) checkHealth() {
	GinkgoHelper()
	var h pageHealth
	raw, err := chromedp.Run(t.Ctx, chromedp.Evaluate[string](`JSON.stringify(`+healthJS+`)`))
	if err == nil && json.Unmarshal([]byte(raw), &h) == nil {
		Expect(h.CSP).To(BeEmpty(), "%s violated its Content-Security-Policy", t.Name)
		Expect(h.XSS).To(Equal("undefined"), "a script of a tool description ran on %s", t.Name)
		Expect(h.InlineScripts).To(BeZero(), "%s has inline scripts", t.Name)
		Expect(h.ForeignScripts).To(BeEmpty(), "%s has scripts from outside /ui/", t.Name)
		Expect(h.Handlers).To(BeEmpty(), "%s has on* attributes", t.Name)
		Expect(h.ImgX).To(BeZero(), "%s has the <img src=x> of a tool description as an element", t.Name)
	} else {
		GinkgoWriter.Printf("%s: could not read the page's health: %v\n", t.Name, err)
	}
}
