package toolcatalog

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// A tool's icons, _meta and execution as a server sends them, and as they
// should come out of every MCP-shaped answer of the catalog.
const (
	sentIcons     = `[{"src":"https://example.com/pictured.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}]`
	sentMeta      = `{"ui":{"resourceUri":"ui://pictured/view"},"io.example/rank":7}`
	sentExecution = `{"taskSupport":"optional"}`
)

// toolFieldsOf reads the fields of the tool named name in an answer
// holding a "tools" array (a menu body or a tools/list result).
func toolFieldsOf(body []byte, name string) (map[string]json.RawMessage, error) {
	var answer struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, err
	}
	for _, t := range answer.Tools {
		var n string
		_ = json.Unmarshal(t["name"], &n)
		if n == name {
			return t, nil
		}
	}
	return nil, nil
}

// TestMCPAnswersCarryIconsMetaAndExecution: the catalog passes a tool's
// icons, _meta and execution from status on wherever it answers in MCP's
// shape (tools/list of its MCP endpoints in both eras, and the REST menus
// and searches in format mcp); the model APIs' formats have no place for
// them and stay as they are.
func TestMCPAnswersCarryIconsMetaAndExecution(t *testing.T) {
	// The tool as the catalog's cache holds it, decoded from the JSON of
	// status.
	var tool mcpv1alpha1.Tool
	if err := json.Unmarshal([]byte(`{"name":"mcp_s_pictured","originalName":"pictured","hash":"h","inputSchema":{"type":"object"},`+
		`"icons":`+sentIcons+`,"_meta":`+sentMeta+`,"execution":`+sentExecution+`}`), &tool); err != nil {
		t.Fatal(err)
	}
	plain := mcpv1alpha1.Tool{Name: "mcp_s_plain", OriginalName: "plain", Hash: "p", InputSchema: tool.InputSchema}
	vw := &view{revision: "r", menu: menu.Menu{Tools: []menu.Entry{
		{Name: tool.Name, Namespace: "ns", Server: "s", Tool: &tool, Description: "Has everything"},
		{Name: plain.Name, Namespace: "ns", Server: "s", Tool: &plain, Description: "Has none of them"},
	}}}
	want := map[string]string{"icons": sentIcons, "_meta": sentMeta, "execution": sentExecution}
	// Over MCP, the MCP App's resource is the one the endpoint offers, which
	// names its server (docs/protocol.md); the REST menus keep it as sent.
	listed := map[string]string{"icons": sentIcons, "_meta": `{"ui":{"resourceUri":"ui://s.ns/pictured/view"},"io.example/rank":7}`, "execution": sentExecution}
	check := func(t *testing.T, answer []byte, want map[string]string) {
		t.Helper()
		pictured, err := toolFieldsOf(answer, "mcp_s_pictured")
		if err != nil || pictured == nil {
			t.Fatalf("no tool mcp_s_pictured in %s (%v)", answer, err)
		}
		for field, sent := range want {
			if !jsonEqual(pictured[field], []byte(sent)) {
				t.Errorf("%s is %s, want %s", field, pictured[field], sent)
			}
		}
		bare, _ := toolFieldsOf(answer, "mcp_s_plain")
		for field := range want {
			if raw, ok := bare[field]; ok {
				t.Errorf("a tool without %s has %s", field, raw)
			}
		}
	}

	m := &mcpHandlers{catalog: &Catalog{}}
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "tools/list 2025-11-25", true: "tools/list 2026-07-28"}[stateless], func(t *testing.T) {
			page, _, err := m.listPage(vw, vw.menu.Tools, "mcp-operator", stateless, false, "")
			if err != nil {
				t.Fatal(err)
			}
			check(t, page, listed)
		})
	}
	t.Run("REST format mcp", func(t *testing.T) { check(t, render(vw, formatMCP).body, want) })
	t.Run("REST search format mcp", func(t *testing.T) {
		body, err := json.Marshal(searchResult("r", []rankedTool{{entry: &vw.menu.Tools[0]}, {entry: &vw.menu.Tools[1]}}, formatMCP))
		if err != nil {
			t.Fatal(err)
		}
		check(t, body, want)
	})
	for _, format := range []string{formatOpenAI, formatOpenAIResponses, formatAnthropic, formatGemini} {
		t.Run("REST format "+format, func(t *testing.T) {
			body := string(render(vw, format).body)
			for field := range want {
				if strings.Contains(body, `"`+field+`"`) {
					t.Errorf("%s has %s: %s", format, field, body)
				}
			}
		})
	}
}

var _ = Describe("A tool's icons, _meta and execution", func() {
	It("go from the server's tools/list through status to the catalog's MCP tools/list and its REST menu in format mcp", func() {
		ns := env.Namespace()
		upstream := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		var icons []mcp.Icon
		var meta map[string]any
		var execution mcp.ToolExecution
		Expect(json.Unmarshal([]byte(sentIcons), &icons)).To(Succeed())
		Expect(json.Unmarshal([]byte(sentMeta), &meta)).To(Succeed())
		Expect(json.Unmarshal([]byte(sentExecution), &execution)).To(Succeed())
		upstream.MCP.AddTool(mcp.Tool{Name: "pictured", Description: "Has everything", RawInputSchema: json.RawMessage(`{"type":"object"}`),
			Icons: icons, Meta: mcp.NewMetaFromMap(meta), Execution: &execution},
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
		readyServer(ns, "art", upstream.URL())
		collection(ns, "gallery", "art")
		path := "/v1/namespaces/" + ns + "/toolcollections/gallery/mcp"
		plain := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
		fieldsIn := func(r response) map[string]json.RawMessage {
			GinkgoHelper()
			Expect(r.code).To(Equal(http.StatusOK), string(r.body))
			var answer struct {
				Result json.RawMessage `json:"result"`
			}
			Expect(json.Unmarshal(r.body, &answer)).To(Succeed(), string(r.body))
			fields, err := toolFieldsOf(answer.Result, "mcp_art_pictured")
			Expect(err).NotTo(HaveOccurred())
			Expect(fields).NotTo(BeNil(), string(r.body))
			return fields
		}
		// Over MCP the MCP App's resource is named as the endpoint offers
		// it; the REST menu keeps _meta as sent.
		listedMeta := `{"ui":{"resourceUri":"ui://art.` + ns + `/pictured/view"},"io.example/rank":7}`
		expectFields := func(fields map[string]json.RawMessage, meta string) {
			GinkgoHelper()
			Expect(string(fields["icons"])).To(MatchJSON(sentIcons))
			Expect(string(fields["_meta"])).To(MatchJSON(meta))
			Expect(string(fields["execution"])).To(MatchJSON(sentExecution))
		}
		expectSent := func(fields map[string]json.RawMessage) { GinkgoHelper(); expectFields(fields, listedMeta) }

		By("a 2025-11-25 session")
		init := callTo(catalog.URL, path, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, plain...)
		session := init.header.Get("Mcp-Session-Id")
		Expect(session).NotTo(BeEmpty(), string(init.body))
		expectSent(fieldsIn(callTo(catalog.URL, path, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			append(plain, "Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")...)))

		By("a 2026-07-28 request")
		expectSent(fieldsIn(callTo(catalog.URL, path,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			append(plain, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")...)))

		By("the REST menu in format mcp")
		rest := get("/v1/namespaces/" + ns + "/toolcollections/gallery/tools?format=mcp")
		Expect(rest.code).To(Equal(http.StatusOK))
		fields, err := toolFieldsOf(rest.body, "mcp_art_pictured")
		Expect(err).NotTo(HaveOccurred())
		expectFields(fields, sentMeta)
	})
})
