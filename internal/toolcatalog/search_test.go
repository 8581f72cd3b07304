package toolcatalog

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/toolname"
)

// corpusServer serves one fixture of the ranking's corpus
// (internal/toolsearch/testdata/corpus): the tools a real MCP server
// listed, each answering with its name and arguments.
func corpusServer(fixture string) *testmcp.Server {
	raw, err := os.ReadFile(filepath.Join("..", "toolsearch", "testdata", "corpus", fixture+".json"))
	Expect(err).NotTo(HaveOccurred())
	var tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	Expect(json.Unmarshal(raw, &tools)).To(Succeed())
	srv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	for _, t := range tools {
		srv.AddTool(t.Name, t.Description, string(t.InputSchema))
	}
	return srv
}

// searchAnswer is the body of a search.
type searchAnswer struct {
	Revision string            `json:"revision"`
	Tools    []json.RawMessage `json:"tools"`
	Scores   []float64         `json:"scores"`
	Servers  []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"servers"`
}

// names lists the answer's tool names, in order, whatever the format.
func (a searchAnswer) names() []string {
	out := []string{}
	for _, raw := range a.Tools {
		var t struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		Expect(json.Unmarshal(raw, &t)).To(Succeed())
		out = append(out, t.Name+t.Function.Name)
	}
	return out
}

func searchOf(r response) searchAnswer {
	Expect(r.code).To(Equal(http.StatusOK), string(r.body))
	var a searchAnswer
	Expect(json.Unmarshal(r.body, &a)).To(Succeed())
	Expect(a.Scores).To(HaveLen(len(a.Tools)), "one score per tool")
	Expect(a.Servers).To(HaveLen(len(a.Tools)), "one server per tool")
	for i := range a.Scores {
		Expect(a.Scores[i]).To(And(BeNumerically(">", 0), BeNumerically("<=", 1)), "a share of the ideal score")
		if i > 0 {
			Expect(a.Scores[i]).To(BeNumerically("<=", a.Scores[i-1]), "ranked best first")
		}
	}
	return a
}

func q(text string) string { return url.QueryEscape(text) }

// menuHolds waits until a menu lists n tools: the catalog's cache may hold
// a new collection before the status of a server it selects.
func menuHolds(path string, n int) {
	Eventually(func() int {
		var body struct {
			Tools []json.RawMessage `json:"tools"`
		}
		r := get(path)
		if r.code != http.StatusOK || json.Unmarshal(r.body, &body) != nil {
			return -1
		}
		return len(body.Tools)
	}).Should(Equal(n), path)
}

// fetch GETs a catalog path without Gomega, for goroutines.
func fetch(base, path string) (int, []byte, error) {
	resp, err := http.Get(base + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

var _ = Describe("Tool search over REST", func() {
	var ns, base string
	BeforeEach(func() {
		ns = env.Namespace()
		for _, s := range []struct{ fixture, name string }{{"filesystem", "files"}, {"github", "github"}, {"slack", "slack"}, {"memory", "memory"}} {
			readyServer(ns, s.name, corpusServer(s.fixture).URL())
		}
		collection(ns, "desk", "files", "github", "slack", "memory")
		base = "/v1/namespaces/" + ns + "/toolcollections/desk/tools"
		menuHolds(base, 14+26+8+9)
	})

	It("ranks real servers' tools best first, each with its score, and serves the menu's revision", func() {
		for _, tc := range []struct{ query, first string }{
			{"read the last lines of a log file", "mcp_files_read_text_file"},
			{"post a message to a channel", "mcp_slack_slack_post_message"},
			{"create a directory", "mcp_files_create_directory"},
			{"merge the PR", "mcp_github_merge_pull_request"},
			{"pull req", "mcp_github_merge_pull_request"}, // the last word as a prefix
		} {
			a := searchOf(get(base + "/search?q=" + q(tc.query)))
			Expect(a.names()).NotTo(BeEmpty(), tc.query)
			Expect(a.names()[0]).To(Equal(tc.first), tc.query)
			Expect(a.Scores[0]).To(BeNumerically(">", a.Scores[len(a.Scores)-1]), "the best is told apart: %s", tc.query)
			for i, name := range a.names() {
				Expect(a.Servers[i].Namespace).To(Equal(ns), name)
				Expect(name).To(HavePrefix("mcp_"+a.Servers[i].Name+"_"), "the server serving %s", name)
			}
		}
		two := searchOf(get(base + "/search?q=" + q("read the last lines of a log file") + "&limit=2"))
		Expect(two.names()).To(Equal([]string{"mcp_files_read_text_file", "mcp_files_read_file"}))
		Expect(two.Revision).To(Equal(get(base).json()["revision"]), "the revision of the menu searched")
		Expect(searchOf(get(base+"/search?q="+q("zebra quokka"))).names()).To(BeEmpty(), "nothing shares a word")
	})

	It("returns 10 tools unless told, 1 to 50 when told", func() {
		Expect(searchOf(get(base + "/search?q=file")).Tools).To(HaveLen(10))
		Expect(searchOf(get(base + "/search?q=file&limit=1")).Tools).To(HaveLen(1))
		// More than 50 of the 57 tools share a word with this query.
		Expect(searchOf(get(base + "/search?q=" + q("get list read write create search update delete file issue message entity") + "&limit=50")).Tools).To(HaveLen(50))
	})

	It("renders each tool as the menu does, in every format", func() {
		for _, format := range formats {
			var menuBody struct {
				Tools []json.RawMessage `json:"tools"`
			}
			Expect(json.Unmarshal(get(base+"?format="+format).body, &menuBody)).To(Succeed())
			inMenu := map[string]string{}
			for _, raw := range menuBody.Tools {
				inMenu[searchAnswer{Tools: []json.RawMessage{raw}}.names()[0]] = string(raw)
			}
			found := searchOf(get(base + "/search?q=" + q("write a file") + "&format=" + format))
			Expect(found.Tools).NotTo(BeEmpty())
			for i, name := range found.names() {
				Expect(string(found.Tools[i])).To(MatchJSON(inMenu[name]), "%s in %s", name, format)
			}
		}
	})

	It("searches one server's tools, and the global menu", func() {
		slack := searchOf(get("/v1/namespaces/" + ns + "/mcpservers/slack/tools/search?q=" + q("read a file or post a message")))
		Expect(slack.names()[0]).To(Equal("mcp_slack_slack_post_message"))
		for _, name := range slack.names() {
			Expect(name).To(HavePrefix("mcp_slack_"), "only the server's tools")
		}
		global := searchOf(get("/v1/tools/search?namespace=" + ns + "&q=" + q("post a message to a channel")))
		Expect(global.names()[0]).To(Equal("mcp_slack_slack_post_message"))
		Expect(global.Revision).To(Equal(get("/v1/tools?namespace=" + ns).json()["revision"]))
	})

	It("answers a bad request 400 and a missing menu 404, saying why", func() {
		for _, tc := range []struct{ path, message string }{
			{base + "/search", "q is required: say what the tool should do, for example q=read+a+file"},
			{base + "/search?q=+++", "q is required: say what the tool should do, for example q=read+a+file"},
			{base + "/search?q=" + strings.Repeat("a", 1001), "q is longer than 1000 bytes"},
			{base + "/search?q=file&limit=0", `limit must be a whole number from 1 to 50, not "0"`},
			{base + "/search?q=file&limit=51", `limit must be a whole number from 1 to 50, not "51"`},
			{base + "/search?q=file&limit=2.5", `limit must be a whole number from 1 to 50, not "2.5"`},
			{base + "/search?q=file&limit=ten", `limit must be a whole number from 1 to 50, not "ten"`},
			{base + "/search?q=file&format=xml", "unknown format xml: use openai, openai-responses, anthropic, gemini, mcp"},
			{"/v1/tools/search?limit=3", "q is required: say what the tool should do, for example q=read+a+file"},
		} {
			r := get(tc.path)
			Expect(r.code).To(Equal(http.StatusBadRequest), tc.path)
			Expect(r.json()["error"]).To(Equal(tc.message), tc.path)
		}
		Expect(searchOf(get(base+"/search?q=file&limit=50")).Tools).NotTo(BeEmpty(), "50 is allowed")

		r := get("/v1/namespaces/" + ns + "/toolcollections/none/tools/search?q=file")
		Expect(r.code).To(Equal(http.StatusNotFound))
		Expect(r.json()["error"]).To(Equal("ToolCollection " + ns + "/none not found"))
		r = get("/v1/namespaces/" + ns + "/mcpservers/none/tools/search?q=file")
		Expect(r.code).To(Equal(http.StatusNotFound))
		Expect(r.json()["error"]).To(Equal("MCPServer " + ns + "/none not found"))
	})

	It("builds a menu's index on the first search, once per revision, and forgets it with the menu", func() {
		key := viewKey{kind: collectionView, namespace: ns, name: "desk"}
		held := func() *searchIndex {
			m := catalogUnderTest.menus
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.indexes[key]
		}
		Expect(get(base).code).To(Equal(http.StatusOK))
		Expect(held()).NotTo(BeNil())
		Expect(held().built.Load()).To(BeNil(), "serving the menu builds no index")

		searchOf(get(base + "/search?q=file"))
		first := held()
		built := first.built.Load()
		Expect(built).NotTo(BeNil())
		searchOf(get(base + "/search?q=" + q("post a message")))
		Expect(held()).To(BeIdenticalTo(first), "a second query reuses the index")

		By("a change elsewhere starts new views, not a new index")
		readyServer(env.Namespace(), "elsewhere", calcServer().URL())
		searchOf(get(base + "/search?q=file"))
		Expect(held()).To(BeIdenticalTo(first))
		Expect(held().built.Load()).To(BeIdenticalTo(built))

		By("a change to the menu's tools builds a new one")
		tc := &mcpv1alpha1.ToolCollection{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "desk"}, tc)).To(Succeed())
		before := tc.DeepCopy()
		tc.Spec.Servers.Names = []string{"files", "slack"}
		// A merge patch: the controller writes status meanwhile.
		Expect(env.Client.Patch(ctx, tc, client.MergeFrom(before))).To(Succeed())
		Eventually(func() []string { return searchOf(get(base + "/search?q=" + q("merge the PR"))).names() }).
			ShouldNot(ContainElement("mcp_github_merge_pull_request"))
		Expect(held()).NotTo(BeIdenticalTo(first))

		By("a deleted collection's index goes")
		Expect(env.Client.Delete(ctx, tc)).To(Succeed())
		Eventually(held).Should(BeNil())
	})

	It("answers each search from one whole revision while the menu changes under concurrent searches", func() {
		upstream := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		upstream.AddTool("forecast", "Weather forecast for a city", `{"type":"object","properties":{"city":{"type":"string"}}}`)
		readyServer(ns, "weather", upstream.URL(), testenv.Every(time.Hour))
		collection(ns, "sky", "weather")
		path := "/v1/namespaces/" + ns + "/toolcollections/sky/tools/search?q=" + q("weather warnings for a city")
		menuPath := "/v1/namespaces/" + ns + "/toolcollections/sky/tools"

		// Two states of the upstream, told apart by their revisions; each
		// has its own answer, learnt while nothing moves.
		stateA := func() { upstream.MCP.DeleteTools("storm_warnings") }
		stateB := func() {
			upstream.AddTool("storm_warnings", "Severe weather warnings for a city", `{"type":"object","properties":{"city":{"type":"string"}}}`)
		}
		settle := func(n int) string {
			Eventually(func() int { return len(get(menuPath).json()["tools"].([]any)) }).Should(Equal(n))
			return string(get(path).body)
		}
		answerA := settle(1)
		stateB()
		answerB := settle(2)
		var revA, revB searchAnswer
		Expect(json.Unmarshal([]byte(answerA), &revA)).To(Succeed())
		Expect(json.Unmarshal([]byte(answerB), &revB)).To(Succeed())
		Expect(revA.names()).To(Equal([]string{"mcp_weather_forecast"}))
		Expect(revB.names()).To(Equal([]string{"mcp_weather_storm_warnings", "mcp_weather_forecast"}))

		var (
			mu       sync.Mutex
			problems []string
			seen     = map[string]int{}
			wg       sync.WaitGroup
			stop     = make(chan struct{})
		)
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					code, body, err := fetch(catalog.URL, path)
					mu.Lock()
					switch {
					case err != nil || code != http.StatusOK:
						problems = append(problems, fmt.Sprintf("%d %v %s", code, err, body))
					case string(body) == answerA:
						seen["A"]++
					case string(body) == answerB:
						seen["B"]++
					default:
						problems = append(problems, "an answer of neither revision: "+string(body))
					}
					mu.Unlock()
				}
			}()
		}
		for range 3 {
			stateA()
			Expect(settle(1)).To(Equal(answerA))
			stateB()
			Expect(settle(2)).To(Equal(answerB))
		}
		close(stop)
		wg.Wait()
		Expect(problems).To(BeEmpty())
		Expect(seen["A"]).To(BeNumerically(">", 0))
		Expect(seen["B"]).To(BeNumerically(">", 0))
		GinkgoWriter.Printf("concurrent searches: %d answered from revision A, %d from B\n", seen["A"], seen["B"])
	})
})

var _ = Describe("Tool search and authorization", func() {
	var ns string
	BeforeEach(func() {
		env.InstallCatalogRoles()
		ns = env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		collection(ns, "kit", "calc")
		menuHolds("/v1/namespaces/"+ns+"/toolcollections/kit/tools", 6)
	})

	searchAs := func(path, token string) response {
		headers := []string{}
		if token != "" {
			headers = append(headers, "Authorization", "Bearer "+token)
		}
		return doAt(authCatalog.URL, http.MethodGet, path, "", headers...)
	}

	It("finds in the global menu only the tools of servers the caller may get, the best of them first", func() {
		other := env.Namespace()
		hidden := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		hidden.AddTool("add_two_numbers", "Adds two numbers",
			`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`)
		readyServer(other, "secret", hidden.URL())
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		query := "/v1/tools/search?q=" + q("add two numbers")

		// Over the unfiltered catalog the hidden tool ranks first...
		Eventually(func() []string { return searchOf(get(query + "&limit=50")).names() }).
			Should(ContainElements("mcp_secret_add_two_numbers", "mcp_calc_add"))
		everyone := searchOf(get(query + "&limit=50"))
		Expect(everyone.names()[0]).To(Equal("mcp_secret_add_two_numbers"))

		// ...and the reader never sees it, yet gets the best of theirs even
		// with room for one.
		one := searchOf(searchAs(query+"&limit=1", reader))
		Expect(one.names()).To(Equal([]string{"mcp_calc_add"}))
		all := searchOf(searchAs(query+"&limit=50", reader))
		Expect(all.names()).NotTo(ContainElement(HavePrefix("mcp_secret_")))
		var readersMenu struct {
			Revision string `json:"revision"`
		}
		Expect(json.Unmarshal(searchAs("/v1/tools", reader).body, &readersMenu)).To(Succeed())
		Expect(all.Revision).To(Equal(readersMenu.Revision), "the revision of the menu this caller is served")
		Expect(all.Revision).NotTo(Equal(everyone.Revision))
	})

	It("needs get on the collection or server searched, and a token", func() {
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		stranger := serviceAccountToken(ns, "stranger")
		collectionSearch := "/v1/namespaces/" + ns + "/toolcollections/kit/tools/search?q=add"
		serverSearch := "/v1/namespaces/" + ns + "/mcpservers/calc/tools/search?q=add"

		Expect(searchOf(searchAs(collectionSearch, reader)).names()[0]).To(Equal("mcp_calc_add"))
		Expect(searchOf(searchAs(serverSearch, reader)).names()[0]).To(Equal("mcp_calc_add"))

		r := searchAs(collectionSearch, stranger)
		Expect(r.code).To(Equal(http.StatusForbidden))
		Expect(r.json()["error"]).To(Equal("forbidden: system:serviceaccount:" + ns + ":stranger lacks get on toolcollections/kit in namespace " + ns))
		r = searchAs(serverSearch, stranger)
		Expect(r.code).To(Equal(http.StatusForbidden))
		Expect(r.json()["error"]).To(ContainSubstring("lacks get on mcpservers/calc in namespace " + ns))
		Expect(searchOf(searchAs("/v1/tools/search?q=add", stranger)).names()).To(BeEmpty(), "the global menu is filtered, not refused")

		r = searchAs(collectionSearch, "")
		Expect(r.code).To(Equal(http.StatusUnauthorized))
		Expect(r.json()["error"]).To(ContainSubstring("a bearer token is required"))
	})
})

// TestSearchFingerprint: views whose searchable text is the same share a
// fingerprint (and so an index); a change to the revision, an original
// name, a server or a title, or a different split of the same characters,
// gives another.
func TestSearchFingerprint(t *testing.T) {
	viewOfServer := func(server, revision string, tools ...[2]string) *view {
		vw := &view{revision: revision}
		for _, tool := range tools {
			vw.menu.Tools = append(vw.menu.Tools, menu.Entry{Name: "mcp_s_" + tool[0], Server: server,
				Tool: &mcpv1alpha1.Tool{OriginalName: tool[0], Title: tool[1]}})
		}
		return vw
	}
	viewOf := func(revision string, tools ...[2]string) *view { return viewOfServer("s", revision, tools...) }
	base := searchFingerprint(viewOf("r1", [2]string{"read", "Read"}, [2]string{"write", ""}))
	if again := searchFingerprint(viewOf("r1", [2]string{"read", "Read"}, [2]string{"write", ""})); again != base {
		t.Fatalf("the same view fingerprinted twice: %s and %s", base, again)
	}
	for name, other := range map[string]*view{
		"another revision":          viewOf("r2", [2]string{"read", "Read"}, [2]string{"write", ""}),
		"another original name":     viewOf("r1", [2]string{"reads", "Read"}, [2]string{"write", ""}),
		"another title":             viewOf("r1", [2]string{"read", "Reads"}, [2]string{"write", ""}),
		"another server":            viewOfServer("t", "r1", [2]string{"read", "Read"}, [2]string{"write", ""}),
		"the same text split apart": viewOf("r1", [2]string{"rea", "dRead"}, [2]string{"write", ""}),
		"a tool less":               viewOf("r1", [2]string{"read", "Read"}),
	} {
		if searchFingerprint(other) == base {
			t.Errorf("%s: the fingerprint did not change", name)
		}
	}
}

// TestSearchDocumentsNameTheServer: every tool of a server is searched
// under the MCPServer's name and, when it is another, its tool prefix,
// even a tool whose exposed name was cut to fit and holds the prefix only
// in part.
func TestSearchDocumentsNameTheServer(t *testing.T) {
	long := strings.Repeat("escalate_", 8) + "ticket"
	originals := []string{"create_ticket", long}
	var tools []menu.Entry
	for i, name := range toolname.Expose("zendesk", originals) {
		tools = append(tools, menu.Entry{Name: name, Namespace: "ns", Server: "helpdesk-prod",
			Tool: &mcpv1alpha1.Tool{Name: name, OriginalName: originals[i]}})
	}
	for i, name := range toolname.Expose("github", []string{"get_issue"}) {
		tools = append(tools, menu.Entry{Name: name, Namespace: "ns", Server: "github",
			Tool: &mcpv1alpha1.Tool{Name: name, OriginalName: []string{"get_issue"}[i]}})
	}
	if _, whole := toolname.Prefix(tools[1].Tool.Name, long); whole {
		t.Fatalf("%s holds its prefix whole: the case needs a name cut to fit", tools[1].Tool.Name)
	}
	docs := searchDocuments(tools)
	for i, want := range []string{"helpdesk-prod zendesk", "helpdesk-prod zendesk", "github"} {
		if docs[i].Server != want {
			t.Errorf("%s is searched under server %q, want %q", docs[i].Name, docs[i].Server, want)
		}
	}
}
