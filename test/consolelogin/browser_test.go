package consolelogin_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tokenKey is where the page keeps the viewer's token (sessionStorage).
const tokenKey = "mcp-operator-token"

// browserCtx is the suite's browser; every spec opens tabs of it.
var browserCtx context.Context

// startBrowser starts headless Chromium with a profile of its own,
// stopped when the suite ends. The provider's certificate is issued by a
// CA made for the suite; the browser accepts it by its key, and no other
// certificate it cannot verify.
func startBrowser(chromium string, providerCert *x509.Certificate) {
	spki := sha256.Sum256(providerCert.RawSubjectPublicKeyInfo)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // the suite runs as root
		// The list is honoured only with a profile directory of its own.
		chromedp.UserDataDir(GinkgoT().TempDir()),
		chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(spki[:])),
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
}

// cspWatch runs before any script of every document a tab loads (scripts
// the browser is told to run this way are exempt from the page's CSP): it
// records the page's Content-Security-Policy violations.
const cspWatch = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
});`

// tab is one browser tab of a spec, with a sessionStorage of its own.
type tab struct {
	name string
	// ctx bounds every action of the tab.
	ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// openTab opens a tab that records its console; when the spec ends it is
// checked (see checkClean) and closed.
func openTab(name string) *tab {
	tabCtx, closeTab := chromedp.NewContext(browserCtx)
	Expect(chromedp.Do(tabCtx)).To(Succeed())
	t := &tab{name: name}
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

// jsG is js inside an Eventually: failures are the poll's, not the spec's
// (an evaluation fails while the tab is between two documents).
func (t *tab) jsG(g Gomega, expr string, out any) {
	raw, err := chromedp.Run(t.ctx, chromedp.Evaluate[string](`JSON.stringify((() => { return `+expr+` })()) ?? "null"`))
	g.Expect(err).NotTo(HaveOccurred(), expr)
	g.Expect(json.Unmarshal([]byte(raw), out)).To(Succeed(), raw)
}

// q quotes a string for JavaScript.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// visibleJS is true when the element sel matches is rendered.
func visibleJS(sel string) string {
	return `(() => { const e = document.querySelector(` + q(sel) + `); return !!e && e.getClientRects().length > 0 })()`
}

// waitVisible waits until an element sel matches is rendered on the
// console's page (not on another origin's, on the way).
func (t *tab) waitVisible(sel string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var state struct {
			Origin  string `json:"origin"`
			Visible bool   `json:"visible"`
		}
		t.jsG(g, `({origin: location.origin, visible: `+visibleJS(sel)+`})`, &state)
		g.Expect(state.Origin).To(Equal(catalogURL), "the tab is not on the console")
		g.Expect(state.Visible).To(BeTrue(), "%s is not visible", sel)
	}).Should(Succeed(), "waiting for %s on %s", sel, t.name)
}

// text is the textContent of the first element sel matches, "" when none.
func (t *tab) text(sel string) string {
	GinkgoHelper()
	var s string
	t.js(`document.querySelector(`+q(sel)+`)?.textContent ?? ""`, &s)
	return s
}

// click clicks an element with the mouse, at its center, as a person
// does: once it holds still and nothing covers it there (a full
// screenshot stretches the viewport for a moment; a click aimed then
// lands beside its target).
func (t *tab) click(sel string) {
	GinkgoHelper()
	var at point
	Eventually(func(g Gomega) {
		var first, second point
		t.jsG(g, `(() => { const e = document.querySelector(`+q(sel)+`); if (!e) return {};
		  e.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
		  const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width, h: r.height} })()`, &first)
		g.Expect(first.W*first.H).To(BeNumerically(">", 0), "%s is not shown", sel)
		_, err := chromedp.Run(t.ctx, chromedp.Evaluate[chromedp.Void](nextFrame, chromedp.EvalAwaitPromise))
		g.Expect(err).NotTo(HaveOccurred())
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

// address is where the tab is, as its address bar shows it.
func (t *tab) address() *url.URL {
	GinkgoHelper()
	var href string
	t.js(`location.href`, &href)
	u, err := url.Parse(href)
	Expect(err).NotTo(HaveOccurred())
	return u
}

// session is what the page keeps in its sessionStorage.
func (t *tab) session() map[string]string {
	GinkgoHelper()
	var s map[string]string
	t.js(`Object.fromEntries(Object.entries(sessionStorage))`, &s)
	return s
}

// history is the URL of every entry of the tab's history.
func (t *tab) history() []string {
	GinkgoHelper()
	h, err := chromedp.Call(t.ctx, page.GetNavigationHistory, cdp.Empty{})
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
	paused := chromedp.Events(t.ctx, fetch.RequestPaused)
	_, err := chromedp.Call(t.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{
		// '?' matches one character: the query's.
		URLPattern: catalogURL + "/ui/?code=*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest,
	}}})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		for ev, err := range paused {
			if err != nil {
				return
			}
			u, err := url.Parse(ev.Request.URL)
			if err == nil && u.Query().Get(key) != value {
				query := u.Query()
				query.Set(key, value)
				u.RawQuery = query.Encode()
				_, err = chromedp.Call(t.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 302,
					ResponseHeaders: []*fetch.HeaderEntry{{Name: "Location", Value: u.String()}, {Name: "Cache-Control", Value: "no-store"}}})
				if err == nil {
					changed.Store(true)
				}
				continue
			}
			_, _ = chromedp.Call(t.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	return &changed
}

// shot saves a PNG screenshot of the page when ScreenshotsEnv names a
// folder.
func (t *tab) shot(name string) {
	GinkgoHelper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return
	}
	buf, err := chromedp.Run(t.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		GinkgoWriter.Printf("no screenshot %s: %v\n", name, err)
		return
	}
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	path := filepath.Join(dir, name+".png")
	Expect(os.WriteFile(path, buf, 0o644)).To(Succeed())
	GinkgoWriter.Printf("screenshot: %s\n", path)
}

// checkClean fails the spec when the page threw or broke its CSP (the
// provider's origin is allowed: a violation means the page could not
// reach it).
func (t *tab) checkClean() {
	GinkgoHelper()
	raw, err := chromedp.Run(t.ctx, chromedp.Evaluate[string](`JSON.stringify(window.__cspViolations ?? ["the CSP watch did not run"])`))
	if err == nil {
		var violations []string
		Expect(json.Unmarshal([]byte(raw), &violations)).To(Succeed())
		Expect(violations).To(BeEmpty(), "%s violated its Content-Security-Policy", t.name)
	} else {
		GinkgoWriter.Printf("%s: could not read the page's CSP violations: %v\n", t.name, err)
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
