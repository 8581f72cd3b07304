package agents

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The model SDKs' published TypeScript types, over what the REST API
// serves: each menu format typed as the tools parameter its SDK takes,
// each call typed as the SDK hands it over from the model's answer, and
// each execute answer's message typed as what the caller appends to the
// conversation; tsc --strict must accept all of it. The same run holds a
// file of wrong shapes, which it must refuse, each where it is wrong: so
// a pass means the types were checked, not skipped.

// sdkImports open every generated file.
const sdkImports = `import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';
import type { Content, FunctionCall, FunctionDeclaration, FunctionResponse, Part } from '@google/genai';
`

// menuTypes are the SDK types each menu format's tools are.
var menuTypes = []struct{ format, name, tsType string }{
	{"openai", "chatTools", "OpenAI.Chat.Completions.ChatCompletionTool[]"},
	{"openai-responses", "responsesTools", "OpenAI.Responses.FunctionTool[]"},
	{"anthropic", "anthropicTools", "Anthropic.Messages.Tool[]"},
	{"gemini", "geminiDeclarations", "FunctionDeclaration[]"},
}

// A callShape is one shape execute takes: how a tool call of the model's
// looks in it, the SDK type it is handed over as, the SDK type of the
// message the answer carries, and how that message joins a conversation.
type callShape struct {
	name     string
	callType string // "" for the plain shape, which no SDK hands over
	msgType  string // "" for the plain shape, whose answer has no message
	// call is the body for a tool and its arguments (a JSON object).
	call func(id, tool, args string) string
	// conversation declares a conversation of the SDK's type: the
	// model's turn with the call <ident>Call, then the answer's message
	// <ident>Message.
	conversation func(ident string) string
}

var callShapes = []callShape{
	{
		name:     "chat",
		callType: "OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall",
		msgType:  "OpenAI.Chat.Completions.ChatCompletionToolMessageParam",
		call: func(id, tool, args string) string {
			return fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, id, tool, quoteJSON(args))
		},
		conversation: func(ident string) string {
			return fmt.Sprintf("export const %[1]sConversation: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = "+
				"[{ role: 'assistant', content: null, tool_calls: [%[1]sCall] }, %[1]sMessage];", ident)
		},
	},
	{
		name:     "responses",
		callType: "OpenAI.Responses.ResponseFunctionToolCall",
		msgType:  "OpenAI.Responses.ResponseInputItem.FunctionCallOutput",
		call: func(id, tool, args string) string {
			return fmt.Sprintf(`{"type":"function_call","id":"fc_%s","call_id":%q,"name":%q,"arguments":%s,"status":"completed"}`, id, id, tool, quoteJSON(args))
		},
		conversation: func(ident string) string {
			return fmt.Sprintf("export const %[1]sConversation: OpenAI.Responses.ResponseInputItem[] = [%[1]sCall, %[1]sMessage];", ident)
		},
	},
	{
		name: "anthropic",
		// What the Messages API takes back in the assistant's turn.
		callType: "Anthropic.Messages.ToolUseBlockParam",
		msgType:  "Anthropic.Messages.ToolResultBlockParam",
		call: func(id, tool, args string) string {
			return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, id, tool, args)
		},
		conversation: func(ident string) string {
			return fmt.Sprintf("export const %[1]sConversation: Anthropic.Messages.MessageParam[] = "+
				"[{ role: 'assistant', content: [%[1]sCall] }, { role: 'user', content: [%[1]sMessage] }];", ident)
		},
	},
	{
		name:     "gemini",
		callType: "Part",
		msgType:  "Part",
		call: func(id, tool, args string) string {
			return fmt.Sprintf(`{"functionCall":{"id":%q,"name":%q,"args":%s}}`, id, tool, args)
		},
		conversation: func(ident string) string {
			return fmt.Sprintf("export const %[1]sConversation: Content[] = "+
				"[{ role: 'model', parts: [%[1]sCall] }, { role: 'user', parts: [%[1]sMessage] }];\n"+
				"export const %[1]sFunctionCall: FunctionCall | undefined = %[1]sCall.functionCall;\n"+
				"export const %[1]sFunctionResponse: FunctionResponse | undefined = %[1]sMessage.functionResponse;", ident)
		},
	},
	{
		name: "plain",
		call: func(_, tool, args string) string {
			return fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)
		},
	},
}

// A callCase is one call sent in every shape, and what answers it.
type callCase struct {
	name, tool, args string
	status           int
	// text is the answer's text (a tool message's content); isError
	// whether the answer says the call failed.
	text    string
	isError bool
}

var callCases = []callCase{
	{name: "convert", tool: convertTool, args: `{"value":10,"from":"km","to":"mi"}`, status: http.StatusOK, text: "6.21371 mi"},
	{name: "toolError", tool: convertTool, args: `{"value":1,"from":"kg","to":"m"}`, status: http.StatusOK,
		text: "cannot convert kg to m", isError: true},
	{name: "badArguments", tool: convertTool, args: `{"value":"ten","from":"km","to":"mi"}`, status: http.StatusUnprocessableEntity,
		text: "arguments do not match the input schema of mcp_demo_convert_units: at /value: got string, want number", isError: true},
	// An image: Anthropic's answer carries it as an image block.
	{name: "image", tool: "mcp_everything_get-tiny-image", args: `{}`, status: http.StatusOK,
		text: "Here's the image you requested:\nThe image above is the MCP logo."},
}

var _ = Describe("REST menus and execute answers", func() {
	It("are what the SDKs' published types say, tsc --strict refuses a wrong shape where it is wrong, and the docs' examples compile", func() {
		var good, broken strings.Builder
		good.WriteString(sdkImports + "\n")

		By("every menu format, typed as the tools its SDK takes")
		menus := map[string][]json.RawMessage{}
		for _, m := range menuTypes {
			code, body := rest(http.MethodGet, "/tools?format="+m.format, "")
			Expect(code).To(Equal(http.StatusOK), body)
			var menu struct {
				Tools []json.RawMessage `json:"tools"`
			}
			Expect(json.Unmarshal([]byte(body), &menu)).To(Succeed())
			Expect(menu.Tools).To(HaveLen(len(menuNames)), "format %s", m.format)
			menus[m.format] = menu.Tools
			tools, err := json.Marshal(menu.Tools)
			Expect(err).NotTo(HaveOccurred())
			fmt.Fprintf(&good, "export const %s: %s = %s;\n", m.name, m.tsType, tools)
		}
		// The shapes read in Go too, where a type cannot tell: the schema is
		// the same in every format, the Responses tool says strict: false.
		var chat struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		var responses struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			Strict     *bool           `json:"strict"`
		}
		var anthropic struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		var gemini struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"parametersJsonSchema"`
		}
		for i, name := range menuNames {
			Expect(json.Unmarshal(menus["openai"][i], &chat)).To(Succeed())
			Expect(json.Unmarshal(menus["openai-responses"][i], &responses)).To(Succeed())
			Expect(json.Unmarshal(menus["anthropic"][i], &anthropic)).To(Succeed())
			Expect(json.Unmarshal(menus["gemini"][i], &gemini)).To(Succeed())
			Expect([]string{chat.Function.Name, responses.Name, anthropic.Name, gemini.Name}).To(HaveEach(name))
			Expect(responses.Parameters).To(MatchJSON(chat.Function.Parameters))
			Expect(anthropic.InputSchema).To(MatchJSON(chat.Function.Parameters))
			Expect(gemini.Schema).To(MatchJSON(chat.Function.Parameters))
			Expect(responses.Strict).To(HaveValue(BeFalse()), name)
		}

		By("every call in every shape execute takes, the answer's message typed as the conversation takes it")
		for _, shape := range callShapes {
			for _, cc := range callCases {
				id := "call_" + cc.name
				body := shape.call(id, cc.tool, cc.args)
				code, answer := rest(http.MethodPost, "/execute", body)
				Expect(code).To(Equal(cc.status), "%s %s: %s", shape.name, cc.name, answer)
				var envelope map[string]json.RawMessage
				Expect(json.Unmarshal([]byte(answer), &envelope)).To(Succeed())
				expectMessage(shape.name, cc, id, envelope["message"])
				if shape.msgType == "" {
					continue
				}
				ident := shape.name + upperFirst(cc.name)
				fmt.Fprintf(&good, "export const %sCall: %s = %s;\n", ident, shape.callType, body)
				fmt.Fprintf(&good, "export const %sMessage: %s = %s;\n", ident, shape.msgType, envelope["message"])
				good.WriteString(shape.conversation(ident) + "\n")
			}
		}

		By("the same shapes, each broken in one place")
		broken.WriteString(sdkImports + "\n")
		wrong := brokenShapes(menus)
		names := make([]string, 0, len(wrong))
		for name := range wrong {
			names = append(names, name)
		}
		sort.Strings(names)
		brokenLines := map[int]string{}
		line := strings.Count(broken.String(), "\n") + 1
		for _, name := range names {
			broken.WriteString(wrong[name] + "\n")
			brokenLines[line] = name
			line++
		}

		dir := workdir()
		Expect(os.WriteFile(filepath.Join(dir, "rest-types.ts"), []byte(good.String()), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "broken-types.ts"), []byte(broken.String()), 0o600)).To(Succeed())
		files := []string{"rest-types.ts", "broken-types.ts"}
		By("in the same tsc run, every TypeScript example of docs/agents.md")
		examples := docExamples()
		Expect(len(examples)).To(BeNumerically(">=", 7), "the examples of docs/agents.md")
		for i, example := range examples {
			name := fmt.Sprintf("docs-example-%d.ts", i+1)
			Expect(os.WriteFile(filepath.Join(dir, name), []byte(example), 0o600)).To(Succeed())
			files = append(files, name)
		}
		errs := tsc(dir, files...)
		for _, f := range files[2:] {
			Expect(errs[f]).To(BeEmpty(), "an example of docs/agents.md (%s) does not compile:\n%s", f, strings.Join(errs[f], "\n"))
		}
		Expect(errs["rest-types.ts"]).To(BeEmpty(), "tsc refused what the catalog served:\n%s", strings.Join(errs["rest-types.ts"], "\n"))
		refused := map[string]bool{}
		for _, e := range errs["broken-types.ts"] {
			n, ok := brokenLines[lineOf(e)]
			Expect(ok).To(BeTrue(), "an error on a line that is not broken: %s", e)
			refused[n] = true
		}
		for _, name := range names {
			Expect(refused).To(HaveKey(name), "tsc accepted the wrong shape %s: %s", name, wrong[name])
		}
		GinkgoWriter.Printf("tsc refused every wrong shape:\n  %s\n", strings.Join(errs["broken-types.ts"], "\n  "))
	})

	// @anthropic-ai/sdk 1.10.0 types a response's tool_use block
	// (Anthropic.Messages.ToolUseBlock) with a required caller
	// ({"type": "direct"} for a call the model made itself), and openai's
	// Responses function_call item may carry one too: each block as the
	// SDK hands it over is taken.
	It("takes a tool_use block and a function_call item as the SDKs hand them over, caller and all", func() {
		code, answer := rest(http.MethodPost, "/execute",
			`{"type":"tool_use","id":"toolu_1","name":"`+convertTool+`","input":{"value":10,"from":"km","to":"mi"},"caller":{"type":"direct"}}`)
		Expect(code).To(Equal(http.StatusOK), answer)
		Expect(answer).To(ContainSubstring(`"tool_use_id":"toolu_1"`))
		code, answer = rest(http.MethodPost, "/execute",
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"`+convertTool+`","arguments":"{\"value\":10,\"from\":\"km\",\"to\":\"mi\"}","status":"completed","caller":{"type":"direct"}}`)
		Expect(code).To(Equal(http.StatusOK), answer)
		Expect(answer).To(ContainSubstring(`"call_id":"call_1"`))
	})
})

// expectMessage checks an execute answer's message for a call case in a
// shape, field by field: what a type cannot tell (ids, texts, is_error).
func expectMessage(shape string, cc callCase, id string, message json.RawMessage) {
	text := cc.text
	switch shape {
	case "plain":
		Expect(message).To(BeNil(), "a plain call's answer has no message")
	case "chat":
		Expect(message).To(MatchJSON(fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%q}`, id, text)))
	case "responses":
		Expect(message).To(MatchJSON(fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%q}`, id, text)))
	case "gemini":
		key := "output"
		if cc.isError {
			key = "error"
		}
		Expect(message).To(MatchJSON(fmt.Sprintf(`{"functionResponse":{"id":%q,"name":%q,"response":{%q:%q}}}`, id, cc.tool, key, text)))
	case "anthropic":
		var block struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			IsError   bool   `json:"is_error"`
			Content   []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					Type      string `json:"type"`
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		}
		Expect(json.Unmarshal(message, &block)).To(Succeed())
		Expect([]string{block.Type, block.ToolUseID}).To(Equal([]string{"tool_result", id}))
		Expect(block.IsError).To(Equal(cc.isError))
		var kinds, texts []string
		for _, c := range block.Content {
			kinds = append(kinds, c.Type)
			if c.Type == "text" {
				texts = append(texts, c.Text)
			} else {
				Expect([]string{c.Source.Type, c.Source.MediaType}).To(Equal([]string{"base64", "image/png"}))
				Expect(c.Source.Data).NotTo(BeEmpty())
			}
		}
		if cc.name == "image" {
			// server-everything's text, its image, its caption.
			Expect(kinds).To(Equal([]string{"text", "image", "text"}))
		} else {
			Expect(kinds).To(Equal([]string{"text"}))
		}
		Expect(strings.Join(texts, "\n")).To(Equal(text))
	}
}

// brokenShapes are declarations of served shapes, each changed in one
// place the SDK's type does not allow, by name: one per line.
func brokenShapes(menus map[string][]json.RawMessage) map[string]string {
	mutate := func(raw json.RawMessage, from, to string) string {
		s := string(raw)
		Expect(s).To(ContainSubstring(from))
		return strings.Replace(s, from, to, 1)
	}
	return map[string]string{
		// The Chat Completions tool's schema under a key it does not have.
		"chatTool": "export const chatTool: OpenAI.Chat.Completions.ChatCompletionTool = " +
			mutate(menus["openai"][0], `"parameters"`, `"input_schema"`) + ";",
		// A Responses tool without its required strict.
		"responsesTool": "export const responsesTool: OpenAI.Responses.FunctionTool = " +
			mutate(menus["openai-responses"][0], `,"strict":false`, ``) + ";",
		// Anthropic's schema in camel case.
		"anthropicTool": "export const anthropicTool: Anthropic.Messages.Tool = " +
			mutate(menus["anthropic"][0], `"input_schema"`, `"inputSchema"`) + ";",
		// Gemini's schema in snake case.
		"geminiDeclaration": "export const geminiDeclaration: FunctionDeclaration = " +
			mutate(menus["gemini"][0], `"parametersJsonSchema"`, `"parameters_json_schema"`) + ";",
		// A tool message naming its call in camel case.
		"chatMessage": `export const chatMessage: OpenAI.Chat.Completions.ChatCompletionToolMessageParam = {"role":"tool","toolCallId":"call_1","content":"6.21371 mi"};`,
		// A function_call_output typed as an item it is not.
		"responsesMessage": `export const responsesMessage: OpenAI.Responses.ResponseInputItem.FunctionCallOutput = {"type":"function_call_result","call_id":"call_1","output":"6.21371 mi"};`,
		// A tool result whose image names a media type Anthropic does not take.
		"anthropicMessage": `export const anthropicMessage: Anthropic.Messages.ToolResultBlockParam = {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"image","source":{"type":"base64","media_type":"image/svg+xml","data":"PHN2Zy8+"}}]};`,
		// A function response whose response is text, not an object.
		"geminiMessage": `export const geminiMessage: Part = {"functionResponse":{"id":"g1","name":"mcp_demo_convert_units","response":"6.21371 mi"}};`,
	}
}

// tscError is a line of tsc's output naming a file: "file(line,col):
// error TS…".
var tscError = regexp.MustCompile(`^([^(\s]+)\((\d+),(\d+)\): error (TS\d+: .*)$`)

// tsc type-checks files in dir with --noEmit --strict and returns its
// errors by file. It fails the spec on anything else it says.
// --skipLibCheck skips checking the SDKs' own declaration files against
// each other (a quarter of the time on two cores), not the generated
// files against them: the wrong shapes prove those are checked.
func tsc(dir string, files ...string) map[string][]string {
	// The files are ES modules, resolved as Node resolves them.
	Expect(os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type":"module"}`), 0o600)).To(Succeed())
	args := append([]string{filepath.Join(sdks, "node_modules", "typescript", "bin", "tsc"),
		"--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
		"--types", "node", "--skipLibCheck", "--pretty", "false"}, files...)
	stdout, stderr, exit := runNode(dir, nil, args...)
	Expect(stderr).To(BeEmpty())
	errs := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" || strings.HasPrefix(l, " ") {
			continue // continuation lines of a message
		}
		m := tscError.FindStringSubmatch(l)
		Expect(m).NotTo(BeNil(), "tsc said something else than errors in files:\n%s", stdout)
		errs[m[1]] = append(errs[m[1]], l)
	}
	if len(errs) == 0 {
		Expect(exit).To(BeZero(), stdout)
	}
	return errs
}

// docExamples are the TypeScript code blocks of docs/agents.md.
func docExamples() []string {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	Expect(err).NotTo(HaveOccurred())
	var examples []string
	var block *strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case block == nil && line == "```ts":
			block = &strings.Builder{}
		case block != nil && line == "```":
			examples = append(examples, block.String())
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	Expect(block).To(BeNil(), "docs/agents.md has an unterminated code block")
	return examples
}

func lineOf(tscLine string) int {
	m := tscError.FindStringSubmatch(tscLine)
	var n int
	_, _ = fmt.Sscan(m[2], &n)
	return n
}

func quoteJSON(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
