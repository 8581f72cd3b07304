package toolcatalog

import (
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

var _ = Describe("Strict menus", func() {
	const (
		forecast = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":14}},"required":["city"]}`
		// What a model sees in strict mode: every property required, the
		// optional one nullable, the object closed.
		forecastStrict    = `{"properties":{"city":{"type":"string"},"days":{"maximum":14,"type":["integer","null"]}},"required":["city","days"],"type":"object","additionalProperties":false}`
		forecastAnthropic = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","description":"{maximum: 14}"}},"additionalProperties":false,"required":["city"]}`
		env_              = `{"type":"object","properties":{"vars":{"type":"object","additionalProperties":{"type":"string"}}},"required":["vars"]}`
	)
	// Status holds a schema's members sorted (the API server stores a
	// custom resource's JSON so); that is the order served.
	const (
		forecastStored = `{"properties":{"city":{"type":"string"},"days":{"maximum":14,"type":"integer"}},"required":["city"],"type":"object"}`
		envStored      = `{"properties":{"vars":{"additionalProperties":{"type":"string"},"type":"object"}},"required":["vars"],"type":"object"}`
	)
	var ns, path string
	BeforeEach(func() {
		ns = env.Namespace()
		mcpSrv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcpSrv.AddTool("forecast", "Weather forecast", forecast)
		mcpSrv.AddTool("setenv", "Set variables", env_)
		readyServer(ns, "weather", mcpSrv.URL())
		path = "/v1/namespaces/" + ns + "/mcpservers/weather/tools"
	})

	type strictBody struct {
		Tools []struct {
			Name        string          `json:"name"`
			Parameters  json.RawMessage `json:"parameters"`
			InputSchema json.RawMessage `json:"input_schema"`
			Strict      *bool           `json:"strict"`
			Function    struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Strict     *bool           `json:"strict"`
			} `json:"function"`
		} `json:"tools"`
		NonStrict []nonStrictJSON `json:"nonStrict"`
	}
	read := func(query string) (strictBody, response) {
		resp := get(path + query)
		Expect(resp.code).To(Equal(http.StatusOK), string(resp.body))
		var body strictBody
		Expect(json.Unmarshal(resp.body, &body)).To(Succeed())
		Expect(body.Tools).To(HaveLen(2))
		return body, resp
	}
	openAIReason := "at /properties/vars: the object takes properties it does not declare (additionalProperties)"

	It("serves Chat Completions tools strict when nothing is lost, and names the others", func() {
		body, first := read("?format=openai&strict=true")
		Expect(body.Tools[0].Function.Name).To(Equal("mcp_weather_forecast"))
		Expect(string(body.Tools[0].Function.Parameters)).To(Equal(forecastStrict))
		Expect(*body.Tools[0].Function.Strict).To(BeTrue())
		Expect(body.Tools[1].Function.Name).To(Equal("mcp_weather_setenv"))
		Expect(string(body.Tools[1].Function.Parameters)).To(Equal(envStored))
		Expect(*body.Tools[1].Function.Strict).To(BeFalse())
		Expect(body.NonStrict).To(Equal([]nonStrictJSON{{Name: "mcp_weather_setenv", Reason: openAIReason}}))

		By("the same bytes and ETag on every read")
		_, again := read("?format=openai&strict=true")
		Expect(again.body).To(Equal(first.body))
		Expect(again.header.Get("ETag")).To(Equal(first.header.Get("ETag")))

		By("and no strict member at all without strict=true")
		plain, _ := read("?format=openai")
		Expect(plain.Tools[0].Function.Strict).To(BeNil())
		Expect(plain.NonStrict).To(BeNil())
		Expect(string(plain.Tools[0].Function.Parameters)).To(Equal(forecastStored))
	})

	It("serves Responses and Anthropic tools strict the same way", func() {
		responses, _ := read("?format=openai-responses&strict=true")
		Expect(string(responses.Tools[0].Parameters)).To(Equal(forecastStrict))
		Expect(*responses.Tools[0].Strict).To(BeTrue())
		Expect(*responses.Tools[1].Strict).To(BeFalse())
		Expect(responses.NonStrict).To(Equal([]nonStrictJSON{{Name: "mcp_weather_setenv", Reason: openAIReason}}))

		anthropic, _ := read("?format=anthropic&strict=true")
		Expect(string(anthropic.Tools[0].InputSchema)).To(Equal(forecastAnthropic))
		Expect(*anthropic.Tools[0].Strict).To(BeTrue())
		Expect(*anthropic.Tools[1].Strict).To(BeFalse())
		Expect(anthropic.NonStrict).To(HaveLen(1))

		By("search answers in the strict variant too")
		var found strictBody
		resp := get(path + "/search?q=forecast&format=openai-responses&strict=true")
		Expect(resp.code).To(Equal(http.StatusOK))
		Expect(json.Unmarshal(resp.body, &found)).To(Succeed())
		Expect(string(found.Tools[0].Parameters)).To(Equal(forecastStrict))
	})

	It("refuses strict where a format has no strict mode, and a strict that is not a boolean", func() {
		resp := get(path + "?format=gemini&strict=true")
		Expect(resp.code).To(Equal(http.StatusBadRequest))
		Expect(string(resp.body)).To(ContainSubstring("format gemini has no strict mode: strict=true applies to openai, openai-responses, anthropic"))
		resp = get(path + "?strict=yes")
		Expect(resp.code).To(Equal(http.StatusBadRequest))
		Expect(string(resp.body)).To(ContainSubstring("strict must be true or false, not yes"))
	})

	It("drops the null a strict model sends for an optional argument before the call", func() {
		call := `{"id":"call_1","type":"function","function":{"name":"mcp_weather_forecast","arguments":"{\"city\":\"Oslo\",\"days\":null}"}}`
		resp := post("/v1/execute", call)
		Expect(resp.code).To(Equal(http.StatusOK), string(resp.body))
		var answer struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		Expect(json.Unmarshal(resp.body, &answer)).To(Succeed())
		Expect(answer.Content[0].Text).To(Equal(`forecast {"city":"Oslo"}`))

		By("a null for a required argument is still the caller's mistake")
		resp = post("/v1/execute", `{"name":"mcp_weather_forecast","arguments":{"city":null}}`)
		Expect(resp.code).To(Equal(http.StatusUnprocessableEntity))
		Expect(string(resp.body)).To(ContainSubstring("at /city"))
	})
})
