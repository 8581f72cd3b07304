package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// Each shape a model API gives a call in is read with its own keys.
func TestDecodeCallShapes(t *testing.T) {
	for _, c := range []struct {
		body, name, args, id string
		shape                callShape
	}{
		{`{"name":"add","arguments":{"a":1}}`, "add", `{"a":1}`, "", shapePlain},
		{`{"name":"add"}`, "add", `{}`, "", shapePlain},
		{`{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\": 1}"}}`, "add", `{"a": 1}`, "call_1", shapeChat},
		{`{"type":"function_call","id":"fc_1","call_id":"call_2","name":"add","arguments":"{\"a\":2}","status":"completed"}`, "add", `{"a":2}`, "call_2", shapeResponses},
		{`{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":3}}`, "add", `{"a":3}`, "toolu_1", shapeAnthropic},
		{`{"type":"tool_use","id":"toolu_2","name":"add","input":{},"caller":{"type":"direct"}}`, "add", `{}`, "toolu_2", shapeAnthropic},
		{`{"id":"call_4","type":"function","function":{"name":"add","arguments":"{\"a\":1}","parsed_arguments":{"a":1}}}`, "add", `{"a":1}`, "call_4", shapeChat},
		{`{"type":"function_call","call_id":"call_3","name":"add","arguments":"{}","caller":{"type":"direct"}}`, "add", `{}`, "call_3", shapeResponses},
		{`{"functionCall":{"id":"g1","name":"add","args":{"a":4}}}`, "add", `{"a":4}`, "g1", shapeGemini},
		{`{"functionCall":{"name":"add"}}`, "add", `{}`, "", shapeGemini},
	} {
		got, err := decodeCall([]byte(c.body))
		if err != nil || got.name != c.name || string(got.arguments) != c.args || got.callID != c.id || got.shape != c.shape {
			t.Errorf("%s: %+v (%s), %v; want %s %s %s %s", c.body, got, got.arguments, err, c.shape, c.name, c.args, c.id)
		}
	}
}

// A body in no shape, or with a key its shape does not have, is refused
// naming what execute takes: nothing is read as another shape or left out.
func TestDecodeCallRefusesWhatItWouldIgnore(t *testing.T) {
	for body, says := range map[string]string{
		`{"id":"toolu_1","name":"add","input":{"a":1}}`:                  `has no "id", "input"`,
		`{"name":"add","arguments":{},"input":{"a":1}}`:                  `has no "input"`,
		`{"type":"tool_use","id":"t","name":"add","arguments":{"a":1}}`:  `an Anthropic tool_use block, which has no "arguments"`,
		`{"type":"function_call","call_id":"c","name":"add","input":{}}`: `a Responses function_call item, which has no "input"`,
		`{"type":"tool_result","tool_use_id":"t"}`:                       `a call of type "tool_result"`,
		`[`:          "not valid JSON",
		`"add"`:      "not valid JSON",
		`null`:       "not a JSON object",
		`{}`:         "names no tool",
		`{"type":1}`: `"type" is not a string`,
		`{"type":"function_call","call_id":"c","name":"add","arguments":"[1]"}`: "arguments must be a JSON object",
		`{"type":"tool_use","id":"t","name":"add","input":"{}"}`:                "arguments must be a JSON object",
		`{"type":"function_call","name":"add","arguments":"{}"}`:                `the call has no "call_id"`,
		`{"type":"tool_use","name":"add","input":{}}`:                           `the call has no "id"`,
		`{"function":{"name":"add","arguments":"{}"}}`:                          `the call has no "id"`,
		`{"id":"c","type":"function","function":{"name":"add","args":{"a":1}}}`: `"function" has no "args": it has "name", "arguments", "parsed_arguments"`,
		`{"id":"c","type":"function","function":{"NAME":"add"}}`:                `"function" has no "NAME"`,
		`{"id":"c","type":"function","function":"add"}`:                         `"function" is not an object with "name", "arguments", "parsed_arguments"`,
		`{"functionCall":{"name":"add","arguments":{"a":1}}}`:                   `"functionCall" has no "arguments": it has "id", "name", "args"`,
		`{"Name":"add","arguments":{}}`:                                         `has no "Name"`,
		`{"name":"add","arguments":{}} {"name":"rm"}`:                           "more than one JSON value",
	} {
		_, err := decodeCall([]byte(body))
		var reqErr *requestError
		if !errors.As(err, &reqErr) || reqErr.code != http.StatusBadRequest || !strings.Contains(reqErr.message, says) {
			t.Errorf("%s: %v, want 400 saying %q", body, err, says)
		}
	}
}

var _ = Describe("Execute in each model API's shape", func() {
	var ns string
	BeforeEach(func() {
		ns = env.Namespace()
		readyServer(ns, "calc", calcServer().URL(), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Timeout = &metav1.Duration{Duration: 5 * 1e9}
		})
		Expect(env.Client.Create(ctx, &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "calc"},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"calc"}},
				Tools: &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_calc_add", Rename: "add"}}}}})).To(Succeed())
		Eventually(func() int {
			return post("/v1/namespaces/"+ns+"/toolcollections/calc/execute", `{"name":"add","arguments":{"a":1,"b":1}}`).code
		}).
			Should(Equal(http.StatusOK))
	})
	execute := func(body string) response { return post("/v1/namespaces/"+ns+"/toolcollections/calc/execute", body) }
	message := func(r response) any {
		var out struct {
			Message any `json:"message"`
		}
		Expect(json.Unmarshal(r.body, &out)).To(Succeed(), string(r.body))
		return out.Message
	}

	It("answers each shape with the message its API appends", func() {
		r := execute(`{"type":"function_call","id":"fc_1","call_id":"call_2","name":"add","arguments":"{\"a\":2,\"b\":3}"}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(message(r)).To(Equal(map[string]any{"type": "function_call_output", "call_id": "call_2", "output": "5"}))

		r = execute(`{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":2,"b":4}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(message(r)).To(Equal(map[string]any{"type": "tool_result", "tool_use_id": "toolu_1",
			"content": []any{map[string]any{"type": "text", "text": "6"}}}))

		r = execute(`{"functionCall":{"id":"g1","name":"add","args":{"a":3,"b":4}}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(message(r)).To(Equal(map[string]any{"functionResponse": map[string]any{"id": "g1", "name": "add", "response": map[string]any{"output": "7"}}}))

		r = execute(`{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":4,\"b\":4}"}}`)
		Expect(message(r)).To(Equal(map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "8"}))
	})

	It("answers a tool's failure and an image in the shape's own terms", func() {
		r := execute(`{"type":"tool_use","id":"toolu_2","name":"mcp_calc_fail","input":{}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(message(r)).To(Equal(map[string]any{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
			"content": []any{map[string]any{"type": "text", "text": "the disk is full"}}}))

		r = execute(`{"functionCall":{"name":"mcp_calc_fail","args":{}}}`)
		Expect(message(r)).To(Equal(map[string]any{"functionResponse": map[string]any{"name": "mcp_calc_fail", "response": map[string]any{"error": "the disk is full"}}}))

		r = execute(`{"type":"tool_use","id":"toolu_3","name":"mcp_calc_picture","input":{}}`)
		Expect(message(r)).To(Equal(map[string]any{"type": "tool_result", "tool_use_id": "toolu_3", "content": []any{
			map[string]any{"type": "text", "text": "a red dot"},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "aW1hZ2U="}},
		}}))
	})

	It("answers bad arguments with the message to append too, naming the tool as it was called", func() {
		r := execute(`{"type":"function_call","call_id":"call_3","name":"add","arguments":"{\"a\":\"two\"}"}`)
		Expect(r.code).To(Equal(http.StatusUnprocessableEntity), string(r.body))
		Expect(r.json()["error"]).To(HavePrefix("arguments do not match the input schema of add: "))
		Expect(r.json()["error"]).NotTo(ContainSubstring("mcp_calc_add"))
		Expect(message(r)).To(Equal(map[string]any{"type": "function_call_output", "call_id": "call_3", "output": r.json()["error"]}))

		r = execute(`{"type":"tool_use","id":"toolu_4","name":"nope","input":{}}`)
		Expect(r.code).To(Equal(http.StatusNotFound))
		Expect(message(r)).To(Equal(map[string]any{"type": "tool_result", "tool_use_id": "toolu_4", "is_error": true,
			"content": []any{map[string]any{"type": "text", "text": "Tool nope is invalid"}}}))

		By("arguments a model wrote that are not JSON get the message too")
		r = execute(`{"type":"function_call","call_id":"call_5","name":"add","arguments":"{\"a\": 1,"}`)
		Expect(r.code).To(Equal(http.StatusBadRequest), string(r.body))
		Expect(message(r)).To(Equal(map[string]any{"type": "function_call_output", "call_id": "call_5", "output": "arguments must be a JSON object"}))

		By("a plain call's error has no message to append")
		Expect(execute(`{"name":"nope"}`).json()).NotTo(HaveKey("message"))
	})

	It("runs a batch of calls in any shapes at once and answers them in order", func() {
		r := execute(`[{"type":"tool_use","id":"t1","name":"add","input":{"a":1,"b":1}},` +
			`{"type":"function_call","call_id":"c2","name":"add","arguments":"{\"a\":\"x\"}"},` +
			`{"name":"mcp_calc_fail"},` +
			`{"functionCall":{"name":"add","args":{"a":5,"b":5}}},` +
			`{"input":{}}]`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		var answers []map[string]any
		Expect(json.Unmarshal(r.body, &answers)).To(Succeed())
		Expect(answers).To(HaveLen(5))
		Expect(answers[0]["output"]).To(Equal("2"))
		Expect(answers[0]["message"]).To(HaveKeyWithValue("tool_use_id", "t1"))
		Expect(answers[1]["status"]).To(BeEquivalentTo(http.StatusUnprocessableEntity))
		Expect(answers[1]["message"]).To(HaveKeyWithValue("call_id", "c2"))
		Expect(answers[2]["isError"]).To(BeTrue())
		Expect(answers[2]).NotTo(HaveKey("message"))
		Expect(answers[3]["message"]).To(Equal(map[string]any{"functionResponse": map[string]any{"name": "add", "response": map[string]any{"output": "10"}}}))
		Expect(answers[4]["status"]).To(BeEquivalentTo(http.StatusBadRequest))
		Expect(answers[4]["error"]).To(ContainSubstring(`has no "input"`))

		By("a batch is not answered as events")
		Expect(post("/v1/namespaces/"+ns+"/toolcollections/calc/execute", `[{"name":"add"}]`, "Accept", "text/event-stream").code).To(Equal(http.StatusNotAcceptable))

		By("the calls of a batch run at once: each of two waits for the other to arrive")
		meeting := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		var arrived atomic.Int32
		together := make(chan struct{})
		meeting.AddToolFunc("meet", "Waits for a second caller.", `{"type":"object","properties":{}}`,
			func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if arrived.Add(1) == 2 {
					close(together)
				}
				select {
				case <-together:
					return mcp.NewToolResultText("met"), nil
				case <-ctx.Done():
					return mcp.NewToolResultError("no one else came"), nil
				}
			})
		readyServer(ns, "meeting", meeting.URL())
		r = post("/v1/execute", `[{"name":"mcp_meeting_meet"},{"name":"mcp_meeting_meet"}]`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(json.Unmarshal(r.body, &answers)).To(Succeed())
		Expect(answers).To(HaveLen(2))
		Expect(answers[0]["output"]).To(Equal("met"), string(r.body))
		Expect(answers[1]["output"]).To(Equal("met"), string(r.body))

		By("an empty batch, or one past the limit, is refused whole")
		Expect(execute(`[]`).code).To(Equal(http.StatusBadRequest))
		Expect(execute("[" + strings.Repeat(`{"name":"add"},`, maxBatchCalls) + `{"name":"add"}]`).code).To(Equal(http.StatusBadRequest))
	})
})

// Anthropic's Messages API refuses an empty text block and an image of a
// type it does not take: neither goes into a tool_result.
func TestAnthropicBlocksAreOnesTheAPITakes(t *testing.T) {
	env := Envelope{Content: []json.RawMessage{
		json.RawMessage(`{"type":"text","text":""}`),
		json.RawMessage(`{"type":"image","data":"PHN2Zy8+","mimeType":"image/svg+xml"}`),
		json.RawMessage(`{"type":"image","data":"aW1n","mimeType":"image/webp"}`),
	}}
	got, err := json.Marshal(anthropicBlocks(&env))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"[an image of type \"image/svg+xml\", which this API does not take]"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"aW1n"}}]`
	if string(got) != want {
		t.Errorf("blocks\n%s\nwant\n%s", got, want)
	}
}
