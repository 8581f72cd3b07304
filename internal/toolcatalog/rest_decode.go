package toolcatalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// requestError is a bad request, with the status code it answers.
type requestError struct {
	code    int
	message string
	details []string
	// retryAfter, in seconds, is sent as Retry-After when set.
	retryAfter int
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
	// An object, checked without decoding it: validation decodes it next.
	if args[0] != '{' || !json.Valid(args) {
		return call{}, &requestError{code: http.StatusBadRequest, message: "arguments must be a JSON object"}
	}
	c.arguments = args
	return c, nil
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
