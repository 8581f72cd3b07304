// Package testbrowser drives headless Chromium for the suites that test
// the catalog's console in a real browser (test/console,
// test/consolelogin), through the DevTools protocol with chromedp. It
// starts the browser from $MCP_CHROMIUM (hack/chromium.sh finds or
// installs it) and opens tabs that record their console and their page's
// Content-Security-Policy violations; every tab is checked clean when its
// spec ends. A Tab holds the helpers a spec reads and drives its page
// with; a suite embeds it in a tab type of its own for what only that
// suite needs.
package testbrowser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
)

// ChromiumEnv names the Chromium binary the suites drive; `make test`
// sets it from hack/chromium.sh. ScreenshotsEnv names the folder the
// screenshots go to.
const (
	ChromiumEnv    = "MCP_CHROMIUM"
	ScreenshotsEnv = "CONSOLE_SCREENSHOTS"
)

// TokenKey is where the console's page keeps the viewer's token
// (sessionStorage; TOKEN_KEY in internal/console/assets/app.js).
const TokenKey = "mcp-operator-token"

// Chromium is the Chromium binary ChromiumEnv names; it fails the spec
// (in a BeforeSuite, the suite) when it names none.
func Chromium() string {
	GinkgoHelper()
	chromium := os.Getenv(ChromiumEnv)
	Expect(chromium).NotTo(BeEmpty(),
		"%s is not set: run `make test`, or `%s=$(hack/chromium.sh) go test` the suite (hack/chromium.sh finds or installs Chromium)",
		ChromiumEnv, ChromiumEnv)
	Expect(chromium).To(BeAnExistingFile(), "%s names no file", ChromiumEnv)
	return chromium
}

// Options change how Start starts the browser.
type Options struct {
	// Flags are more options of the browser's command line, such as
	// chromedp.Flag("ignore-certificate-errors-spki-list", ...) (which
	// Chromium honours only with a profile directory of its own: the
	// browser has one).
	Flags []chromedp.ExecAllocatorOption
	// TempScreenshots has the screenshots go to a folder removed when the
	// suite ends when ScreenshotsEnv is not set; without it, none are
	// taken then.
	TempScreenshots bool
}

// Browser is a running headless Chromium; every spec opens tabs of it.
type Browser struct {
	ctx context.Context
	// shots is the folder the screenshots go to; none are taken when it
	// is "".
	shots string
}

// Start starts headless Chromium, the binary at chromium, with a profile
// of its own, stopped when the suite ends; ScreenshotsEnv, or opts, say
// where its tabs' screenshots go.
func Start(chromium string, opts Options) *Browser {
	GinkgoHelper()
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // the suites run as root
		chromedp.UserDataDir(GinkgoT().TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.DisableGPU,
	)
	allocOpts = append(allocOpts, opts.Flags...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	DeferCleanup(func() { cancelBrowser(); cancelAlloc() })
	// The first Do starts the browser; its context has no deadline, which
	// would end the browser with it.
	Expect(chromedp.Do(browserCtx)).To(Succeed())

	b := &Browser{ctx: browserCtx, shots: os.Getenv(ScreenshotsEnv)}
	switch {
	case b.shots != "":
		Expect(os.MkdirAll(b.shots, 0o755)).To(Succeed())
	case opts.TempScreenshots:
		b.shots = GinkgoT().TempDir()
		GinkgoWriter.Printf("screenshots go to %s, removed when the suite ends: set %s to keep them\n", b.shots, ScreenshotsEnv)
	}
	if b.shots != "" {
		AddReportEntry("screenshots", b.shots)
	}
	return b
}

// cspWatch runs before any script of every document a tab loads (scripts
// the browser is told to run this way are exempt from the page's CSP):
// it records the page's Content-Security-Policy violations.
const cspWatch = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
});`

// CSPViolationsJS is the page's Content-Security-Policy violations so
// far, as a list of strings (a page the watch did not run on has one).
const CSPViolationsJS = `window.__cspViolations ?? ["the CSP watch did not run"]`

// TabOptions add a suite's own to a tab.
type TabOptions struct {
	// Listen, when set, gets every event of the tab from before it loads
	// anything, in the tab's event loop: it must not block.
	Listen func(ev any)
	// CheckPage, when set, is what CheckClean checks of the page, in place
	// of its CSP violations: it should check those too (CSPViolationsJS).
	CheckPage func()
	// Failed, when set, runs when the tab's spec failed, after the tab's
	// screenshot and before its checks.
	Failed func()
}

// Tab is one browser tab of a spec: a fresh window of the suite's
// browser, with a sessionStorage of its own.
type Tab struct {
	// Name names the tab in failures, and its screenshot when its spec
	// fails.
	Name string
	// Ctx bounds every action of the tab.
	Ctx context.Context

	browser *Browser
	opts    TabOptions

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// OpenTab opens a tab that records its console; when the spec ends it is
// checked (see CheckClean) and closed.
func (b *Browser) OpenTab(name string, opts TabOptions) *Tab {
	GinkgoHelper()
	tabCtx, closeTab := chromedp.NewContext(b.ctx)
	Expect(chromedp.Do(tabCtx)).To(Succeed())
	t := &Tab{Name: name, browser: b, opts: opts}
	if opts.Listen != nil {
		Expect(chromedp.Listen(tabCtx, opts.Listen)).To(Succeed())
	}
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
	t.Ctx, stop = context.WithTimeout(tabCtx, 2*time.Minute)
	DeferCleanup(func() {
		defer closeTab()
		defer stop()
		if CurrentSpecReport().Failed() {
			t.Shot("FAILED-" + t.Name)
			if opts.Failed != nil {
				opts.Failed()
			}
		}
		t.CheckClean()
	})
	return t
}

// Do runs actions in the tab.
func (t *Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	Expect(chromedp.Do(t.Ctx, steps...)).To(Succeed())
}

// JS evaluates an expression in the page and decodes its value (through
// JSON) into out.
func (t *Tab) JS(expr string, out any) {
	GinkgoHelper()
	raw, err := chromedp.Run(t.Ctx, chromedp.Evaluate[string](`JSON.stringify((() => { return `+expr+` })()) ?? "null"`))
	Expect(err).NotTo(HaveOccurred(), expr)
	Expect(json.Unmarshal([]byte(raw), out)).To(Succeed(), raw)
}

// JSG is JS inside an Eventually: failures are the poll's, not the spec's
// (an evaluation fails while the tab is between two documents).
func (t *Tab) JSG(g Gomega, expr string, out any) {
	raw, err := chromedp.Run(t.Ctx, chromedp.Evaluate[string](`JSON.stringify((() => { return `+expr+` })()) ?? "null"`))
	g.Expect(err).NotTo(HaveOccurred(), expr)
	g.Expect(json.Unmarshal([]byte(raw), out)).To(Succeed(), raw)
}

// Q quotes a string, such as a CSS selector, for JavaScript.
func Q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// VisibleJS is true when the element sel matches is rendered.
func VisibleJS(sel string) string {
	return `(() => { const e = document.querySelector(` + Q(sel) + `); return !!e && e.getClientRects().length > 0 })()`
}

// Text is the textContent of the first element sel matches, "" when none.
func (t *Tab) Text(sel string) string {
	GinkgoHelper()
	var s string
	t.JS(`document.querySelector(`+Q(sel)+`)?.textContent ?? ""`, &s)
	return s
}

// Count is how many elements sel matches.
func (t *Tab) Count(sel string) int {
	GinkgoHelper()
	var n int
	t.JS(`document.querySelectorAll(`+Q(sel)+`).length`, &n)
	return n
}

// Attrs is the attribute of every element sel matches (null as "").
func (t *Tab) Attrs(sel, attr string) []string {
	GinkgoHelper()
	var out []string
	t.JS(`[...document.querySelectorAll(`+Q(sel)+`)].map((e) => e.getAttribute(`+Q(attr)+`) ?? "")`, &out)
	return out
}

// WaitVisible waits until an element sel matches is rendered.
func (t *Tab) WaitVisible(sel string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var ok bool
		t.JSG(g, VisibleJS(sel), &ok)
		g.Expect(ok).To(BeTrue(), "%s is not visible", sel)
	}).Should(Succeed(), "waiting for %s on %s", sel, t.Name)
}

// Click clicks an element with the mouse, at its center, as a person
// does: scrolled into view, once it holds still and nothing covers it
// there.
//
// chromedp.Click scrolls with DOM.scrollIntoViewIfNeeded and reads the
// element's place at once; on a page a full screenshot has just been
// taken of, that place can be read before the scroll has reached the
// page, and the click lands beside the element.
func (t *Tab) Click(sel string) {
	GinkgoHelper()
	var at point
	Eventually(func(g Gomega) {
		var first, second point
		t.JSG(g, `(() => { const e = document.querySelector(`+Q(sel)+`); if (!e) return {};
		  e.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
		  const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width, h: r.height} })()`, &first)
		g.Expect(first.W*first.H).To(BeNumerically(">", 0), "%s is not shown", sel)
		_, err := chromedp.Run(t.Ctx, chromedp.Evaluate[chromedp.Void](nextFrame, chromedp.EvalAwaitPromise))
		g.Expect(err).NotTo(HaveOccurred())
		t.JSG(g, `(() => { const e = document.querySelector(`+Q(sel)+`); if (!e) return {};
		  const r = e.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2;
		  const hit = document.elementFromPoint(x, y);
		  return {x, y, w: r.width, h: r.height, hit: !!hit && (hit === e || e.contains(hit))} })()`, &second)
		g.Expect(second.Hit).To(BeTrue(), "%s is covered, or outside the viewport", sel)
		second.Hit = false
		g.Expect(second).To(Equal(first), "%s is still moving", sel)
		at = second
	}).Should(Succeed())
	t.Do(chromedp.MouseClickXY(at.X, at.Y))
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

// Intercept pauses the tab's requests that pattern matches, from now on,
// and hands them to handle one at a time, in the order they come, on a
// goroutine of their own: handle continues one (Continue), answers it
// (fetch.FulfillRequest), or leaves it hanging.
func (t *Tab) Intercept(pattern *fetch.RequestPattern, handle func(ev fetch.EventRequestPaused)) {
	GinkgoHelper()
	paused := chromedp.Events(t.Ctx, fetch.RequestPaused)
	_, err := chromedp.Call(t.Ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{pattern}})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		for ev, err := range paused {
			if err != nil {
				return
			}
			handle(ev)
		}
	}()
}

// Continue lets a request Intercept paused go on as it was.
func (t *Tab) Continue(ev fetch.EventRequestPaused) {
	_, _ = chromedp.Call(t.Ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
}

// Shot saves a PNG screenshot of the whole page, when the browser takes
// screenshots (see Options).
func (t *Tab) Shot(name string) {
	GinkgoHelper()
	if t.browser.shots == "" {
		return
	}
	var before viewport
	t.JS(viewportJS, &before)
	buf, err := chromedp.Run(t.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		GinkgoWriter.Printf("no screenshot %s: %v\n", name, err)
		return
	}
	Expect(buf).To(HavePrefix("\x89PNG"))
	path := filepath.Join(t.browser.shots, strings.ReplaceAll(name, "/", "-")+".png")
	Expect(os.WriteFile(path, buf, 0o644)).To(Succeed())
	GinkgoWriter.Printf("screenshot: %s\n", path)
	// A screenshot beyond the viewport stretches it for a moment; a click
	// aimed while it shrinks back lands beside its target. Wait until the
	// viewport is as it was and the page has painted in it.
	Eventually(func(g Gomega) viewport {
		var now viewport
		t.JSG(g, viewportJS, &now)
		return now
	}).Should(Equal(before), "the viewport did not come back after the screenshot")
	t.Do(chromedp.Evaluate[chromedp.Void](nextFrame, chromedp.EvalAwaitPromise))
}

// viewport is the size of the page's viewport.
type viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

const viewportJS = `({width: innerWidth, height: innerHeight})`

// CheckClean fails the spec when the page threw, broke its
// Content-Security-Policy, or fails the suite's own checks
// (TabOptions.CheckPage). Every tab is checked when its spec ends; a spec
// may check its page sooner.
func (t *Tab) CheckClean() {
	GinkgoHelper()
	if t.opts.CheckPage != nil {
		t.opts.CheckPage()
	} else {
		t.checkCSP()
	}
	t.checkConsole()
}

// checkCSP fails the spec when the page broke its Content-Security-Policy.
func (t *Tab) checkCSP() {
	GinkgoHelper()
	raw, err := chromedp.Run(t.Ctx, chromedp.Evaluate[string](`JSON.stringify(`+CSPViolationsJS+`)`))
	if err != nil {
		GinkgoWriter.Printf("%s: could not read the page's CSP violations: %v\n", t.Name, err)
		return
	}
	var violations []string
	Expect(json.Unmarshal([]byte(raw), &violations)).To(Succeed())
	Expect(violations).To(BeEmpty(), "%s violated its Content-Security-Policy", t.Name)
}

// checkConsole fails the spec when the tab's console shows an exception
// or a Content-Security-Policy violation; it logs every message.
func (t *Tab) checkConsole() {
	GinkgoHelper()
	t.mu.Lock()
	messages := append([]chromedp.ConsoleMessage(nil), t.messages...)
	t.mu.Unlock()
	var bad []string
	for _, m := range messages {
		line := fmt.Sprintf("%s (source %q, %s:%d)", m, m.Source, m.URL, m.Line+1)
		GinkgoWriter.Printf("%s console: %s\n", t.Name, line)
		if m.IsException() || m.Source == "security" || cspMessage.MatchString(m.Text) {
			bad = append(bad, line)
		}
	}
	Expect(bad).To(BeEmpty(), "%s threw or broke its Content-Security-Policy", t.Name)
}

var cspMessage = regexp.MustCompile(`(?i)content security policy`)
