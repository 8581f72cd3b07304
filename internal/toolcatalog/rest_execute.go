package toolcatalog

import (
	"encoding/json"
	"net/http"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// execute is the REST entry to a tool call (call_pipeline.go): it decodes the
// request and answers with the envelope, or with the events of the call
// when the caller asks for them (Accept: text/event-stream).
func (c *Catalog) execute(w http.ResponseWriter, req *http.Request, key viewKey) {
	ctx, end := c.beginCall(w, req, "rest", "execute", nil)
	defer end()
	body, err := readBody(w, req, c.opts.MaxRequestBytes)
	if err != nil {
		c.answerError(ctx, w, key, err)
		return
	}
	cl, err := decodeCall(body)
	if err != nil {
		c.answerError(ctx, w, key, err)
		return
	}
	call := &callRequest{name: cl.name, arguments: cl.arguments}
	var events *eventStream
	if wire.AsksForEventStream(req.Header.Get("Accept")) {
		// Events start once the call is authorized: a call refused
		// before (no such tool, forbidden, not Ready) is answered with
		// its status, as without events.
		call.authorized = func() {
			events = startEventStream(w)
			call.opts.OnProgress = func(params json.RawMessage) { events.send("progress", params) }
		}
		defer func() {
			if events != nil {
				events.close()
			}
		}()
	}
	_, envelope, err := c.runCall(ctx, key, call)
	switch {
	case err != nil && events != nil:
		events.failure(err)
		return
	case err != nil:
		writeFailure(w, err)
		return
	}
	if cl.openAI {
		content := envelope.Output
		if envelope.IsError && envelope.Error != "" && content == "" {
			content = envelope.Error
		}
		envelope.Message = &ToolMessage{Role: "tool", ToolCallID: cl.toolCallID, Content: content}
	}
	if events != nil {
		events.send("result", envelope)
		return
	}
	writeJSON(w, http.StatusOK, envelope)
}
