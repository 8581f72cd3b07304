package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/endpoint"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// executeRequest accepts both shapes: {"name", "arguments": {...}} and an
// OpenAI tool call as a model returns it, whose arguments are a JSON string.
type executeRequest struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Function  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// call is a decoded execute request.
type call struct {
	name      string
	arguments json.RawMessage
	// toolCallID is set for OpenAI-shaped requests, which get a message
	// ready to append to the conversation.
	toolCallID string
	openAI     bool
}

// Envelope is the uniform result of every executed call.
type Envelope struct {
	Output            string            `json:"output"`
	Error             string            `json:"error,omitempty"`
	Base64Image       string            `json:"base64_image,omitempty"`
	System            string            `json:"system,omitempty"`
	IsError           bool              `json:"isError"`
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	Message           *ToolMessage      `json:"message,omitempty"`
}

// ToolMessage is the conversation message an OpenAI-style agent appends.
type ToolMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// requestError is a bad request, with the status code it answers.
type requestError struct {
	code    int
	message string
	details []string
}

func (e *requestError) Error() string { return e.message }

func decodeCall(body []byte) (call, error) {
	var req executeRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return call{}, &requestError{code: http.StatusBadRequest, message: "the body is not valid JSON: " + err.Error()}
	}
	c := call{name: req.Name, arguments: req.Arguments}
	if req.Function != nil {
		c = call{name: req.Function.Name, openAI: true, toolCallID: req.ID}
		args := bytes.TrimSpace(req.Function.Arguments)
		// Models send arguments as a JSON string holding an object.
		if len(args) > 0 && args[0] == '"' {
			var text string
			if err := json.Unmarshal(args, &text); err != nil {
				return call{}, &requestError{code: http.StatusBadRequest, message: "function.arguments is not a valid JSON string"}
			}
			args = []byte(text)
		}
		c.arguments = args
	}
	if c.name == "" {
		return call{}, &requestError{code: http.StatusBadRequest, message: `the request names no tool: send {"name": ..., "arguments": {...}} or an OpenAI tool call`}
	}
	args := bytes.TrimSpace(c.arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	var object map[string]json.RawMessage
	if err := json.Unmarshal(args, &object); err != nil || object == nil {
		return call{}, &requestError{code: http.StatusBadRequest, message: "arguments must be a JSON object"}
	}
	c.arguments = args
	return c, nil
}

func (c *Catalog) executeGlobal(w http.ResponseWriter, req *http.Request) {
	c.execute(w, req, viewKey{kind: globalView})
}

func (c *Catalog) executeInCollection(w http.ResponseWriter, req *http.Request) {
	c.execute(w, req, viewKey{kind: collectionView, namespace: req.PathValue("ns"), name: req.PathValue("name")})
}

// execute runs one tool call: decode, find the tool in the addressed menu,
// validate the arguments, call the server, answer with the envelope.
func (c *Catalog) execute(w http.ResponseWriter, req *http.Request, key viewKey) {
	started := time.Now()
	body, err := readBody(w, req, c.opts.MaxRequestBytes)
	if err != nil {
		c.answerError(w, key, "", nil, started, err)
		return
	}
	cl, err := decodeCall(body)
	if err != nil {
		c.answerError(w, key, "", nil, started, err)
		return
	}
	vw, err := c.menus.view(req.Context(), key)
	if err != nil {
		c.answerError(w, key, cl.name, nil, started, &requestError{code: http.StatusServiceUnavailable, message: "the catalog cannot read its cache yet; retry"})
		return
	}
	if vw.missing != "" {
		c.answerError(w, key, cl.name, nil, started, &requestError{code: http.StatusNotFound, message: vw.missing})
		return
	}
	entry, ok := vw.byName[cl.name]
	if !ok {
		down, withheld := vw.withheld[cl.name]
		if !withheld {
			c.answerError(w, key, cl.name, nil, started, &requestError{code: http.StatusNotFound, message: fmt.Sprintf("Tool %s is invalid", cl.name)})
			return
		}
		// Only a caller who may call the tool learns about its server.
		err := c.authorizeCall(req.Context(), key, down)
		if err == nil {
			err = c.notReady(req.Context(), down)
		}
		c.answerError(w, key, cl.name, down, started, err)
		return
	}
	if err := c.authorizeCall(req.Context(), key, entry); err != nil {
		c.answerError(w, key, cl.name, entry, started, err)
		return
	}
	envelope, err := c.invoke(req.Context(), entry, cl.arguments)
	if err != nil {
		c.answerError(w, key, cl.name, entry, started, err)
		return
	}
	if cl.openAI {
		content := envelope.Output
		if envelope.IsError && envelope.Error != "" && content == "" {
			content = envelope.Error
		}
		envelope.Message = &ToolMessage{Role: "tool", ToolCallID: cl.toolCallID, Content: content}
	}
	outcome := "success"
	if envelope.IsError {
		outcome = "tool_error"
	}
	c.record(key, cl.name, entry, started, outcome)
	writeJSON(w, http.StatusOK, envelope)
}

// authorizeCall requires execute on the collection a call goes through, or
// on the tool's MCPServer for calls through the global menu.
func (c *Catalog) authorizeCall(ctx context.Context, key viewKey, entry *menu.Entry) error {
	if key.kind == collectionView {
		return c.authz.require(ctx, verbExecute, toolCollectionsResource, key.namespace, key.name)
	}
	return c.authz.require(ctx, verbExecute, mcpServersResource, entry.Namespace, entry.Server)
}

// invoke is the one execution path, for REST and MCP alike: validate the
// arguments, call the server, cut long output.
func (c *Catalog) invoke(ctx context.Context, entry *menu.Entry, arguments json.RawMessage) (Envelope, error) {
	if err := c.validate(entry.Tool, arguments); err != nil {
		return Envelope{}, err
	}
	envelope, err := c.callUpstream(ctx, entry, arguments)
	if err != nil {
		return Envelope{}, err
	}
	c.truncate(&envelope)
	return envelope, nil
}

func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &requestError{code: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the request body is over %d bytes", limit)}
	case err != nil:
		return nil, &requestError{code: http.StatusBadRequest, message: "the request body could not be read"}
	}
	return buf.Bytes(), nil
}

// validate checks arguments against the tool's input schema, compiled once
// per definition.
func (c *Catalog) validate(tool *mcpv1alpha1.Tool, arguments json.RawMessage) error {
	schema := c.schemas.validator(tool.Hash, tool.InputSchema.Raw)
	if schema == nil {
		return nil
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(arguments))
	if err != nil {
		return &requestError{code: http.StatusBadRequest, message: "arguments must be a JSON object"}
	}
	if err := schema.Validate(instance); err != nil {
		details := validationMessages(err)
		return &requestError{code: http.StatusUnprocessableEntity,
			message: fmt.Sprintf("arguments do not match the input schema of %s: %s", tool.Name, strings.Join(details, "; ")),
			details: details}
	}
	return nil
}

// upstreamError is a failure reaching the server, with its status code.
type upstreamError struct {
	code int
	kind string
	err  error
}

func (e *upstreamError) Error() string { return e.err.Error() }

// callUpstream calls the tool on its server over the pooled session. A
// request that certainly never reached the server (refused, or a session
// the server forgot) is sent once more on a fresh session; any other
// failure is not retried, since the tool may have run.
func (c *Catalog) callUpstream(ctx context.Context, entry *menu.Entry, arguments json.RawMessage) (Envelope, error) {
	var srv mcpv1alpha1.MCPServer
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: entry.Namespace, Name: entry.Server}, &srv); err != nil {
		return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: "NotFound",
			err: fmt.Errorf("MCPServer %s/%s is gone", entry.Namespace, entry.Server)}
	}
	resolved, err := endpoint.Resolve(ctx, c.reader, &srv, c.opts.Egress)
	if err != nil {
		var spec *endpoint.SpecError
		if errors.As(err, &spec) {
			return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: spec.Reason, err: err}
		}
		return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: "Internal", err: errors.New("reading the server's configuration failed")}
	}
	key := entry.Namespace + "/" + entry.Server
	var result mcpclient.CallResult
	for attempt := 0; ; attempt++ {
		var session *mcpclient.Session
		var closeAfter bool
		session, closeAfter, err = c.pool.Get(ctx, key, resolved.Endpoint, resolved.Fingerprint)
		if err == nil {
			result, err = session.CallTool(ctx, entry.Tool.OriginalName, arguments)
			if closeAfter {
				session.Close()
			}
		}
		if err == nil {
			return envelopeOf(result), nil
		}
		if code, message, ok := mcpclient.RPCErrorOf(err); ok {
			// The server answered: the call failed as a tool call, which the
			// agent reads as an observation.
			return Envelope{IsError: true, Error: fmt.Sprintf("%s (JSON-RPC error %d)", message, code), Content: []json.RawMessage{}}, nil
		}
		if mcpclient.KindOf(err) != mcpclient.ErrTimeout {
			c.pool.Drop(key)
		}
		if attempt == 0 && mcpclient.NotDelivered(err) {
			continue
		}
		code := http.StatusBadGateway
		if mcpclient.KindOf(err) == mcpclient.ErrTimeout {
			code = http.StatusGatewayTimeout
		}
		return Envelope{}, &upstreamError{code: code, kind: string(mcpclient.KindOf(err)), err: err}
	}
}

// notReady is the answer for a tool whose server is not Ready: the tool
// left the menu, and the agent learns why and that it will come back.
func (c *Catalog) notReady(ctx context.Context, entry *menu.Entry) error {
	why := "its state is not known yet"
	var srv mcpv1alpha1.MCPServer
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: entry.Namespace, Name: entry.Server}, &srv); err == nil {
		if ready := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady); ready != nil {
			why = ready.Reason + ": " + ready.Message
		}
	}
	return &upstreamError{code: http.StatusBadGateway, kind: "NotReady",
		err: fmt.Errorf("MCPServer %s/%s is not Ready (%s); %s returns to the menu when it recovers", entry.Namespace, entry.Server, why, entry.Name)}
}

// envelopeOf turns a tools/call result into the uniform envelope.
func envelopeOf(result mcpclient.CallResult) Envelope {
	env := Envelope{IsError: result.IsError, Content: result.Content, StructuredContent: result.StructuredContent}
	if env.Content == nil {
		env.Content = []json.RawMessage{}
	}
	var texts []string
	for _, item := range result.Content {
		var part struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}
		if json.Unmarshal(item, &part) != nil {
			continue
		}
		switch part.Type {
		case "text":
			texts = append(texts, part.Text)
		case "image":
			if env.Base64Image == "" {
				env.Base64Image = part.Data
			}
		}
	}
	env.Output = strings.Join(texts, "\n")
	if env.IsError {
		env.Error = env.Output
		if env.Error == "" {
			env.Error = "the tool reported an error without a message"
		}
	}
	return env
}

// truncate cuts output past the result text limit, on a character
// boundary, and says so in the system note. The text items of content are
// cut to the same budget, so MCP clients and readers of content get no
// more than readers of output; a structured result past the limit is left
// out, since half of it would not parse.
func (c *Catalog) truncate(env *Envelope) {
	limit := c.opts.MaxResultText
	var notes []string
	if total := len(env.Output); total > limit {
		cut := runeCut(env.Output, limit)
		env.Output = env.Output[:cut]
		if env.IsError {
			env.Error = env.Output
		}
		env.Content = cutTextItems(env.Content, cut)
		notes = append(notes, fmt.Sprintf("Output truncated: %d of %d bytes shown.", cut, total))
	}
	if size := len(env.StructuredContent); size > limit {
		env.StructuredContent = nil
		notes = append(notes, fmt.Sprintf("Structured content of %d bytes left out (limit %d).", size, limit))
	}
	env.System = strings.Join(notes, " ")
}

// runeCut is the largest length no more than limit that does not split a
// character of s.
func runeCut(s string, limit int) int {
	if len(s) <= limit {
		return len(s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}

// cutTextItems keeps budget bytes of text across the text items, in order
// (counting the newline output puts between them); text items past it are
// dropped, other items kept.
func cutTextItems(items []json.RawMessage, budget int) []json.RawMessage {
	kept := make([]json.RawMessage, 0, len(items))
	for _, item := range items {
		var fields map[string]json.RawMessage
		var text string
		if json.Unmarshal(item, &fields) != nil || string(fields["type"]) != `"text"` || json.Unmarshal(fields["text"], &text) != nil {
			kept = append(kept, item)
			continue
		}
		if budget <= 0 {
			continue
		}
		if len(text) > budget {
			fields["text"], _ = json.Marshal(text[:runeCut(text, budget)])
			item, _ = json.Marshal(fields)
		}
		budget -= len(text) + 1
		kept = append(kept, item)
	}
	return kept
}

// answerError answers a failed request with its status code and records it.
func (c *Catalog) answerError(w http.ResponseWriter, key viewKey, tool string, entry *menu.Entry, started time.Time, err error) {
	var reqErr *requestError
	var upErr *upstreamError
	var authErr *authError
	switch {
	case errors.As(err, &authErr):
		c.record(key, tool, entry, started, "forbidden")
		writeAuthError(w, authErr)
	case errors.As(err, &reqErr):
		outcome := "invalid_request"
		switch reqErr.code {
		case http.StatusNotFound:
			outcome = "unknown_tool"
		case http.StatusUnprocessableEntity:
			outcome = "invalid_arguments"
		}
		c.record(key, tool, entry, started, outcome)
		writeError(w, reqErr.code, reqErr.message, reqErr.details...)
	case errors.As(err, &upErr):
		outcome := "upstream_unreachable"
		if upErr.code == http.StatusGatewayTimeout {
			outcome = "upstream_timeout"
		}
		if entry != nil {
			upstreamErrors.WithLabelValues(entry.Namespace+"/"+entry.Server, upErr.kind).Inc()
		}
		c.record(key, tool, entry, started, outcome)
		writeError(w, upErr.code, upErr.Error())
	default:
		c.record(key, tool, entry, started, "internal_error")
		writeError(w, http.StatusInternalServerError, "internal error")
	}
}

// record logs one line and counts one call. Argument values are never
// logged.
func (c *Catalog) record(key viewKey, tool string, entry *menu.Entry, started time.Time, outcome string) {
	elapsed := time.Since(started)
	server := ""
	if entry != nil {
		server = entry.Namespace + "/" + entry.Server
		toolCalls.WithLabelValues(server, entry.Tool.OriginalName, outcome).Inc()
		toolCallDuration.WithLabelValues(server).Observe(elapsed.Seconds())
	}
	collection := ""
	if key.kind == collectionView {
		collection = key.namespace + "/" + key.name
	}
	c.log.Info("Tool call", "collection", collection, "tool", tool, "server", server,
		"duration", elapsed.String(), "outcome", outcome)
}
