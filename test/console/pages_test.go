package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testbrowser"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// formats are the menu formats the catalog serves (internal/toolcatalog
// render.go), each of which the collection page offers.
var formats = []string{"openai", "openai-responses", "anthropic", "gemini", "mcp"}

var _ = Describe("The console, to a viewer who may call tools", func() {
	It("asks for a token, keeps it in sessionStorage only, shows a 401 again as the form, and forgets the token", func() {
		t := openTab("token")
		t.open("/servers")
		t.WaitVisible(`form[data-testid=token-form]`)
		var field struct {
			Type     string `json:"type"`
			Labelled bool   `json:"labelled"`
		}
		t.JS(`(() => { const i = document.querySelector('input[data-testid=token-input]');
		  return {type: i.type, labelled: i.labels.length > 0 || !!i.getAttribute('aria-label') || !!i.getAttribute('aria-labelledby')} })()`, &field)
		Expect(field.Type).To(Equal("password"))
		Expect(field.Labelled).To(BeTrue(), "the token field has no label")
		Expect(t.Count(`tr[data-testid=server-row]`)).To(BeZero())
		t.Shot("token-form")

		By("a token the API server does not know: the API answers 401 and the page asks again, with the API's message")
		code, _, body := get("/v1/mcpservers", "not-a-token")
		Expect(code).To(Equal(http.StatusUnauthorized))
		rejected := apiError(body)
		t.typeInto(`input[data-testid=token-input]`, "not-a-token")
		t.Click(`button[data-testid=token-submit]`)
		Eventually(func(g Gomega) {
			var shown struct {
				Form bool   `json:"form"`
				Text string `json:"text"`
			}
			t.JSG(g, `({form: `+testbrowser.VisibleJS(`form[data-testid=token-form]`)+`, text: document.body.innerText})`, &shown)
			g.Expect(shown.Form).To(BeTrue(), "the token form is not shown again")
			g.Expect(shown.Text).To(ContainSubstring(rejected))
		}).Should(Succeed())
		Expect(t.Count(`tr[data-testid=server-row]`)).To(BeZero())

		By("the caller's token: the page shows the servers and keeps the token in sessionStorage, nowhere else")
		t.replaceText(`input[data-testid=token-input]`, callerToken)
		t.Click(`button[data-testid=token-submit]`)
		t.settled()
		t.waitCount(`tr[data-testid=server-row]`, 4)
		var stored struct {
			Session string `json:"session"`
			Local   int    `json:"local"`
			Cookie  string `json:"cookie"`
			Input   string `json:"input"`
		}
		t.JS(`({session: sessionStorage.getItem(`+testbrowser.Q(testbrowser.TokenKey)+`), local: localStorage.length, cookie: document.cookie,
		  input: document.querySelector('input[data-testid=token-input]')?.value ?? ""})`, &stored)
		Expect(stored.Session).To(Equal(callerToken))
		Expect(stored.Local).To(BeZero(), "the page wrote to localStorage")
		Expect(stored.Cookie).To(BeEmpty())
		Expect(stored.Input).NotTo(ContainSubstring(callerToken), "the token stays in the form's field")
		Expect(t.html()).NotTo(ContainSubstring(callerToken), "the token is in the page's markup")
		t.WaitVisible(`button[data-testid=token-clear]`)

		By("a reload keeps the token: the servers show without the form")
		t.Do(chromedp.Reload())
		t.settled()
		t.waitCount(`tr[data-testid=server-row]`, 4)

		By("forgetting the token shows the form again and empties sessionStorage")
		t.Click(`button[data-testid=token-clear]`)
		t.WaitVisible(`form[data-testid=token-form]`)
		var left *string
		t.JS(`sessionStorage.getItem(`+testbrowser.Q(testbrowser.TokenKey)+`)`, &left)
		Expect(left).To(BeNil())
		Expect(t.Count(`tr[data-testid=server-row]`)).To(BeZero(), "the servers stay on the page after the token is forgotten")
	})

	It("lists the servers with their Ready condition, transport, protocol revision, tool count and a link to each", func() {
		t := openTab("servers")
		t.signIn("/servers", callerToken)
		t.WaitVisible(`table[data-testid=servers]`)
		t.waitCount(`tr[data-testid=server-row]`, 4)
		Expect(t.Attrs(`tr[data-testid=server-row]`, "data-name")).To(ConsistOf(
			ns+"/echo", ns+"/echo-mirror", ns+"/media", ns+"/shady"))
		for _, name := range []string{"echo", "echo-mirror", "media", "shady"} {
			row := `tr[data-testid=server-row][data-name="` + ns + "/" + name + `"]`
			s := server(name)
			Expect(s.Status.ServerInfo).NotTo(BeNil())
			ready := strings.TrimSpace(t.Text(row + ` [data-testid=ready]`))
			Expect(ready).To(HavePrefix("True"), name)
			Expect(ready).To(ContainSubstring("ToolsDiscovered"), name)
			cells := t.Text(row)
			Expect(cells).To(ContainSubstring(string(s.Status.ServerInfo.Transport)), "%s: transport", name)
			Expect(cells).To(ContainSubstring(s.Status.ServerInfo.ProtocolVersion), "%s: protocol revision", name)
			Expect(cells).To(MatchRegexp(`(^|\D)`+strconv.Itoa(int(s.Status.ToolCount))+`(\D|$)`), "%s: tool count", name)
			Expect(t.Attrs(row+` a[href]`, "href")).To(ContainElement(HaveSuffix("#/servers/"+ns+"/"+name)), "%s: link", name)
		}
		t.Shot("servers")

		By("the link leads to the server's page")
		t.Click(`tr[data-testid=server-row][data-name="` + ns + `/media"] a[href$="#/servers/` + ns + `/media"]`)
		Eventually(func() string { return strings.TrimSpace(t.Text(`[data-testid=server-title]`)) }).Should(Equal(ns + "/media"))
		t.waitCount(`[data-testid=tool]`, 4)
	})

	It("shows a server's tools with their descriptions as text, schemas as tables and raw JSON, its conditions and events", func() {
		By("the controller has written Events about the server")
		Eventually(func() []string { return eventReasons("MCPServer", "echo") }).ShouldNot(BeEmpty())
		reasons := eventReasons("MCPServer", "echo")

		t := openTab("server")
		t.signIn("/servers/"+ns+"/echo", callerToken)
		Eventually(func() string { return strings.TrimSpace(t.Text(`[data-testid=server-title]`)) }).Should(Equal(ns + "/echo"))
		t.waitCount(`[data-testid=tool]`, 3)
		Expect(t.Attrs(`[data-testid=tool]`, "data-name")).To(ConsistOf(configureTool, forecastTool, greetTool))
		tool := `[data-testid=tool][data-name="` + configureTool + `"]`
		Expect(t.Text(tool + ` [data-testid=tool-description]`)).To(Equal(configureDescription))

		By("the input schema as a table of properties: name, type, required, description")
		var table struct {
			Header []string            `json:"header"`
			Rows   map[string][]string `json:"rows"`
		}
		t.JS(`(() => { const tb = document.querySelector(`+testbrowser.Q(tool+` table`)+`); if (!tb) return null;
		  const rows = [...tb.querySelectorAll('tr')].map((r) => [...r.cells].map((c) => c.textContent.trim()));
		  const header = (tb.tHead?.rows[0] ? [...tb.tHead.rows[0].cells].map((c) => c.textContent.trim()) : rows[0]);
		  const body = {}; for (const r of rows.slice(1)) if (r.length) body[r[0]] = r;
		  return {header, rows: body} })()`, &table)
		Expect(table.Header).NotTo(BeEmpty(), "the tool has no table of its input schema")
		column := func(name string) int {
			i := slices.IndexFunc(table.Header, func(h string) bool { return strings.Contains(strings.ToLower(h), name) })
			Expect(i).NotTo(Equal(-1), "the schema table has no %s column: %v", name, table.Header)
			return i
		}
		typeCol, requiredCol, descriptionCol := column("type"), column("required"), column("description")
		want := map[string][2]string{
			"name": {"string", "Who the settings are for"}, "count": {"integer", "How many replicas"},
			"ratio": {"number", "Share of the traffic"}, "mode": {"string", "How careful to be"},
			"verbose": {"boolean", "Log every step"}, "tags": {"array", "Labels to attach"},
			"target": {"object", "Where to apply them"},
		}
		for prop, w := range want {
			row, ok := table.Rows[prop]
			Expect(ok).To(BeTrue(), "no row for %s in %v", prop, table.Rows)
			if prop == "mode" {
				// An enum may be shown by its values rather than its type.
				Expect(row[typeCol]).To(Or(ContainSubstring("string"), And(ContainSubstring("fast"), ContainSubstring("safe"), ContainSubstring("slow"))), prop)
			} else {
				Expect(row[typeCol]).To(ContainSubstring(w[0]), prop)
			}
			Expect(row[descriptionCol]).To(ContainSubstring(w[1]), prop)
		}
		Expect(table.Rows["name"][requiredCol]).NotTo(Equal(table.Rows["count"][requiredCol]),
			"the required column does not tell name (required) from count (optional)")
		Expect(table.Rows["mode"][requiredCol]).To(Equal(table.Rows["name"][requiredCol]))

		By("the raw input schema in a <details>, as status has it")
		var raw string
		t.JS(`(() => { const d = document.querySelector(`+testbrowser.Q(tool+` details`)+`); if (!d) return "";
		  return [...d.children].filter((c) => c.tagName !== 'SUMMARY').map((c) => c.textContent).join('') })()`, &raw)
		Expect(raw).NotTo(BeEmpty(), "the tool has no <details> with its raw schema")
		Expect(raw).To(MatchJSON(serverTool("echo", configureTool).InputSchema.Raw))

		By("the conditions and the events")
		t.WaitVisible(`[data-testid=conditions]`)
		var ready []string
		t.JS(`[...document.querySelectorAll('[data-testid=conditions] tr')].map((r) => r.textContent).filter((s) => /\bReady\b/.test(s))`, &ready)
		Expect(ready).To(ContainElement(And(ContainSubstring("True"), ContainSubstring("ToolsDiscovered"))))
		t.WaitVisible(`[data-testid=events]`)
		Eventually(func() int { return t.Count(`[data-testid=events] [data-testid=event]`) }).Should(BeNumerically(">", 0))
		events := t.Text(`[data-testid=events]`)
		Expect(slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(events, r) })).To(BeTrue(),
			"the events shown (%q) name none of the server's Events' reasons %v", events, reasons)
		t.Shot("server")
	})

	It("shows the tools MCP clients are refused on a server's page, and why", func() {
		By("a server whose tool puts x-mcp-header on an object: its MCP library refuses such a schema, so a proxy writes the key in")
		upstream := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(upstream.Stop)
		upstream.AddRawTool("search", "Searches with a header filter.",
			`{"type":"object","properties":{"filter":{"type":"object","x-stand-in":"X-Filter"}}}`, func(json.RawMessage) string { return "found" })
		upstream.AddRawTool("plain", "A plain tool.", `{"type":"object"}`, func(json.RawMessage) string { return "plain" })
		odd := env.CreateServer(ns, "odd", testenv.Rewriting(upstream.URL(), "x-stand-in", "x-mcp-header"))
		Eventually(env.ReadyOf(odd)).Should(HavePrefix("True/"))
		warning := ""
		for _, w := range serverTool("odd", "mcp_odd_search").Warnings {
			if strings.Contains(w, "x-mcp-header") {
				warning = w
			}
		}
		Expect(warning).NotTo(BeEmpty(), "the controller reports no refusal")

		t := openTab("server-refused")
		t.signIn("/servers/"+ns+"/odd", callerToken)
		t.waitCount(`[data-testid=tool]`, 2)
		t.waitCount(`[data-testid=refused-tool]`, 1)
		refused := `[data-testid=refused-tool]`
		Expect(t.Attrs(refused, "data-name")).To(Equal([]string{"mcp_odd_search"}))
		Expect(t.Text(refused)).To(ContainSubstring("x-mcp-header can only be applied to primitive types"))
		t.Shot("server-refused")
	})

	It("lists the collections, and shows a collection's tools, its menu in every format, its MCP endpoint and a client configuration without the token", func() {
		t := openTab("collections")
		t.signIn("/collections", callerToken)
		t.WaitVisible(`table[data-testid=collections]`)
		t.waitCount(`tr[data-testid=collection-row]`, 2)
		Expect(t.Attrs(`tr[data-testid=collection-row]`, "data-name")).To(ConsistOf(ns+"/"+kit, ns+"/"+clash))
		t.Shot("collections")

		By("the collection's page: its tools, each with a link to try it")
		t.goTo("/collections/" + ns + "/" + kit)
		Eventually(func() string { return strings.TrimSpace(t.Text(`[data-testid=collection-title]`)) }).Should(Equal(ns + "/" + kit))
		t.waitCount(`[data-testid=tool]`, len(kitTools))
		Expect(t.Attrs(`[data-testid=tool]`, "data-name")).To(ConsistOf(kitTools))
		t.waitCount(`a[data-testid=try-link]`, len(kitTools))
		for _, name := range kitTools {
			Expect(t.Attrs(`[data-testid=tool][data-name="`+name+`"] a[data-testid=try-link]`, "href")).To(
				ConsistOf(HaveSuffix("#/collections/"+ns+"/"+kit+"/try/"+name)), name)
		}

		By("the menu in every format the catalog serves, as the catalog serves it")
		t.WaitVisible(`select[data-testid=format-select]`)
		Expect(t.Attrs(`select[data-testid=format-select] option`, "value")).To(ConsistOf(formats))
		for _, format := range formats {
			code, _, body := get(kitPath+"/tools?format="+format, callerToken)
			Expect(code).To(Equal(http.StatusOK), string(body))
			t.choose(`select[data-testid=format-select]`, format)
			Eventually(func() string { return t.Text(`pre[data-testid=menu-json]`) }).Should(MatchJSON(body), format)
		}
		t.WaitVisible(`button[data-testid=copy-menu]`)

		By("the MCP endpoint and a client configuration with a placeholder for the token")
		endpoint := catalogURL + kitPath + "/mcp"
		Expect(strings.TrimSpace(t.Text(`[data-testid=mcp-url]`))).To(Equal(endpoint))
		var config struct {
			MCPServers map[string]struct {
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		snippet := t.Text(`pre[data-testid=client-config]`)
		Expect(json.Unmarshal([]byte(snippet), &config)).To(Succeed(), snippet)
		Expect(config.MCPServers).To(HaveLen(1), snippet)
		for _, s := range config.MCPServers {
			Expect(s.URL).To(Equal(endpoint))
			Expect(s.Headers).To(HaveKeyWithValue("Authorization", "Bearer <token>"))
		}
		Expect(snippet).NotTo(ContainSubstring(callerToken))
		Expect(t.html()).NotTo(ContainSubstring(callerToken), "the token is in the page's markup")
		t.Shot("collection")

		By("the copy buttons put the snippet and the menu on the clipboard")
		grantClipboard(t)
		t.Click(`button[data-testid=copy-config]`)
		Eventually(func() string { return clipboard(t) }).Should(Equal(snippet))
		menu := t.Text(`pre[data-testid=menu-json]`)
		t.Click(`button[data-testid=copy-menu]`)
		Eventually(func() string { return clipboard(t) }).Should(Equal(menu))
	})

	It("shows a collection's conflicts, and its unapproved tools with both hashes", func() {
		tc := collection(clash)
		var unapproved string
		for _, u := range tc.Status.UnapprovedTools {
			if u.Name == greetTool {
				unapproved = u.CurrentHash
			}
		}
		Expect(unapproved).NotTo(BeEmpty())

		t := openTab("collection-conflicts")
		t.signIn("/collections/"+ns+"/"+clash, callerToken)
		Eventually(func() string { return strings.TrimSpace(t.Text(`[data-testid=collection-title]`)) }).Should(Equal(ns + "/" + clash))
		t.WaitVisible(`[data-testid=conflicts]`)
		Expect(t.Text(`[data-testid=conflicts]`)).To(And(ContainSubstring(greetTool), ContainSubstring("echo-mirror")))
		t.WaitVisible(`[data-testid=unapproved]`)
		Expect(t.Text(`[data-testid=unapproved]`)).To(And(ContainSubstring(greetTool),
			ContainSubstring(strings.Repeat("0", 64)), ContainSubstring(unapproved)))
		t.Shot("collection-conflicts")
	})

	It("finds a tool by a query, with its score and its server", func() {
		query := "weather forecast for a city"
		code, _, body := get("/v1/tools/search?q="+url.QueryEscape(query), callerToken)
		Expect(code).To(Equal(http.StatusOK), string(body))
		var found struct {
			Scores  []float64 `json:"scores"`
			Servers []struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"servers"`
		}
		Expect(json.Unmarshal(body, &found)).To(Succeed())
		names := menuNames(body)
		Expect(names).NotTo(BeEmpty())
		Expect(names[0]).To(Equal(forecastTool))

		t := openTab("search")
		t.signIn("/search", callerToken)
		t.WaitVisible(`form[data-testid=search-form]`)
		var labelled bool
		t.JS(`(() => { const i = document.querySelector('input[data-testid=search-input]');
		  return i.labels.length > 0 || !!i.getAttribute('aria-label') || !!i.getAttribute('aria-labelledby') })()`, &labelled)
		Expect(labelled).To(BeTrue(), "the search field has no label")
		t.Do(chromedp.SendKeys(chromedp.CSS(`input[data-testid=search-input]`), query+"\n"))
		Eventually(func() int { return t.Count(`[data-testid=search-result]`) }).Should(BeNumerically(">", 0))
		shown := t.Attrs(`[data-testid=search-result]`, "data-name")
		Expect(shown[0]).To(Equal(forecastTool))
		Expect(len(shown)).To(BeNumerically("<=", len(names)), "the page shows more results than the catalog found: %v", shown)
		Expect(shown).To(Equal(names[:len(shown)]), "the page shows other results than the catalog's search")
		first := `[data-testid=search-result][data-name="` + forecastTool + `"]`
		Expect(scoreOf(t.Text(first + ` [data-testid=score]`))).To(BeNumerically("~", found.Scores[0], 0.01))
		Expect(strings.TrimSpace(t.Text(first + ` [data-testid=result-server]`))).To(
			Equal(found.Servers[0].Namespace + "/" + found.Servers[0].Name))
		Expect(found.Servers[0].Name).To(Equal("echo"))
		t.Shot("search")
	})
})

// grantClipboard lets the page use the clipboard, and has the tab behave
// as the focused one (headless windows are never focused otherwise).
func grantClipboard(t *tab) {
	GinkgoHelper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err := chromedp.CallBrowser(t.Ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true},
			Setting:    browser.PermissionSettingGranted, Origin: catalogURL})
		Expect(err).NotTo(HaveOccurred())
	}
	_, err := chromedp.Call(t.Ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
	Expect(err).NotTo(HaveOccurred())
}

// clipboard is the clipboard's text.
func clipboard(t *tab) string {
	GinkgoHelper()
	s, err := chromedp.Run(t.Ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	Expect(err).NotTo(HaveOccurred())
	return s
}

// scoreOf reads a score as the page shows it: 0.873, or 87%.
func scoreOf(text string) float64 {
	GinkgoHelper()
	m := regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(%?)`).FindStringSubmatch(text)
	Expect(m).NotTo(BeNil(), "no number in the score %q", text)
	v, err := strconv.ParseFloat(m[1], 64)
	Expect(err).NotTo(HaveOccurred())
	if m[2] == "%" {
		v /= 100
	}
	return v
}

var _ = Describe("The console's token form and tool hints", func() {
	It("refuses a pasted token a header cannot carry, saying why, and trims the blanks around one", func() {
		t := openTab("token-odd")
		t.open("/servers")
		t.WaitVisible(`form[data-testid=token-form]`)
		for _, c := range []struct{ token, shown string }{
			{"tökén", `"ö" at character 2`},
			{"abc def", `" " at character 4`},
		} {
			t.replaceText(`input[data-testid=token-input]`, c.token)
			t.Click(`button[data-testid=token-submit]`)
			Eventually(func() string { return t.Text(`[data-testid=token-message]`) }).Should(ContainSubstring(c.shown), c.token)
			t.WaitVisible(`form[data-testid=token-form]`)
			var stored *string
			t.JS(`sessionStorage.getItem(`+testbrowser.Q(testbrowser.TokenKey)+`)`, &stored)
			Expect(stored).To(BeNil(), "the page kept the token %q", c.token)
			Expect(t.Count(`[data-testid=error]`)).To(BeZero(), t.bodyText())
		}
		t.Shot("token-refused")

		By("blanks around a token are not part of it")
		t.replaceText(`input[data-testid=token-input]`, "  "+callerToken+"  ")
		t.Click(`button[data-testid=token-submit]`)
		t.settled()
		t.waitCount(`tr[data-testid=server-row]`, 4)
		var stored string
		t.JS(`sessionStorage.getItem(`+testbrowser.Q(testbrowser.TokenKey)+`)`, &stored)
		Expect(stored).To(Equal(callerToken))
	})

	It("shows a tool's hints as MCP means them: a read-only tool is neither destructive nor idempotent", func() {
		// The server said so: mcp-go says destructive unless told otherwise.
		hints := serverTool("echo", forecastTool).Annotations
		Expect(hints).NotTo(BeNil())
		Expect(hints.ReadOnlyHint).To(HaveValue(BeTrue()))
		Expect(hints.DestructiveHint).To(HaveValue(BeTrue()))
		Expect(serverTool("echo", configureTool).Annotations.DestructiveHint).To(HaveValue(BeTrue()))

		t := openTab("hints")
		t.signIn("/servers/"+ns+"/echo", callerToken)
		t.waitCount(`[data-testid=tool]`, 3)
		forecast := t.Text(`[data-testid=tool][data-name="` + forecastTool + `"]`)
		Expect(forecast).To(ContainSubstring("read-only"))
		Expect(forecast).NotTo(ContainSubstring("destructive"))
		Expect(forecast).NotTo(ContainSubstring("idempotent"))
		configure := t.Text(`[data-testid=tool][data-name="` + configureTool + `"]`)
		Expect(configure).To(ContainSubstring("destructive"))
		Expect(configure).NotTo(ContainSubstring("read-only"))
	})
})
