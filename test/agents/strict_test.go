package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// strictFormats are the formats ?strict=true applies to, with the SDK
// type their tools are.
var strictFormats = []struct{ format, name, tsType string }{
	{"openai", "chatStrictTools", "OpenAI.Chat.Completions.ChatCompletionTool[]"},
	{"openai-responses", "responsesStrictTools", "OpenAI.Responses.FunctionTool[]"},
	{"anthropic", "anthropicStrictTools", "Anthropic.Messages.Tool[]"},
}

// nonStrictEntry is a tool a strict menu serves as it is, and why.
type nonStrictEntry struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

var _ = Describe("Strict menus (?strict=true)", func() {
	It("serve strict only the schemas the SDKs' own transforms leave as they are, name the rest, and take a strict model's nulls", func() {
		By("a third server, with a tool whose schema strict mode cannot hold (an open object) and one with an optional argument")
		open := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		open.AddTool("annotate", "Attaches free-form labels to a text.",
			`{"type":"object","properties":{"text":{"type":"string"},"labels":{"type":"object","additionalProperties":{"type":"string"}}},"required":["text"]}`)
		// Answers with the arguments it got.
		open.AddToolFunc("tag", "Tags a name, with an optional note.",
			`{"type":"object","properties":{"name":{"type":"string"},"note":{"type":"string"}},"required":["name"]}`,
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args, err := json.Marshal(req.GetArguments())
				if err != nil {
					return nil, err
				}
				return mcp.NewToolResultText("tag " + string(args)), nil
			})
		srv := env.CreateServer(ns, "open", open.URL())
		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		const strictCollection = "strict-kit"
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strictCollection},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"demo", "everything", "open"}}}}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())
		DeferCleanup(func() { _ = env.Client.Delete(env.Ctx, tc) })
		base := "/v1/namespaces/" + ns + "/toolcollections/" + strictCollection
		all := append([]string{"mcp_open_annotate", "mcp_open_tag"}, menuNames...)
		sort.Strings(all)

		By("every strict format: each tool strict or named in nonStrict with a reason")
		bodies := map[string]string{}
		for _, f := range strictFormats {
			var body string
			Eventually(func(g Gomega) {
				code, b := restAt(http.MethodGet, base+"/tools?format="+f.format+"&strict=true", "")
				g.Expect(code).To(Equal(http.StatusOK), b)
				var menu struct {
					Tools []json.RawMessage `json:"tools"`
				}
				g.Expect(json.Unmarshal([]byte(b), &menu)).To(Succeed())
				g.Expect(menu.Tools).To(HaveLen(len(all)))
				body = b
			}).Should(Succeed())
			bodies[f.format] = body
			var menu struct {
				Tools     []json.RawMessage `json:"tools"`
				NonStrict *[]nonStrictEntry `json:"nonStrict"`
			}
			Expect(json.Unmarshal([]byte(body), &menu)).To(Succeed())
			Expect(menu.NonStrict).NotTo(BeNil(), "a strict menu always says which tools are not strict")
			reasons := map[string]string{}
			for _, n := range *menu.NonStrict {
				Expect(n.Reason).NotTo(BeEmpty(), "%s: %s is not strict without a reason", f.format, n.Name)
				Expect(reasons).NotTo(HaveKey(n.Name))
				reasons[n.Name] = n.Reason
				GinkgoWriter.Printf("%s, not strict: %s: %s\n", f.format, n.Name, n.Reason)
			}
			var names []string
			for _, raw := range menu.Tools {
				name, strict := strictOf(f.format, raw)
				names = append(names, name)
				Expect(strict).NotTo(BeNil(), "%s: %s has no strict boolean", f.format, name)
				if *strict {
					Expect(reasons).NotTo(HaveKey(name), "%s: %s is strict and named not strict", f.format, name)
				} else {
					Expect(reasons).To(HaveKey(name), "%s: %s is not strict and not named in nonStrict", f.format, name)
				}
			}
			Expect(names).To(Equal(all))
			// The open object is what strict mode cannot hold; every other tool
			// of these servers converts.
			Expect(reasons).To(HaveLen(1))
			Expect(reasons).To(HaveKey("mcp_open_annotate"))
		}

		By("the SDKs' own transforms: every strict schema is a fixed point of toStrictJsonSchema or transformJSONSchema")
		type formatResult struct {
			Strict    []string `json:"strict"`
			NotStrict []struct {
				Name   string `json:"name"`
				Strict *bool  `json:"strict"`
			} `json:"notStrict"`
			NonStrict  []nonStrictEntry  `json:"nonStrict"`
			FixedPoint []string          `json:"fixedPoint"`
			Changed    []json.RawMessage `json:"changed"`
			Threw      []json.RawMessage `json:"threw"`
		}
		var run map[string]formatResult
		runScript("strict-fixed-point.mjs", &run, "COLLECTION_PATH="+base)
		Expect(run).To(HaveLen(len(strictFormats)))
		for _, f := range strictFormats {
			r := run[f.format]
			Expect(r.Threw).To(BeEmpty(), "%s: the SDK's transform threw on a schema served strict", f.format)
			Expect(r.Changed).To(BeEmpty(), "%s: the SDK's transform changed a schema served strict", f.format)
			Expect(r.FixedPoint).To(Equal(r.Strict))
			Expect(len(r.Strict) + len(r.NotStrict)).To(Equal(len(all)))
			Expect(r.NotStrict).To(HaveLen(1))
			Expect(r.NotStrict[0].Name).To(Equal("mcp_open_annotate"))
			Expect(r.NotStrict[0].Strict).To(HaveValue(BeFalse()))
			GinkgoWriter.Printf("%s: %d schemas served strict, every one a fixed point of the SDK's transform\n", f.format, len(r.FixedPoint))
		}

		By("the strict menus typed with the SDKs' types")
		var ts strings.Builder
		ts.WriteString(sdkImports + "\n")
		for _, f := range strictFormats {
			var menu struct {
				Tools json.RawMessage `json:"tools"`
			}
			Expect(json.Unmarshal([]byte(bodies[f.format]), &menu)).To(Succeed())
			fmt.Fprintf(&ts, "export const %s: %s = %s;\n", f.name, f.tsType, menu.Tools)
		}
		dir := workdir()
		Expect(os.WriteFile(filepath.Join(dir, "strict-types.ts"), []byte(ts.String()), 0o600)).To(Succeed())
		errs := tsc(dir, "strict-types.ts")
		Expect(errs).To(BeEmpty(), "tsc refused a strict menu:\n%v", errs)

		By("a Chat Completions tool call with null for an optional argument, as a strict model sends it")
		code, answer := restAt(http.MethodPost, base+"/execute",
			`{"id":"call_null","type":"function","function":{"name":"mcp_open_tag","arguments":"{\"name\":\"release\",\"note\":null}"}}`)
		Expect(code).To(Equal(http.StatusOK), answer)
		var envelope struct {
			IsError bool            `json:"isError"`
			Message json.RawMessage `json:"message"`
		}
		Expect(json.Unmarshal([]byte(answer), &envelope)).To(Succeed())
		Expect(envelope.IsError).To(BeFalse())
		// The null is dropped: the server got the name alone.
		Expect(envelope.Message).To(MatchJSON(`{"role":"tool","tool_call_id":"call_null","content":"tag {\"name\":\"release\"}"}`))

		code, answer = restAt(http.MethodPost, base+"/execute",
			`{"id":"call_now","type":"function","function":{"name":"mcp_demo_time_now","arguments":"{\"timezone\":null}"}}`)
		Expect(code).To(Equal(http.StatusOK), answer)
		Expect(json.Unmarshal([]byte(answer), &envelope)).To(Succeed())
		Expect(envelope.IsError).To(BeFalse(), answer)
		var message struct {
			Content string `json:"content"`
		}
		Expect(json.Unmarshal(envelope.Message, &message)).To(Succeed())
		// The demo's default zone, UTC.
		Expect(message.Content).To(MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`))
	})
})

// strictOf reads a strict menu tool's name and strict boolean (nil when
// it has none): inside function for Chat Completions, at the top level
// for the Responses API and Anthropic.
func strictOf(format string, raw json.RawMessage) (string, *bool) {
	var t struct {
		Name     string `json:"name"`
		Strict   *bool  `json:"strict"`
		Function *struct {
			Name   string `json:"name"`
			Strict *bool  `json:"strict"`
		} `json:"function"`
	}
	Expect(json.Unmarshal(raw, &t)).To(Succeed())
	if format == "openai" {
		Expect(t.Function).NotTo(BeNil())
		Expect(t.Strict).To(BeNil(), "Chat Completions: strict belongs inside function")
		return t.Function.Name, t.Function.Strict
	}
	return t.Name, t.Strict
}
