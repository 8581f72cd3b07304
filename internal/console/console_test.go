package console

import (
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	h := Handler(Config{Auth: "kubernetes", TryIt: true})
	etag := get(t, h, http.MethodGet, "/ui/app.js", nil).Header.Get("ETag")
	cases := []struct {
		name, method, target string
		header               map[string]string
		status               int
	}{
		{"index at /ui/", http.MethodGet, "/ui/", nil, http.StatusOK},
		{"index by name", http.MethodGet, "/ui/index.html", nil, http.StatusOK},
		{"script", http.MethodGet, "/ui/app.js", nil, http.StatusOK},
		{"style sheet", http.MethodGet, "/ui/app.css", nil, http.StatusOK},
		{"config", http.MethodGet, "/ui/config.json", nil, http.StatusOK},
		{"head", http.MethodHead, "/ui/app.js", nil, http.StatusOK},
		{"not modified", http.MethodGet, "/ui/app.js", map[string]string{"If-None-Match": etag}, http.StatusNotModified},
		{"redirect", http.MethodGet, "/ui", nil, http.StatusMovedPermanently},
		{"unknown file", http.MethodGet, "/ui/nope.js", nil, http.StatusNotFound},
		{"wrong method", http.MethodPost, "/ui/", nil, http.StatusMethodNotAllowed},
	}
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-cache",
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, h, tc.method, tc.target, tc.header)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			for k, v := range want {
				if got := res.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestFilesAreServedWithTheirTypeAndHash(t *testing.T) {
	h := Handler(Config{})
	cases := []struct{ target, contentType, contains string }{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="app.js">`},
		{"/ui/app.js", "text/javascript; charset=utf-8", "mcp-operator-token"},
		{"/ui/app.css", "text/css; charset=utf-8", ":focus-visible"},
		{"/ui/config.json", "application/json", `"auth"`},
		{"/ui/icon.svg", "image/svg+xml", "<svg"},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		res := get(t, h, http.MethodGet, tc.target, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", tc.target, res.StatusCode)
		}
		if got := res.Header.Get("Content-Type"); got != tc.contentType {
			t.Errorf("%s: Content-Type %q, want %q", tc.target, got, tc.contentType)
		}
		if b := body(t, res); !strings.Contains(b, tc.contains) {
			t.Errorf("%s: body lacks %q", tc.target, tc.contains)
		}
		etag := res.Header.Get("ETag")
		if !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) {
			t.Errorf("%s: ETag %q is not a quoted content hash", tc.target, etag)
		}
		if other, ok := seen[etag]; ok {
			t.Errorf("%s and %s share the ETag %s", tc.target, other, etag)
		}
		seen[etag] = tc.target
	}
}

func TestConfigReflectsTheCatalog(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"kubernetes tokens, try it on", Config{Auth: "kubernetes", TryIt: true}, `{"auth":"kubernetes","tryIt":true}`},
		{"oidc, try it off", Config{Auth: "oidc"}, `{"auth":"oidc","tryIt":false}`},
		{"unset auth is none", Config{}, `{"auth":"none","tryIt":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, Handler(tc.cfg), http.MethodGet, "/ui/config.json", nil)
			if got := body(t, res); got != tc.want {
				t.Errorf("config.json %s, want %s", got, tc.want)
			}
		})
	}
	a := get(t, Handler(Config{Auth: "none"}), http.MethodGet, "/ui/config.json", nil).Header.Get("ETag")
	b := get(t, Handler(Config{Auth: "none", TryIt: true}), http.MethodGet, "/ui/config.json", nil).Header.Get("ETag")
	if a == b {
		t.Errorf("config.json keeps ETag %s when the config changes", a)
	}
}

func TestSignInThroughAnOpenIDProvider(t *testing.T) {
	const (
		issuer = "https://idp.example.com:8443/realms/tools"
		policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"connect-src 'self' https://idp.example.com:8443; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
		strict = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	)
	cases := []struct {
		name   string
		oidc   *OIDC
		config string // config.json
		csp    string
	}{
		{"a provider and scopes", &OIDC{Issuer: issuer, ClientID: "console", Scopes: []string{"openid", "tools.read"}},
			`{"auth":"oidc","tryIt":true,"oidc":{"issuer":"` + issuer + `","clientID":"console","scopes":["openid","tools.read"]}}`, policy},
		{"scopes default to openid", &OIDC{Issuer: issuer, ClientID: "console"},
			`{"auth":"oidc","tryIt":true,"oidc":{"issuer":"` + issuer + `","clientID":"console","scopes":["openid"]}}`, policy},
		{"an http issuer on loopback", &OIDC{Issuer: "http://127.0.0.1:5556", ClientID: "console"},
			`{"auth":"oidc","tryIt":true,"oidc":{"issuer":"http://127.0.0.1:5556","clientID":"console","scopes":["openid"]}}`,
			strings.Replace(strict, "connect-src 'self'", "connect-src 'self' http://127.0.0.1:5556", 1)},
		{"no provider", nil, `{"auth":"oidc","tryIt":true}`, strict},
		{"no client", &OIDC{Issuer: issuer}, `{"auth":"oidc","tryIt":true}`, strict},
		{"an issuer that is no http(s) URL", &OIDC{Issuer: "javascript:alert(1)", ClientID: "console"}, `{"auth":"oidc","tryIt":true}`, strict},
		{"an issuer that would add a directive", &OIDC{Issuer: "https://idp.example.com;script-src *", ClientID: "console"}, `{"auth":"oidc","tryIt":true}`, strict},
		{"an issuer that would allow every subdomain", &OIDC{Issuer: "https://*.example.com", ClientID: "console"}, `{"auth":"oidc","tryIt":true}`, strict},
		{"an issuer with a password", &OIDC{Issuer: "https://user:pw@idp.example.com", ClientID: "console"}, `{"auth":"oidc","tryIt":true}`, strict},
		{"an issuer on an IPv6 address", &OIDC{Issuer: "https://[::1]:8443", ClientID: "console"}, `{"auth":"oidc","tryIt":true}`, strict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler(Config{Auth: "oidc", TryIt: true, OIDC: tc.oidc})
			res := get(t, h, http.MethodGet, "/ui/config.json", nil)
			if got := body(t, res); got != tc.config {
				t.Errorf("config.json %s, want %s", got, tc.config)
			}
			// Every file carries the one policy: the page may reach its
			// own origin and the provider's, no other.
			for _, target := range []string{"/ui/", "/ui/login.js", "/ui/config.json", "/ui/nope"} {
				if got := get(t, h, http.MethodGet, target, nil).Header.Get("Content-Security-Policy"); got != tc.csp {
					t.Errorf("%s: Content-Security-Policy %q, want %q", target, got, tc.csp)
				}
			}
		})
	}
	res := get(t, Handler(Config{}), http.MethodGet, "/ui/login.js", nil)
	if b := body(t, res); res.StatusCode != http.StatusOK || !strings.Contains(b, "code_challenge_method: 'S256'") {
		t.Errorf("login.js: %d, or it asks for no S256 challenge", res.StatusCode)
	}
}

// TestCheckIssuer checks which issuers the page may sign in through: those
// whose origin the Content-Security-Policy can name as it is, and only it.
func TestCheckIssuer(t *testing.T) {
	cases := []struct{ issuer, want string }{
		{"https://idp.example.com", ""},
		{"https://idp.example.com/", ""},
		{"https://idp.example.com:8443/realms/tools", ""},
		{"http://127.0.0.1:5556", ""},
		{"https://IdP-1.Example.com:1", ""},
		{"https://idp.example.com:65535/a/b", ""},
		{"", "it is not an http(s) URL"},
		{"idp.example.com", "it is not an http(s) URL"},
		{"javascript:alert(1)", "it is not an http(s) URL"},
		{"ftp://idp.example.com", "it is not an http(s) URL"},
		{"https://%zz", "it is not a URL"},
		{"https:idp.example.com", "it names no host"},
		{"https:///realms/tools", "it names no host"},
		{"https://user:pw@idp.example.com", "it holds a user name or password"},
		{"https://user@idp.example.com", "it holds a user name or password"},
		{"https://idp.example.com?tenant=a", "it holds a query"},
		{"https://idp.example.com/?", "it holds a query"},
		{"https://idp.example.com#a", "it holds a fragment"},
		{"https://idp.example.com/#", "it holds a fragment"},
		{"https://[::1]:8443", "its host is an IPv6 address, which a Content-Security-Policy cannot name: use a DNS name"},
		{"https://[fe80::1%25eth0]", "its host is an IPv6 address, which a Content-Security-Policy cannot name: use a DNS name"},
		{"https://*.example.com", "its host holds a wildcard (*)"},
		{"https://exa*mple.com", "its host holds a wildcard (*)"},
		{"https://*", "its host holds a wildcard (*)"},
		{"https://idp.example.com:*", "it is not a URL"},
		{"https://example.com:", "its port is empty"},
		{"https://idp.example.com;script-src", `its host "idp.example.com;script-src" may hold only ASCII letters, digits, dots and hyphens`},
		{"https://idp.example.com,https:", `its host "idp.example.com,https" may hold only ASCII letters, digits, dots and hyphens`},
		{"https://idp_1.example.com", `its host "idp_1.example.com" may hold only ASCII letters, digits, dots and hyphens`},
		{"https://id%C3%A9.example.com", `its host "idé.example.com" may hold only ASCII letters, digits, dots and hyphens`},
		{"https://idp.example.com'", `its host "idp.example.com'" may hold only ASCII letters, digits, dots and hyphens`},
		{"https://idp.example.com:0", "its port 0 is not a number from 1 to 65535"},
		{"https://idp.example.com:08443", "its port 08443 is not a number from 1 to 65535"},
		{"https://idp.example.com:65536", "its port 65536 is not a number from 1 to 65535"},
		{"https://idp.example.com:99999999999999999999", "its port 99999999999999999999 is not a number from 1 to 65535"},
	}
	for _, tc := range cases {
		got := ""
		if err := CheckIssuer(tc.issuer); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("CheckIssuer(%q): %q, want %q", tc.issuer, got, tc.want)
		}
		// The policy names an issuer's origin exactly when it is accepted.
		if o := origin(tc.issuer); (o != "") != (tc.want == "") {
			t.Errorf("origin(%q) = %q, but CheckIssuer says %q", tc.issuer, o, got)
		}
	}
}

// TestBareUIRedirectsToTheSlash checks that /ui leads to /ui/ with a
// relative Location: behind a proxy that serves the catalog under a
// prefix, the browser stays under it.
func TestBareUIRedirectsToTheSlash(t *testing.T) {
	h := Handler(Config{})
	cases := []struct{ target, location, direct, proxied string }{
		{"/ui", "ui/", "http://catalog:8090/ui/", "https://tools.example.com/catalog/ui/"},
		{"/ui?x=1", "ui/?x=1", "http://catalog:8090/ui/?x=1", "https://tools.example.com/catalog/ui/?x=1"},
	}
	for _, tc := range cases {
		res := get(t, h, http.MethodGet, tc.target, nil)
		location := res.Header.Get("Location")
		if res.StatusCode != http.StatusMovedPermanently || location != tc.location {
			t.Errorf("%s: %d to %q, want %d to %q", tc.target, res.StatusCode, location, http.StatusMovedPermanently, tc.location)
			continue
		}
		// What a browser goes to from the page it asked for.
		for from, want := range map[string]string{
			"http://catalog:8090" + tc.target:               tc.direct,
			"https://tools.example.com/catalog" + tc.target: tc.proxied,
		} {
			base, err := url.Parse(from)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := url.Parse(location)
			if err != nil {
				t.Fatalf("Location %q: %v", location, err)
			}
			if got := base.ResolveReference(ref).String(); got != want {
				t.Errorf("from %s, Location %q leads to %s, want %s", from, location, got, want)
			}
		}
	}
}

func TestUnknownFilesAreNotFound(t *testing.T) {
	h := Handler(Config{})
	for _, target := range []string{"/ui/nope.js", "/ui/assets/app.js", "/ui/index.html/", "/ui//app.js", "/ui/../go.mod", "/other", "/ui/.", "/uix"} {
		if res := get(t, h, http.MethodGet, target, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", target, res.StatusCode)
		}
	}
}

func TestIfNoneMatchAnswersNotModified(t *testing.T) {
	h := Handler(Config{Auth: "kubernetes"})
	for _, target := range []string{"/ui/", "/ui/app.js", "/ui/config.json"} {
		etag := get(t, h, http.MethodGet, target, nil).Header.Get("ETag")
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag} {
			res := get(t, h, http.MethodGet, target, map[string]string{"If-None-Match": inm})
			if res.StatusCode != http.StatusNotModified {
				t.Errorf("%s with If-None-Match %s: status %d, want 304", target, inm, res.StatusCode)
			}
			if b := body(t, res); b != "" {
				t.Errorf("%s: 304 with a body of %d bytes", target, len(b))
			}
		}
		if res := get(t, h, http.MethodGet, target, map[string]string{"If-None-Match": `"stale"`}); res.StatusCode != http.StatusOK {
			t.Errorf("%s with a stale ETag: status %d, want 200", target, res.StatusCode)
		}
	}
}

func TestIndexReferencesOnlyServedAssets(t *testing.T) {
	h := Handler(Config{})
	index := body(t, get(t, h, http.MethodGet, "/ui/", nil))
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(index, -1)
	if len(refs) < 3 {
		t.Fatalf("index.html references %d files, want the script, the style sheet and the icon", len(refs))
	}
	for _, ref := range refs {
		if res := get(t, h, http.MethodGet, "/ui/"+ref[1], nil); res.StatusCode != http.StatusOK {
			t.Errorf("index.html references %s, served %d", ref[1], res.StatusCode)
		}
	}
}

// The page shows untrusted text (tool descriptions, results, messages):
// these rules keep markup from ever being parsed from it, and keep the
// assets working under the CSP.
var (
	htmlRules = map[string]*regexp.Regexp{
		"an on... event attribute":   regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`),
		"a style attribute":          regexp.MustCompile(`(?i)<[^>]*\sstyle\s*=`),
		"a <style> element":          regexp.MustCompile(`(?i)<style\b`),
		"a javascript: URL":          regexp.MustCompile(`(?i)javascript:`),
		"a resource of another site": regexp.MustCompile(`(?i)(?:src|href)\s*=\s*["']?(?:https?:)?//`),
	}
	jsRules = map[string]*regexp.Regexp{
		"innerHTML":                   regexp.MustCompile(`innerHTML`),
		"outerHTML":                   regexp.MustCompile(`outerHTML`),
		"insertAdjacentHTML":          regexp.MustCompile(`insertAdjacentHTML`),
		"document.write":              regexp.MustCompile(`document\.write`),
		"eval(":                       regexp.MustCompile(`\beval\s*\(`),
		"new Function":                regexp.MustCompile(`\bnew\s+Function\b`),
		"a string given to a timer":   regexp.MustCompile(`\bset(?:Timeout|Interval)\s*\(\s*['"\x60]`),
		"an on... or style attribute": regexp.MustCompile(`setAttribute\(\s*['"\x60](?:on|style)`),
		"a javascript: URL":           regexp.MustCompile(`(?i)javascript:`),
		"a markup parser":             regexp.MustCompile(`DOMParser|createContextualFragment|srcdoc`),
		"a request to another site":   regexp.MustCompile(`(?i)https?://`),
	}
	inlineScript = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script\s*>`)
)

func TestAssetsHoldNoInlineCodeOrMarkupParsing(t *testing.T) {
	var scanned int
	err := fs.WalkDir(assets, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := assets.ReadFile(name)
		if err != nil {
			return err
		}
		text := string(raw)
		switch path.Ext(name) {
		case ".html":
			scanned++
			for _, m := range inlineScript.FindAllStringSubmatch(text, -1) {
				if strings.TrimSpace(m[2]) != "" || !strings.Contains(m[1], "src=") {
					t.Errorf("%s: an inline <script>: %q", name, m[0])
				}
			}
			for rule, re := range htmlRules {
				if loc := re.FindStringIndex(text); loc != nil {
					t.Errorf("%s: %s at byte %d: %q", name, rule, loc[0], text[loc[0]:min(loc[1]+20, len(text))])
				}
			}
		case ".js":
			scanned++
			for rule, re := range jsRules {
				if loc := re.FindStringIndex(text); loc != nil {
					t.Errorf("%s: %s at byte %d", name, rule, loc[0])
				}
			}
		case ".css":
			if regexp.MustCompile(`(?i)https?://|@import|expression\(`).MatchString(text) {
				t.Errorf("%s loads something from elsewhere", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 2 {
		t.Fatalf("scanned %d HTML and JS files, want index.html and app.js at least", scanned)
	}
}

func TestAssetsStaySmall(t *testing.T) {
	var total int
	_ = fs.WalkDir(assets, "assets", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			raw, _ := assets.ReadFile(name)
			total += len(raw)
		}
		return err
	})
	// 60 KB, 6 more for signing in through an OpenID provider (login.js),
	// 5.3 more for schemas that hold themselves, optional objects,
	// request timeouts, a bounded cache and focus kept across redraws, and
	// 4.4 more for timeouts and checks of the provider's answers, request
	// timeouts without AbortSignal.any, sign-in failures shown at once and
	// the fields past the cap folded into one.
	if total > 75_700 {
		t.Errorf("the assets weigh %d bytes, over the 75.7 KB budget", total)
	}
}

// TestColorsHoldContrast checks every text color against the backgrounds
// it is drawn on, in the light and the dark scheme (WCAG 2 AA: 4.5:1).
func TestColorsHoldContrast(t *testing.T) {
	css, err := assets.ReadFile("assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	schemes := regexp.MustCompile(`:root\s*\{([^}]*)\}`).FindAllStringSubmatch(string(css), -1)
	if len(schemes) != 2 {
		t.Fatalf("found %d :root color blocks, want light and dark", len(schemes))
	}
	pairs := [][2]string{
		{"text", "bg"}, {"text", "surface"}, {"text", "neutral-bg"}, {"text", "code-bg"},
		{"muted", "bg"}, {"muted", "surface"}, {"muted", "neutral-bg"},
		{"link", "bg"}, {"link", "surface"}, {"link", "neutral-bg"}, {"on-primary", "primary"},
		{"ok", "ok-bg"}, {"ok", "surface"}, {"bad", "bad-bg"}, {"bad", "surface"},
		{"warn", "warn-bg"}, {"neutral", "neutral-bg"},
	}
	for i, scheme := range schemes {
		colors := map[string]string{}
		for _, m := range regexp.MustCompile(`--([\w-]+):\s*#([0-9a-fA-F]{6})`).FindAllStringSubmatch(scheme[1], -1) {
			colors[m[1]] = m[2]
		}
		for _, p := range pairs {
			fg, bg := colors[p[0]], colors[p[1]]
			if fg == "" || bg == "" {
				t.Errorf("scheme %d: --%s or --%s is not a #rrggbb color", i, p[0], p[1])
				continue
			}
			if r := contrast(fg, bg); r < 4.5 {
				t.Errorf("scheme %d: --%s on --%s has contrast %.2f, under 4.5", i, p[0], p[1], r)
			}
		}
	}
}

func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	var rgb [3]float64
	for i := range rgb {
		v, _ := strconv.ParseUint(hex[2*i:2*i+2], 16, 8)
		c := float64(v) / 255
		if c <= 0.03928 {
			rgb[i] = c / 12.92
		} else {
			rgb[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
}
