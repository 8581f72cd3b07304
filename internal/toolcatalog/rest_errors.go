package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// apiError is the body of every error the catalog answers.
type apiError struct {
	Error string `json:"error"`
	// Details lists validation messages, when there are several.
	Details []string `json:"details,omitempty"`
	// Message is, for a call in a model API's shape, the failure as the
	// message to append to the conversation (rest_shapes.go), so that the
	// model reads it as the tool's answer and can try again.
	Message any `json:"message,omitempty"`
}

func writeError(w http.ResponseWriter, code int, message string, details ...string) {
	writeJSON(w, code, apiError{Error: message, Details: details})
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// answerError answers a REST request that failed before it became a
// call (it could not be read) and records it.
func (c *Catalog) answerError(ctx context.Context, w http.ResponseWriter, key viewKey, err error) {
	noteOf(ctx).status = statusOf(err)
	c.recordFailure(ctx, key, "", nil, err)
	writeFailure(w, err)
}

// writeFailure answers a failed REST call with its status code and a
// message that says what failed.
func writeFailure(w http.ResponseWriter, err error) {
	var authErr *authError
	if errors.As(err, &authErr) {
		writeAuthError(w, authErr)
		return
	}
	f := failureOf(err)
	retryAfter(w, f.retryAfter)
	writeError(w, f.status, f.message, f.details...)
}

// writeCallFailure answers a failed call as writeFailure does, with the
// failure as the message the call's shape asks for, but for a refusal of
// the caller itself (401, 403 of RBAC), which its code handles, not its
// model.
func writeCallFailure(w http.ResponseWriter, err error, cl *call) {
	var authErr *authError
	if errors.As(err, &authErr) || cl.shape == shapePlain {
		writeFailure(w, err)
		return
	}
	f := failureOf(err)
	retryAfter(w, f.retryAfter)
	writeJSON(w, f.status, apiError{Error: f.message, Details: f.details, Message: cl.messageOf(&Envelope{}, f.message)})
}

// failure is what a REST caller is told of a failed call.
type failure struct {
	status     int
	message    string
	details    []string
	retryAfter int
}

func failureOf(err error) failure {
	var reqErr *requestError
	var upErr *upstreamError
	var authErr *authError
	var unknown *unknownToolError
	var protoErr *protocolError
	var denied *policyDeniedError
	switch {
	case errors.As(err, &authErr):
		return failure{status: authErr.code, message: authErr.message}
	case errors.As(err, &denied):
		return failure{status: deniedStatus, message: denied.message}
	case errors.As(err, &reqErr):
		return failure{status: reqErr.code, message: reqErr.message, details: reqErr.details, retryAfter: reqErr.retryAfter}
	case errors.As(err, &upErr):
		return failure{status: upErr.code, message: upErr.Error(), retryAfter: upErr.retryAfter}
	case errors.As(err, &unknown):
		return failure{status: http.StatusNotFound, message: err.Error()}
	case errors.As(err, &protoErr):
		return failure{status: http.StatusBadRequest, message: err.Error()}
	}
	return failure{status: http.StatusInternalServerError, message: "internal error"}
}

// toldCaller is a failed call's error as its caller reads it: a failure
// talking to the server names the MCPServer, not the server's URL, which
// for a workload or a Service is an address inside the cluster. The URL
// goes to the debug log with the kind; the rest of the message does not,
// since the server's words in it may quote the call's arguments.
func (c *Catalog) toldCaller(ctx context.Context, server string, err error) error {
	var upErr *upstreamError
	var failed *mcpclient.Error
	if !errors.As(err, &upErr) || !errors.As(upErr.err, &failed) {
		return err
	}
	c.log.V(1).Info("A call to an MCPServer failed", "server", server, "reason", failed.Kind, "url", failed.URL(),
		"requestId", noteOf(ctx).requestID)
	told := *upErr
	told.err = failed.Named("MCPServer " + server)
	return &told
}

func retryAfter(w http.ResponseWriter, seconds int) {
	if seconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
	}
}

// statusOf is the HTTP status a failed call is answered with.
func statusOf(err error) int { return failureOf(err).status }

// outcomeOf names how a failed call ended, for metrics and logs; the REST
// and MCP paths name it alike, by the status REST answers it with.
func outcomeOf(err error) string {
	var upErr *upstreamError
	var authErr *authError
	var denied *policyDeniedError
	status := failureOf(err).status
	switch {
	case errors.As(err, &authErr):
		return "forbidden"
	case errors.As(err, &denied):
		return "policy_denied"
	case errors.As(err, &upErr) && status == http.StatusGatewayTimeout:
		return "upstream_timeout"
	case errors.As(err, &upErr) && status == http.StatusTooManyRequests:
		return "busy"
	case errors.As(err, &upErr) && status == http.StatusForbidden:
		return "upstream_auth_refused"
	case errors.As(err, &upErr):
		return "upstream_unreachable"
	}
	switch status {
	case http.StatusNotFound:
		return "unknown_tool"
	case http.StatusUnprocessableEntity:
		return "invalid_arguments"
	case http.StatusTooManyRequests:
		return "rate_limited"
	case http.StatusInternalServerError:
		return "internal_error"
	}
	return "invalid_request"
}
