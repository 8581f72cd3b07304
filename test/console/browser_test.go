package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tokenKey is where the page keeps the viewer's token (sessionStorage).
const tokenKey = "mcp-operator-token"

var (
	// browserCtx is the suite's browser; every spec opens tabs of it.
	browserCtx context.Context
	// shots is the folder the screenshots go to.
	shots string
)

// startBrowser starts headless Chromium with a profile of its own,
// stopped when the suite ends.
func startBrowser(chromium string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // the suite runs as root
		chromedp.UserDataDir(GinkgoT().TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.DisableGPU,
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	var cancelBrowser context.CancelFunc
	browserCtx, cancelBrowser = chromedp.NewContext(allocCtx)
	DeferCleanup(func() { cancelBrowser(); cancelAlloc() })
	// The first Do starts the browser; its context has no deadline, which
	// would end the browser with it.
	Expect(chromedp.Do(browserCtx)).To(Succeed())

	shots = os.Getenv(ScreenshotsEnv)
	if shots == "" {
		shots = GinkgoT().TempDir()
		GinkgoWriter.Printf("screenshots go to %s, removed when the suite ends: set %s to keep them\n", shots, ScreenshotsEnv)
	} else {
		Expect(os.MkdirAll(shots, 0o755)).To(Succeed())
	}
	AddReportEntry("screenshots", shots)
}

// cspWatch runs before any script of every document a tab loads (scripts
// the browser is told to run this way are exempt from the page's CSP):
// it records the page's Content-Security-Policy violations.
const cspWatch = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
});`

// tab is one browser tab of a spec: a fresh window of the suite's
// browser, with a sessionStorage of its own.
type tab struct {
	name string
	// base is the URL of the catalog the tab shows the console of.
	base string
	// ctx bounds every action of the tab.
	ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
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
// checkClean) and closed.
func openTab(name string) *tab {
	GinkgoHelper()
	return openTabAt(name, catalogURL)
}

// openTabAt is openTab on the catalog at base.
func openTabAt(name, base string) *tab {
	tabCtx, closeTab := chromedp.NewContext(browserCtx)
	Expect(chromedp.Do(tabCtx)).To(Succeed())
	t := &tab{name: name, base: base, exchanges: map[network.RequestID]*exchange{}}
	Expect(chromedp.Listen(tabCtx, func(ev any) {
		// This runs in the tab's event loop: it only records.
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
	})).To(Succeed())
	messages := chromedp.Console(tabCtx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			t.mu.Lock()
			t.messages = append(t.messages, m)
			t.mu.Unlock()
		}
	}()
	_, err := chromedp.Call(tabCtx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch})
	Expect(err).NotTo(HaveOccurred())
	var stop context.CancelFunc
	t.ctx, stop = context.WithTimeout(tabCtx, 2*time.Minute)
	DeferCleanup(func() {
		defer closeTab()
		defer stop()
		if CurrentSpecReport().Failed() {
			t.shot("FAILED-" + t.name)
			t.mu.Lock()
			for _, id := range t.answered {
				e := t.exchanges[id]
				GinkgoWriter.Printf("%s answered: %d %s (finished %t)\n", t.name, e.Status, e.URL, e.Finished)
			}
			t.mu.Unlock()
		}
		t.checkClean()
	})
	return t
}

// do runs actions in the tab.
func (t *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	Expect(chromedp.Do(t.ctx, steps...)).To(Succeed())
}

// js evaluates an expression in the page and decodes its value (through
// JSON) into out.
func (t *tab) js(expr string, out any) {
	GinkgoHelper()
	raw, err := chromedp.Run(t.ctx, chromedp.Evaluate[string](`JSON.stringify((() => { return `+expr+` })()) ?? "null"`))
	Expect(err).NotTo(HaveOccurred(), expr)
	Expect(json.Unmarshal([]byte(raw), out)).To(Succeed(), raw)
}

// jsG is js inside an Eventually: failures are the poll's, not the spec's.
func (t *tab) jsG(g Gomega, expr string, out any) {
	raw, err := chromedp.Run(t.ctx, chromedp.Evaluate[string](`JSON.stringify((() => { return `+expr+` })()) ?? "null"`))
	g.Expect(err).NotTo(HaveOccurred(), expr)
	g.Expect(json.Unmarshal([]byte(raw), out)).To(Succeed(), raw)
}

// q quotes a CSS selector for JavaScript.
func q(sel string) string {
	b, _ := json.Marshal(sel)
	return string(b)
}

// text is the textContent of the first element sel matches, "" when none.
func (t *tab) text(sel string) string {
	GinkgoHelper()
	var s string
	t.js(`document.querySelector(`+q(sel)+`)?.textContent ?? ""`, &s)
	return s
}

// count is how many elements sel matches.
func (t *tab) count(sel string) int {
	GinkgoHelper()
	var n int
	t.js(`document.querySelectorAll(`+q(sel)+`).length`, &n)
	return n
}

// attrs is the attribute of every element sel matches (null as "").
func (t *tab) attrs(sel, attr string) []string {
	GinkgoHelper()
	var out []string
	t.js(`[...document.querySelectorAll(`+q(sel)+`)].map((e) => e.getAttribute(`+q(attr)+`) ?? "")`, &out)
	return out
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
	}).ShouldNot(BeEmpty(), "%s made no request matching %s", t.name, pattern)
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

// visibleJS is true when the element sel matches is rendered.
func visibleJS(sel string) string {
	return `(() => { const e = document.querySelector(` + q(sel) + `); return !!e && e.getClientRects().length > 0 })()`
}

// waitVisible waits until an element sel matches is rendered.
func (t *tab) waitVisible(sel string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var ok bool
		t.jsG(g, visibleJS(sel), &ok)
		g.Expect(ok).To(BeTrue(), "%s is not visible", sel)
	}).Should(Succeed(), "waiting for %s on %s", sel, t.name)
}

// waitCount waits until sel matches n elements.
func (t *tab) waitCount(sel string, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) int {
		var got int
		t.jsG(g, `document.querySelectorAll(`+q(sel)+`).length`, &got)
		return got
	}).Should(Equal(n), "waiting for %d of %s on %s", n, sel, t.name)
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
		t.jsG(g, `({loading: document.body?.dataset.loading ?? "", form: `+visibleJS(`[data-testid=token-form]`)+`})`, &state)
		g.Expect(state.Form).To(BeFalse(), "the token form is still shown")
		g.Expect(state.Loading).To(Equal("false"), "body[data-loading] is %q", state.Loading)
	}).Should(Succeed(), "waiting for %s to load", t.name)
}

// open loads the console at a route (#/servers, ...) without a token.
func (t *tab) open(route string) {
	GinkgoHelper()
	t.do(chromedp.Navigate(t.base + "/ui/#" + route))
}

// typeInto focuses a field and types text into it, as a keyboard would
// (the field sees input events), after what it held.
func (t *tab) typeInto(sel, text string) {
	GinkgoHelper()
	t.do(chromedp.Focus(chromedp.CSS(sel)),
		chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, input.InsertText, input.InsertTextParams{Text: text})
			return err
		}))
}

// replaceText selects what a field holds and types text over it.
func (t *tab) replaceText(sel, text string) {
	GinkgoHelper()
	var ok bool
	t.js(`(() => { const e = document.querySelector(`+q(sel)+`); if (!e) return false; e.focus(); e.select(); return true })()`, &ok)
	Expect(ok).To(BeTrue(), "no %s", sel)
	t.typeInto(sel, text)
}

// choose picks the option of a select whose value or text is option, as
// a person does: the selection changes, then input and change fire.
func (t *tab) choose(sel, option string) {
	GinkgoHelper()
	var ok bool
	t.js(`(() => { const s = document.querySelector(`+q(sel)+`); if (!s) return false;
	  const i = [...s.options].findIndex((o) => o.value === `+q(option)+` || o.text.trim() === `+q(option)+`);
	  if (i < 0) return false;
	  s.focus(); s.selectedIndex = i;
	  s.dispatchEvent(new Event('input', {bubbles: true})); s.dispatchEvent(new Event('change', {bubbles: true}));
	  return true })()`, &ok)
	Expect(ok).To(BeTrue(), "%s has no option %q", sel, option)
}

// click clicks an element with the mouse, at its center: scrolled into
// view, once it holds still and nothing covers it there.
//
// chromedp.Click scrolls with DOM.scrollIntoViewIfNeeded and reads the
// element's place at once; on a page a full screenshot has just been
// taken of, that place can be read before the scroll has reached the
// page, and the click lands beside the element.
func (t *tab) click(sel string) {
	GinkgoHelper()
	var at point
	Eventually(func(g Gomega) {
		var first, second point
		t.jsG(g, `(() => { const e = document.querySelector(`+q(sel)+`); if (!e) return {};
		  e.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
		  const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width, h: r.height} })()`, &first)
		g.Expect(first.W*first.H).To(BeNumerically(">", 0), "%s is not shown", sel)
		t.do(chromedp.Evaluate[chromedp.Void](nextFrame, chromedp.EvalAwaitPromise))
		t.jsG(g, `(() => { const e = document.querySelector(`+q(sel)+`); if (!e) return {};
		  const r = e.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2;
		  const hit = document.elementFromPoint(x, y);
		  return {x, y, w: r.width, h: r.height, hit: !!hit && (hit === e || e.contains(hit))} })()`, &second)
		g.Expect(second.Hit).To(BeTrue(), "%s is covered, or outside the viewport", sel)
		second.Hit = false
		g.Expect(second).To(Equal(first), "%s is still moving", sel)
		at = second
	}).Should(Succeed())
	t.do(chromedp.MouseClickXY(at.X, at.Y))
}

// point is an element's center and size in the viewport, and whether the
// element is what is at its center.
type point struct {
	X   float64 `json:"x"`
	Y   float64 `json:"y"`
	W   float64 `json:"w"`
	H   float64 `json:"h"`
	Hit bool    `json:"hit"`
}

// nextFrame resolves once the page has rendered a frame.
const nextFrame = `new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done())))`

// signIn opens the console at a route as a viewer: the page asks for a
// token, the token is typed into its form and submitted.
func (t *tab) signIn(route, token string) {
	GinkgoHelper()
	t.open(route)
	t.waitVisible(`form[data-testid=token-form]`)
	t.typeInto(`input[data-testid=token-input]`, token)
	t.click(`button[data-testid=token-submit]`)
	t.settled()
}

// goTo changes the route inside the page, as a link does (no reload).
func (t *tab) goTo(route string) {
	GinkgoHelper()
	t.do(chromedp.Evaluate[chromedp.Void](`location.hash = ` + q("#"+route)))
}

// bodyText is what the page shows.
func (t *tab) bodyText() string {
	GinkgoHelper()
	var s string
	t.js(`document.body.innerText`, &s)
	return s
}

// html is the page's markup as it is now.
func (t *tab) html() string {
	GinkgoHelper()
	var s string
	t.js(`document.documentElement.outerHTML`, &s)
	return s
}

// shot saves a PNG screenshot of the whole page.
func (t *tab) shot(name string) {
	GinkgoHelper()
	var before viewport
	t.js(viewportJS, &before)
	buf, err := chromedp.Run(t.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		GinkgoWriter.Printf("no screenshot %s: %v\n", name, err)
		return
	}
	Expect(buf).To(HavePrefix("\x89PNG"))
	path := filepath.Join(shots, strings.ReplaceAll(name, "/", "-")+".png")
	Expect(os.WriteFile(path, buf, 0o644)).To(Succeed())
	GinkgoWriter.Printf("screenshot: %s\n", path)
	// A screenshot beyond the viewport stretches it for a moment; a click
	// aimed while it shrinks back lands beside its target. Wait until the
	// viewport is as it was and the page has painted in it.
	Eventually(func(g Gomega) viewport {
		var now viewport
		t.jsG(g, viewportJS, &now)
		return now
	}).Should(Equal(before), "the viewport did not come back after the screenshot")
	t.do(chromedp.Evaluate[chromedp.Void](nextFrame, chromedp.EvalAwaitPromise))
}

// viewport is the size of the page's viewport.
type viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

const viewportJS = `({width: innerWidth, height: innerHeight})`

// pageHealth is what checkClean reads from a page.
type pageHealth struct {
	CSP            []string `json:"csp"`
	XSS            string   `json:"xss"`
	InlineScripts  int      `json:"inlineScripts"`
	ForeignScripts []string `json:"foreignScripts"`
	Handlers       []string `json:"handlers"`
	ImgX           int      `json:"imgX"`
}

const healthJS = `({
  csp: window.__cspViolations ?? ["the CSP watch did not run"],
  xss: typeof window.__xss,
  inlineScripts: [...document.scripts].filter((s) => !s.src).length,
  foreignScripts: [...document.scripts].filter((s) => s.src && !s.src.startsWith(location.origin + '/ui/')).map((s) => s.src),
  handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => e.tagName + ' ' + a.name)),
  imgX: [...document.images].filter((i) => i.getAttribute('src') === 'x').length,
})`

// checkClean fails the spec when the page threw, broke its CSP, runs a
// script it did not load from /ui/, or holds an element or handler a
// tool description smuggled in.
func (t *tab) checkClean() {
	GinkgoHelper()
	var h pageHealth
	raw, err := chromedp.Run(t.ctx, chromedp.Evaluate[string](`JSON.stringify(`+healthJS+`)`))
	if err == nil && json.Unmarshal([]byte(raw), &h) == nil {
		Expect(h.CSP).To(BeEmpty(), "%s violated its Content-Security-Policy", t.name)
		Expect(h.XSS).To(Equal("undefined"), "a script of a tool description ran on %s", t.name)
		Expect(h.InlineScripts).To(BeZero(), "%s has inline scripts", t.name)
		Expect(h.ForeignScripts).To(BeEmpty(), "%s has scripts from outside /ui/", t.name)
		Expect(h.Handlers).To(BeEmpty(), "%s has on* attributes", t.name)
		Expect(h.ImgX).To(BeZero(), "%s has the <img src=x> of a tool description as an element", t.name)
	} else {
		GinkgoWriter.Printf("%s: could not read the page's health: %v\n", t.name, err)
	}
	t.mu.Lock()
	messages := append([]chromedp.ConsoleMessage(nil), t.messages...)
	t.mu.Unlock()
	var bad []string
	for _, m := range messages {
		line := fmt.Sprintf("%s (source %q, %s:%d)", m, m.Source, m.URL, m.Line+1)
		GinkgoWriter.Printf("%s console: %s\n", t.name, line)
		if m.IsException() || m.Source == "security" || cspMessage.MatchString(m.Text) {
			bad = append(bad, line)
		}
	}
	Expect(bad).To(BeEmpty(), "%s threw or broke its Content-Security-Policy", t.name)
}

var cspMessage = regexp.MustCompile(`(?i)content security policy`)
