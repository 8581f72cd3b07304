package toolcatalog

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/resourceuri"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// directTo connects the official Go SDK's client to a server itself, to
// see what a client sees without the catalog.
func directTo(url, revision string) *sdk.ClientSession {
	client := sdk.NewClient(&sdk.Implementation{Name: "direct", Version: "1"}, nil)
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: revision})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(session.Close)
	return session
}

// all collects what an SDK listing iterates over, page after page.
func all[T any](items iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for item, err := range items {
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

// must is all for an Expect: the listing does not fail.
func must[T any](items []T, err error) []T {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return items
}

func allPrompts(s *sdk.ClientSession) []*sdk.Prompt { return must(all(s.Prompts(ctx, nil))) }

func allResources(s *sdk.ClientSession) []*sdk.Resource { return must(all(s.Resources(ctx, nil))) }

func allTemplates(s *sdk.ClientSession) []*sdk.ResourceTemplate {
	return must(all(s.ResourceTemplates(ctx, nil)))
}

// asJSON is v encoded, to compare what two clients decoded field by field.
func asJSON(v any) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("Prompts, resources and completion through the catalog", func() {
	for _, revision := range []string{"2025-11-25", ""} {
		name := revision
		if name == "" {
			name = "2026-07-28"
		}
		It("gives a "+name+" caller of a collection what server-everything gives directly, renamed as documented", func() {
			everything, err := testmcp.StartEverything("streamableHttp")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(everything.Stop)
			ns := env.Namespace()
			readyServer(ns, "everything", everything.URL())
			collection(ns, "all", "everything")
			direct := directTo(everything.URL(), revision)
			via := callerOf(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/all/mcp", revision).session
			server := resourceuri.Server{Namespace: ns, Name: "everything"}
			exposed := func(uri string) string {
				out, err := resourceuri.Expose(server, uri)
				Expect(err).NotTo(HaveOccurred())
				return out
			}

			By("the capabilities")
			caps := via.InitializeResult().Capabilities
			Expect(caps.Prompts).NotTo(BeNil())
			Expect(caps.Resources).NotTo(BeNil())
			Expect(caps.Completions).NotTo(BeNil())

			By("prompts/list: each prompt as the server lists it, named mcp_everything_{name}")
			want := allPrompts(direct)
			Expect(want).NotTo(BeEmpty())
			for _, p := range want {
				p.Name = "mcp_everything_" + p.Name
			}
			// The catalog's cache may not hold the server's prompts summary
			// the moment the collection serves its tools.
			Eventually(func() string { return asJSON(allPrompts(via)) }).Should(MatchJSON(asJSON(want)))

			By("prompts/get with arguments, to the server that owns the prompt")
			args := map[string]string{"city": "Lisbon", "state": "Lisboa"}
			got, err := via.GetPrompt(ctx, &sdk.GetPromptParams{Name: "mcp_everything_args-prompt", Arguments: args})
			Expect(err).NotTo(HaveOccurred())
			wantPrompt, err := direct.GetPrompt(ctx, &sdk.GetPromptParams{Name: "args-prompt", Arguments: args})
			Expect(err).NotTo(HaveOccurred())
			Expect(asJSON(got)).To(MatchJSON(asJSON(wantPrompt)))
			Expect(asJSON(got)).To(ContainSubstring("Lisbon"))

			By("resources/list: each URI exposed, everything else as sent")
			wantResources := allResources(direct)
			Expect(wantResources).NotTo(BeEmpty())
			for _, r := range wantResources {
				r.URI = exposed(r.URI)
			}
			Expect(asJSON(allResources(via))).To(MatchJSON(asJSON(wantResources)))

			By("resources/read of an exposed URI: the server's contents, their URI exposed")
			first := wantResources[0]
			read, err := via.ReadResource(ctx, &sdk.ReadResourceParams{URI: first.URI})
			Expect(err).NotTo(HaveOccurred())
			_, original, ok := resourceuri.Resolve(first.URI)
			Expect(ok).To(BeTrue())
			wantRead, err := direct.ReadResource(ctx, &sdk.ReadResourceParams{URI: original})
			Expect(err).NotTo(HaveOccurred())
			for _, c := range wantRead.Contents {
				c.URI = exposed(c.URI)
			}
			Expect(asJSON(read)).To(MatchJSON(asJSON(wantRead)))

			By("resources/templates/list, and a read of a template's expansion")
			wantTemplates := allTemplates(direct)
			Expect(wantTemplates).NotTo(BeEmpty())
			for _, t := range wantTemplates {
				t.URITemplate = exposed(t.URITemplate)
			}
			Expect(asJSON(allTemplates(via))).To(MatchJSON(asJSON(wantTemplates)))
			template := wantTemplates[0].URITemplate
			Expect(template).To(ContainSubstring("{resourceId}"))
			expansion := strings.Replace(template, "{resourceId}", "7", 1)
			read, err = via.ReadResource(ctx, &sdk.ReadResourceParams{URI: expansion})
			Expect(err).NotTo(HaveOccurred())
			Expect(read.Contents).NotTo(BeEmpty())
			Expect(read.Contents[0].URI).To(Equal(expansion))

			By("completion/complete of a prompt's argument, by its exposed name")
			complete := func(s *sdk.ClientSession, prompt string) *sdk.CompleteResult {
				r, err := s.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: prompt},
					Argument: sdk.CompleteParamsArgument{Name: "department", Value: "E"}})
				Expect(err).NotTo(HaveOccurred())
				return r
			}
			completed := complete(via, "mcp_everything_completable-prompt")
			Expect(completed.Completion.Values).NotTo(BeEmpty())
			Expect(asJSON(completed)).To(MatchJSON(asJSON(complete(direct, "completable-prompt"))))

			By("what the collection does not offer")
			_, err = via.GetPrompt(ctx, &sdk.GetPromptParams{Name: "args-prompt"})
			Expect(err).To(MatchError(ContainSubstring("prompt args-prompt not found")))
			_, err = via.ReadResource(ctx, &sdk.ReadResourceParams{URI: original})
			Expect(err).To(MatchError(ContainSubstring("not found")), "a URI as the server names it")
		})
	}

	It("names the resources a tool links, embeds or renders (an MCP App) as the endpoint offers them, so that they read back", func() {
		ns := env.Namespace()
		up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, Surfaces: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(up.Stop)
		read := func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/html", Text: "content of " + r.Params.URI}}, nil
		}
		up.MCP.AddResource(mcp.NewResource("ui://weather/view.html", "view"), read)
		up.MCP.AddResource(mcp.NewResource("test://notes/today", "today"), read)
		app := mcp.NewTool("forecast", mcp.WithDescription("Shows the forecast."))
		app.Meta = mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": "ui://weather/view.html"}, "other": map[string]any{"uri": "test://left/alone"}})
		up.MCP.AddTool(app, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("see the notes"),
				mcp.NewResourceLink("test://notes/today", "today", "Today's notes", "text/plain"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "test://notes/today", Text: "buy milk"}),
				mcp.NewResourceLink("https://example.com/doc", "doc", "A web page", "text/html"),
			}}, nil
		})
		readyServer(ns, "weather", up.URL())
		collection(ns, "apps", "weather")
		via := callerOf(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/apps/mcp", "2025-11-25").session
		exposed := func(uri string) string {
			out, err := resourceuri.Expose(resourceuri.Server{Namespace: ns, Name: "weather"}, uri)
			Expect(err).NotTo(HaveOccurred())
			return out
		}

		By("the MCP App's resource in the tool's _meta, and nothing else there")
		var tools []*sdk.Tool
		for t, err := range via.Tools(ctx, nil) {
			Expect(err).NotTo(HaveOccurred())
			tools = append(tools, t)
		}
		Expect(tools).To(HaveLen(1))
		Expect(tools[0].Meta["ui"]).To(Equal(map[string]any{"resourceUri": exposed("ui://weather/view.html")}))
		Expect(tools[0].Meta["other"]).To(Equal(map[string]any{"uri": "test://left/alone"}))
		view, err := via.ReadResource(ctx, &sdk.ReadResourceParams{URI: tools[0].Meta["ui"].(map[string]any)["resourceUri"].(string)})
		Expect(err).NotTo(HaveOccurred())
		Expect(view.Contents[0].Text).To(Equal("content of ui://weather/view.html"))

		By("a call's linked and embedded resources, but not a web page")
		result, err := via.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_weather_forecast", Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Content).To(HaveLen(4))
		Expect(result.Content[1].(*sdk.ResourceLink).URI).To(Equal(exposed("test://notes/today")))
		Expect(result.Content[2].(*sdk.EmbeddedResource).Resource.URI).To(Equal(exposed("test://notes/today")))
		Expect(result.Content[3].(*sdk.ResourceLink).URI).To(Equal("https://example.com/doc"))
		linked, err := via.ReadResource(ctx, &sdk.ReadResourceParams{URI: result.Content[1].(*sdk.ResourceLink).URI})
		Expect(err).NotTo(HaveOccurred())
		Expect(linked.Contents[0].Text).To(Equal("content of test://notes/today"))

		By("REST execute names them alike")
		r := post("/v1/namespaces/"+ns+"/toolcollections/apps/execute", `{"name":"mcp_weather_forecast","arguments":{}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(string(r.body)).To(ContainSubstring(`"uri":"` + exposed("test://notes/today") + `"`))

		By("and a URI the server does not offer, or an alias of one it does, is not read")
		for _, uri := range []string{exposed("test://notes/yesterday"), "test:weather." + ns + "://notes/today"} {
			_, err = via.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			Expect(err).To(MatchError(ContainSubstring("not found")), uri)
		}
	})

	It("leaves a slow server's prompts out of a listing rather than wait for them, and lists them once read", func() {
		ns := env.Namespace()
		start := func(tool, prompt string) *testmcp.Server {
			up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, Surfaces: true})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(up.Stop)
			up.AddTools(tool)
			up.MCP.AddPrompt(mcp.NewPrompt(prompt), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult(prompt, nil), nil
			})
			return up
		}
		fast, slow := start("echo_fast", "quick"), start("echo_slow", "patient")
		readyServer(ns, "fast", fast.URL())
		readyServer(ns, "slow", slow.URL())
		collection(ns, "mixed", "fast", "slow")
		// From now on the slow server takes longer to list its prompts than
		// a listing waits for one server (maxListingWait).
		slow.SetSlow(string(mcp.MethodPromptsList), maxListingWait+3*time.Second)
		via := callerOf(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/mixed/mcp", "2025-11-25").session
		names := func() []string {
			var out []string
			for _, p := range allPrompts(via) {
				out = append(out, p.Name)
			}
			return out
		}
		// The slow server's read outlasts the wait whatever the load; the
		// fast one's is not held to a time here.
		Expect(names()).NotTo(ContainElement("mcp_slow_patient"))
		Eventually(names).WithTimeout(time.Minute).Should(Equal([]string{"mcp_fast_quick", "mcp_slow_patient"}),
			"the read the first listing left goes on, and serves a later one")
	})

	It("tells a 2026-07-28 caller that listens that the prompts changed", func() {
		ns := env.Namespace()
		up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true, Surfaces: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(up.Stop)
		up.AddTools("echo")
		greet := func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("hi", nil), nil
		}
		up.MCP.AddPrompt(mcp.NewPrompt("greet"), greet)
		readyServer(ns, "up", up.URL())
		collection(ns, "listened", "up")
		var changed atomic.Int32
		listener := sdk.NewClient(&sdk.Implementation{Name: "listener", Version: "1"}, &sdk.ClientOptions{
			PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) { changed.Add(1) },
		})
		via, err := listener.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/listened/mcp"}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(via.Close)
		Expect(via.InitializeResult().ProtocolVersion).To(Equal("2026-07-28"))
		Eventually(func() int { return len(allPrompts(via)) }).Should(Equal(1))
		// The stream begins by saying the prompts changed: it has no
		// session, and the catalog cannot know what its client read.
		Eventually(changed.Load).Should(BeNumerically(">=", 1))
		before := changed.Load()

		up.MCP.AddPrompt(mcp.NewPrompt("wave"), greet)
		Eventually(changed.Load).Should(BeNumerically(">", before))
		Eventually(func() int { return len(allPrompts(via)) }).Should(Equal(2))
	})

	It("filters and renames as the collection says, reports prompt conflicts, and tells listening clients of a change", func() {
		ns := env.Namespace()
		start := func(tool string, prompts ...string) *testmcp.Server {
			up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true, Surfaces: true})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(up.Stop)
			up.AddTools(tool)
			for _, p := range prompts {
				up.MCP.AddPrompt(mcp.NewPrompt(p, mcp.WithPromptDescription(p+" described")), func(_ context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return mcp.NewGetPromptResult("from "+p, []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello"))}), nil
				})
			}
			return up
		}
		a, b := start("echo_a", "greet", "debug_dump"), start("echo_b", "greet")
		for _, uri := range []string{"test://static/a", "test://secret/b"} {
			a.MCP.AddResource(mcp.NewResource(uri, uri), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "content of " + r.Params.URI}}, nil
			})
		}
		readyServer(ns, "a", a.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.ToolPrefix = "kit" })
		readyServer(ns, "b", b.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.ToolPrefix = "kit" })
		renamed := "Greets, renamed."
		tc := &mcpv1alpha1.ToolCollection{}
		tc.Namespace, tc.Name = ns, "picked"
		tc.Spec = mcpv1alpha1.ToolCollectionSpec{
			Servers: mcpv1alpha1.ServerSelection{Names: []string{"a", "b"}},
			Prompts: &mcpv1alpha1.PromptSelection{Exclude: []string{"mcp_*_debug_*"},
				Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_kit_greet", Server: "b", Rename: "hello", Description: &renamed}}},
			Resources: &mcpv1alpha1.ResourceSelection{Include: []string{"test://a." + ns + "/static/*"}},
		}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())
		Eventually(func() int { return get("/v1/namespaces/" + ns + "/toolcollections/picked/tools").code }).Should(Equal(http.StatusOK))

		var promptsChanged, resourcesChanged atomic.Int32
		listener := sdk.NewClient(&sdk.Implementation{Name: "listener", Version: "1"}, &sdk.ClientOptions{
			PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { promptsChanged.Add(1) },
			ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { resourcesChanged.Add(1) },
		})
		via, err := listener.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/picked/mcp"},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(via.Close)

		names := func() []string {
			var out []string
			for _, p := range allPrompts(via) {
				out = append(out, p.Name+": "+p.Description)
			}
			return out
		}
		Eventually(names).Should(Equal([]string{"mcp_kit_greet: greet described", "hello: Greets, renamed."}),
			"a's greet, b's renamed; debug_dump excluded")
		got, err := via.GetPrompt(ctx, &sdk.GetPromptParams{Name: "hello"})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Description).To(Equal("from greet"))

		By("the resources the pattern keeps, and no reading around it")
		resources := allResources(via)
		Expect(resources).To(HaveLen(1))
		Expect(resources[0].URI).To(Equal("test://a." + ns + "/static/a"))
		read, err := via.ReadResource(ctx, &sdk.ReadResourceParams{URI: resources[0].URI})
		Expect(err).NotTo(HaveOccurred())
		Expect(read.Contents[0].Text).To(Equal("content of test://static/a"))
		_, err = via.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://a." + ns + "/secret/b"})
		Expect(err).To(MatchError(ContainSubstring("not found")))

		By("the REST listing, with the conflict a rename would have had")
		r := get("/v1/namespaces/" + ns + "/toolcollections/picked/prompts")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.body).To(MatchJSON(`{"prompts":[
			{"server":"` + ns + `/a","original":"greet","definition":{"name":"mcp_kit_greet","description":"greet described"}},
			{"server":"` + ns + `/b","original":"greet","definition":{"name":"hello","description":"Greets, renamed."}}],
			"conflicts":[]}`))
		r = get("/v1/namespaces/" + ns + "/toolcollections/picked/resources")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["resources"]).To(HaveLen(1))

		By("a prompt added upstream: status, then the listening client, hear of it, and of no resource change")
		promptsBefore, resourcesBefore := promptsChanged.Load(), resourcesChanged.Load()
		b.MCP.AddPrompt(mcp.NewPrompt("wave"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("wave", nil), nil
		})
		Eventually(promptsChanged.Load).Should(BeNumerically(">", promptsBefore))
		Eventually(names).Should(ContainElement("mcp_kit_wave: "))
		Consistently(resourcesChanged.Load, time.Second).Should(Equal(resourcesBefore))

		By("without the rename, b's greet conflicts with a's and a's wins")
		Eventually(func() error {
			var latest mcpv1alpha1.ToolCollection
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "picked"}, &latest); err != nil {
				return err
			}
			latest.Spec.Prompts.Overrides = nil
			return env.Client.Update(ctx, &latest)
		}).Should(Succeed())
		Eventually(func() string { return string(get("/v1/namespaces/" + ns + "/toolcollections/picked/prompts").body) }).Should(
			ContainSubstring(`"conflicts":[{"name":"mcp_kit_greet","servers":["` + ns + `/a","` + ns + `/b"]}]`))
	})
})
