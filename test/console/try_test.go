package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testbrowser"
)

// tryRoute is the route of the try-it page of a tool of kit.
func tryRoute(tool string) string { return "/collections/" + ns + "/" + kit + "/try/" + tool }

// control is a CSS selector for the form control of a field of the try-it
// form: the element with data-field when it is the control, else the
// control inside it.
func (t *tab) control(path string) string {
	GinkgoHelper()
	own := `:is(input,select,textarea)[data-field="` + path + `"]`
	inside := `[data-field="` + path + `"] :is(input,select,textarea)`
	var sel string
	t.JS(`document.querySelector(`+testbrowser.Q(own)+`) ? `+testbrowser.Q(own)+` : (document.querySelector(`+testbrowser.Q(inside)+`) ? `+testbrowser.Q(inside)+` : "")`, &sel)
	Expect(sel).NotTo(BeEmpty(), "the form has no field %s", path)
	return sel
}

// fieldKind is what a field of the generated form is.
type fieldKind struct {
	Tag      string   `json:"tag"`
	Type     string   `json:"type"`
	Labelled bool     `json:"labelled"`
	Options  []string `json:"options"`
}

func (t *tab) kindOf(sel string) fieldKind {
	GinkgoHelper()
	var k fieldKind
	t.JS(`(() => { const e = document.querySelector(`+testbrowser.Q(sel)+`);
	  return {tag: e.tagName.toLowerCase(), type: e.type ?? "",
	    labelled: e.labels?.length > 0 || !!e.getAttribute('aria-label') || !!e.getAttribute('aria-labelledby'),
	    options: e.tagName === 'SELECT' ? [...e.options].map((o) => o.text.trim()) : []} })()`, &k)
	return k
}

// auditLine is the part of an audit record the specs read.
type auditLine struct {
	User       string `json:"user"`
	Via        string `json:"via"`
	Collection string `json:"collection"`
	Tool       string `json:"tool"`
	Outcome    string `json:"outcome"`
}

// audited are the catalog's audit records so far.
func audited() []auditLine {
	var out []auditLine
	for _, line := range strings.Split(audit.String(), "\n") {
		var a auditLine
		if json.Unmarshal([]byte(line), &a) == nil && a.Tool != "" {
			out = append(out, a)
		}
	}
	return out
}

var _ = Describe("Try it", func() {
	It("calls a tool through the form generated from its schema, shows exactly what the tool got and the time taken, and takes raw JSON", func() {
		t := openTab("try")
		t.signIn(tryRoute(configureTool), callerToken)
		t.WaitVisible(`form[data-testid=try-form]`)

		By("a field for each property, of the kind its schema says, labelled")
		kinds := map[string][2]string{
			"name": {"input", "text"}, "count": {"input", "number"}, "ratio": {"input", "number"},
			"mode": {"select", "select-one"}, "verbose": {"input", "checkbox"},
			"target.host": {"input", "text"}, "target.port": {"input", "number"},
		}
		controls := map[string]string{}
		for path, want := range kinds {
			controls[path] = t.control(path)
			k := t.kindOf(controls[path])
			Expect([2]string{k.Tag, k.Type}).To(Equal(want), path)
			Expect(k.Labelled).To(BeTrue(), "the field %s has no label", path)
			if path == "mode" {
				Expect(k.Options).To(ContainElements("fast", "safe", "slow"))
			}
		}

		By("filling the form: text, numbers, an enum, a checkbox, an array item and a nested object")
		t.typeInto(controls["name"], "Ada <Lovelace> & co")
		t.typeInto(controls["count"], "3")
		t.typeInto(controls["ratio"], "0.25")
		t.choose(controls["mode"], "safe")
		t.Click(controls["verbose"])
		var added int
		t.JS(`(() => { const form = document.querySelector('form[data-testid=try-form]');
		  const adds = [...form.querySelectorAll('button')].filter((b) => !b.dataset.testid &&
		    /\badd\b/i.test(b.textContent + ' ' + (b.getAttribute('aria-label') ?? '') + ' ' + (b.title ?? '')));
		  if (adds.length === 1) adds[0].click();
		  return adds.length })()`, &added)
		Expect(added).To(Equal(1), "the form has no single button to add an item to the array tags")
		Eventually(func() int {
			return t.Count(`:is(input,select,textarea)[data-field="tags[0]"], [data-field="tags[0]"] :is(input,select,textarea)`)
		}).Should(BeNumerically(">", 0))
		t.typeInto(t.control("tags[0]"), "alpha")
		t.typeInto(controls["target.host"], "db.internal")
		t.typeInto(controls["target.port"], "5432")
		t.Shot("try-form")

		By("submitting it: the tool echoes the arguments it got")
		before := len(audited())
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() string { return t.Text(`[data-testid=result] [data-testid=result-text]`) }).ShouldNot(BeEmpty())
		Expect(t.Attrs(`[data-testid=result]`, "data-is-error")).To(Equal([]string{"false"}))
		Expect(t.Count(`[data-testid=result-error]`)).To(BeZero())
		Expect(t.Text(`[data-testid=result-text]`)).To(MatchJSON(`{"name":"Ada <Lovelace> & co","count":3,"ratio":0.25,"mode":"safe",
			"verbose":true,"tags":["alpha"],"target":{"host":"db.internal","port":5432}}`))
		Expect(t.Text(`[data-testid=elapsed]`)).To(MatchRegexp(`\d+(\.\d+)?\s*ms`))
		t.Shot("try")

		By("the call went through the catalog's execute API with the viewer's identity")
		Eventually(func() []auditLine { return audited()[before:] }).Should(ContainElement(auditLine{
			User: "system:serviceaccount:" + ns + ":caller", Via: "rest", Collection: ns + "/" + kit,
			Tool: configureTool, Outcome: "success"}))

		By("the raw JSON fallback")
		t.Click(`button[data-testid=raw-toggle]`)
		t.WaitVisible(`textarea[data-testid=raw-args]`)
		raw := `{"name":"raw","mode":"slow","tags":[],"target":{"host":"h","port":1}}`
		t.replaceText(`textarea[data-testid=raw-args]`, raw)
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() string { return t.Text(`[data-testid=result-text]`) }).Should(MatchJSON(raw))
		Expect(t.Attrs(`[data-testid=result]`, "data-is-error")).To(Equal([]string{"false"}))
		t.Shot("try-raw")
	})

	It("renders an image a tool returns", func() {
		t := openTab("try-image")
		t.signIn(tryRoute(snapshotTool), callerToken)
		t.WaitVisible(`form[data-testid=try-form]`)
		t.Click(`button[data-testid=try-submit]`)
		var img struct {
			Src    string `json:"src"`
			Width  int    `json:"width"`
			Height int    `json:"height"`
		}
		Eventually(func(g Gomega) int {
			t.JSG(g, `(() => { const i = document.querySelector('[data-testid=result] [data-testid=result-images] img');
			  return i && i.complete ? {src: i.getAttribute('src'), width: i.naturalWidth, height: i.naturalHeight} : {} })()`, &img)
			return img.Width
		}).Should(BeNumerically(">", 0), "no image was rendered")
		Expect(img.Src).To(Equal("data:image/png;base64," + snapshotPNG))
		Expect([]int{img.Width, img.Height}).To(Equal([]int{pngWidth, pngHeight}))
		Expect(t.Attrs(`[data-testid=result]`, "data-is-error")).To(Equal([]string{"false"}))
		t.Shot("try-image")
	})

	It("marks a result with isError and shows the tool's message", func() {
		t := openTab("try-error")
		t.signIn(tryRoute(explodeTool), callerToken)
		t.WaitVisible(`form[data-testid=try-form]`)
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() []string { return t.Attrs(`[data-testid=result]`, "data-is-error") }).Should(Equal([]string{"true"}))
		t.WaitVisible(`[data-testid=result-error]`)
		Expect(t.Text(`[data-testid=result-text]`)).To(ContainSubstring(explodeMessage))
		t.Shot("try-error")
	})

	It("is offered nowhere when the catalog runs with it off, even to a viewer who may call tools", func() {
		code, _, body := getAt(noTryURL, "/ui/config.json", "")
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(MatchJSON(`{"auth":"kubernetes","tryIt":false}`))

		t := openTabAt("try-off", noTryURL)
		t.signIn("/collections/"+ns+"/"+kit, callerToken)
		t.waitCount(`[data-testid=tool]`, len(kitTools))
		t.waitAnswered(`/ui/config\.json$`)
		Consistently(func() int { return t.Count(`a[data-testid=try-link]`) }, quietly).Should(BeZero())

		t.goTo(tryRoute(configureTool))
		t.WaitVisible(`[data-testid=try-unavailable]`)
		// It names the flag as the manager is given it.
		Expect(t.Text(`[data-testid=try-unavailable]`)).To(ContainSubstring("--console-try-it=false"))
		Expect(t.Count(`form[data-testid=try-form]`)).To(BeZero())
		t.Shot("try-off")
	})
})

// schemaTable is the table of a tool's input schema as the page shows it:
// each row's argument and type, in order.
func (t *tab) schemaTable(tool string) [][2]string {
	GinkgoHelper()
	var rows [][2]string
	t.JS(`[...document.querySelectorAll(`+testbrowser.Q(tool+` table tbody tr`)+`)].map((r) => [r.cells[0].textContent.trim(), r.cells[1].textContent.trim()])`, &rows)
	return rows
}

// addItem clicks the button that adds an item to the array field at path.
func (t *tab) addItem(path string) {
	GinkgoHelper()
	var added int
	t.JS(`(() => { const adds = [...document.querySelectorAll(`+testbrowser.Q(`[data-field="`+path+`"] button`)+`)].filter((b) => /\badd\b/i.test(b.textContent));
	  if (adds.length === 1) adds[0].click();
	  return adds.length })()`, &added)
	Expect(added).To(Equal(1), "the array %s has no single button to add an item", path)
	Eventually(func() int {
		return t.Count(`:is(input,select,textarea)[data-field="` + path + `[0]"], [data-field="` + path + `[0]"] :is(input,select,textarea)`)
	}).Should(BeNumerically(">", 0))
}

var _ = Describe("Try it, on schemas that hold themselves and optional objects", func() {
	It("shows a tool whose schema holds itself on the server's, the collection's and the try page, and calls it with JSON where the schema recurs", func() {
		tool := `[data-testid=tool][data-name="` + nestTool + `"]`
		t := openTab("nest")
		t.signIn("/servers/"+ns+"/media", callerToken)
		Eventually(func() string { return strings.TrimSpace(t.Text(`[data-testid=server-title]`)) }).Should(Equal(ns + "/media"))
		t.waitCount(`[data-testid=tool]`, 4)
		Expect(t.Count(`[data-testid=error]`)).To(BeZero(), t.bodyText())
		By("the schema's table names what recurs as any, once it has been expanded")
		// The catalog keeps the schema's properties in another order.
		Expect(t.schemaTable(tool)).To(ConsistOf([][2]string{
			{"v", "anyOf: string | array of any"}, {"node", "object"}, {"node.label", "string"}, {"node.child", "any"},
			{"list", "array of any"}, {"__proto__", "string"},
		}))
		t.Shot("nest-server")

		By("the collection's page")
		t.goTo("/collections/" + ns + "/" + kit)
		Eventually(func() string { return strings.TrimSpace(t.Text(`[data-testid=collection-title]`)) }).Should(Equal(ns + "/" + kit))
		t.waitCount(`[data-testid=tool]`, len(kitTools))
		Expect(t.Count(`[data-testid=error]`)).To(BeZero(), t.bodyText())
		Expect(t.schemaTable(tool)).To(ContainElement([2]string{"node.child", "any"}))
		t.waitCount(tool+` a[data-testid=try-link]`, 1)

		By("the try page: fields down to where the schema recurs, a JSON field there")
		t.goTo(tryRoute(nestTool))
		t.WaitVisible(`form[data-testid=try-form]`)
		for path, want := range map[string][2]string{
			"v": {"textarea", "textarea"}, "node.label": {"input", "text"}, "node.child": {"textarea", "textarea"},
			"__proto__": {"input", "text"},
		} {
			k := t.kindOf(t.control(path))
			Expect([2]string{k.Tag, k.Type}).To(Equal(want), path)
			Expect(k.Labelled).To(BeTrue(), "the field %s has no label", path)
		}
		t.typeInto(t.control("v"), `["a", ["b"]]`)
		t.typeInto(t.control("node.label"), "root")
		t.typeInto(t.control("node.child"), `{"label": "leaf", "child": {"label": "leaf 2"}}`)
		t.addItem("list")
		Expect(t.kindOf(t.control("list[0]")).Tag).To(Equal("textarea"))
		t.typeInto(t.control("list[0]"), `[[]]`)
		t.typeInto(t.control("__proto__"), "p")
		t.Shot("nest-try")
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() string { return t.Text(`[data-testid=result] [data-testid=result-text]`) }).ShouldNot(BeEmpty())
		Expect(t.Attrs(`[data-testid=result]`, "data-is-error")).To(Equal([]string{"false"}), t.Text(`[data-testid=result]`))
		Expect(t.Text(`[data-testid=result-text]`)).To(MatchJSON(`{"v":["a",["b"]],
			"node":{"label":"root","child":{"label":"leaf","child":{"label":"leaf 2"}}},"list":[[[]]],"__proto__":"p"}`))
	})

	It("leaves out an optional object the viewer left empty, and asks for its required fields once it is not", func() {
		t := openTab("try-optional")
		t.signIn(tryRoute(configureTool), callerToken)
		t.WaitVisible(`form[data-testid=try-form]`)
		t.typeInto(t.control("name"), "Ada")
		t.choose(t.control("mode"), "fast")
		before := len(audited())
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() string { return t.Text(`[data-testid=result] [data-testid=result-text]`) }).Should(
			MatchJSON(`{"name":"Ada","mode":"fast"}`), "target, left empty, is not left out")

		By("a port without the host target requires: the form asks for the host, and calls nothing")
		host := t.control("target.host")
		t.typeInto(t.control("target.port"), "5432")
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func(g Gomega) {
			var state struct {
				Missing bool `json:"missing"`
				Focused bool `json:"focused"`
			}
			t.JSG(g, `(() => { const e = document.querySelector(`+testbrowser.Q(host)+`); return {missing: e.validity.valueMissing, focused: document.activeElement === e} })()`, &state)
			g.Expect(state.Missing).To(BeTrue(), "the host is not required")
			g.Expect(state.Focused).To(BeTrue(), "the form does not point at the host")
		}).Should(Succeed())
		Expect(t.Text(`[data-testid=result-text]`)).To(MatchJSON(`{"name":"Ada","mode":"fast"}`))

		By("with the host, target goes with the call")
		t.typeInto(host, "db.internal")
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() string { return t.Text(`[data-testid=result] [data-testid=result-text]`) }).Should(
			MatchJSON(`{"name":"Ada","mode":"fast","target":{"host":"db.internal","port":5432}}`))
		Eventually(func() []auditLine { return audited()[before:] }).Should(HaveLen(2), "a call the form refused went out")
	})

	It("is not redrawn during a call when a call made on a page left before ends", func() {
		DeferCleanup(release, "first")
		DeferCleanup(release, "second")
		access := `/toolcollections/` + kit + `/access$`
		t := openTab("try-held")
		t.signIn(tryRoute(holdTool), callerToken)
		t.WaitVisible(`form[data-testid=try-form]`)
		t.typeInto(t.control("key"), "first")
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() bool { return holding("first") }).Should(BeTrue())

		By("leaving the page during the call, and calling again on it")
		t.goTo("/collections/" + ns + "/" + kit)
		t.waitCount(`[data-testid=tool]`, len(kitTools))
		t.goTo(tryRoute(holdTool))
		t.WaitVisible(`form[data-testid=try-form]`)
		t.typeInto(t.control("key"), "second")
		t.Click(`button[data-testid=try-submit]`)
		Eventually(func() bool { return holding("second") }).Should(BeTrue())

		By("the first call ends: the page of the second polls nothing while it runs")
		mark := t.mark()
		release("first")
		t.waitAnsweredSince(mark, `/execute$`)
		polled := t.mark()
		Consistently(func() []int64 { return t.answeredSince(polled, access) }, pollInterval+2*time.Second).Should(BeEmpty(),
			"the page polls during the call")

		By("the second call's answer is shown")
		release("second")
		Eventually(func() string { return t.Text(`[data-testid=result] [data-testid=result-text]`) }).Should(Equal("released second"))
		Eventually(func() []int64 { return t.answeredSince(polled, access) }, pollInterval+5*time.Second).ShouldNot(BeEmpty(),
			"the page does not poll again after the call")
	})
})
