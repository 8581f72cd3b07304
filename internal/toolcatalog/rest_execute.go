package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/tracing"
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
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		if wire.AsksForEventStream(req.Header.Get("Accept")) {
			c.answerError(ctx, w, key, &requestError{code: http.StatusNotAcceptable,
				message: "a batch is answered as one JSON array, not as events: send its calls one at a time for their events"})
			return
		}
		c.executeBatch(ctx, w, key, trimmed)
		return
	}
	cl, err := decodeCall(body)
	if err != nil {
		// What was read of the call (its shape and id) shapes the answer.
		noteOf(ctx).status = statusOf(err)
		c.recordFailure(ctx, key, "", nil, err)
		writeCallFailure(w, err, &cl)
		return
	}
	call := &callRequest{name: cl.name, arguments: cl.arguments, stripNulls: true, opts: restCallOptions()}
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
		events.failure(err, &cl)
		return
	case err != nil:
		writeCallFailure(w, err, &cl)
		return
	}
	envelope.Message = cl.messageOf(&envelope, "")
	if events != nil {
		events.send("result", envelope)
		return
	}
	writeJSON(w, http.StatusOK, envelope)
}

// maxBatchCalls bounds the calls of one batch: a model's parallel tool
// calls are a handful, and a batch's answers are held whole (each up to
// --catalog-max-result-bytes) until the last is in.
const maxBatchCalls = 16

// batchFailure is a batch's answer for a call that failed: its status,
// the error, the message to append to the conversation, and when to
// retry (the Retry-After a single call would have been answered with).
type batchFailure struct {
	Status     int `json:"status"`
	RetryAfter int `json:"retryAfter,omitempty"`
	apiError
}

// executeBatch runs an array of calls (a model's parallel tool calls),
// each in any shape, at once, and answers their results in the order
// given: an envelope for each call that ran, a batchFailure for each that
// did not. Each call goes through the call pipeline alone: its own
// authorization, policy decision, rate, server limits and audit line
// (whose request id is the batch's, with the call's index).
func (c *Catalog) executeBatch(ctx context.Context, w http.ResponseWriter, key viewKey, body []byte) {
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		c.answerError(ctx, w, key, &requestError{code: http.StatusBadRequest, message: "the batch is not a JSON array of calls: " + err.Error()})
		return
	}
	if len(items) == 0 || len(items) > maxBatchCalls {
		c.answerError(ctx, w, key, &requestError{code: http.StatusBadRequest,
			message: fmt.Sprintf("a batch holds 1 to %d calls, not %d", maxBatchCalls, len(items))})
		return
	}
	parent := noteOf(ctx)
	answers := make([]any, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Go(func() {
			note := &callNote{requestID: fmt.Sprintf("%s#%d", parent.requestID, i), via: "rest", started: time.Now()}
			callCtx := context.WithValue(ctx, callNoteKey{}, note)
			if tracing.Enabled() {
				// Each call its own span, under the batch's, as it would be
				// alone.
				var span trace.Span
				callCtx, span = tracing.Tracer().Start(callCtx, "execute", trace.WithSpanKind(trace.SpanKindInternal))
				defer span.End()
			}
			defer func() {
				// A call's panic fails that call, as net/http would fail a
				// request, not the process.
				if r := recover(); r != nil {
					c.log.Error(fmt.Errorf("%v", r), "A call of a batch panicked", "requestId", note.requestID)
					answers[i] = batchFailure{Status: http.StatusInternalServerError, apiError: apiError{Error: "internal error"}}
				}
			}()
			answers[i] = c.batchCall(callCtx, key, item)
		})
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, answers)
}

// batchCall runs one call of a batch and answers it.
func (c *Catalog) batchCall(ctx context.Context, key viewKey, item json.RawMessage) any {
	fail := func(err error, cl *call) any {
		f := failureOf(err)
		answer := batchFailure{Status: f.status, RetryAfter: f.retryAfter, apiError: apiError{Error: f.message, Details: f.details}}
		var authErr *authError
		if !errors.As(err, &authErr) {
			answer.Message = cl.messageOf(&Envelope{}, f.message)
		}
		return answer
	}
	cl, err := decodeCall(item)
	if err != nil {
		noteOf(ctx).status = statusOf(err)
		c.recordFailure(ctx, key, "", nil, err)
		return fail(err, &cl)
	}
	_, envelope, err := c.runCall(ctx, key, &callRequest{name: cl.name, arguments: cl.arguments, stripNulls: true, opts: restCallOptions()})
	if err != nil {
		return fail(err, &cl)
	}
	envelope.Message = cl.messageOf(&envelope, "")
	return envelope
}

// restCallOptions are a REST call's: a REST caller cannot be asked
// anything, so a server's request is refused, saying so (relay.go).
func restCallOptions() mcpclient.CallOptions {
	return mcpclient.CallOptions{OnRequest: refuseRESTAsking}
}

var refuseRESTAsking = refuseAsking(restCannotAnswer)
