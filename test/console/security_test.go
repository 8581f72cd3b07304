package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// expectStrictHeaders checks the headers every /ui/ answer carries.
func expectStrictHeaders(path string, h http.Header) {
	GinkgoHelper()
	csp := h.Get("Content-Security-Policy")
	Expect(csp).To(ContainSubstring("default-src 'none'"), path)
	Expect(csp).To(MatchRegexp(`(^|;)\s*script-src 'self'\s*(;|$)`), "%s: scripts from the catalog only", path)
	Expect(csp).NotTo(ContainSubstring("unsafe-inline"), path)
	Expect(csp).NotTo(ContainSubstring("unsafe-eval"), path)
	Expect(csp).To(ContainSubstring("frame-ancestors 'none'"), path)
	Expect(csp).To(ContainSubstring("connect-src 'self'"), path)
	Expect(h.Get("X-Content-Type-Options")).To(Equal("nosniff"), path)
	Expect(h.Get("Referrer-Policy")).To(Equal("no-referrer"), path)
}

var (
	scriptTag     = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script\s*>`)
	srcAttr       = regexp.MustCompile(`(?i)\bsrc\s*=\s*["']?([^"'\s>]+)`)
	stylesheetTag = regexp.MustCompile(`(?i)<link\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)`)
	handlerAttr   = regexp.MustCompile(`(?i)<[^>]+\son[a-z]+\s*=`)
	styleAttr     = regexp.MustCompile(`(?i)<[^>]+\sstyle\s*=`)
)

var _ = Describe("The console's page", func() {
	It("is served to anyone with a strict Content-Security-Policy, no inline script, and scripts from /ui/ only", func() {
		code, h, body := get("/ui/", "")
		Expect(code).To(Equal(http.StatusOK), "/ui/ needs no token: %s", body)
		Expect(h.Get("Content-Type")).To(HavePrefix("text/html"))
		expectStrictHeaders("/ui/", h)
		index := string(body)
		scripts := scriptTag.FindAllStringSubmatch(index, -1)
		Expect(scripts).NotTo(BeEmpty(), "index.html loads no script")
		Expect(handlerAttr.FindAllString(index, -1)).To(BeEmpty(), "index.html has on* attributes")
		Expect(styleAttr.FindAllString(index, -1)).To(BeEmpty(), "index.html has style attributes")

		var assets []string
		for _, s := range scripts {
			Expect(strings.TrimSpace(s[2])).To(BeEmpty(), "an inline script: %s", s[0])
			src := srcAttr.FindStringSubmatch(s[1])
			Expect(src).NotTo(BeNil(), "a script without src: %s", s[0])
			assets = append(assets, src[1])
		}
		for _, l := range stylesheetTag.FindAllStringSubmatch(index, -1) {
			assets = append(assets, l[1])
		}
		base, err := url.Parse(catalogURL + "/ui/")
		Expect(err).NotTo(HaveOccurred())
		for _, a := range assets {
			ref, err := url.Parse(a)
			Expect(err).NotTo(HaveOccurred())
			u := base.ResolveReference(ref)
			Expect(u.Scheme+"://"+u.Host).To(Equal(catalogURL), "%s is not the catalog's", a)
			Expect(u.Path).To(HavePrefix("/ui/"), a)
			code, h, body := get(u.RequestURI(), "")
			Expect(code).To(Equal(http.StatusOK), u.Path)
			expectStrictHeaders(u.Path, h)
			if strings.HasSuffix(u.Path, ".js") {
				Expect(h.Get("Content-Type")).To(MatchRegexp(`^(text|application)/javascript`), u.Path)
				Expect(string(body)).NotTo(MatchRegexp(`\beval\s*\(|new\s+Function\s*\(`), "%s evaluates strings as code", u.Path)
			}
		}

		By("its configuration, the redirect from /ui and a 404 for what it does not hold")
		code, h, body = get("/ui/config.json", "")
		Expect(code).To(Equal(http.StatusOK))
		expectStrictHeaders("/ui/config.json", h)
		Expect(body).To(MatchJSON(`{"auth":"kubernetes","tryIt":true}`))
		code, h, _ = get("/ui", "")
		Expect(code).To(BeElementOf(http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
			http.StatusTemporaryRedirect, http.StatusPermanentRedirect))
		// Relative, so that it stays under a proxy's prefix; from /ui it is /ui/.
		Expect(h.Get("Location")).To(Equal("ui/"))
		location, err := url.Parse(h.Get("Location"))
		Expect(err).NotTo(HaveOccurred())
		bare, err := url.Parse(catalogURL + "/ui")
		Expect(err).NotTo(HaveOccurred())
		Expect(bare.ResolveReference(location).String()).To(Equal(catalogURL + "/ui/"))
		code, _, _ = get("/ui/no-such-file.js", "")
		Expect(code).To(Equal(http.StatusNotFound))
	})

	It("shows a tool description of HTML and script as text, runs none of it, and adds none of it to the page", func() {
		t := openTab("xss")
		t.signIn("/servers/"+ns+"/shady", callerToken)
		t.waitCount(`[data-testid=tool]`, 1)
		tool := `[data-testid=tool][data-name="` + trapTool + `"]`
		Expect(t.Text(tool + ` [data-testid=tool-description]`)).To(Equal(xssDescription))
		Expect(t.bodyText()).To(ContainSubstring(xssDescription), "the description is not shown as text")
		Expect(t.Text(tool)).To(ContainSubstring("<b>bold</b>"), "a property's description is not shown as text")
		Expect(t.Count(tool+` b`)).To(BeZero(), "a property's description became markup")
		t.CheckClean()
		t.Shot("xss")

		By("on the collection's page")
		t.goTo("/collections/" + ns + "/" + kit)
		t.waitCount(`[data-testid=tool]`, len(kitTools))
		Eventually(func() string { return t.Text(tool + ` [data-testid=tool-description]`) }).Should(Equal(xssDescription))
		t.CheckClean()

		By("on the try page")
		t.goTo(tryRoute(trapTool))
		t.WaitVisible(`form[data-testid=try-form]`)
		t.CheckClean()

		By("in search results")
		t.goTo("/search")
		t.WaitVisible(`input[data-testid=search-input]`)
		code, _, body := get("/v1/tools/search?q=trap", callerToken)
		Expect(code).To(Equal(http.StatusOK), string(body))
		Expect(menuNames(body)).To(ContainElement(trapTool))
		t.Do(chromedp.SendKeys(chromedp.CSS(`input[data-testid=search-input]`), "trap\n"))
		Eventually(func() []string { return t.Attrs(`[data-testid=search-result]`, "data-name") }).Should(ContainElement(trapTool))
		t.CheckClean()
	})
})
