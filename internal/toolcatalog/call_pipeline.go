package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/resourceuri"
)

// One tool call, whichever way it came: REST execute (rest_execute.go), /mcp
// tools/call (mcp_call.go) or call_tool (mcp_search.go). Each entry point
// decodes its request into a callRequest, hands it to runCall and encodes
// what comes back; every step between is here, once, in this order:
//
//  1. resolve: the addressed menu, and the tool in it. A tool withheld
//     because its server is not Ready is authorized, then refused with
//     why, so that only a caller who may call it learns about its server.
//  2. check: what the entry point's protocol requires of a call of this
//     tool (2026-07-28's Mcp-Param-* headers).
//  3. authorize: execute on the collection, or through the global menu
//     on the tool's MCPServer. The caller was authenticated before, with
//     the request (auth.go).
//  4. limit: the caller's rate, which denied calls spend too.
//  5. decide: the collection's policy, for this caller, tool and
//     arguments (call_policy.go). A REST call's arguments first lose each
//     null sent for an optional argument that takes no null: what a model
//     in OpenAI's strict mode sends for one it leaves out
//     (internal/strictschema); only once the caller may call the tool,
//     since reading arguments costs time in their size.
//  6. validate: the arguments against the tool's input schema.
//  7. invoke: the call on the server's session, the resources its result
//     links or embeds named as the menu offers them, long output cut, a
//     failure told as the caller may read it.
//  8. record: metrics, debug log, audit line and span attributes, once,
//     whatever the outcome (call_record.go).

// callRequest is one tool call as an entry point decoded it.
type callRequest struct {
	name      string
	arguments json.RawMessage
	// opts carry what the caller asked for besides (progress, log
	// messages, relayed _meta); callUpstream adds the tool's input schema.
	opts mcpclient.CallOptions
	// askable says a server's question may be asked of the caller (a
	// legacy MCP caller that declared elicitation or sampling).
	askable bool
	// view is the addressed menu when the entry point has read it
	// already; nil to read it here.
	view *view
	// check, if set, is step 2.
	check func(*menu.Entry) error
	// stripNulls drops the nulls of step 5.
	stripNulls bool
	// authorized, if set, hears that the call passed step 5: a REST
	// caller that asked for events has them from there on, and a plain
	// answer with its status before.
	authorized func()
}

// answersOnly reports that nothing but the call's answer goes back to its
// caller: no progress, no log messages, no question of the server's, no
// input_required (a 2026-07-28 caller's). Such a call may go on a
// server's answers-only session (call_upstream.go).
func (req *callRequest) answersOnly() bool {
	return !req.askable && !req.opts.KeepInputRequired && req.opts.OnProgress == nil && req.opts.OnLog == nil
}

// runCall runs a call through the steps above. It returns the tool the
// call resolved to (nil when none), the envelope of a call that reached
// the server, and the failure of any step.
func (c *Catalog) runCall(ctx context.Context, key viewKey, req *callRequest) (*menu.Entry, Envelope, error) {
	entry, envelope, err := c.callSteps(ctx, key, req)
	c.recordCall(ctx, key, req.name, entry, envelope, err)
	return entry, envelope, err
}

func (c *Catalog) callSteps(ctx context.Context, key viewKey, req *callRequest) (*menu.Entry, Envelope, error) {
	vw, entry, withheld, err := c.resolveCall(ctx, key, req)
	switch {
	case err != nil:
		return entry, Envelope{}, err
	case withheld:
		if err := c.authorizeCall(ctx, key, entry); err != nil {
			return entry, Envelope{}, err
		}
		c.normalize(req, entry)
		if err := c.decide(ctx, vw, entry, req.arguments); err != nil {
			return entry, Envelope{}, err
		}
		return entry, Envelope{}, c.notReady(entry)
	}
	if req.check != nil {
		if err := req.check(entry); err != nil {
			return entry, Envelope{}, err
		}
	}
	if err := c.authorizeCall(ctx, key, entry); err != nil {
		return entry, Envelope{}, err
	}
	if err := c.callers.allow(ctx); err != nil {
		return entry, Envelope{}, err
	}
	c.normalize(req, entry)
	if err := c.decide(ctx, vw, entry, req.arguments); err != nil {
		return entry, Envelope{}, err
	}
	if req.authorized != nil {
		req.authorized()
	}
	arguments := req.arguments
	if len(bytes.TrimSpace(arguments)) == 0 || string(arguments) == "null" {
		arguments = json.RawMessage(`{}`)
	}
	if err := c.validate(entry.Name, entry.Tool, arguments); err != nil {
		return entry, Envelope{}, err
	}
	envelope, err := c.callUpstream(ctx, entry, arguments, req.answersOnly(), req.opts)
	if err != nil {
		return entry, Envelope{}, c.toldCaller(ctx, entry.Namespace+"/"+entry.Server, err)
	}
	if vw.exposesURIs() {
		// A resource the result links or embeds, as the view offers it.
		exposeContent(envelope.Content, resourceuri.Server{Namespace: entry.Namespace, Name: entry.Server})
	}
	c.truncate(&envelope)
	return entry, envelope, nil
}

// normalize drops, for a REST call, the nulls a strict model sends for
// optional arguments (step 5), so that the policy, the schema and the
// server all see the arguments as the model meant them.
func (c *Catalog) normalize(req *callRequest, entry *menu.Entry) {
	if req.stripNulls {
		req.arguments = stripNulls(entry.Tool, req.arguments)
	}
}

// resolveCall finds the called tool in the addressed menu; withheld says
// it is there only as a tool whose server is not Ready.
func (c *Catalog) resolveCall(ctx context.Context, key viewKey, req *callRequest) (vw *view, entry *menu.Entry, withheld bool, err error) {
	vw = req.view
	if vw == nil {
		if vw, err = c.menus.view(ctx, key); err != nil {
			return nil, nil, false, &requestError{code: http.StatusServiceUnavailable, message: "the catalog cannot read its cache yet; retry"}
		}
	}
	if vw.missing != "" {
		return vw, nil, false, &requestError{code: http.StatusNotFound, message: vw.missing}
	}
	if entry, ok := vw.byName[req.name]; ok {
		return vw, entry, false, nil
	}
	if down, ok := vw.withheld[req.name]; ok {
		return vw, down, true, nil
	}
	return vw, nil, false, &unknownToolError{name: req.name}
}

// unknownToolError: the addressed menu has no tool of that name.
type unknownToolError struct{ name string }

func (e *unknownToolError) Error() string { return fmt.Sprintf("Tool %s is invalid", e.name) }

// protocolError: the request breaks a rule of its protocol's wire (a
// 2026-07-28 header that disagrees with the body), answered with a
// JSON-RPC error code and HTTP 400.
type protocolError struct {
	code    int
	message string
	// outcome is what records say of it, when not "invalid_request": a
	// request refused for the room the replica has, not for what it asks.
	outcome string
}

func (e *protocolError) Error() string { return e.message }

// authorizeCall requires execute on the collection a call goes through, or
// on the tool's MCPServer for calls through the global menu.
func (c *Catalog) authorizeCall(ctx context.Context, key viewKey, entry *menu.Entry) error {
	if key.kind == collectionView {
		return c.authz.require(ctx, verbExecute, toolCollectionsResource, key.namespace, key.name)
	}
	return c.authz.require(ctx, verbExecute, mcpServersResource, entry.Namespace, entry.Server)
}

// recordCall is step 7: the call's outcome, counted, logged, audited and
// named on its span, and, for a REST call, the HTTP status it is answered
// with.
func (c *Catalog) recordCall(ctx context.Context, key viewKey, name string, entry *menu.Entry, envelope Envelope, err error) {
	note := noteOf(ctx)
	if err == nil {
		outcome := "success"
		switch {
		case envelope.IsError:
			outcome = "tool_error"
		case envelope.inputRequired != nil:
			// Passed to a 2026-07-28 caller to answer (mcp_input.go).
			outcome = "input_required"
		}
		note.resultBytes = resultSize(envelope)
		if note.via == "rest" {
			note.status = http.StatusOK
		}
		c.record(ctx, key, name, entry, outcome)
		return
	}
	if errors.Is(context.Cause(ctx), errCancelledByCaller) {
		c.record(ctx, key, name, entry, "cancelled")
		return
	}
	if note.via == "rest" {
		note.status = statusOf(err)
	}
	var upErr *upstreamError
	if errors.As(err, &upErr) && entry != nil {
		upstreamErrors.WithLabelValues(entry.Namespace+"/"+entry.Server, upErr.kind).Inc()
	}
	c.recordFailure(ctx, key, name, entry, err)
}
