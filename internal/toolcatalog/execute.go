package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// execute runs one tool call: decode, find the tool in the addressed menu,
// validate the arguments, call the server, answer with the envelope.
func (c *Catalog) execute(w http.ResponseWriter, req *http.Request, key viewKey) {
	ctx, end := c.beginCall(w, req, "rest", "execute", nil)
	defer end()
	body, err := readBody(w, req, c.opts.MaxRequestBytes)
	if err != nil {
		c.answerError(ctx, w, key, "", nil, err)
		return
	}
	cl, err := decodeCall(body)
	if err != nil {
		c.answerError(ctx, w, key, "", nil, err)
		return
	}
	vw, err := c.menus.view(ctx, key)
	if err != nil {
		c.answerError(ctx, w, key, cl.name, nil, &requestError{code: http.StatusServiceUnavailable, message: "the catalog cannot read its cache yet; retry"})
		return
	}
	if vw.missing != "" {
		c.answerError(ctx, w, key, cl.name, nil, &requestError{code: http.StatusNotFound, message: vw.missing})
		return
	}
	entry, ok := vw.byName[cl.name]
	if !ok {
		down, withheld := vw.withheld[cl.name]
		if !withheld {
			c.answerError(ctx, w, key, cl.name, nil, &requestError{code: http.StatusNotFound, message: fmt.Sprintf("Tool %s is invalid", cl.name)})
			return
		}
		// Only a caller who may call the tool learns about its server.
		err := c.authorizeCall(ctx, key, down)
		if err == nil {
			err = c.notReady(down)
		}
		c.answerError(ctx, w, key, cl.name, down, err)
		return
	}
	if err := c.authorizeCall(ctx, key, entry); err != nil {
		c.answerError(ctx, w, key, cl.name, entry, err)
		return
	}
	var opts mcpclient.CallOptions
	var events *eventStream
	if acceptsEventStream(req.Header.Get("Accept")) {
		events = startEventStream(w)
		defer events.close()
		opts.OnProgress = func(params json.RawMessage) { events.send("progress", params) }
	}
	envelope, err := c.invoke(ctx, entry, cl.arguments, opts)
	if err != nil {
		if events != nil {
			c.recordFailure(ctx, key, cl.name, entry, err)
			events.failure(err)
			return
		}
		c.answerError(ctx, w, key, cl.name, entry, err)
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
	note := noteOf(ctx)
	note.status, note.resultBytes = http.StatusOK, resultSize(envelope)
	c.record(ctx, key, cl.name, entry, outcome)
	if events != nil {
		events.send("result", envelope)
		return
	}
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

// invoke is the one execution path, for REST and MCP alike: the
// caller's rate, the arguments against the schema, the call, long output
// cut; opts carry what a caller asked for besides (progress, log
// messages, trace context).
func (c *Catalog) invoke(ctx context.Context, entry *menu.Entry, arguments json.RawMessage, opts mcpclient.CallOptions) (Envelope, error) {
	if err := c.callers.allow(ctx); err != nil {
		return Envelope{}, err
	}
	if err := c.validate(entry.Tool, arguments); err != nil {
		return Envelope{}, err
	}
	envelope, err := c.callUpstream(ctx, entry, arguments, opts)
	if err != nil {
		return Envelope{}, c.toldCaller(ctx, entry, err)
	}
	c.truncate(&envelope)
	return envelope, nil
}
