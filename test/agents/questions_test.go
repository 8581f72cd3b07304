package agents

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// askedRequest is a request a server asked the client, as the client
// received it.
type askedRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// askedCall is a tool call's result as the client read it, or what the
// call threw.
type askedCall struct {
	IsError bool       `json:"isError"`
	Content []textPart `json:"content"`
	Threw   string     `json:"threw"`
}

// askedSession is what a client that can be asked did in one session:
// the revision it negotiated, its calls and the requests it was asked.
type askedSession struct {
	ProtocolVersion string `json:"protocolVersion"`
	Calls           struct {
		Elicitation askedCall `json:"elicitation"`
		Sampling    askedCall `json:"sampling"`
	} `json:"calls"`
	Asked []askedRequest `json:"asked"`
}

// methods are the methods of asked, in order.
func methods(asked []askedRequest) []string {
	var out []string
	for _, r := range asked {
		out = append(out, r.Method)
	}
	return out
}

// paramsOf is the params of the only request of asked with method.
func paramsOf(asked []askedRequest, method string) string {
	var found []json.RawMessage
	for _, r := range asked {
		if r.Method == method {
			found = append(found, r.Params)
		}
	}
	Expect(found).To(HaveLen(1), "%s asked once", method)
	return string(found[0])
}

// joined is the text of content, one part a line.
func joined(content []textPart) string {
	var texts []string
	for _, p := range content {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}

var _ = Describe("A server's questions over the collection's MCP endpoint", func() {
	It("TypeScript MCP SDK: answers server-everything's elicitation and sampling through the catalog as it does directly", func() {
		var run struct {
			Catalog  askedSession `json:"catalog"`
			Direct   askedSession `json:"direct"`
			Requests []sdkRequest `json:"requests"`
		}
		runScript("mcp-sdk-questions.mjs", &run, "EVERYTHING_URL="+everythingURL)

		By("directly, server-everything asked once each and answered with what the client said")
		for _, call := range []askedCall{run.Direct.Calls.Elicitation, run.Direct.Calls.Sampling} {
			Expect(call.Threw).To(BeEmpty())
			Expect(call.IsError).To(BeFalse(), joined(call.Content))
		}
		Expect(methods(run.Direct.Asked)).To(Equal([]string{"elicitation/create", "sampling/createMessage"}))
		Expect(joined(run.Direct.Calls.Elicitation.Content)).To(ContainSubstring("- Name: Ann"))
		Expect(joined(run.Direct.Calls.Sampling.Content)).To(ContainSubstring(`"text": "you said Resource trigger-sampling-request context: a haiku"`))

		By("through the catalog, the same results, neither an error")
		Expect(run.Catalog.Calls.Elicitation.Threw).To(BeEmpty())
		Expect(run.Catalog.Calls.Elicitation.IsError).To(BeFalse(), joined(run.Catalog.Calls.Elicitation.Content))
		Expect(run.Catalog.Calls.Elicitation.Content).To(Equal(run.Direct.Calls.Elicitation.Content), "the form's answer reached the server as the client gave it")
		Expect(run.Catalog.Calls.Sampling.Threw).To(BeEmpty())
		Expect(run.Catalog.Calls.Sampling.IsError).To(BeFalse(), joined(run.Catalog.Calls.Sampling.Content))
		Expect(run.Catalog.Calls.Sampling.Content).To(Equal(run.Direct.Calls.Sampling.Content), "the model's answer reached the server as the client gave it")

		By("through the catalog, one elicitation and one sampling request, asked as the server asks them directly")
		Expect(methods(run.Catalog.Asked)).To(Equal([]string{"elicitation/create", "sampling/createMessage"}))
		Expect(paramsOf(run.Catalog.Asked, "elicitation/create")).To(MatchJSON(paramsOf(run.Direct.Asked, "elicitation/create")),
			"the form as the server sent it: every field, default and enum")
		Expect(paramsOf(run.Catalog.Asked, "sampling/createMessage")).To(MatchJSON(paramsOf(run.Direct.Asked, "sampling/createMessage")))

		By("a 2025-11-25 session with the token on every request, the two answers among them")
		Expect(run.Catalog.ProtocolVersion).To(Equal("2025-11-25"))
		Expect(run.Direct.ProtocolVersion).To(Equal("2025-11-25"))
		expectAuthenticated(run.Requests)
		Expect(run.Requests[0].RPC).To(Equal("initialize"))
		answers := 0
		for _, r := range run.Requests[1:] {
			Expect(r.ProtocolVersion).To(Equal("2025-11-25"))
			Expect(r.SessionID).NotTo(BeEmpty())
			if r.RPC == "(response)" {
				answers++
			}
		}
		Expect(answers).To(Equal(2), "the client's answers went back to the catalog, one each")
	})
})
