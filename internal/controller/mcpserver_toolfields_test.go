package controller

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// TestPublishedToolKeepsClientFields: a tool's icons, execution and _meta
// go into status in canonical form, each within maxToolFieldBytes and of
// the shape the API gives it (which the API server would otherwise refuse,
// and the whole status with it); one that is not is left out, and its
// warning says why. The hash covers what the server sent either way.
func TestPublishedToolKeepsClientFields(t *testing.T) {
	big := `{"blob":"` + strings.Repeat("b", maxToolFieldBytes) + `"}`
	for _, tc := range []struct {
		name                    string
		icons, execution, meta  string
		wantIcons               []string
		wantExecution, wantMeta string
		wantWarnings            []string
	}{
		{name: "none of them"},
		{name: "all three, in canonical form",
			icons:     `[ {"src":"https://example.com/a.png", "mimeType":"image/png"}, {"theme":"dark","src":"data:image/svg+xml;base64,PHN2Zz4="} ]`,
			execution: `{ "taskSupport": "optional" }`, meta: `{"b":2, "a":{"y":"<x>","x":1}}`,
			wantIcons:     []string{`{"mimeType":"image/png","src":"https://example.com/a.png"}`, `{"src":"data:image/svg+xml;base64,PHN2Zz4=","theme":"dark"}`},
			wantExecution: `{"taskSupport":"optional"}`, wantMeta: `{"a":{"x":1,"y":"\u003cx\u003e"},"b":2}`},
		{name: "no icons at all", icons: `[]`},
		{name: "a _meta past the bound", meta: big, execution: `{"taskSupport":"required"}`, wantExecution: `{"taskSupport":"required"}`,
			wantWarnings: []string{"the _meta field was left out: 8203 bytes of JSON, over the limit of 8192"}},
		{name: "icons past the bound", icons: `[` + big + `]`,
			wantWarnings: []string{"the icons field was left out: 8205 bytes of JSON, over the limit of 8192"}},
		{name: "icons that are not a list of objects", icons: `{"src":"https://example.com/a.png"}`, meta: `{}`, wantMeta: `{}`,
			wantWarnings: []string{"the icons field was left out: not a list of JSON objects"}},
		{name: "an icon that is not an object", icons: `[{"src":"a"},"b"]`,
			wantWarnings: []string{"the icons field was left out: not a list of JSON objects"}},
		{name: "execution and _meta that are not objects", execution: `"optional"`, meta: `[1]`,
			wantWarnings: []string{"the execution field was left out: not a JSON object", "the _meta field was left out: not a JSON object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := func(s string) json.RawMessage {
				if s == "" {
					return nil
				}
				return json.RawMessage(s)
			}
			tool := mcpclient.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`),
				Icons: raw(tc.icons), Execution: raw(tc.execution), Meta: raw(tc.meta)}
			published := publishedTools("p", []mcpclient.Tool{tool}, nil, 0)[0]
			var icons []string
			for _, icon := range published.Icons {
				icons = append(icons, string(icon.Raw))
			}
			text := func(r *runtime.RawExtension) string {
				if r == nil {
					return ""
				}
				return string(r.Raw)
			}
			if !reflect.DeepEqual(icons, tc.wantIcons) || text(published.Execution) != tc.wantExecution || text(published.Meta) != tc.wantMeta {
				t.Errorf("icons %q, execution %s, _meta %s; want %q, %s, %s",
					icons, text(published.Execution), text(published.Meta), tc.wantIcons, tc.wantExecution, tc.wantMeta)
			}
			if !reflect.DeepEqual(published.Warnings, tc.wantWarnings) {
				t.Errorf("warnings %q, want %q", published.Warnings, tc.wantWarnings)
			}
			if published.Hash != tool.Hash() {
				t.Errorf("published hash %s, the tool's %s", published.Hash, tool.Hash())
			}
		})
	}
}

var _ = Describe("MCPServer discovery of a tool's icons, _meta and execution", func() {
	// statusFields is a status tool as JSON fields, as a client of the API
	// reads it.
	statusFields := func(t mcpv1alpha1.Tool) map[string]json.RawMessage {
		GinkgoHelper()
		raw, err := json.Marshal(t)
		Expect(err).NotTo(HaveOccurred())
		var fields map[string]json.RawMessage
		Expect(json.Unmarshal(raw, &fields)).To(Succeed())
		return fields
	}
	answer := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}

	It("keeps them in status as the server sent them, and leaves out what is past its bound, saying so", func() {
		server := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		server.MCP.AddTool(mcp.Tool{Name: "pictured", Description: "Has everything", RawInputSchema: json.RawMessage(`{"type":"object"}`),
			Icons:     []mcp.Icon{{Src: "https://example.com/pictured.png", MIMEType: "image/png", Sizes: []string{"48x48"}, Theme: mcp.IconThemeDark}},
			Meta:      mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": "ui://pictured/view"}, "io.example/rank": 7}),
			Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}}, answer)
		server.MCP.AddTool(mcp.Tool{Name: "heavy", Description: "Carries too much", RawInputSchema: json.RawMessage(`{"type":"object"}`),
			Meta: mcp.NewMetaFromMap(map[string]any{"blob": strings.Repeat("b", 10000)})}, answer)
		server.AddTool("plain", "Has none of them", `{"type":"object"}`)
		srv := createServer(newNamespace(), "fields", server.URL(), every(10*time.Second))
		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		settled := fetch(srv).ResourceVersion
		lists := server.ToolLists()

		byName := map[string]mcpv1alpha1.Tool{}
		for _, t := range fetch(srv).Status.Tools {
			byName[t.OriginalName] = t
		}
		pictured := statusFields(byName["pictured"])
		Expect(string(pictured["icons"])).To(MatchJSON(`[{"src":"https://example.com/pictured.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}]`))
		Expect(string(pictured["_meta"])).To(MatchJSON(`{"ui":{"resourceUri":"ui://pictured/view"},"io.example/rank":7}`))
		Expect(string(pictured["execution"])).To(MatchJSON(`{"taskSupport":"optional"}`))
		Expect(byName["pictured"].Warnings).To(BeEmpty())

		heavy := statusFields(byName["heavy"])
		Expect(heavy).NotTo(HaveKey("_meta"), "a _meta past its bound is not in status")
		Expect(byName["heavy"].Warnings).To(ConsistOf(MatchRegexp(`^the _meta field was left out: [0-9]+ bytes of JSON, over the limit of 8192$`)))

		Expect(statusFields(byName["plain"])).NotTo(SatisfyAny(HaveKey("icons"), HaveKey("_meta"), HaveKey("execution")))
		Expect(byName["plain"].Warnings).To(BeEmpty())

		By("refreshing an unchanged server without writing: status holds them as the API server stores them")
		Eventually(server.ToolLists, 35*time.Second, time.Second).Should(BeNumerically(">=", lists+2), "two refreshes happen")
		Expect(fetch(srv).ResourceVersion).To(Equal(settled))
	})
})
