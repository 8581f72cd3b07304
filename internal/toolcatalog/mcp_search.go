package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"k8s.io/apimachinery/pkg/runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// A collection with exposure Search offers its tools over MCP through two
// tools of the catalog's own: find_tools ranks the menu against what the
// agent asks for and returns the best matches' definitions, and call_tool
// calls one of them by name. Neither keeps anything between requests: a
// find_tools answer is computed from the menu, and call_tool names the
// tool it calls, so an agent may search on one replica and call on
// another, over any revision of the protocol. Every tool can still be
// called directly by name, as with exposure All.

const (
	findToolsName = "find_tools"
	callToolName  = "call_tool"
)

const findToolsInput = `{"type":"object","properties":{` +
	`"query":{"type":"string","minLength":1,"maxLength":1000,"description":"What the tool should do, in your own words, for example \"read the last lines of a log file\" or \"open an issue about a bug\"."},` +
	`"limit":{"type":"integer","minimum":1,"maximum":50,"default":10,"description":"How many tools to return at most, best first."}},` +
	`"required":["query"],"additionalProperties":false}`

const findToolsOutput = `{"type":"object","properties":{` +
	`"revision":{"type":"string","description":"The revision of the menu searched."},` +
	`"tools":{"type":"array","description":"The matching tools, best first, with their full definitions.","items":{"type":"object","properties":{` +
	`"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},` +
	`"inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"type":"object"},` +
	`"icons":{"type":"array","items":{"type":"object"}},"execution":{"type":"object"},"_meta":{"type":"object"}},"required":["name","inputSchema"]}},` +
	`"scores":{"type":"array","description":"scores[i] says how much of the query tools[i] answers, from 0 to 1: 1 matches every word of the query as strongly as the best match in the menu. Long requests score lower throughout, so compare a score with the first one.","items":{"type":"number","minimum":0,"maximum":1}},` +
	`"servers":{"type":"array","description":"servers[i] is the MCP server tools[i] comes from.","items":{"type":"object","properties":{"namespace":{"type":"string"},"name":{"type":"string"}},"required":["namespace","name"]}}},` +
	`"required":["revision","tools","scores","servers"]}`

const callToolInput = `{"type":"object","properties":{` +
	`"name":{"type":"string","minLength":1,"description":"The name of the tool to call, as find_tools returned it."},` +
	`"arguments":{"type":"object","description":"The tool's arguments, as its inputSchema describes them."}},` +
	`"required":["name"],"additionalProperties":false}`

// The two tools as the argument validator sees them; the hash only keys
// the compiled schema.
var (
	findToolsTool = mcpv1alpha1.Tool{Name: findToolsName, Hash: "catalog:" + findToolsName + ":1",
		InputSchema: runtime.RawExtension{Raw: []byte(findToolsInput)}}
	callToolTool = mcpv1alpha1.Tool{Name: callToolName, Hash: "catalog:" + callToolName + ":1",
		InputSchema: runtime.RawExtension{Raw: []byte(callToolInput)}}
)

// searchToolDefinitions are find_tools and call_tool as MCP lists them.
func searchToolDefinitions() (find, call mcp.Tool) {
	find = mcp.Tool{Name: findToolsName, Title: "Find tools",
		Description: "Finds the tools of this collection that do what you describe and returns their full definitions, best first. " +
			"The collection holds too many tools to list them all: search here, then call the tool you chose with call_tool. " +
			"If none fits, search again in other words.",
		RawInputSchema: json.RawMessage(findToolsInput), RawOutputSchema: json.RawMessage(findToolsOutput),
		Annotations: mcp.ToolAnnotation{Title: "Find tools", ReadOnlyHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)}}
	call = mcp.Tool{Name: callToolName, Title: "Call a tool",
		Description: "Calls a tool that find_tools returned, by its name, with arguments that match its inputSchema. " +
			"The result is the tool's own, as if it had been called directly.",
		RawInputSchema: json.RawMessage(callToolInput),
		Annotations:    mcp.ToolAnnotation{Title: "Call a tool", OpenWorldHint: mcp.ToBoolPtr(true)}}
	return find, call
}

// searchTools are the tools a Search endpoint lists, sorted by name:
// find_tools, call_tool and the tools always included that MCP clients
// can be offered. serveCall answers their calls.
func (c *Catalog) searchTools(vw *view) []mcp.Tool {
	find, call := searchToolDefinitions()
	tools := []mcp.Tool{find, call}
	refused := make(map[string]bool, len(vw.menu.Refused))
	for _, e := range vw.menu.Refused {
		refused[e.Name] = true
	}
	for _, e := range vw.exposure.AlwaysInclude {
		if !refused[e.Name] && e.Name != findToolsName && e.Name != callToolName {
			tools = append(tools, mcpToolOf(e, vw.exposesURIs()))
		}
	}
	slices.SortFunc(tools, func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools
}

// objectOrEmpty is arguments as a JSON object: absent or null is {}.
func objectOrEmpty(arguments json.RawMessage) json.RawMessage {
	if trimmed := bytes.TrimSpace(arguments); len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage(`{}`)
	}
	return arguments
}

// findTools answers find_tools: the view's tools ranked against the query,
// in the MCP format, as structured content and as its JSON text. Tools MCP
// clients cannot be offered (menu.Refusal) are not found here, as they are
// not listed.
func (c *Catalog) findTools(vw *view, arguments json.RawMessage) (*mcp.CallToolResult, error) {
	arguments = objectOrEmpty(arguments)
	if err := c.validate(findToolsName, &findToolsTool, arguments); err != nil {
		return nil, err
	}
	var args struct {
		Query string   `json:"query"`
		Limit *float64 `json:"limit"`
	}
	if err := json.Unmarshal(arguments, &args); err != nil {
		return nil, &requestError{code: http.StatusBadRequest, message: "arguments must be a JSON object"}
	}
	query := strings.TrimSpace(args.Query)
	if query == "" {
		return nil, &requestError{code: http.StatusUnprocessableEntity,
			message: "arguments do not match the input schema of find_tools: the query is blank; say what the tool should do"}
	}
	limit := defaultSearchLimit
	if args.Limit != nil {
		limit = int(math.Round(*args.Limit)) // the schema allows only whole numbers
	}
	offered := func(e *menu.Entry) bool { return menu.Refusal(e.Tool) == "" }
	raw, err := json.Marshal(searchResult(vw.revision, vw.rank(query, limit, offered), formatMCP))
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(raw))}, RawStructuredContent: raw}, nil
}

// callToolTarget reads call_tool's arguments: the tool to call and its own
// arguments (absent is {}), checked against call_tool's schema as a
// direct call's arguments are against the tool's.
func (c *Catalog) callToolTarget(arguments json.RawMessage) (string, json.RawMessage, error) {
	arguments = objectOrEmpty(arguments)
	if err := c.validate(callToolName, &callToolTool, arguments); err != nil {
		return "", nil, err
	}
	var target struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(arguments, &target); err != nil {
		return "", nil, &requestError{code: http.StatusBadRequest, message: "arguments must be a JSON object"}
	}
	return target.Name, objectOrEmpty(target.Arguments), nil
}

// serveSearchCall answers a tools/call of find_tools, or turns one of
// call_tool into the direct call it names, which serveCall then answers
// like any other: same lookup, errors, authorization, validation and
// progress. It reports whether it answered.
func (m *mcpHandlers) serveSearchCall(ctx context.Context, w http.ResponseWriter, key viewKey, msg *rpcMessage, vw *view, stateless bool) (*rpcMessage, bool) {
	c := m.catalog
	switch msg.Params.Name {
	case findToolsName:
		result, err := c.findTools(vw.forCaller(callerFrom(ctx)), msg.Params.Arguments)
		if err != nil {
			c.recordCall(ctx, key, msg.Params.Name, nil, Envelope{}, err)
			answerFailure(newCallStream(w, msg.ID), err, stateless)
			return nil, true
		}
		c.record(ctx, key, findToolsName, nil, "success")
		newCallStream(w, msg.ID).result(resultOf(result, stateless))
		return nil, true
	case callToolName:
		name, arguments, err := c.callToolTarget(msg.Params.Arguments)
		if err != nil {
			c.recordCall(ctx, key, msg.Params.Name, nil, Envelope{}, err)
			answerFailure(newCallStream(w, msg.ID), err, stateless)
			return nil, true
		}
		direct := *msg
		// The caller sent call_tool's params, whose schema binds no
		// headers: there are no Mcp-Param-* headers to check.
		direct.Params.Name, direct.Params.Arguments, direct.rawParams = name, arguments, nil
		return &direct, false
	}
	return msg, false
}
