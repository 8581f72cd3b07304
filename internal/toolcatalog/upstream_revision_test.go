package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

var _ = Describe("The way a call reaches a server that speaks 2026-07-28 and keeps sessions", func() {
	const progressSteps = 20
	var ns, endpoint string
	BeforeEach(func() {
		ns = env.Namespace()
		// mcp-go's server speaks 2026-07-28 and keeps sessions of the
		// revisions before. "how" tells how it was called; "sample" asks
		// the client's model (on a session, mcp-go sends that on the
		// listening stream); "progress" tells progress.
		both := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		both.MCP.EnableSampling()
		both.AddToolFunc("how", "Tells how it was called.", `{"type":"object"}`, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			how := req.Header.Get("MCP-Protocol-Version") + ", no session"
			if req.Header.Get("Mcp-Session-Id") != "" {
				how = req.Header.Get("MCP-Protocol-Version") + ", a session"
				if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok && s.GetClientCapabilities().Sampling != nil {
					how += " that declared sampling"
				}
			}
			return mcp.NewToolResultText(how), nil
		})
		both.AddToolFunc("sample", "Asks the client's model.", `{"type":"object"}`, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r := server.SamplingResponse(req.Params.InputResponses, "s"); r != nil {
				return mcp.NewToolResultText(fmt.Sprint(r.Content)), nil
			}
			return server.NewInputRequestBuilder("st").Sample("s", mcp.CreateMessageParams{MaxTokens: 50,
				Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("a haiku")}}}).ToolResult(), nil
		})
		both.AddToolFunc("progress", "Tells its progress.", `{"type":"object"}`, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
				return mcp.NewToolResultError("no progress token"), nil
			}
			for i := range progressSteps {
				_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
					map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": i + 1, "total": progressSteps})
				time.Sleep(time.Millisecond) // as a tool doing work between steps
			}
			return mcp.NewToolResultText("done"), nil
		})
		srv := readyServer(ns, "both", both.URL())
		Expect(env.Fetch(srv).Status.ServerInfo.ProtocolVersion).To(Equal("2026-07-28"), "the server's newest revision is what discovery records")
		collection(ns, "kit", "both")
		endpoint = catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"
	})

	how := func(session *sdk.ClientSession) string {
		result, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_both_how", Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse(), textOf(result))
		return textOf(result)
	}
	execute := func(headers ...string) string {
		r := post("/v1/namespaces/"+ns+"/toolcollections/kit/execute", `{"name":"mcp_both_how","arguments":{}}`, headers...)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		return string(r.body)
	}

	It("is a 2025-11-25 session declaring nothing for a call whose caller hears only its answer", func() {
		Expect(how(directTo(endpoint, "2025-11-25"))).To(Equal("2025-11-25, a session"))
		Expect(how(directTo(endpoint, "2025-06-18"))).To(Equal("2025-11-25, a session"))
		Expect(execute()).To(ContainSubstring(`"output":"2025-11-25, a session"`), "a REST call")
	})

	It("is 2026-07-28 for a call that may hear more: progress, log messages, a question, input_required", func() {
		Expect(how(directTo(endpoint, ""))).To(Equal("2026-07-28, no session"), "a 2026-07-28 caller")
		Expect(how(askedCallerOf(endpoint, "2025-11-25", "").session)).To(Equal("2026-07-28, no session"), "a caller that may be asked")
		params := &sdk.CallToolParams{Name: "mcp_both_how", Arguments: map[string]any{}}
		params.SetProgressToken("p")
		result, err := directTo(endpoint, "2025-11-25").CallTool(ctx, params)
		Expect(err).NotTo(HaveOccurred())
		Expect(textOf(result)).To(Equal("2026-07-28, no session"), "a call that asks for progress")
		Expect(execute("Accept", "text/event-stream")).To(ContainSubstring(`2026-07-28, no session`), "a REST call that asks for events")
		logging := directTo(endpoint, "2025-11-25")
		//nolint:staticcheck // logging, deprecated in 2026-07-28, is what a legacy caller asks for
		Expect(logging.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"})).To(Succeed())
		Expect(how(logging)).To(Equal("2026-07-28, no session"), "a caller that asked for log messages")
	})

	It("asks a legacy caller the server's sampling, which mcp-go sends a session on its listening stream", func() {
		caller := askedCallerOf(endpoint, "2025-11-25", "")
		result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_both_sample", Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse(), textOf(result))
		Expect(textOf(result)).To(ContainSubstring("you said a haiku"))
		caller.mu.Lock()
		defer caller.mu.Unlock()
		Expect(caller.samples).To(HaveLen(1))
	})

	It("gives a legacy caller every progress notification, which mcp-go splits between a session's streams", func() {
		// callerOf declares no capability: the calls may hear progress only.
		caller := callerOf(endpoint, "2025-11-25")
		const calls = 3
		for i := range calls {
			params := &sdk.CallToolParams{Name: "mcp_both_progress", Arguments: map[string]any{}}
			params.SetProgressToken(fmt.Sprint("t", i))
			result, err := caller.session.CallTool(ctx, params)
			Expect(err).NotTo(HaveOccurred())
			Expect(textOf(result)).To(Equal("done"))
		}
		// Each call hears its steps from the first with none missing:
		// mcp-go's server may drop the last few, those its writer had not
		// taken when the answer was written, but never one in the middle.
		// On a session with a listening stream it sends each step to
		// either stream, and a call would miss about half of them, here
		// and there. (The client hands notifications to its handler apart
		// from the answer: they are waited for.)
		Eventually(func(g Gomega) {
			caller.mu.Lock()
			defer caller.mu.Unlock()
			heard := map[string][]float64{}
			for _, p := range caller.progress {
				token := fmt.Sprint(p.ProgressToken)
				heard[token] = append(heard[token], p.Progress)
			}
			for i := range calls {
				steps := heard[fmt.Sprint("t", i)]
				slices.Sort(steps)
				g.Expect(len(steps)).To(BeNumerically(">=", progressSteps/2), "call %d heard %v", i, steps)
				for j, step := range steps {
					g.Expect(step).To(BeEquivalentTo(j+1), "call %d heard %v", i, steps)
				}
			}
		}).Should(Succeed())
	})

	It("is 2026-07-28 for every call to a server that keeps no session", func() {
		// go-sdk's stateless server answers initialize without a session
		// id: a session would be stateless all the same, and could be
		// asked nothing on; it is spoken to in 2026-07-28.
		stateless := testmcp.StartGoSDK(testmcp.GoSDKStateless)
		DeferCleanup(stateless.Stop)
		stateless.AddRawTool("echo", "Echoes.", `{"type":"object"}`, func(json.RawMessage) string { return "echo" })
		stateless.AddAskingTool()
		readyServer(ns, "nosession", stateless.URL())
		collection(ns, "asking", "nosession")
		r := post("/v1/namespaces/"+ns+"/toolcollections/asking/execute", `{"name":"mcp_nosession_echo","arguments":{}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		asking := catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/asking/mcp"
		for _, revision := range []string{"2025-11-25", ""} {
			caller := askedCallerOf(asking, revision, "Ada")
			result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_nosession_ask", Arguments: map[string]any{}})
			Expect(err).NotTo(HaveOccurred(), revision)
			Expect(textOf(result)).To(Equal("hello Ada"), revision)
		}
		var calls []string
		for _, r := range stateless.Requests() {
			if r.Method == "tools/call" {
				calls = append(calls, r.Header.Get("MCP-Protocol-Version"))
			}
		}
		// The REST call, then each asking call twice: input_required, then
		// the call again with its answers.
		Expect(calls).To(HaveLen(5))
		Expect(calls).To(HaveEach("2026-07-28"), "every call went in 2026-07-28")
	})
})
